"""The Temporal benchmark still runs: ``python benchmarks/temporal.py --quick`` in a subprocess.

Nothing here asserts on time; the benchmark checks that each run got all its replies.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_quick_benchmark_runs_and_prints_its_table() -> None:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(ROOT / "benchmarks" / "temporal.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| scenario | ToolRunner | on Temporal | overhead |" in done.stdout
    for scenario in ("| no-op tool |", "| 10 KB results |"):
        assert scenario in done.stdout

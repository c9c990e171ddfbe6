"""The benchmark suite still runs: ``python benchmarks/run.py --quick`` in a subprocess.

Nothing here asserts on time (the machine may be busy); the suite's own checks make a contender
that gets its conversation wrong fail the run.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_quick_suite_runs_and_prints_the_table(tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "run.py"), "--quick", "--json", str(results)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "| scenario" in done.stdout
    for contender in ("raw loop", "SDK runner", "toolrunner"):
        assert contender in done.stdout
    written = json.loads(results.read_text())
    assert written["quick"] is True
    scenarios = " | ".join(row["scenario"] for row in written["rows"])
    for part in ("tool turns", "per-iteration overhead", "sleep", "peak RSS", "runs of", "streamed"):
        assert part in scenarios

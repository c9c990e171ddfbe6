"""The caching benchmark still runs: ``python benchmarks/caching.py`` in a subprocess.

It prints the cost of a 20-turn loop with and without caching, from the fake's prompt-cache
accounting; the figures themselves are checked by tests/runner/test_caching.py, not here.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_the_caching_benchmark_prints_each_run_with_its_cost_and_ratio() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "caching.py")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "20-turn tool loop" in done.stdout
    rows = {
        cells[0]: cells[1:]
        for line in done.stdout.splitlines()
        if line.startswith("| ") and (cells := [cell.strip() for cell in line.strip("|").split("|")])
    }
    assert set(rows) == {"run", "without caching", "cache=True", 'cache="1h"'}
    for name in ("without caching", "cache=True", 'cache="1h"'):
        cost, ratio = rows[name][4], rows[name][6]
        assert re.fullmatch(r"\$\d+\.\d{4}", cost), (name, cost)
        assert re.fullmatch(r"\d+\.\d\d", ratio), (name, ratio)
    assert rows["without caching"][6] == "1.00"

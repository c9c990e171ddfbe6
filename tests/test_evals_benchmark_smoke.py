"""``benchmarks/evals.py --quick`` runs and prints its table.

A smoke test only: the figures depend on the machine, so no time is asserted. The benchmark checks
that every replay was replayed without a divergence, so a replay that goes wrong fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "evals.py"
TIMEOUT = 120  # seconds; a hung benchmark fails instead of hanging the suite

ROWS = ("live, SQLite", "replay, in memory", "replay into SQLite", "replay, batch path", "batch path: ")


def test_quick_run_prints_every_row() -> None:
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    done = subprocess.run(
        [sys.executable, "-W", "error", str(SCRIPT), "--quick"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
    )
    assert done.returncode == 0, done.stderr
    missing = [row for row in ROWS if row not in done.stdout]
    assert not missing, f"rows missing from the table: {missing}\n{done.stdout}"

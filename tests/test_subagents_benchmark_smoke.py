"""``benchmarks/subagents.py --quick`` runs and prints its table.

A smoke test only: the figures depend on the machine, so no time is asserted. The benchmark checks
that each baseline sends the requests its sub-agent sends, and each run that its parent's model got
the right results, so a contender that gets its work wrong fails it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "subagents.py"
TIMEOUT = 120  # seconds; a hung benchmark fails instead of hanging the suite

ROWS = (
    "a sub-agent (1 request) vs a plain tool sending it by hand, in memory",
    "the same, each run saved in SQLite",
    "a sub-agent calling a tool (2 requests) vs the same work by hand",
    "fan-out: 4 sub-agents in one reply vs 4 plain tools",
)


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
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert "load average" in done.stdout, done.stdout
    lines = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert [cell.strip() for cell in lines[0].split("|")[1:-1]] == [
        "measure",
        "baseline",
        "measured",
        "difference",
        "ratio",
        "rounds' ratios",
        "function calls",
        "saves and state",
    ], done.stdout
    for row in ROWS:
        matching = [line for line in lines if row in line]
        assert len(matching) == 1, f"no single row with {row!r} in:\n{done.stdout}"
        cells = [cell.strip() for cell in matching[0].split("|")[1:-1]]
        _, baseline, measured, difference, ratio, spread, calls, note = cells
        assert baseline.endswith(" µs"), matching[0]
        assert measured.endswith(" µs"), matching[0]
        assert difference.endswith(" µs"), matching[0]
        assert ratio.endswith("x"), matching[0]
        assert " to " in spread, matching[0]
        assert "→" in calls, matching[0]
        if "SQLite" in row:
            assert "saves a run" in note, matching[0]
            assert "largest state" in note, matching[0]

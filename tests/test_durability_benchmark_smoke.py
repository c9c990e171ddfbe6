"""``benchmarks/durability.py --quick`` runs and prints its table.

A smoke test only: the figures depend on the machine, so no time is asserted. The benchmark's own
checks make a run that gets its conversation wrong fail.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "durability.py"
TIMEOUT = 120  # seconds; a hung benchmark fails instead of hanging the suite

ROWS = (
    "turn loop, SQLite checkpoints vs none (wall)",
    "turn loop, SQLite checkpoints vs none (CPU)",
    "turn loop: time in garbage collection",
    "one save in the loop (CPU): turns",
    "one save replayed alone (CPU): turns",
    "turn run (",
    "at once: toolrunner vs hand loop",
    "at once: toolrunner + SQLite vs hand loop",
    "at once: toolrunner + SQLite vs toolrunner without a store",
    "at once: toolrunner + PostgreSQL vs toolrunner without a store",
    "waiting runs among 500 saved runs: SQLite",
    "waiting runs among 500 saved runs: PostgreSQL",
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
    lines = [line for line in done.stdout.splitlines() if line.startswith("| ")]
    assert lines[0].split("|")[1].strip() == "measure", done.stdout
    for row in ROWS:
        matching = [line for line in lines if row in line]
        assert len(matching) == 1, f"no single row with {row!r} in:\n{done.stdout}"
        assert any(
            result in matching[0]
            for result in (
                "too small to judge",
                "saves per turn",
                "loops alike",
                "one shared file",
                "the server's",
            )
        )


def test_before_after_compares_two_packages() -> None:
    """``benchmarks/before_after.py`` measures the commit's package and this tree's, each in its own
    processes (it exits non-zero when a child imported another ``toolrunner`` than it was given)."""
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "error",
            str(ROOT / "benchmarks" / "before_after.py"),
            "--base",
            "HEAD",
            "--quick",
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=2 * TIMEOUT,  # eight child processes: four timed, four counting calls
        check=False,
    )
    assert done.returncode == 0, f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    rows = {line.split()[0]: line.split()[1:] for line in done.stdout.splitlines() if line.strip()}
    for side in ("before", "after"):
        hand, runner, ratio, spread, hand_calls, slash, runner_calls, extra = rows[side]
        assert [hand[-2:], runner[-2:], ratio[-1:], spread[-1:], slash] == ["µs", "µs", "x", "x", "/"], (
            done.stdout
        )
        low, high = (float(bound) for bound in spread[:-1].split("-"))
        assert low <= float(ratio[:-1]) <= high, done.stdout
        # the calls a request makes, counted: the runner's steps come on top of the SDK's and the fake's
        # (about 1,400 and 120 more with --quick; a count per run, or of every event, is far off)
        assert 1_000 < int(hand_calls) < 3_000, done.stdout
        assert int(hand_calls) < int(runner_calls) < int(hand_calls) + 400, done.stdout
        assert extra[:2] + extra[-1:] == "(+)", done.stdout
        assert float(extra[2:-1]) > 0, done.stdout
    assert "after/before, toolrunner's ratio to the hand loop:" in done.stdout

"""``benchmarks/streaming_eager.py --quick`` runs and prints its three rows.

A smoke test only: the figures depend on the machine, so no time is asserted.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "streaming_eager.py"
TIMEOUT = 120  # seconds; a hung benchmark fails instead of hanging the suite

ROWS = (
    "toolrunner, run_tools_eagerly=True",
    "toolrunner, tools after the reply",
    "SDK tool_runner(stream=True), default",
)
SECONDS = r"-?\d+\.\d{3} s"


def test_quick_run_prints_the_three_rows() -> None:
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
    lines = done.stdout.splitlines()
    assert re.search(rf"streamed over loopback HTTP: {SECONDS} from message_start", done.stdout), done.stdout
    for label in ROWS:
        rows = [line for line in lines if line.strip().startswith(label)]
        assert len(rows) == 1, f"no single row {label!r} in:\n{done.stdout}"
        # after the last tool_use block closes, after message_stop
        assert re.search(rf"{re.escape(label)}\s+{SECONDS}\s+{SECONDS}\s", rows[0]), rows[0]

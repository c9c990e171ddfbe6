"""Temporal is optional: ``import toolrunner`` never imports it, and ``toolrunner.temporal`` without
it says how to install it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=60, check=False
    )


def test_toolrunner_imports_nothing_of_temporal() -> None:
    done = run(
        "import sys, toolrunner, toolrunner.testing; print(sorted(m for m in sys.modules if 'temporal' in m))"
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_without_temporalio_the_subpackage_says_how_to_install_it() -> None:
    done = run("import sys; sys.modules['temporalio'] = None; import toolrunner; import toolrunner.temporal")
    assert done.returncode == 1
    assert (
        "ImportError: toolrunner.temporal needs the temporalio package, which is not installed; install it with "
        "pip install 'claude-toolrunner[temporal]'."
    ) in done.stderr

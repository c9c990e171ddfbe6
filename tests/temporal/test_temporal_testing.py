"""The offline Temporal of ``start_test_environment()``: quiet but for what matters.

Temporal's core warns, as each worker starts, that the server did not advertise the
``activity_failure_include_heartbeat`` capability, so "heartbeat details may be lost on failure".
The time-skipping test server never advertises it; toolrunner's activities heartbeat with no
details; the notice is dropped at the test environment's runtime, and nothing else is.
"""

from __future__ import annotations

import logging

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.temporal.temporal_helpers import start, worker
from toolrunner import tool
from toolrunner.temporal import MemoryPayloadStore
from toolrunner.temporal._testing import CORE_LOGGER, HEARTBEAT_NOTICE
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@tool
async def echo(text: str) -> str:
    """Echo a text."""
    return text


async def test_a_run_on_the_test_server_prints_no_heartbeat_notice(
    temporal_env: WorkflowEnvironment, capfd: pytest.CaptureFixture[str], caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("echo", {"text": "hi"})), text_reply("Done.")])
    with caplog.at_level(logging.WARNING):
        async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[echo]) as queue:
            run = await start(temporal_env.client, queue, run_id="quiet", tools=[echo])
            assert (await run.result()).end_reason == "model"
    out, err = capfd.readouterr()
    assert "heartbeat details may be lost" not in out + err  # the core's console logger printed it here
    assert not [record for record in caplog.records if HEARTBEAT_NOTICE in record.getMessage()]


async def test_only_the_heartbeat_notice_is_dropped(
    temporal_env: WorkflowEnvironment, caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger(CORE_LOGGER)
    with caplog.at_level(logging.WARNING, logger=CORE_LOGGER):
        logger.warning(f"[sdk_core::temporalio_sdk_core::worker] the server {HEARTBEAT_NOTICE}, so ...")
        logger.warning("[sdk_core::temporalio_sdk_core::worker] Activity heartbeat failed.")
    assert [record.getMessage() for record in caplog.records] == [
        "[sdk_core::temporalio_sdk_core::worker] Activity heartbeat failed."
    ]

"""The core's log lines inside a workflow go to Temporal's workflow logger, once: not again when
the workflow replays (``toolrunner/temporal/_log.py``); outside a workflow, to the "toolrunner"
logger (``toolrunner/_runner/stdlog.py``)."""

from __future__ import annotations

import logging

import pytest
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.temporal.temporal_helpers import start, worker
from toolrunner.temporal import MemoryPayloadStore, ToolRunnerWorkflow, workflow_runner
from toolrunner.testing import FakeMessagesAPI, text_reply

pytestmark = pytest.mark.anyio

SURROGATES = "holds lone surrogates"


def lines(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [record for record in caplog.records if SURROGATES in record.getMessage()]


async def test_a_line_of_the_core_is_written_once_by_the_workflow_logger_and_not_on_replay(
    temporal_env: WorkflowEnvironment, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    fake = FakeMessagesAPI([text_reply("caf\udce9")])  # the history keeps it as U+FFFD, and says so
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[]) as queue:
        run = await start(temporal_env.client, queue, run_id="logged", tools=[])
        result = await run.result()
    assert result.end_reason == "model"
    # The workflow's line, with its identity (the request activity, on the worker, notes the reply
    # too, with the "toolrunner" logger: an activity is not replayed).
    assert [line.name for line in lines(caplog)].count("temporalio.workflow") == 1
    history: WorkflowHistory = await temporal_env.client.get_workflow_handle("logged").fetch_history()
    caplog.clear()
    replayed = await Replayer(
        workflows=[ToolRunnerWorkflow], workflow_runner=workflow_runner()
    ).replay_workflow(history)
    assert replayed.replay_failure is None
    assert lines(caplog) == []  # replaying writes it again nowhere

"""Replaying recorded histories gives the same decisions: the workflow is deterministic, and runs
started by an earlier toolrunner (the committed history) go on after an upgrade."""

from __future__ import annotations

import json

import pytest
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from tests.temporal.record_history import FIXTURE, RUN_ID, record
from toolrunner.temporal import ToolRunnerWorkflow, workflow_runner

pytestmark = pytest.mark.anyio


def replayer() -> Replayer:
    return Replayer(workflows=[ToolRunnerWorkflow], workflow_runner=workflow_runner())


async def test_the_committed_history_replays() -> None:
    history = WorkflowHistory.from_json(RUN_ID, FIXTURE.read_text(encoding="utf-8"))
    result = await replayer().replay_workflow(history)
    assert result.replay_failure is None


async def test_a_history_recorded_now_replays(temporal_env: WorkflowEnvironment) -> None:
    result, history = await record(temporal_env)
    assert result.end_reason == "model"
    replay = await replayer().replay_workflow(history)
    assert replay.replay_failure is None


async def test_a_replay_that_does_not_match_the_history_fails() -> None:
    # The control: the replay checks each command against the history (here a tool call's activity).
    text = FIXTURE.read_text(encoding="utf-8").replace('"toolrunner.tool"', '"toolrunner.other"')
    history = WorkflowHistory.from_json(RUN_ID, json.loads(text))
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(history)

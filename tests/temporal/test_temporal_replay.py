"""Replaying recorded histories gives the same decisions: the workflow is deterministic, and runs
started by an earlier toolrunner (the committed histories) go on after an upgrade: those recorded
before the workflow drove the run's core through the legacy body (no ``effects-core`` marker),
those recorded since through the core's driver (one of them, a run whose approval timed out, when
the workflow still denied the undecided calls itself)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from tests.temporal.record_history import (
    APPROVAL_FIXTURE,
    APPROVAL_RUN_ID,
    CORE_FIXTURE,
    CORE_RUN_ID,
    FAMILY_FIXTURE,
    FAMILY_RUN_ID,
    FIXTURE,
    RUN_ID,
    TIMEOUT_FIXTURE,
    TIMEOUT_RUN_ID,
    record,
    record_approval,
    record_core,
    record_family,
    record_timeout,
)
from toolrunner.temporal import ToolRunnerWorkflow, workflow_runner

pytestmark = pytest.mark.anyio


def load(run_id: str, path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(run_id, path.read_text(encoding="utf-8"))


def replayer() -> Replayer:
    return Replayer(workflows=[ToolRunnerWorkflow], workflow_runner=workflow_runner())


@pytest.mark.parametrize(
    ("run_id", "path"),
    [
        (RUN_ID, FIXTURE),
        (APPROVAL_RUN_ID, APPROVAL_FIXTURE),
        (FAMILY_RUN_ID, FAMILY_FIXTURE),
        (CORE_RUN_ID, CORE_FIXTURE),
        (TIMEOUT_RUN_ID, TIMEOUT_FIXTURE),
    ],
)
async def test_the_committed_histories_replay(run_id: str, path: Path) -> None:
    result = await replayer().replay_workflow(load(run_id, path))
    assert result.replay_failure is None


async def test_histories_recorded_now_replay(temporal_env: WorkflowEnvironment) -> None:
    for recorder in (record, record_approval, record_family, record_core, record_timeout):
        result, history = await recorder(temporal_env)
        assert result.end_reason == "model"
        replay = await replayer().replay_workflow(history)
        assert replay.replay_failure is None


def test_only_the_histories_recorded_by_the_core_have_a_patch_marker() -> None:
    # The legacy histories have none: replaying them, workflow.patched("effects-core") is false.
    for path in (CORE_FIXTURE, TIMEOUT_FIXTURE):
        assert '"core_patch"' in path.read_text(encoding="utf-8")
    for path in (FIXTURE, APPROVAL_FIXTURE, FAMILY_FIXTURE):
        assert '"core_patch"' not in path.read_text(encoding="utf-8")


async def test_a_replay_that_does_not_match_the_history_fails() -> None:
    # The control: the replay checks each command against the history (here a tool call's activity).
    text = FIXTURE.read_text(encoding="utf-8").replace('"toolrunner.tool"', '"toolrunner.other"')
    history = WorkflowHistory.from_json(RUN_ID, json.loads(text))
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(history)

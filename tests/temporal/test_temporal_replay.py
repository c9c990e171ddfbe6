"""Replaying recorded histories gives the same decisions: the workflow is deterministic, and runs
started by an earlier toolrunner (the committed histories) go on after an upgrade: those recorded
before the workflow drove the run's core through the legacy body (no ``effects-core`` marker),
those recorded since through the core's driver (one of them, a run whose approval timed out, when
the workflow still denied the undecided calls itself; one, a run with a typed answer sent back once;
one, a run whose sub-agent's sub-agent waited for a decision).

The legacy body's histories: three recorded before the core (``record_history.py``), and six of
``record_legacy.py`` (close, deny and answer, an approval timeout, ``final_answer``,
``max_concurrency``, five of them recorded by toolrunner 0.1.0; steering refused). Runs started now
on the legacy body (the patch turned off) end as 0.1.0's did, with the same commands, and replay."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer
from temporalio.workflow import NondeterminismError

from tests.temporal import record_legacy
from tests.temporal.record_history import (
    APPROVAL_FIXTURE,
    APPROVAL_RUN_ID,
    CORE_FIXTURE,
    CORE_RUN_ID,
    FAMILY_FIXTURE,
    FAMILY_RUN_ID,
    FIXTURE,
    OUTPUT_FIXTURE,
    OUTPUT_RUN_ID,
    RUN_ID,
    SUBAGENT_FIXTURE,
    SUBAGENT_RUN_ID,
    TIMEOUT_FIXTURE,
    TIMEOUT_RUN_ID,
    record,
    record_approval,
    record_core,
    record_family,
    record_output,
    record_timeout,
)
from tests.temporal.record_legacy import RECORDERS as LEGACY_RECORDERS
from toolrunner.temporal import ToolRunnerWorkflow, workflow_runner

pytestmark = pytest.mark.anyio


def load(run_id: str, path: Path) -> WorkflowHistory:
    return WorkflowHistory.from_json(run_id, path.read_text(encoding="utf-8"))


def replayer() -> Replayer:
    return Replayer(workflows=[ToolRunnerWorkflow], workflow_runner=workflow_runner())


LEGACY = [
    (RUN_ID, FIXTURE),
    (APPROVAL_RUN_ID, APPROVAL_FIXTURE),
    (FAMILY_RUN_ID, FAMILY_FIXTURE),
    *((run_id, path) for _, run_id, path in LEGACY_RECORDERS),
]
"""The histories of runs on the legacy body: no ``effects-core`` marker."""
CORE = [
    (CORE_RUN_ID, CORE_FIXTURE),
    (TIMEOUT_RUN_ID, TIMEOUT_FIXTURE),
    (OUTPUT_RUN_ID, OUTPUT_FIXTURE),
    (SUBAGENT_RUN_ID, SUBAGENT_FIXTURE),
]
"""The histories recorded by the core's driver."""


def commands(history: WorkflowHistory) -> list[str]:
    """What the workflow asked for, in order (activities by type, timers, markers, the end): the
    commands a replay checks, without the workflow tasks around them, whose cut depends on timing."""
    asked: list[str] = []
    for event in history.events:
        kind = event.WhichOneof("attributes")
        if kind == "activity_task_scheduled_event_attributes":
            asked.append(f"activity {event.activity_task_scheduled_event_attributes.activity_type.name}")
        elif kind in (
            "timer_started_event_attributes",
            "timer_canceled_event_attributes",
            "marker_recorded_event_attributes",
            "workflow_execution_completed_event_attributes",
        ):
            asked.append(kind.removesuffix("_event_attributes"))
    return asked


def renamed(path: Path, old: str, new: str) -> str:
    """The text of ``path`` with ``old`` replaced by ``new`` (which it must hold)."""
    text = path.read_text(encoding="utf-8")
    assert old in text, f"{path.name} holds no {old}"
    return text.replace(old, new)


def result_of(history: WorkflowHistory) -> dict[str, Any]:
    """The run's result, as the history's last event holds it."""
    [payload] = history.events[-1].workflow_execution_completed_event_attributes.result.payloads
    return json.loads(payload.data)


@pytest.mark.parametrize(("run_id", "path"), [*LEGACY, *CORE])
async def test_the_committed_histories_replay(run_id: str, path: Path) -> None:
    result = await replayer().replay_workflow(load(run_id, path))
    assert result.replay_failure is None


async def test_histories_recorded_now_replay(temporal_env: WorkflowEnvironment) -> None:
    for recorder in (record, record_approval, record_family, record_core, record_timeout, record_output):
        result, history = await recorder(temporal_env)
        assert result.end_reason == "model"
        replay = await replayer().replay_workflow(history)
        assert replay.replay_failure is None


async def test_legacy_runs_started_now_end_as_recorded_and_replay(temporal_env: WorkflowEnvironment) -> None:
    # Today's frozen body against today's activities: each scenario asks for what the committed
    # history holds (0.1.0's, for five of them) and ends the same way.
    for recorder, run_id, path in LEGACY_RECORDERS:
        result, history = await recorder(temporal_env)
        committed = load(run_id, path)
        assert '"core_patch"' not in history.to_json()
        assert commands(history) == commands(committed), path.name
        expected = result_of(committed)
        assert (result.end_reason, result.requests, result.usage) == (
            expected["end_reason"],
            expected["requests"],
            expected["usage"],
        ), path.name
        replay = await replayer().replay_workflow(history)
        assert replay.replay_failure is None


def test_the_legacy_scenarios_are_what_they_say() -> None:
    ends = {path.name: result_of(load(run_id, path))["end_reason"] for _, run_id, path in LEGACY_RECORDERS}
    assert ends == {
        "legacy_close_history.json": "closed",
        "legacy_deny_history.json": "model",
        "legacy_timeout_history.json": "model",
        "legacy_final_answer_history.json": "max_iterations",
        "legacy_concurrency_history.json": "model",
        "legacy_steered_history.json": "model",
    }
    timeout = commands(load(record_legacy.TIMEOUT_RUN_ID, record_legacy.TIMEOUT_FIXTURE))
    assert timeout.count("timer_started") == 2
    assert timeout.count("timer_canceled") == 1  # approved in time; the second timer fired
    deny = commands(load(record_legacy.DENY_RUN_ID, record_legacy.DENY_FIXTURE))
    assert "activity toolrunner.decision" in deny  # the answer, converted on a worker


def test_only_the_histories_recorded_by_the_core_have_a_patch_marker() -> None:
    # The legacy histories have none: replaying them, workflow.patched("effects-core") is false.
    for _, path in CORE:
        assert '"core_patch"' in path.read_text(encoding="utf-8")
    for _, path in LEGACY:
        assert '"core_patch"' not in path.read_text(encoding="utf-8")


@pytest.mark.parametrize(("run_id", "path"), LEGACY)
async def test_a_replay_that_does_not_match_the_history_fails(run_id: str, path: Path) -> None:
    # The control: the replay checks each command against the history (here each request's
    # activity, renamed), so a legacy history that replays is one whose commands the body repeats.
    history = WorkflowHistory.from_json(
        run_id, json.loads(renamed(path, '"toolrunner.request"', '"toolrunner.other"'))
    )
    with pytest.raises(NondeterminismError):
        await replayer().replay_workflow(history)


def test_the_typed_answer_is_in_the_recorded_result() -> None:
    history = load(OUTPUT_RUN_ID, OUTPUT_FIXTURE)
    assert result_of(history)["output"] == {"city": "Paris", "celsius": 21}
    assert commands(history).count("activity toolrunner.request") == 3  # the answer sent back once


def test_the_sub_agents_history_runs_its_sub_runs_in_the_workflow() -> None:
    history = load(SUBAGENT_RUN_ID, SUBAGENT_FIXTURE)
    asked = commands(history)
    # the run's requests, the coordinator's and the specialist's; three tool calls; the approved input checked
    assert asked.count("activity toolrunner.request") == 6
    assert asked.count("activity toolrunner.tool") == 3
    assert asked.count("activity toolrunner.decision") == 1
    assert "child_workflow" not in history.to_json()
    paths = [
        json.loads(event.activity_task_scheduled_event_attributes.input.payloads[0].data)["path"]
        for event in history.events
        if event.activity_task_scheduled_event_attributes.activity_type.name == "toolrunner.tool"
    ]
    specialist = ["toolu_p1", "coordinator", "toolu_m1", "specialist"]
    assert sorted(paths, key=repr) == sorted([None, specialist, specialist], key=repr)

"""A sub-agent's typed answer on Temporal: the sub-run's requests carry the schema of the workers'
type, their replies are parsed there, and the workflow's core judges the answer as a ``ToolRunner``
does (sent back with its errors, then the call answered with the JSON or with an error result);
a worker whose sub-agent has another type fails the run naming it."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from temporalio.client import WorkflowFailureError
from temporalio.testing import WorkflowEnvironment

from tests.support.subagents import by_model, searcher
from tests.temporal.temporal_helpers import start, worker
from tests.temporal.test_temporal_subagents import bodies, heard, on_temporal, plain_runner, same_run
from toolrunner import MessageFinished, RunnerEvent, SubRunEvent
from toolrunner.temporal import MemoryPayloadStore
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


class Weather(BaseModel):
    city: str
    celsius: int


class Other(BaseModel):
    city: str
    kelvin: float


def scripts(*answers: str | ScriptEntry) -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("searcher", {"task": "Paris?"}, id="toolu_p1")),
            text_reply("Done."),
        ],
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
            *(text_reply(answer) if isinstance(answer, str) else answer for answer in answers),
        ],
    }


TWO_BLOCKS = message_reply(
    [
        {"type": "text", "text": '{"city": "Paris", "celsius": "20", "x": 1}'},
        {"type": "text", "text": '{"city": "Rome", "celsius": 30}'},
    ],
    stop_reason="end_turn",
)
REFUSAL = message_reply([{"type": "text", "text": "No."}], stop_reason="refusal")


def parsed(events: list[RunnerEvent]) -> list[Any]:
    return [
        getattr(event.event.message, "parsed_output", None)
        for event in events
        if isinstance(event, SubRunEvent) and isinstance(event.event, MessageFinished)
    ]


@pytest.mark.parametrize(
    ("answers", "error"),
    [
        pytest.param(('{"city": "Paris", "celsius": 20}',), False, id="fits"),
        pytest.param(('{"city": "Paris"}', '{"city": "Paris", "celsius": 21}'), False, id="sent-back"),
        pytest.param(("warm", "still warm"), True, id="retries-spent"),
        pytest.param((TWO_BLOCKS,), False, id="two-blocks"),
        pytest.param((REFUSAL,), True, id="refusal"),
    ],
)
async def test_a_typed_sub_agent_is_what_a_tool_runner_does(
    temporal_env: WorkflowEnvironment, answers: tuple[str | ScriptEntry, ...], error: bool
) -> None:
    agent = searcher(output_format=Weather)
    plain_events: list[RunnerEvent] = []
    plain_fake = FakeMessagesAPI(responder=by_model(scripts(*answers)))
    runner = plain_runner(plain_fake, [agent], on_event=plain_events.append)
    await runner.until_done()

    fake = FakeMessagesAPI(responder=by_model(scripts(*answers)))
    run_id = f"sub-typed-{len(answers)}-{error}-{id(answers[0]) if not isinstance(answers[0], str) else 0}"
    result, state, events = await on_temporal(temporal_env, fake, [searcher(output_format=Weather)], run_id)

    assert result.end_reason == "model"
    assert bodies(fake) == bodies(plain_fake)
    sub = [request for request in fake.requests if request.body["model"] == "claude-sub"]
    assert all(request.body["output_config"]["format"]["type"] == "json_schema" for request in sub)
    same_run(runner.state, state)
    assert heard(events) == heard(plain_events)
    assert parsed(events) == parsed(plain_events)
    blocks: list[dict[str, Any]] = [
        block for block in state.messages[2]["content"] if isinstance(block, dict)
    ]
    (result_block,) = [block for block in blocks if block.get("type") == "tool_result"]
    assert bool(result_block.get("is_error")) is error
    if not error:  # the checked value, as the type's JSON
        assert result_block["content"] == parsed(events)[-1].model_dump_json()


@pytest.mark.parametrize(
    ("on_worker", "words"),
    [
        pytest.param(searcher(output_format=Other), "another output_format", id="another-type"),
        pytest.param(searcher(), "no output_format", id="no-type"),
    ],
)
async def test_a_worker_whose_sub_agent_has_another_type_fails_the_run_naming_it(
    temporal_env: WorkflowEnvironment, on_worker: Any, words: str
) -> None:
    fake = FakeMessagesAPI(responder=by_model(scripts('{"city": "Paris", "celsius": 20}')))
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[on_worker]) as queue:
        run = await start(
            temporal_env.client,
            queue,
            run_id=f"sub-typed-mismatch-{words[:3]}",
            tools=[searcher(output_format=Weather)],
            model="claude-parent",
            max_tokens=100,
        )
        with pytest.raises(WorkflowFailureError) as failed:
            await run.result()
    assert words in str(failed.value.cause)
    assert "'searcher'" in str(failed.value.cause)
    assert [request.body["model"] for request in fake.requests] == [
        "claude-parent"
    ]  # the sub-run sent nothing

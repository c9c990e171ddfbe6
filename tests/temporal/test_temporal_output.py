"""Typed final answers on Temporal (``start_run(output_format=...)``): the output type registered on
the workers by name, the same requests and the same parsed answer as a ``ToolRunner`` with
``output_format=``, an answer that does not fit sent back (``output_retries``), then given up on."""

from __future__ import annotations

import json
from typing import Any, cast

import pydantic
import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment

from tests.temporal.temporal_helpers import run_plainly, start, worker
from tests.temporal.test_temporal_segments import segment_input, segments
from toolrunner import (
    LoopFinished,
    MessageFinished,
    OutputValidationError,
    ParamsError,
    RunnerEvent,
    ToolRunner,
    tool,
)
from toolrunner.temporal import MemoryPayloadStore, create_worker
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

PARIS = '{"city": "Paris", "celsius": 21}'
WRONG = '{"city": "Paris", "celsius": "warm"}'


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny, 21C"


class NoSchema:
    """A type pydantic makes no JSON schema of."""


def parsed(runner: ToolRunner) -> Any:
    return cast(Any, runner.last_message).parsed_output


def with_tools() -> list[ScriptEntry]:
    return [tool_reply(tool_call("weather", {"city": "Paris"})), text_reply(PARIS)]


@pytest.mark.parametrize("by", ["name", "type", "mapping"])
async def test_a_typed_run_sends_what_a_tool_runner_sends_and_its_result_carries_the_answer(
    temporal_env: WorkflowEnvironment, by: str
) -> None:
    plain_fake = FakeMessagesAPI(with_tools())
    runner = await run_plainly(plain_fake, tools=[weather], output_format=Weather)

    fake, heard = FakeMessagesAPI(with_tools()), list[RunnerEvent]()

    def listener(run_id: str, event: RunnerEvent) -> None:
        heard.append(event)

    types: Any = {"forecast": Weather} if by == "mapping" else [Weather]
    given: Any = {"name": "Weather", "type": Weather, "mapping": "forecast"}[by]
    async with worker(
        temporal_env,
        fake,
        MemoryPayloadStore(),
        tools=[weather],
        output_types=types,
        on_event=listener,
    ) as queue:
        handle = await start(
            temporal_env.client, queue, run_id=f"typed-{by}", tools=[weather], output_format=given
        )
        result = await handle.result()
        state = await handle.state()

    bodies = [request.body for request in fake.requests]
    assert bodies == [request.body for request in plain_fake.requests]
    assert all(body["output_config"]["format"]["type"] == "json_schema" for body in bodies)
    assert result.output == {"city": "Paris", "celsius": 21} == parsed(runner).model_dump()
    assert result.output_as(Weather) == Weather(city="Paris", celsius=21) == parsed(runner)
    assert (result.end_reason, result.requests) == ("model", 2)
    finished = [cast(Any, event.message) for event in heard if isinstance(event, MessageFinished)]
    assert [message.parsed_output for message in finished] == [None, parsed(runner)]  # as ToolRunner's
    if by == "type":  # the client knew the schema: the state records it from the start, as ToolRunner's
        assert state.output == runner.state.output


async def test_an_answer_that_does_not_fit_is_sent_back_as_a_tool_runner_sends_it_back(
    temporal_env: WorkflowEnvironment,
) -> None:
    script: list[ScriptEntry] = [text_reply(WRONG), text_reply(PARIS)]
    plain_fake = FakeMessagesAPI(script)
    runner = await run_plainly(plain_fake, tools=[], output_format=Weather, output_retries=1)

    fake, store = FakeMessagesAPI(script), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[], output_types=[Weather]) as queue:
        handle = await start(
            temporal_env.client,
            queue,
            run_id="typed-retry",
            tools=[],
            output_format="Weather",
            output_retries=1,
        )
        result = await handle.result()
        messages = await result.messages(store)

    assert len(fake.requests) == 2
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert result.output_as(Weather) == parsed(runner) == Weather(city="Paris", celsius=21)
    assert result.requests == runner.requests_sent == 2
    assert messages[:-1] == runner.messages[:-1]  # the retry message, as ToolRunner's


async def test_an_answer_that_never_fits_fails_the_run_with_output_validation_error(
    temporal_env: WorkflowEnvironment,
) -> None:
    script: list[ScriptEntry] = [text_reply(WRONG), text_reply(WRONG)]
    runner = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Go."}],
        output_format=Weather,
    )
    with pytest.raises(OutputValidationError) as plain:
        await runner.until_done()

    fake, heard = FakeMessagesAPI(script), list[RunnerEvent]()

    def listener(run_id: str, event: RunnerEvent) -> None:
        heard.append(event)

    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=[], output_types=[Weather], on_event=listener
    ) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="typed-gave-up", tools=[], output_format=Weather
        )
        with pytest.raises(OutputValidationError) as raised:
            await handle.result()

    assert len(fake.requests) == 2
    assert raised.value.errors == plain.value.errors
    assert str(raised.value) == str(plain.value)
    assert raised.value.answer.content == plain.value.answer.content
    assert isinstance(raised.value.__cause__, WorkflowFailureError)
    [ended] = [event for event in heard if isinstance(event, LoopFinished)]  # the loop's end, forwarded
    assert ended.reason == "model"


async def test_a_run_in_segments_keeps_its_output_type_and_its_retries(
    temporal_env: WorkflowEnvironment,
) -> None:
    script: list[ScriptEntry] = [
        *(tool_reply(tool_call("weather", {"city": f"city {turn}"})) for turn in range(12)),
        text_reply(WRONG),
        text_reply(PARIS),
    ]
    plain_fake = FakeMessagesAPI(script)
    runner = await run_plainly(plain_fake, tools=[weather], output_format=Weather)

    fake = FakeMessagesAPI(script)
    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=[weather], output_types=[Weather]
    ) as queue:
        handle = await start(
            temporal_env.client,
            queue,
            run_id="typed-segments",
            tools=[weather],
            output_format="Weather",
            continue_as_new_events=100,
        )
        result = await handle.result()
        histories = await segments(temporal_env, handle)

    assert len(histories) >= 2
    assert segment_input(histories[-1])["output"] == {
        "name": "Weather",
        "retries": 1,
        "schema": runner.state.output and runner.state.output.schema,
    }
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert result.output_as(Weather) == parsed(runner) == Weather(city="Paris", celsius=21)


async def test_a_large_answer_travels_by_reference_as_large_blocks_do(
    temporal_env: WorkflowEnvironment,
) -> None:
    class Report(pydantic.BaseModel):
        text: str

    long = "sunny " * 500
    fake, store = FakeMessagesAPI([text_reply(json.dumps({"text": long}))]), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[], output_types=[Report]) as queue:
        handle = await start(temporal_env.client, queue, run_id="typed-large", tools=[], output_format=Report)
        result = await handle.result()
        history = await handle.workflow.fetch_history()

    assert set(result.output) == {"toolrunner_ref"}
    assert await result.final_output(store) == {"text": long}
    with pytest.raises(ValueError, match="final_output"):
        result.output_as(Report)
    assert all(long not in str(event) for event in history.events)  # neither the block nor the answer


def failure_message(failure: WorkflowFailureError) -> str:
    cause = failure.cause  # the run's own failure, as for a tool that is not on the workers
    assert isinstance(cause, ApplicationError)
    assert cause.type == "OutputTypeNotRegistered"
    return cause.message


async def test_a_name_no_worker_registered_fails_the_run_before_a_request_is_sent(
    temporal_env: WorkflowEnvironment,
) -> None:
    fake = FakeMessagesAPI([text_reply(PARIS)])
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[], output_types=[Weather]) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="typed-unknown", tools=[], output_format="Forecast"
        )
        with pytest.raises(WorkflowFailureError) as raised:
            await handle.result()
    assert "'Forecast' is not registered on this worker (it has ['Weather'])" in failure_message(raised.value)
    assert fake.requests == []


async def test_a_type_whose_schema_differs_from_the_workers_fails_the_run_before_a_request_is_sent(
    temporal_env: WorkflowEnvironment,
) -> None:
    class Other(pydantic.BaseModel):
        city: str

    fake = FakeMessagesAPI([text_reply(PARIS)])
    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=[], output_types={"Weather": Other}
    ) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="typed-other", tools=[], output_format=Weather
        )
        with pytest.raises(WorkflowFailureError) as raised:
            await handle.result()
    assert "has another JSON schema than the run's" in failure_message(raised.value)
    assert fake.requests == []


async def test_start_run_refuses_what_tool_runner_refuses_before_the_run_starts(
    temporal_env: WorkflowEnvironment,
) -> None:
    client = temporal_env.client
    with pytest.raises(ParamsError, match=r"pass output_format=\.\.\. with it"):
        await start(client, "nowhere", run_id="x", tools=[], output_retries=2)
    with pytest.raises(ParamsError, match="output_retries must be an int of 0 or more"):
        await start(client, "nowhere", run_id="x", tools=[], output_format="Weather", output_retries=-1)
    with pytest.raises(ParamsError, match="not both"):
        await start(
            client,
            "nowhere",
            run_id="x",
            tools=[],
            output_format="Weather",
            output_config={"format": {"type": "json_schema", "schema": {"type": "object"}}},
        )
    with pytest.raises(ParamsError, match="not ''"):
        await start(client, "nowhere", run_id="x", tools=[], output_format="")
    with pytest.raises(ParamsError, match="no JSON schema"):
        await start(client, "nowhere", run_id="x", tools=[], output_format=NoSchema)


async def test_create_worker_refuses_output_types_it_cannot_name_or_describe(
    temporal_env: WorkflowEnvironment,
) -> None:
    fake = FakeMessagesAPI([])
    types: Any
    for types, message in [
        ([NoSchema], "no JSON schema"),
        ({"": Weather}, "needs a name"),
        ("Weather", "not a str"),
    ]:
        with pytest.raises(ParamsError, match=message):
            create_worker(
                temporal_env.client,
                task_queue="nowhere",
                tools=[],
                anthropic_client=fake.async_client(),
                store=MemoryPayloadStore(),
                output_types=types,
            )

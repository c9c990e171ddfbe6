"""Typed final answers (``output_format=``): what the SDK's runner sends and yields for it, request
by request; the answers that do not fit, sent back (``output_retries``) and given up on
(``OutputValidationError``); a run saved and resumed with its typed answer; streaming."""

from __future__ import annotations

import dataclasses
import json
from typing import Any, cast

import anthropic
import pydantic
import pytest
from anthropic import beta_async_tool, beta_tool
from typing_extensions import TypedDict

from tests.support.helpers import MODEL, USER, make_runner, make_sync_runner
from toolrunner import (
    MemoryCheckpointer,
    MessageFinished,
    OutputValidationError,
    ParamsError,
    RunnerEvent,
    SyncToolRunner,
    ToolRunner,
    tool,
)
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    fault,
    text_reply,
    tool_call,
    tool_reply,
    truncated_tool_reply,
)

pytestmark = pytest.mark.anyio


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


class WeatherDict(TypedDict):
    city: str
    celsius: int


@dataclasses.dataclass
class WeatherData:
    city: str
    celsius: int


def parsed(message: object) -> Any:
    """A reply's ``parsed_output`` (a ``ParsedMessage``'s or ``ParsedBetaMessage``'s, whose output
    type the runner's item type does not carry)."""
    return cast(Any, message).parsed_output


PARIS = '{"city": "Paris", "celsius": 21}'
NOT_JSON = "It is sunny in Paris."
WRONG = '{"city": "Paris", "celsius": "warm"}'


def get_weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return f"{city}: sunny, 21C"


sdk_weather = beta_tool(get_weather)


async def get_weather_async(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city's name.
    """
    return get_weather(city)


sdk_async_weather = beta_async_tool(name="get_weather")(get_weather_async)
our_weather = tool(get_weather)


def weather_script(*answers: str) -> list[Any]:
    return [tool_reply(tool_call("get_weather", {"city": "Paris"})), *(text_reply(text) for text in answers)]


TELEMETRY = "x-stainless-helper"
"""The SDK's runner tags its requests ``BetaToolRunner``; toolrunner, another helper, never sends the
SDK's tag (with or without ``output_format``). Every other header must be the same."""


# The runners are given the SDK's own tools, so that the definitions they send are the same too.


def assert_same_requests(sdk: list[RecordedRequest], ours: list[RecordedRequest]) -> None:
    assert len(ours) == len(sdk)
    for index, (theirs, mine) in enumerate(zip(sdk, ours, strict=True)):
        assert mine.url == theirs.url, f"request {index}"
        assert mine.body == theirs.body, f"request {index}"
        assert {k: v for k, v in mine.headers.items() if k != TELEMETRY} == {
            k: v for k, v in theirs.headers.items() if k != TELEMETRY
        }, f"request {index}"


SHAPES = [
    pytest.param({}, id="plain"),
    pytest.param({"output_config": {"effort": "high"}}, id="output_config-merged"),
    pytest.param({"betas": ["inline-tools-2026-09-15"]}, id="beta"),
]


@pytest.mark.parametrize("output_type", [Weather, WeatherDict, WeatherData])
@pytest.mark.parametrize("extra", SHAPES)
def test_the_sync_runner_sends_and_yields_what_the_sdks_runner_does(
    output_type: Any, extra: dict[str, Any]
) -> None:
    sdk_fake, our_fake = FakeMessagesAPI(weather_script(PARIS)), FakeMessagesAPI(weather_script(PARIS))
    common: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [USER], **extra}
    with sdk_fake.client() as client:
        sdk_runner: Any = cast(Any, client.beta.messages).tool_runner(
            **common, tools=[sdk_weather], thread=False, output_format=output_type
        )
        sdk_outputs = [parsed(message) for message in sdk_runner]
    with our_fake.client() as client:
        runner = SyncToolRunner(client, **common, tools=[sdk_weather], output_format=output_type)
        outputs = [parsed(message) for message in runner]
        final = runner.until_done()
    assert_same_requests(sdk_fake.requests, our_fake.requests)
    assert outputs == sdk_outputs
    assert outputs[0] is None  # the tool turn
    assert outputs[1] == pydantic.TypeAdapter(output_type).validate_json(PARIS)
    assert parsed(final) == outputs[1]
    assert type(final).__name__.startswith("ParsedBetaMessage" if "betas" in extra else "ParsedMessage")


@pytest.mark.parametrize("extra", SHAPES)
async def test_the_async_runner_sends_and_yields_what_the_sdks_runner_does(extra: dict[str, Any]) -> None:
    sdk_fake, our_fake = FakeMessagesAPI(weather_script(PARIS)), FakeMessagesAPI(weather_script(PARIS))
    common: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [USER], **extra}
    async with sdk_fake.async_client() as client:
        sdk_runner: Any = cast(Any, client.beta.messages).tool_runner(
            **common, tools=[sdk_async_weather], thread=False, output_format=Weather
        )
        sdk_outputs = [parsed(message) async for message in sdk_runner]
    async with our_fake.async_client() as client:
        runner = ToolRunner(client, **common, tools=[sdk_async_weather], output_format=Weather)
        outputs = [parsed(message) async for message in runner]
    assert_same_requests(sdk_fake.requests, our_fake.requests)
    assert outputs == sdk_outputs == [None, Weather(city="Paris", celsius=21)]


def test_without_output_format_nothing_changes() -> None:
    fake = FakeMessagesAPI(weather_script(PARIS))
    runner = make_sync_runner(fake, our_weather)
    final = runner.until_done()
    assert all("output_config" not in request.body for request in fake.requests)
    assert not hasattr(final, "parsed_output")
    assert runner.state.output is None
    assert "output" not in runner.state.to_dict()


# -- answers that do not fit ----------------------------------------------------------------------


async def test_an_answer_that_does_not_fit_is_sent_back_with_its_errors() -> None:
    fake = FakeMessagesAPI(weather_script(WRONG, PARIS))
    events: list[RunnerEvent] = []
    runner = make_runner(fake, our_weather, output_format=Weather, on_event=events.append)
    outputs = [parsed(message) async for message in runner]
    assert outputs == [None, None, Weather(city="Paris", celsius=21)]
    retry = fake.requests[2].body["messages"][-1]
    assert retry["role"] == "user"
    assert "celsius: Input should be a valid integer" in retry["content"]
    assert '(got "warm")' in retry["content"]
    assert fake.requests[2].body["messages"][-2]["content"][0]["text"] == WRONG  # the answer, then the errors
    assert runner.requests_sent == 3
    assert len(runner.usage.requests) == 3
    assert sum(isinstance(event, MessageFinished) for event in events) == 3
    assert runner.end_reason == "model"
    assert runner.state.output is not None
    assert runner.state.output.retries == 0


async def test_an_answer_cut_inside_a_tool_call_is_sent_back_with_the_call_answered_first() -> None:
    # A reply cut by max_tokens inside a tool call is the final answer (its call may not run), and it
    # does not fit: the message that sends it back answers the call first, as the service requires
    # of the message after a tool_use (the fake validates as the service does: no 400).
    fake = FakeMessagesAPI(
        [truncated_tool_reply(tool_call("get_weather", {"city": "Paris"}, id="toolu_cut")), text_reply(PARIS)]
    )
    final = await make_runner(fake, our_weather, output_format=Weather).until_done()
    assert parsed(final) == Weather(city="Paris", celsius=21)
    [cut, errors] = fake.requests[1].body["messages"][-1]["content"]
    assert cut["type"] == "tool_result"
    assert cut["tool_use_id"] == "toolu_cut"
    assert cut["is_error"] is True
    assert "did not run" in cut["content"]
    assert "max_tokens" in cut["content"]
    assert errors["type"] == "text"
    assert "does not match the required JSON schema" in errors["text"]


async def test_text_that_is_not_json_is_sent_back_as_invalid_json() -> None:
    fake = FakeMessagesAPI(weather_script(NOT_JSON, PARIS))
    final = await make_runner(fake, our_weather, output_format=Weather).until_done()
    assert "Invalid JSON" in fake.requests[2].body["messages"][-1]["content"]
    assert parsed(final) == Weather(city="Paris", celsius=21)


async def test_once_the_retries_are_used_up_the_error_carries_the_last_answer_and_its_errors() -> None:
    fake = FakeMessagesAPI(weather_script(WRONG, NOT_JSON, PARIS))
    runner = make_runner(fake, our_weather, output_format=Weather, output_retries=1)
    with pytest.raises(
        OutputValidationError, match=r"does not fit output_format=Weather after 2 tries"
    ) as caught:
        await runner.until_done()
    assert caught.value.answer.content[0].text == NOT_JSON
    assert caught.value.answer.parsed_output is None
    assert caught.value.errors[0].startswith("Invalid JSON")
    assert len(fake.requests) == 3
    assert runner.finished
    assert runner.end_reason == "model"
    assert runner.messages[-1]["content"][0]["text"] == NOT_JSON
    assert [message async for message in runner] == []  # the run ended


def test_output_retries_zero_gives_up_at_once_on_the_sync_runner() -> None:
    fake = FakeMessagesAPI(weather_script(WRONG))
    runner = make_sync_runner(fake, our_weather, output_format=Weather, output_retries=0)
    with pytest.raises(OutputValidationError, match=r"after 1 try \(output_retries=0\)"):
        runner.until_done()
    assert len(fake.requests) == 2


async def test_a_retry_counts_toward_max_iterations() -> None:
    fake = FakeMessagesAPI(weather_script(WRONG, PARIS))
    runner = make_runner(fake, our_weather, output_format=Weather, max_iterations=2)
    final = await runner.until_done()
    assert runner.end_reason == "max_iterations"
    assert len(fake.requests) == 2
    assert parsed(final) is None


async def test_a_refusal_is_not_sent_back() -> None:
    fake = FakeMessagesAPI([text_reply("I can't help with that.", stop_reason="refusal")])
    final = await make_runner(fake, output_format=Weather).until_done()
    assert parsed(final) is None
    assert len(fake.requests) == 1


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"output_format": {"type": "object"}}, r"must be a type .* not a schema dict"),
        ({"output_format": type("Opaque", (), {})}, r"has no JSON schema pydantic can make"),
        ({"output_format": object}, r"has no JSON schema pydantic can make"),  # a schema the SDK refuses
        ({"output_format": Weather, "output_retries": -1}, r"output_retries must be an int of 0 or more"),
        ({"output_format": Weather, "output_retries": True}, r"output_retries must be an int of 0 or more"),
        ({"output_retries": 2}, r"pass output_format=\.\.\. with it"),
        (
            {"output_format": Weather, "output_config": {"format": {"type": "json_schema", "schema": {}}}},
            r"Both output_format and output_config.format were provided.*not both",
        ),
    ],
)
def test_bad_input_is_refused_with_what_to_do(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ParamsError, match=message):
        make_sync_runner(FakeMessagesAPI([]), **options)


# -- saved and resumed ----------------------------------------------------------------------------


async def test_a_resumed_run_gives_the_same_parsed_output() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(weather_script(PARIS))
    first = await make_runner(
        fake, our_weather, output_format=Weather, checkpointer=store, run_id="r"
    ).until_done()
    loaded = await store.load("r")
    assert loaded is not None
    assert loaded.state.output is not None
    assert loaded.state.output.schema.startswith("sha256:")
    async with FakeMessagesAPI([]).async_client() as client:
        resumed = await ToolRunner.resume(
            client, run_id="r", checkpointer=store, tools=[our_weather], output_format=Weather
        )
        assert resumed.last_message is not None
        assert parsed(resumed.last_message) == parsed(first) == Weather(city="Paris", celsius=21)
        assert parsed(await resumed.until_done()) == parsed(first)


class Other(pydantic.BaseModel):
    city: str
    fahrenheit: int


@pytest.mark.parametrize(
    ("started", "resumed", "message"),
    [
        (Weather, Other, r"started with another output_format: the JSON schema of Other"),
        (Weather, None, r"has a typed answer .* resume it with the same output_format"),
        (None, Weather, r"started without output_format, so it cannot be resumed with output_format=Weather"),
    ],
)
async def test_a_run_resumed_with_another_schema_is_refused(started: Any, resumed: Any, message: str) -> None:
    store = MemoryCheckpointer()
    options: dict[str, Any] = {} if started is None else {"output_format": started}
    await make_runner(
        FakeMessagesAPI([text_reply(PARIS)]), checkpointer=store, run_id="r", **options
    ).until_done()
    again: dict[str, Any] = {} if resumed is None else {"output_format": resumed}
    async with FakeMessagesAPI([]).async_client() as client:
        with pytest.raises(ParamsError, match=message):
            await ToolRunner.resume(client, run_id="r", checkpointer=store, **again)


async def test_a_run_resumed_in_the_middle_of_a_retry_goes_on_from_there() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([*weather_script(WRONG), fault(400)])
    runner = make_runner(
        fake, our_weather, output_format=Weather, output_retries=1, checkpointer=store, run_id="r"
    )
    with pytest.raises(anthropic.BadRequestError):
        await runner.until_done()  # the retry's request failed: the process "dies" here
    loaded = await store.load("r")
    assert loaded is not None
    assert loaded.state.output is not None
    assert loaded.state.output.retries == 1
    assert "celsius" in loaded.state.messages[-1]["content"]  # the retry message is saved
    again = FakeMessagesAPI([text_reply(NOT_JSON)])
    async with again.async_client() as client:
        resumed = await ToolRunner.resume(
            client,
            run_id="r",
            checkpointer=store,
            tools=[our_weather],
            output_format=Weather,
            output_retries=1,
        )
        # The retry was used before the crash.
        with pytest.raises(OutputValidationError, match="after 2 tries"):
            await resumed.until_done()
    assert again.requests[0].body["messages"] == fake.requests[2].body["messages"]


# -- streaming ------------------------------------------------------------------------------------


async def test_streaming_gives_the_typed_answer_when_the_stream_ends() -> None:
    fake = FakeMessagesAPI(weather_script(WRONG, PARIS))
    runner = make_runner(fake, our_weather, output_format=Weather, stream=True)
    outputs: list[Any] = []
    async for stream in runner:
        async for _ in stream:
            pass
        outputs.append(parsed(await stream.get_final_message()))
    assert outputs == [None, None, Weather(city="Paris", celsius=21)]
    assert parsed(await runner.until_done()) == Weather(city="Paris", celsius=21)
    assert all(json.dumps(request.body).count('"format"') == 1 for request in fake.requests)


def test_the_sync_runner_streams_the_typed_answer_too() -> None:
    fake = FakeMessagesAPI(weather_script(PARIS))
    runner = make_sync_runner(fake, our_weather, output_format=Weather, stream=True)
    outputs = [parsed(cast(Any, stream).get_final_message()) for stream in runner]
    assert outputs == [None, Weather(city="Paris", celsius=21)]
    assert parsed(runner.until_done()) == Weather(city="Paris", celsius=21)

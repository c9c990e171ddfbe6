"""The SDK runner's method names and its sync streaming, so migrated code runs unchanged."""

from __future__ import annotations

import pytest
from anthropic.lib.streaming import BetaMessageStream, MessageStream
from anthropic.lib.tools import beta_tool

from tests.helpers import MODEL, USER, plain, results_of, roles
from toolrunner import RunnerEvent, SyncToolRunner, TextDelta, ToolRunner
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@beta_tool
def get_weather(city: str) -> str:
    """Get the weather of a city."""
    return f"{city}: sunny"


def script() -> FakeMessagesAPI:
    return FakeMessagesAPI(
        [
            tool_reply(tool_call("get_weather", {"city": "Oslo"}, id="a"), text="Let me look."),
            text_reply("Sunny."),
        ]
    )


async def test_append_messages_and_generate_tool_call_response_are_the_sdks_names() -> None:
    fake = script()
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[get_weather]
    )
    async for message in runner:
        response = await runner.generate_tool_call_response()
        if response is not None:
            assert response == await runner.generate_tool_response()  # one run, cached
            runner.append_messages(message, response)  # the SDK's habit: the body appends them itself
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]
    assert results_of(runner.messages[2]) == [("a", "Oslo: sunny", False)]


def test_the_sync_runner_takes_the_sdks_names_too() -> None:
    fake = script()
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=100, messages=[USER], tools=[get_weather])
    for message in runner:
        response = runner.generate_tool_call_response()
        if response is not None:
            runner.append_messages(message, response)
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]


def test_sync_streaming_yields_the_sdks_sync_message_stream() -> None:
    fake = script()
    events: list[RunnerEvent] = []
    texts: list[str] = []
    with SyncToolRunner(
        fake.client(),
        stream=True,
        model=MODEL,
        max_tokens=100,
        messages=[USER],
        tools=[get_weather],
        on_event=events.append,
    ) as runner:
        for stream in runner:
            assert isinstance(stream, MessageStream)
            texts.append("".join(stream.text_stream))
            assert stream.get_final_message().content[0].type == "text"
    assert texts == ["Let me look.", "Sunny."]
    assert "".join(event.text for event in events if isinstance(event, TextDelta)) == "Let me look.Sunny."
    assert [request.stream for request in fake.requests] == [True, True]
    assert results_of(runner.messages[2]) == [("a", "Oslo: sunny", False)]
    assert plain(runner.messages[3])["content"] == [{"type": "text", "text": "Sunny."}]


def test_a_sync_stream_the_body_leaves_unread_is_read_by_the_runner() -> None:
    fake = script()
    runner = SyncToolRunner(
        fake.client(),
        stream=True,
        model=MODEL,
        max_tokens=100,
        messages=[USER],
        tools=[get_weather],
        betas=["x"],
    )
    kinds: list[type] = [type(stream) for stream in runner]
    assert kinds == [BetaMessageStream, BetaMessageStream]
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]
    assert runner.until_done().content[0].type == "text"

"""The SDK runner's method names and its sync streaming, so migrated code runs unchanged."""

from __future__ import annotations

import pydantic
import pytest
from anthropic.lib.streaming import BetaMessageStream, MessageStream
from anthropic.lib.tools import beta_tool

from tests.support.helpers import MODEL, USER, plain, results_of, roles
from toolrunner import ParamsError, RunnerEvent, SyncToolRunner, TextDelta, ToolRunner
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


def test_thread_false_is_what_a_runner_always_does_and_is_not_sent() -> None:
    fake = script()
    runner = SyncToolRunner(
        fake.client(), model=MODEL, max_tokens=100, messages=[USER], tools=[get_weather], thread=False
    )
    assert runner.until_done().content[0].type == "text"
    assert all("thread" not in request.body for request in fake.requests)
    assert all("beta" not in str(request.url) for request in fake.requests)


def test_a_server_held_thread_is_refused_with_what_to_do() -> None:
    client = FakeMessagesAPI().client()
    with pytest.raises(ParamsError, match=r"thread=\{'type': 'create'\} asks for a server-held thread"):
        SyncToolRunner(client, model=MODEL, max_tokens=10, messages=[USER], thread={"type": "create"})  # pyright: ignore[reportArgumentType]
    runner = SyncToolRunner(client, model=MODEL, max_tokens=10, messages=[USER])
    with pytest.raises(ParamsError, match="'thread' is not a request param of a runner"):
        runner.set_messages_params({**runner.params, "thread": {"type": "create"}})


def test_sync_streaming_with_run_tools_eagerly_is_refused_with_a_true_reason() -> None:
    with pytest.raises(
        ParamsError, match=r"SyncToolRunner\(stream=True\) does not take run_tools_eagerly=True"
    ):
        SyncToolRunner(
            script().client(),
            model=MODEL,
            max_tokens=100,
            messages=[USER],
            stream=True,
            run_tools_eagerly=True,
        )


def test_output_format_is_a_runner_option_not_a_param_of_set_messages_params() -> None:
    class Answer(pydantic.BaseModel):
        text: str

    runner = SyncToolRunner(
        script().client(), model=MODEL, max_tokens=100, messages=[USER], output_format=Answer
    )
    with pytest.raises(ParamsError, match=r"output_format is a runner option.*ToolRunner\(\.\.\.\)"):
        runner.set_messages_params(lambda params: {**params, "output_format": Answer})

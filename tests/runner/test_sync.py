"""The blocking front end reuses the async lifecycle."""

from __future__ import annotations

import threading
from typing import Any

import anthropic
import pytest

from tests.support.helpers import MODEL, USER, make_sync_runner, roles
from toolrunner import ParamsError, SyncToolRunner, ToolRunnerError, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

GUARD = 10


def weather_script() -> list[Any]:
    return [
        tool_reply(tool_call("get_weather", {"city": "Paris"}), tool_call("get_weather", {"city": "Berlin"})),
        text_reply("Sunny in both."),
    ]


barrier = threading.Barrier(2, timeout=GUARD)


@tool
def get_weather(city: str) -> str:
    """Get the weather; both calls must run at once to pass the barrier."""
    barrier.wait()
    return f"{city}: sunny"


def make(fake: FakeMessagesAPI, **kwargs: Any) -> SyncToolRunner:
    return make_sync_runner(fake, get_weather, **kwargs)


def test_for_loop_runs_the_same_lifecycle_with_concurrent_sync_tools() -> None:
    fake = FakeMessagesAPI(weather_script())
    runner = make(fake)
    replies = list(runner)
    assert [m.stop_reason for m in replies] == ["tool_use", "end_turn"]
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]
    assert isinstance(replies[0], anthropic.types.Message)


def test_break_and_resume_and_until_done() -> None:
    fake = FakeMessagesAPI(weather_script())
    runner = make(fake)
    for message in runner:
        assert message.stop_reason == "tool_use"
        break
    assert roles(runner.messages) == ["user"]
    final = runner.until_done()
    assert final.content[0].type == "text"
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]


def test_generate_tool_response_and_push_messages_in_the_body() -> None:
    fake = FakeMessagesAPI(weather_script())
    with make(fake) as runner:
        for message in runner:
            response = runner.generate_tool_response()
            if response is not None:
                runner.push_messages(message, response)
    assert roles(fake.requests[1].body["messages"]) == ["user", "assistant", "user"]


def test_async_tools_work_from_sync_code() -> None:
    @tool
    async def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    fake = FakeMessagesAPI([tool_reply(tool_call("shout", {"text": "hi"})), text_reply("ok")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER], tools=[shout])
    runner.until_done()
    assert runner.messages[2]["content"][0]["content"] == "HI"


@pytest.mark.anyio
async def test_an_async_client_is_refused_with_a_pointer_to_tool_runner() -> None:
    fake = FakeMessagesAPI([])
    async with fake.async_client() as client:
        with pytest.raises(ParamsError, match="use ToolRunner"):
            SyncToolRunner(client, model=MODEL, max_tokens=64, messages=[USER])  # type: ignore[arg-type]


def test_a_nested_loop_over_one_runner_is_a_toolrunner_error_and_the_outer_loop_goes_on() -> None:
    fake = FakeMessagesAPI([text_reply("first"), text_reply("second")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER])
    seen: list[str] = []
    for message in runner:
        seen.append(message.stop_reason or "")
        with pytest.raises(ToolRunnerError, match=r"already being iterated.*finish or break the outer loop"):
            for _ in runner:
                pass
        if len(seen) == 1:
            runner.push_messages({"role": "user", "content": "And then?"})
    assert len(seen) == 2
    assert runner.end_reason == "model"


def test_entering_a_runner_twice_or_inside_its_loop_is_a_toolrunner_error() -> None:
    fake = FakeMessagesAPI([text_reply("done")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER])
    with runner:
        with pytest.raises(
            ToolRunnerError, match=r"already entered or being iterated.*one `with runner:` block"
        ):
            runner.__enter__()
        assert runner.until_done().content[0].type == "text"
    other = SyncToolRunner(
        FakeMessagesAPI([text_reply("done")]).client(), model=MODEL, max_tokens=64, messages=[USER]
    )
    for _ in other:
        with pytest.raises(ToolRunnerError, match="already entered or being iterated"):
            other.__enter__()
    assert other.end_reason == "model"

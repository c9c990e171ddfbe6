"""Extended thinking: thinking and redacted_thinking blocks go back to the service exactly as they came.

The service requires the thinking blocks of a tool-calling turn, signatures included, in the next
request; a runner that reorders, drops or rewrites them breaks tool use with thinking on.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.helpers import MODEL, USER
from toolrunner import ToolRunner, text_of, thinking_text, tool
from toolrunner.testing import FakeMessagesAPI, message_reply

pytestmark = pytest.mark.anyio

THINKING = {
    "type": "thinking",
    "thinking": "The user wants Paris.\nI should call the tool.",
    "signature": "EqQBCkYIBxgCKkA=",
}
REDACTED = {
    "type": "redacted_thinking",
    "data": "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP",
}
TEXT = {"type": "text", "text": "Let me look that up."}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}


@tool
async def get_weather(city: str) -> str:
    """Get the weather for a city."""
    return f"{city}: sunny"


def script() -> list[Any]:
    return [
        message_reply([THINKING, REDACTED, TEXT, CALL], stop_reason="tool_use"),
        message_reply(
            [
                {"type": "thinking", "thinking": "Done.", "signature": "sig2"},
                {"type": "text", "text": "Sunny."},
            ],
            stop_reason="end_turn",
        ),
    ]


@pytest.mark.parametrize("stream", [False, True])
async def test_thinking_blocks_are_sent_back_exactly_as_received(stream: bool) -> None:
    fake = FakeMessagesAPI(script())
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=2048,
        messages=[USER],
        tools=[get_weather],
        thinking={"type": "enabled", "budget_tokens": 1024},
        stream=stream,  # type: ignore[call-overload]
    )
    final = await runner.until_done()
    assert fake.requests[1].body["messages"][1] == {
        "role": "assistant",
        "content": [THINKING, REDACTED, TEXT, CALL],
    }
    assert fake.requests[1].body["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert thinking_text(final) == "Done."
    assert text_of(final) == "Sunny."


async def test_thinking_text_apart_from_the_text() -> None:
    fake = FakeMessagesAPI([message_reply([THINKING, REDACTED, TEXT], stop_reason="end_turn")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=2048, messages=[USER])
    first = await runner.until_done()
    assert thinking_text(first) == THINKING["thinking"]
    assert text_of(first) == TEXT["text"]
    # the same helpers read the history's plain data
    assert thinking_text(runner.messages[1]) == THINKING["thinking"]
    assert text_of(runner.messages[1]) == TEXT["text"]

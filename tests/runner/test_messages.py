"""Messages the service would refuse are refused before they are sent or kept: values JSON cannot
carry at the push, and histories the service answers with a 400 before the request. The fake
Messages API refuses the same histories (the two checks are kept consistent)."""

from __future__ import annotations

import enum
from typing import Any

import anthropic
import pytest
from anthropic.types import Message

from tests.support.helpers import MODEL, USER, make_runner
from toolrunner import HistoryError, MemoryCheckpointer, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply

pytestmark = pytest.mark.anyio


@tool
def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def build(fake: FakeMessagesAPI, **options: Any) -> ToolRunner:
    return make_runner(fake, look, **options)


# -- values JSON cannot carry (item 11) -------------------------------------------------------------


class Opaque:
    """An object JSON cannot carry."""


@pytest.mark.parametrize(
    ("block", "named"),
    [
        ({"type": "text", "text": "x", "tags": {"a", "b"}}, "a 'set' at ['content'][0]['tags']"),
        ({"type": "text", "text": "x", "when": Opaque()}, "a 'Opaque' at ['content'][0]['when']"),
        ({"type": "text", "text": "x", "v": [1.0, float("nan")]}, "a NaN or infinite number (nan) at ['content'][0]['v'][1]"),
        ({"type": "text", "text": "x", "ids": {1: "a"}}, "the key 1 (a 'int'; JSON keys are str) at ['content'][0]['ids']"),
    ],
)  # fmt: skip
async def test_a_pushed_value_json_cannot_carry_is_refused_and_the_run_goes_on(
    block: dict[str, Any], named: str
) -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([text_reply("first"), text_reply("second")])
    runner = build(fake, checkpointer=store, run_id="r")
    async for message in runner:
        if message.content[0].type == "text" and message.content[0].text == "first":
            before = runner.state
            with pytest.raises(HistoryError) as raised:
                runner.push_messages({"role": "user", "content": [block]})
            assert named in str(raised.value)
            assert str(raised.value).startswith("message 0 holds ")
            assert "replace it with JSON data" in str(raised.value)
            assert runner.state is before  # nothing was appended, nothing changed
            runner.push_messages({"role": "user", "content": "And then?"})
    assert runner.end_reason == "model"
    saved = await store.load("r")
    assert saved is not None
    assert saved.state.messages[-1]["content"][0]["text"] == "second"


def test_a_given_history_holding_a_set_is_refused_when_the_runner_is_made() -> None:
    history = [{"role": "user", "content": [{"type": "text", "text": "x", "tags": {"a"}}]}]
    with pytest.raises(HistoryError, match=r"message 0 holds a 'set' at \['content'\]\[0\]\['tags'\]"):
        ToolRunner(FakeMessagesAPI([]).async_client(), model=MODEL, max_tokens=64, messages=history)


def test_sdk_models_and_str_subclasses_in_a_message_are_json() -> None:
    class Tone(enum.StrEnum):
        CALM = "calm"

    reply = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [{"type": "tool_use", "id": "a", "name": "look", "input": {"q": Tone.CALM}}],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    history = [USER, reply.to_param(), answer({**RESULT, "content": Tone.CALM})]  # blocks as SDK models
    runner = ToolRunner(FakeMessagesAPI([]).async_client(), model=MODEL, max_tokens=64, messages=history)
    assert len(runner.messages) == 3


# -- histories the service refuses (item 19) --------------------------------------------------------

ASSISTANT = {"role": "assistant", "content": "Hello."}
CALL = {
    "role": "assistant",
    "content": [{"type": "tool_use", "id": "a", "name": "look", "input": {"q": "a"}}],
}


def answer(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


RESULT = {"type": "tool_result", "tool_use_id": "a", "content": "found a"}
TEXT = {"type": "text", "text": "Thanks."}

REFUSED = [
    pytest.param([], "the history is empty", id="empty"),
    pytest.param([ASSISTANT, USER], "messages[0] is the first message and has the role 'assistant'", id="assistant-first"),
    pytest.param([USER, CALL, answer(TEXT, RESULT)], "messages[2] has a tool_result after a 'text' block", id="text-before-result"),
    pytest.param([answer({"type": "text", "text": ""})], "messages[0].content[0] is an empty text block", id="empty-text"),
    pytest.param([USER, ASSISTANT, answer(TEXT, {"type": "text", "text": ""})], "messages[2].content[1] is an empty text block", id="empty-text-later"),
    pytest.param(
        [USER, CALL, answer({**RESULT, "content": [{"type": "text", "text": ""}]})],
        "messages[2].content[0] is a tool_result with an empty text block",
        id="empty-text-in-result",
    ),
]  # fmt: skip


@pytest.mark.parametrize(("history", "named"), REFUSED)
async def test_a_history_the_service_refuses_is_refused_before_sending(
    history: list[Any], named: str
) -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=history, tools=[look])
    with pytest.raises(HistoryError, match=r"would reject|rejects") as raised:
        await runner.until_done()
    assert named in str(raised.value)
    assert fake.requests == []  # never sent, so never a 400
    # The run goes on once the history is fixed.
    runner.set_messages_params(lambda params: {**params, "messages": [USER]})
    assert (await runner.until_done()).content[0].type == "text"


@pytest.mark.parametrize(("history", "named"), REFUSED)
async def test_the_fake_refuses_the_same_histories_with_a_400(history: list[Any], named: str) -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    with pytest.raises(anthropic.BadRequestError, match="messages"):
        await fake.async_client().messages.create(model=MODEL, max_tokens=64, messages=history)


async def test_histories_the_service_takes_are_sent() -> None:
    compacted = {"role": "assistant", "content": [{"type": "compaction", "content": "Earlier: hello."}]}
    fake = FakeMessagesAPI([text_reply("a"), text_reply("b")])
    for history in ([compacted, USER], [USER, CALL, answer(RESULT, TEXT)]):
        runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=history, tools=[look])
        await runner.until_done()
    assert len(fake.requests) == 2  # each answered with its reply, not a 400


async def test_a_tool_use_answered_twice_is_refused_before_it_is_sent() -> None:
    from toolrunner._core.message_checks import check_history

    call: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "a", "name": "t", "input": {}}],
    }
    twice: dict[str, Any] = {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "a", "content": c} for c in ("1", "2")],
    }
    with pytest.raises(HistoryError, match=r"messages\[2\] has two tool_result blocks for 'a'"):
        check_history([USER, call, twice])
    fake = FakeMessagesAPI([])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=10, messages=[USER, call, twice])
    with pytest.raises(HistoryError, match="two tool_result blocks"):
        await runner.until_done()
    assert fake.requests == []

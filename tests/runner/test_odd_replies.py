"""What a hostile model sends must not break the loop (docs/errors.md, "Hostile replies"): one
tool_use id twice in a reply, ids the service rejects, an id used again in a later turn, input
nested 300 deep, lone surrogates, an empty reply. Each test failed before the mechanism under it
was fixed.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from tests.support.counted_tools import look_numbered as look, runs
from tests.support.helpers import MODEL, USER, make_runner, plain, results_of, roles, sent_messages
from toolrunner import (
    HistoryError,
    MalformedReplyError,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]


def encodable(fake: FakeMessagesAPI) -> None:
    """Every request the fake got was sent as valid UTF-8 JSON (the fake parsed it)."""
    for request in fake.requests:
        json.dumps(request.body, ensure_ascii=False).encode("utf-8")


def _use(id: str, input: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": "look", "input": input or {"q": "x"}}


def _result(id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id, "content": "ok"}


# -- 4. duplicate tool_use ids in one reply ------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
async def test_a_reply_that_calls_one_id_twice_is_refused_whole_and_the_request_can_be_sent_again(
    stream: bool,
) -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("look", {"q": "a"}, id="dup"), tool_call("look", {"q": "b"}, id="dup")),
            tool_reply(tool_call("look", {"q": "c"}, id="one")),
            text_reply("done"),
        ]
    )
    runner = make_runner(fake, look, stream=stream)
    with pytest.raises(MalformedReplyError, match="two tool_use blocks with the id 'dup'"):
        async for _ in runner:
            pass
    assert runs == {}
    assert plain(runner.messages) == [USER]
    assert runner.requests_sent == 0
    await runner.until_done()
    assert runs == {"c": 1}
    assert sent_messages(fake)[1] == sent_messages(fake)[0]  # the same request again


async def test_a_reply_with_a_tool_use_id_the_service_rejects_is_refused_whole() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="call 1")), text_reply("done")])
    runner = make_runner(fake, look)
    with pytest.raises(MalformedReplyError, match=r"a tool_use id the service does not accept \('call 1'"):
        await runner.until_done()
    assert runs == {}
    assert plain(runner.messages) == [USER]
    await runner.until_done()  # the request again; the next reply is fine
    assert len(fake.requests) == 2


async def test_a_history_with_a_tool_use_id_the_service_rejects_is_refused_before_sending() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    odd = {"role": "assistant", "content": [_use("call 1")]}
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER, odd, {"role": "user", "content": [_result("call 1")]}],
    )
    with pytest.raises(
        HistoryError, match=r"messages\[1\] has a tool_use id the service does not accept.*sanitize_tool_id"
    ):
        await runner.until_done()
    assert fake.requests == []


async def test_a_history_that_calls_one_id_twice_is_refused_before_sending() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    twice = {"role": "assistant", "content": [_use("x"), _use("x")]}
    answer = {"role": "user", "content": [_result("x")]}
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER, twice, answer])
    with pytest.raises(HistoryError, match=r"messages\[1\] has two tool_use blocks with the id 'x'"):
        await runner.until_done()
    assert fake.requests == []


# -- 5. a tool_use id used again in a later turn ---------------------------------------------------------


async def test_an_id_used_again_in_a_later_turn_is_a_new_call() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("look", {"q": "a"}, id="call_1")),
            tool_reply(tool_call("look", {"q": "a"}, id="call_1")),
            text_reply("done"),
        ]
    )
    runner = make_runner(fake, look)
    await runner.until_done()
    assert runs == {"a": 2}
    assert results_of(runner.messages[4])[0][1] == "found a (run 2)"


async def test_a_history_set_by_the_body_with_a_used_id_runs_its_call() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="call_1")), text_reply("done")])
    runner = make_runner(fake, look)
    async for _ in runner:
        await runner.generate_tool_response()  # call_1 ran for "a"
        imported = {"role": "assistant", "content": [_use("call_1", {"q": "b"})]}
        runner.set_messages_params({**runner.params, "messages": [USER, imported]})
        break
    await runner.until_done()
    assert runs == {"a": 1, "b": 1}
    assert results_of(runner.messages[2])[0][1] == "found b (run 1)"


# -- 6. deeply nested input ---------------------------------------------------------------------------


async def test_an_input_nested_300_deep_gets_an_error_result_and_the_loop_goes_on() -> None:
    deep: dict[str, Any] = {}
    inner = deep
    for _ in range(300):
        inner["q"] = {}
        inner = inner["q"]
    fake = FakeMessagesAPI([tool_reply(tool_call("look", deep, id="deep")), text_reply("done")])
    runner = make_runner(fake, look)
    await runner.until_done()
    assert runs == {}
    [(_, content, is_error)] = results_of(sent_messages(fake)[1][2])
    assert is_error
    assert "q: Input should be a valid string" in content
    assert sent_messages(fake)[1][1]["content"][0]["input"] == deep  # sent back as the model sent it


# -- 7. lone surrogates in a reply -----------------------------------------------------------------------


async def test_lone_surrogates_in_a_reply_are_kept_as_replacement_characters(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("look", {"q": "caf\udce9.txt"}, id="s"), text="Reading caf\udce9.txt"),
            text_reply("ok"),
        ]
    )

    @tool
    async def look(q: str) -> int:  # no echo: a tool's own results are the adapter's to repair
        """Measure a name."""
        return len(q)

    with caplog.at_level(logging.WARNING, logger="toolrunner"):
        await make_runner(fake, look).until_done()
    encodable(fake)
    sent = sent_messages(fake)[1][1]["content"]
    assert sent[0]["text"] == "Reading caf\ufffd.txt"
    assert sent[1]["input"] == {"q": "caf\ufffd.txt"}
    assert "lone surrogates" in caplog.text


async def test_a_pushed_message_with_lone_surrogates_is_refused() -> None:
    runner = make_runner(FakeMessagesAPI([]), look)
    with pytest.raises(HistoryError, match="lone surrogates"):
        runner.push_messages({"role": "user", "content": "see caf\udce9.txt"})
    assert plain(runner.messages) == [USER]


# -- 9. an empty reply ---------------------------------------------------------------------------------


async def test_an_empty_reply_is_not_appended_so_a_follow_up_makes_a_valid_history() -> None:
    fake = FakeMessagesAPI([message_reply([], stop_reason="end_turn"), text_reply("Hello again.")])
    runner = make_runner(fake, look)
    await runner.until_done()
    assert runner.end_reason == "model"
    assert plain(runner.messages) == [USER]
    runner.push_messages({"role": "user", "content": "Are you there?"})
    final = await runner.until_done()  # the fake validates like the service: no 400
    assert final.content[0].type == "text"
    assert roles(sent_messages(fake)[1]) == ["user", "user"]


async def test_a_history_with_an_empty_message_is_refused_before_sending() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    empty: dict[str, Any] = {"role": "assistant", "content": []}
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER, empty, USER])
    with pytest.raises(HistoryError, match=r"messages\[1\] has empty content"):
        await runner.until_done()
    assert fake.requests == []

"""What a hostile model, a careless tool and a finished conversation must not break (issue 10).

Each test here failed before the mechanism under it was fixed; see docs/errors.md ("Hostile
replies") for the behaviour each one pins down.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections import Counter
from typing import Any

import anthropic
import anyio
import pytest

from tests.helpers import MODEL, USER, plain, results_of, roles, sent_messages
from toolrunner import (
    HistoryError,
    MalformedReplyError,
    ParamsError,
    SyncToolRunner,
    ToolRunner,
    ToolRunnerError,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

runs: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    runs.clear()


@tool
async def look(q: str) -> str:
    """Look something up."""
    runs[q] += 1
    return f"found {q} (run {runs[q]})"


def build(fake: FakeMessagesAPI, *tools: Any, **options: Any) -> ToolRunner:
    return ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=list(tools or [look]),
        **options,
    )


def encodable(fake: FakeMessagesAPI) -> None:
    """Every request the fake got was sent as valid UTF-8 JSON (the fake parsed it)."""
    for request in fake.requests:
        json.dumps(request.body, ensure_ascii=False).encode("utf-8")


# -- 1. a tool cancelled from inside ----------------------------------------------------------------


@tool
async def cancelled_inside() -> str:
    """Await something that someone else cancelled."""
    runs["cancelled_inside"] += 1
    if anyio.get_cancelled_exc_class() is asyncio.CancelledError:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        await future  # raises CancelledError, but this task was not cancelled
    raise asyncio.CancelledError  # on trio, asyncio's CancelledError is just an exception
    return "never"


async def test_a_tool_cancelled_from_inside_gets_an_error_result_and_its_siblings_run_once() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("cancelled_inside", {}, id="c"), tool_call("look", {"q": "a"}, id="a")),
            text_reply("ok"),
        ]
    )
    with anyio.fail_after(10):
        await build(fake, cancelled_inside, look).until_done()
    assert runs == {"cancelled_inside": 1, "a": 1}
    [(_, content, is_error), (_, sibling, sibling_error)] = results_of(sent_messages(fake)[1][2])
    assert is_error
    assert "cancelled from inside the tool" in content
    assert (sibling, sibling_error) == ("found a (run 1)", False)


async def test_a_cancellation_from_outside_still_propagates() -> None:
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Take a while."""
        runs["slow"] += 1
        started.set()
        await anyio.sleep_forever()
        return "never"

    fake = FakeMessagesAPI([tool_reply(tool_call("slow", {}, id="s")), text_reply("ok")])
    runner = build(fake, slow)
    with anyio.CancelScope() as scope:
        async for _ in runner:
            async with anyio.create_task_group() as group:
                group.start_soon(runner.generate_tool_response)
                await started.wait()
                scope.cancel()
    assert scope.cancelled_caught
    assert roles(runner.messages) == ["user"]  # nothing appended: the turn can be finished again


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
    runner = build(fake, stream=stream)
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
    runner = build(fake)
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
    runner = build(fake)
    await runner.until_done()
    assert runs == {"a": 2}
    assert results_of(runner.messages[4])[0][1] == "found a (run 2)"


async def test_a_history_set_by_the_body_with_a_used_id_runs_its_call() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="call_1")), text_reply("done")])
    runner = build(fake)
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
    runner = build(fake)
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
        await build(fake, look).until_done()
    encodable(fake)
    sent = sent_messages(fake)[1][1]["content"]
    assert sent[0]["text"] == "Reading caf\ufffd.txt"
    assert sent[1]["input"] == {"q": "caf\ufffd.txt"}
    assert "lone surrogates" in caplog.text


async def test_a_pushed_message_with_lone_surrogates_is_refused() -> None:
    runner = build(FakeMessagesAPI([]))
    with pytest.raises(HistoryError, match="lone surrogates"):
        runner.push_messages({"role": "user", "content": "see caf\udce9.txt"})
    assert plain(runner.messages) == [USER]


# -- 9. an empty reply ---------------------------------------------------------------------------------


async def test_an_empty_reply_is_not_appended_so_a_follow_up_makes_a_valid_history() -> None:
    fake = FakeMessagesAPI([message_reply([], stop_reason="end_turn"), text_reply("Hello again.")])
    runner = build(fake)
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


# -- 10. a follow-up after the end ----------------------------------------------------------------------


async def test_a_follow_up_pushed_after_the_end_opens_the_loop_again() -> None:
    fake = FakeMessagesAPI(
        [text_reply("Paris."), tool_reply(tool_call("look", {"q": "b"})), text_reply("Berlin.")]
    )
    runner = build(fake, max_iterations=2)
    await runner.until_done()
    assert runner.finished
    runner.push_messages({"role": "user", "content": "And Berlin?"})
    assert not runner.finished
    assert runner.end_reason is None
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert len(fake.requests) == 3  # max_iterations counts from the reopening: 2 more
    assert runner.end_reason == "model"
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant", "user", "assistant"]


async def test_a_closed_loop_yields_nothing_until_a_follow_up_opens_it_again() -> None:
    fake = FakeMessagesAPI([text_reply("one"), text_reply("two")])
    runner = build(fake)
    await runner.aclose()
    assert [message async for message in runner] == []
    assert runner.end_reason == "closed"
    runner.push_messages({"role": "user", "content": "Still there?"})
    assert (await runner.until_done()).content[0].type == "text"
    assert len(fake.requests) == 1


async def test_set_messages_params_after_the_end_opens_the_loop_again() -> None:
    fake = FakeMessagesAPI([text_reply("one"), text_reply("two")])
    runner = build(fake)
    await runner.until_done()
    runner.set_messages_params(lambda params: {**params, "messages": [{"role": "user", "content": "Again."}]})
    assert (await runner.until_done()).content[0].type == "text"
    assert len(fake.requests) == 2


async def test_a_token_budget_counts_the_whole_runner_so_a_follow_up_over_it_is_not_sent() -> None:
    fake = FakeMessagesAPI([text_reply("one")])
    runner = build(fake, max_total_tokens=10)
    await runner.until_done()  # the fake's usage: 15 tokens
    runner.push_messages({"role": "user", "content": "More?"})
    async for _ in runner:
        pytest.fail("no request over the budget")
    assert runner.end_reason == "token_budget"
    assert len(fake.requests) == 1


# -- 12. params that cannot be sent ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"model": None, "max_tokens": 10}, "model must be a model id"),
        ({"model": "", "max_tokens": 10}, "model must be a model id"),
        ({"model": MODEL, "max_tokens": "100"}, "max_tokens must be a positive int, not '100'"),
        ({"model": MODEL, "max_tokens": 0}, "max_tokens must be a positive int"),
        ({"model": MODEL, "max_tokens": True}, "max_tokens must be a positive int"),
        ({"model": MODEL, "max_token": 10}, "'max_token' is not a parameter.*Did you mean 'max_tokens'"),
    ],
)
async def test_params_that_cannot_be_sent_are_refused_before_anything_is_sent(
    params: dict[str, Any], match: str
) -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    with pytest.raises(ParamsError, match=match):
        ToolRunner(fake.async_client(), messages=[USER], **params)
    runner = build(fake)
    with pytest.raises(ParamsError, match=match):
        runner.set_messages_params({"messages": [USER], **params})
    assert fake.requests == []


# -- 13. the wrong front end ---------------------------------------------------------------------------


def test_a_plain_for_loop_over_a_tool_runner_says_what_to_use() -> None:
    runner = build(FakeMessagesAPI([]))
    with pytest.raises(TypeError, match=r"use `async for message in runner`.*SyncToolRunner"):
        iter(runner)  # pyright: ignore[reportUnusedCallResult]  # what a `for` loop calls first


async def test_a_sync_runner_inside_an_event_loop_is_refused() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER])
    with pytest.raises(ToolRunnerError, match=r"inside a running (asyncio|trio) event loop"):
        for _ in runner:
            pass
    with pytest.raises(ToolRunnerError, match="inside a running"):
        runner.until_done()
    assert fake.requests == []


async def test_a_sync_runner_in_a_worker_thread_of_an_event_loop_runs() -> None:
    fake = FakeMessagesAPI([text_reply("fine")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER])
    final = await anyio.to_thread.run_sync(runner.until_done)
    assert isinstance(final, anthropic.types.Message)


def _use(id: str, input: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": "look", "input": input or {"q": "x"}}


def _result(id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id, "content": "ok"}


# -- params and histories no request could carry ---------------------------------------------------


@pytest.mark.parametrize(
    ("options", "hint"),
    [
        ({"max_iteration": 3}, "max_iterations"),
        ({"max_total_token": 9}, "max_total_tokens"),
        ({"max_token": 9}, "max_tokens"),
    ],
)
def test_a_misspelled_option_or_param_gets_the_nearest_name(options: dict[str, Any], hint: str) -> None:
    with pytest.raises(ParamsError, match=f"Did you mean {hint!r}"):
        build(FakeMessagesAPI([]), **options)


def test_a_param_with_lone_surrogates_is_refused_before_anything_is_sent() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    with pytest.raises(ParamsError, match="'system' holds text with lone surrogates"):
        build(fake, system="Files: caf\udce9.txt")
    runner = build(fake)
    with pytest.raises(ParamsError, match="'system' holds text with lone surrogates"):
        runner.set_messages_params(lambda params: {**params, "system": "caf\udce9"})
    assert fake.requests == []


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_a_given_history_holding_nan_is_refused_with_what_to_do(number: float) -> None:
    history = [
        USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "look", "input": {"v": number}}],
        },
    ]
    with pytest.raises(HistoryError, match="message 1 holds a NaN or infinite number"):
        ToolRunner(FakeMessagesAPI([]).async_client(), model=MODEL, max_tokens=64, messages=history)
    runner = build(FakeMessagesAPI([]))
    with pytest.raises(HistoryError, match="message 0 holds a NaN"):
        runner.push_messages({"role": "user", "content": [{"type": "text", "text": "x", "v": number}]})

"""Compaction: the pure choice of what to replace (property tests), client-side compaction
(``compaction_control``), the explicit server-side ``compact_before_next_turn()``, and the
``stop_reason="compaction"`` of server-side context management."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from anthropic.types.beta import BetaContextManagementConfigParam
from hypothesis import given, strategies as st

from tests.support.helpers import MODEL, USER, plain, results_of, roles
from toolrunner import ParamsError, ToolRunner, tool
from toolrunner._core.compaction import (
    DEFAULT_SUMMARY_PROMPT,
    CompactionControl,
    split_point,
    summarized_history,
    summary_request,
)
from toolrunner._core.message_checks import check_history
from toolrunner._core.messages import client_tool_calls
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


# -- the pure part ----------------------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """Valid histories: a prompt, then turns of replies (some calling tools, some after system
    messages) answered by tool results or by a new prompt; the last reply may be left unanswered."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    ids = iter(range(10_000))
    for _ in range(draw(st.integers(0, 6))):
        if draw(st.booleans()):
            messages.append({"role": "system", "content": "Note."})
        calls = [f"toolu_{next(ids)}" for _ in range(draw(st.integers(0, 3)))]
        content: list[dict[str, Any]] = [{"type": "text", "text": "Working."}]
        content += [{"type": "tool_use", "id": call, "name": "t", "input": {}} for call in calls]
        messages.append({"role": "assistant", "content": content})
        if calls:
            results = [{"type": "tool_result", "tool_use_id": call, "content": "ok"} for call in calls]
            if draw(st.booleans()):
                results.append({"type": "text", "text": "Also this."})
            messages.append({"role": "user", "content": results})
        else:
            messages.append({"role": "user", "content": "Next."})
    if draw(st.booleans()):
        messages.append(
            {"role": "assistant", "content": [{"type": "tool_use", "id": "last", "name": "t", "input": {}}]}
        )
    return messages


@given(histories(), st.integers(0, 4))
def test_the_kept_messages_never_separate_a_tool_use_from_its_result(
    messages: list[dict[str, Any]], keep: int
) -> None:
    check_history(messages[:-1] if client_tool_calls(messages[-1]) else messages)
    point = split_point(messages, keep)
    assert 0 <= point <= len(messages)
    if point == 0:
        return
    kept = messages[point:]
    compacted = summarized_history(messages, point, "Summary.")
    # What was valid stays valid (an unanswered call at the very end stays at the very end).
    check_history(compacted[:-1] if kept and client_tool_calls(kept[-1]) else compacted)
    asked = {call.id for message in kept for call in client_tool_calls(message)}
    answered = {
        block["tool_use_id"]
        for message in kept
        if message["role"] == "user" and not isinstance(message["content"], str)
        for block in message["content"]
        if block["type"] == "tool_result"
    }
    assert answered <= asked
    # The latest replies are kept, each with its results.
    replies = [message for message in messages if message["role"] == "assistant"]
    assert sum(message["role"] == "assistant" for message in kept) == (keep if keep else 0)
    assert keep <= len(replies)
    # The summary request is a valid history too, and ends with the prompt.
    request = summary_request({"model": MODEL, "max_tokens": 10}, messages[:point], {"enabled": True})
    check_history(request["messages"])
    assert request["messages"][-1] == {"role": "user", "content": DEFAULT_SUMMARY_PROMPT}


def test_nothing_is_replaced_when_there_are_too_few_turns() -> None:
    messages = [USER, {"role": "assistant", "content": "Hi."}]
    assert split_point(messages, 2) == 0
    assert split_point([USER], 1) == 0
    assert split_point(messages, 1) == 1
    with pytest.raises(ValueError, match="keep_turns must be 0 or more"):
        split_point(messages, -1)


# -- client-side ------------------------------------------------------------------------------------


@tool
def lookup(q: str) -> str:
    """Look it up."""
    return f"found {q}"


BIG = {"input_tokens": 900, "output_tokens": 200}


async def test_client_side_compaction_replaces_older_turns_with_a_summary(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("lookup", {"q": "a"}, id="a")),  # 15 tokens: under the threshold
            tool_reply(tool_call("lookup", {"q": "b"}, id="b"), usage=BIG),  # 1,100 tokens
            text_reply(
                "<summary>Looked up a and b.</summary>", usage={"input_tokens": 50, "output_tokens": 12}
            ),
            text_reply("Done."),
        ]
    )
    control: CompactionControl = {
        "enabled": True,
        "context_token_threshold": 1000,
        "summary_prompt": "Sum up.",
    }
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=100,
        system="Be useful.",
        messages=[USER],
        tools=[lookup],
        compaction_control=control,
    )
    with caplog.at_level(logging.INFO, logger="toolrunner"):
        final = await runner.until_done()
    assert plain(final.content) == [{"type": "text", "text": "Done."}]
    summary = fake.requests[2]
    assert summary.tools == []
    assert summary.body["system"] == "Be useful."
    assert roles(summary.messages) == ["user", "assistant", "user", "user"]
    assert summary.messages[-1] == {"role": "user", "content": "Sum up."}
    # The latest reply and its results are kept after the summary.
    last = fake.requests[3].messages
    assert last[0] == {
        "role": "user",
        "content": [{"type": "text", "text": "<summary>Looked up a and b.</summary>"}],
    }
    assert roles(last) == ["user", "assistant", "user"]
    assert results_of(last[2]) == [("b", "found b", False)]
    assert runner.requests_sent == 4  # the summary request counts, and so do its tokens
    assert "Token usage 1100 has exceeded the threshold of 1000. Performing compaction." in caplog.messages
    # As the SDK's line, with the new token usage (the summary's output tokens).
    assert (
        "Compaction complete. New token usage: 12 (messages replaced with a summary: 3)." in caplog.messages
    )


async def test_client_side_compaction_is_checked_when_the_runner_is_made() -> None:
    with pytest.raises(ParamsError, match="compaction_control has the unknown key"):
        ToolRunner(
            FakeMessagesAPI().async_client(),
            model=MODEL,
            max_tokens=10,
            messages=[USER],
            compaction_control={"enabled": True, "threshold": 5},  # pyright: ignore[reportArgumentType]
        )


# -- server-side ------------------------------------------------------------------------------------

COMPACTED = message_reply(
    [{"type": "compaction", "content": "The user asked; a was found."}], stop_reason="compaction"
)


async def test_compact_before_next_turn_sends_a_compaction_request_and_replaces_the_history() -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("lookup", {"q": "a"}, id="a")), COMPACTED, text_reply("Done.")]
    )
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=100,
        messages=[USER],
        tools=[lookup],
        betas=["context-management-2025-06-27"],
        context_management={"edits": [{"type": "clear_tool_uses_20250919"}]},
        stop_sequences=["STOP"],
    )
    seen: list[str | None] = []
    async for message in runner:
        seen.append(message.stop_reason)
        if message.stop_reason == "tool_use":
            runner.compact_before_next_turn()
    assert seen == ["tool_use", "compaction", "end_turn"]
    request = fake.requests[1].body
    assert request["compaction"] == {"type": "summarize"}
    assert "context_management" not in request
    assert "stop_sequences" not in request
    # As the SDK's runner, no beta of its own: the run's betas only.
    assert fake.requests[1].headers["anthropic-beta"] == "context-management-2025-06-27"
    assert roles(request["messages"]) == ["user", "assistant", "user"]  # the whole history, results included
    # The next request continues from the compaction block alone, with the run's own params.
    assert fake.requests[2].body["messages"] == [
        {"role": "assistant", "content": [{"type": "compaction", "content": "The user asked; a was found."}]}
    ]
    assert fake.requests[2].body["context_management"] == {"edits": [{"type": "clear_tool_uses_20250919"}]}
    assert "compaction" not in fake.requests[2].body


async def test_a_compaction_pending_when_the_loop_ends_is_its_last_request() -> None:
    fake = FakeMessagesAPI([text_reply("Hello."), COMPACTED])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], betas=["x"])
    replies: list[str | None] = []
    async for message in runner:
        replies.append(message.stop_reason)
        if message.stop_reason == "end_turn":
            runner.compact_before_next_turn({"type": "summarize", "instructions": "Keep names."})
    assert replies == ["end_turn", "compaction"]
    assert fake.requests[1].body["compaction"] == {"type": "summarize", "instructions": "Keep names."}
    assert fake.requests[1].headers["anthropic-beta"] == "x"  # the run's betas, none added
    assert roles(fake.requests[1].body["messages"]) == ["user", "assistant"]
    assert [plain(message)["content"][0]["type"] for message in runner.messages] == ["compaction"]
    assert runner.end_reason == "model"


async def test_a_compaction_that_gives_no_summary_keeps_the_history(caplog: pytest.LogCaptureFixture) -> None:
    empty = message_reply([{"type": "compaction", "content": None}], stop_reason="compaction")
    fake = FakeMessagesAPI([text_reply("Hello."), empty])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], betas=["x"])
    async for message in runner:
        if message.stop_reason == "end_turn":
            runner.compact_before_next_turn()
    assert roles(runner.messages) == ["user", "assistant"]
    assert "Compaction produced no summary; keeping the conversation as it is." in caplog.messages


async def test_compaction_cannot_be_a_param_nor_meet_a_compaction_edit() -> None:
    client = FakeMessagesAPI().async_client()
    with pytest.raises(ParamsError, match="'compaction' cannot be a param of a runner"):
        ToolRunner(client, model=MODEL, max_tokens=10, messages=[USER], compaction={"type": "summarize"})  # pyright: ignore[reportCallIssue] - refused as a type too
    runner = ToolRunner(
        client,
        model=MODEL,
        max_tokens=10,
        messages=[USER],
        context_management={"edits": [{"type": "compact_20260112"}]},
    )
    with pytest.raises(ParamsError, match="context_management has a compaction edit"):
        runner.compact_before_next_turn()


async def test_a_reply_paused_after_server_side_compaction_is_sent_back_to_go_on() -> None:
    paused = message_reply(
        [{"type": "compaction", "content": "Earlier: the user said hello."}], stop_reason="compaction"
    )
    fake = FakeMessagesAPI([paused, text_reply("Done.")])
    edits: BetaContextManagementConfigParam = {
        "edits": [{"type": "compact_20260112", "pause_after_compaction": True}]
    }
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=100,
        messages=[USER],
        betas=["compact-2026-01-12"],
        context_management=edits,
    )
    await runner.until_done()
    assert fake.requests[0].body["context_management"] == edits
    assert roles(fake.requests[1].body["messages"]) == ["user", "assistant"]
    assert fake.requests[1].body["messages"][1]["content"][0]["type"] == "compaction"

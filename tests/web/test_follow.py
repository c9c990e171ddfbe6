"""A run's log as a client follows it (``_log.Session.follow``), whatever the protocol: from where the
client says it is, never from the middle of a block, to the end of the request's part."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from toolrunner.web._events import (
    Entry,
    RunFinished,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallCut,
    ToolCallEnd,
    ToolCallStart,
    UIEvent,
)
from toolrunner.web._log import Session, emit_history

pytestmark = pytest.mark.anyio


async def followed(session: Session, after: int, *later: UIEvent) -> list[UIEvent]:
    """What ``follow(after)`` yields while ``later`` is logged once it waits."""
    got: list[UIEvent] = []

    async def read() -> None:
        async for entry in session.follow(after):
            if isinstance(entry, Entry):
                got.append(entry.event)

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        for event in later:
            session.emit(event)
    return got


async def test_an_after_past_the_logs_end_follows_from_the_end_to_the_end_event() -> None:
    session = Session("r", running=True)
    session.emit(TextStart("m"))
    got = await followed(session, 10**30, TextDelta("m", "hi"), TextEnd("m"), RunFinished("model"))
    assert got[-1] == RunFinished("model")


CALL = [
    TextStart("m"),
    TextDelta("m", "Let me look."),
    TextEnd("m"),
    ToolCallStart("c", "look", "m"),
    ToolCallArgs("c", '{"name"'),
    ToolCallArgs("c", ':"Ada"}'),
]


async def test_an_after_inside_a_tool_call_starts_at_the_calls_start() -> None:
    session = Session("r", running=True)
    for event in CALL:
        session.emit(event)
    end = ToolCallEnd("c", "look", {"name": "Ada"})
    got = await followed(session, 4, end, RunFinished("model"))
    assert got == [*CALL[3:], end, RunFinished("model")]


async def test_an_after_at_the_logs_end_inside_a_call_starts_at_the_calls_start() -> None:
    session = Session("r", running=True)
    for event in CALL:
        session.emit(event)
    got = await followed(session, len(CALL) - 1, RunFinished("model"))
    assert got[0] == ToolCallStart("c", "look", "m")


async def test_an_after_inside_a_text_block_starts_at_its_start_and_after_an_end_does_not() -> None:
    session = Session("r", running=True)
    for event in CALL:
        session.emit(event)
    session.emit(RunFinished("model"))
    assert (await followed(session, 1))[0] == TextStart("m")
    assert (await followed(session, 2))[0] == ToolCallStart("c", "look", "m")


async def test_a_silence_of_keep_alive_seconds_yields_none() -> None:
    session = Session("r", running=True)
    session.emit(TextStart("m"))
    session.emit(TextEnd("m"))
    following = session.follow(1, keep_alive=0.0)
    assert await anext(following) is None  # nothing logged after TextEnd: the answer is alive
    session.emit(RunFinished("model"))
    assert [entry async for entry in following if entry is not None] == [Entry(2, RunFinished("model"))]


def test_a_call_a_max_tokens_reply_cut_off_in_the_history_is_logged_as_cut() -> None:
    session = Session("r")
    reply: dict[str, Any] = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "a", "name": "look", "input": {"name": "Ada"}},
            {"type": "tool_use", "id": "c", "name": "look", "input": {}},
        ],
    }
    emit_history(session, [{"role": "user", "content": "Look."}, reply], set(), cut="c")
    ends = [entry.event for entry in session.log if isinstance(entry.event, ToolCallEnd | ToolCallCut)]
    assert ends == [ToolCallEnd("a", "look", {"name": "Ada"}), ToolCallCut("c", "look", "{}")]

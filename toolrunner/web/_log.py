"""A run's UI events in this process (``Session``: numbered, logged for the clients that come back)
and where they come from: the SDK's stream of a run driven here (``read_stream``, token by token)
and the run's saved history (``emit_history``: each new message whole), for a run followed from
where it is kept rather than driven here: Temporal's state query (``TemporalAgent``), or the store
that another process (a replica) saves it in (``Agent``).
"""

from __future__ import annotations

import json
import math
from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import anyio

from .._core.events import ApprovalDecided, RunnerEvent
from .._core.state import RunState
from ._events import (
    Entry,
    RunError,
    RunFinished,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallCut,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    UIEvent,
)

__all__ = [
    "Session",
    "answered",
    "cut_call",
    "emit_history",
    "final_text",
    "input_text",
    "note",
    "read_stream",
    "report_results",
    "result_text",
    "stop_reason",
    "turn_start",
]


@dataclass
class Session:
    """One run's events in this process. ``log[i].index == base + i`` (``base``: where this
    process's numbers start, so that a number another process gave is not taken for one of its
    own); ``start`` is the position in the log of the first event of the last request that made
    the run go on; ``running`` is true from then until its ``RunFinished`` or ``RunError`` is
    logged. ``changed`` is set, and replaced, at each event."""

    run_id: str
    base: int = 0
    log: list[Entry] = field(default_factory=lambda: list[Entry]())
    start: int = 0
    running: bool = False
    changed: anyio.Event = field(default_factory=anyio.Event)
    denied: set[str] = field(default_factory=lambda: set[str]())
    reported: set[str] = field(default_factory=lambda: set[str]())
    """The calls whose results were sent (or were in the history when the run was loaded)."""
    told: int | None = None
    """How many messages of the saved history the clients were told of, for a run followed from
    where it is kept (a reply a pause holds apart counts); ``None``: not followed so yet."""

    def emit(self, event: UIEvent) -> None:
        self.log.append(Entry(self.base + len(self.log), event))
        if isinstance(event, RunFinished | RunError):
            self.running = False
        self.changed.set()
        self.changed = anyio.Event()

    def knows(self, after: int) -> bool:
        """Whether ``after`` is a number of this log (or the one before its first)."""
        return self.base - 1 <= after < self.base + len(self.log)

    @property
    def first(self) -> int:
        """The number of the first event of the last request that made the run go on."""
        return self.base + self.start

    async def follow(self, after: int, keep_alive: float | None = None) -> AsyncIterator[Entry | None]:
        """The events after the one numbered ``after``, up to the end of the request's part of the
        run (an ``after`` past the log's end: from its end on). Never from the middle of a text
        block or a tool call: an ``after`` inside one starts at its start event (the client sees
        it again). ``None`` after each ``keep_alive`` seconds with no event (a tool that runs
        long), for the answer to say it is alive."""
        position = self._block_start(min(max(0, after - self.base + 1), len(self.log)))
        while True:
            while position < len(self.log):
                entry = self.log[position]
                position += 1
                yield entry
                if isinstance(entry.event, RunFinished | RunError):
                    return
            if not self.running:
                return
            with anyio.move_on_after(math.inf if keep_alive is None else keep_alive) as waited:
                await self.changed.wait()
            if waited.cancelled_caught:
                yield None

    def _block_start(self, position: int) -> int:
        """``position``, or the position of the start event of the text block or tool call that is
        open there (started before it, not ended before it)."""
        for back in range(position - 1, -1, -1):
            event = self.log[back].event
            if isinstance(event, TextStart | ToolCallStart):
                return back
            if not isinstance(event, TextDelta | ToolCallArgs):
                return position  # an end, a result, or the end of a request: no block is open
        return position


# -- a run driven here: the SDK's stream and the runner's events ---------------------------------------


def note(session: Session, event: RunnerEvent) -> None:
    """The runner's ``on_event``: the calls a person denied (their results are the reasons)."""
    if isinstance(event, ApprovalDecided) and event.decision == "denied":
        session.denied.add(event.call.id)


async def read_stream(session: Session, stream: Any) -> None:
    """The stream's text and tool calls as UI events, as they come; a block the stream left open
    (a reply cut off by ``max_tokens``) is closed at its end: a text block ends, a call is cut."""
    message_id = parent = ""
    blocks: dict[int, str] = {}
    unclosed: dict[int, tuple[str, list[str]]] = {}  # the open blocks: a call's name ("": text), its input
    async for event in stream:
        kind = event.type
        if kind == "message_start":
            message_id = event.message.id
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "text":
                blocks[event.index] = parent = f"{message_id}-{event.index}"
                unclosed[event.index] = ("", [])
                session.emit(TextStart(parent))
            elif block.type == "tool_use":
                blocks[event.index] = block.id
                unclosed[event.index] = (block.name, [])
                session.emit(ToolCallStart(block.id, block.name, parent or message_id))
        elif kind == "text" and (id := _current(blocks)) is not None:
            session.emit(TextDelta(id, event.text))
        elif kind == "input_json" and (id := _current(blocks)) is not None:
            if event.partial_json:
                if max(blocks) in unclosed:
                    unclosed[max(blocks)][1].append(event.partial_json)
                session.emit(ToolCallArgs(id, event.partial_json))
        elif kind == "content_block_stop" and event.index in blocks:
            unclosed.pop(event.index, None)
            block = event.content_block
            if block.type == "text":
                session.emit(TextEnd(blocks[event.index]))
            elif block.type == "tool_use":
                session.emit(ToolCallEnd(block.id, block.name, block.input))
    for index, (name, pieces) in sorted(unclosed.items()):
        session.emit(ToolCallCut(blocks[index], name, "".join(pieces)) if name else TextEnd(blocks[index]))


def _current(blocks: dict[int, str]) -> str | None:
    return blocks[max(blocks)] if blocks else None


def report_results(session: Session, messages: Sequence[Any]) -> None:
    """Log the results the history has that no client was told of yet."""
    for message in messages:
        if message.get("role") != "user" or isinstance(message.get("content"), str):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result" and block["tool_use_id"] not in session.reported:
                _result(session, block, session.denied)


def _result(session: Session, block: Mapping[str, Any], denied: Collection[str]) -> None:
    call_id = str(block["tool_use_id"])
    session.reported.add(call_id)
    session.emit(
        ToolResult(
            call_id,
            result_text(block.get("content", "")),
            bool(block.get("is_error", False)),
            call_id in denied,
        )
    )


def answered(history: Sequence[Any]) -> set[str]:
    """The calls the history has results of."""
    return {
        block["tool_use_id"]
        for message in history
        if message.get("role") == "user" and not isinstance(message.get("content"), str)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


# -- a run followed from where it is kept: its saved history, each new message whole -------------------


def emit_history(
    session: Session, messages: Sequence[Mapping[str, Any]], denied: Collection[str], cut: str | None = None
) -> None:
    """Log the messages of the history (with the reply a pause holds apart) that the clients were
    not told of (from ``session.told`` on): a reply's text as one delta, each call's input as one
    piece, each result. ``cut``: the call a ``max_tokens`` stop cut off (``cut_call``), logged
    as cut rather than ended."""
    told = session.told or 0
    for position in range(told, len(messages)):
        _emit_message(session, messages[position], position, denied, cut)
    session.told = max(told, len(messages))


def stop_reason(state: RunState) -> str | None:
    """The ``stop_reason`` of the run's latest complete reply (``None``: it has none yet)."""
    return None if state.reply is None else state.reply.stop_reason


def cut_call(state: RunState) -> str | None:
    """The call whose input the latest reply's ``max_tokens`` stop cut off: its last block, if a
    call (``None``: none was cut)."""
    reply = state.reply
    if reply is None or reply.stop_reason != "max_tokens" or not reply.content:
        return None
    last = reply.content[-1]
    return last.id if last.type == "tool_use" else None


def _emit_message(
    session: Session, message: Mapping[str, Any], position: int, denied: Collection[str], cut: str | None
) -> None:
    content = message["content"]
    if isinstance(content, str):
        return  # a person's message: the client has it
    blocks = cast("Sequence[Mapping[str, Any]]", content)
    if message["role"] == "assistant":
        parent = f"{session.run_id}-m{position}"
        for index, block in enumerate(blocks):
            if block.get("type") == "text" and block.get("text"):
                parent = f"{session.run_id}-m{position}-{index}"
                session.emit(TextStart(parent))
                session.emit(TextDelta(parent, str(block["text"])))  # the reply arrives whole
                session.emit(TextEnd(parent))
            elif block.get("type") == "tool_use":
                call_id, name = str(block["id"]), str(block["name"])
                session.emit(ToolCallStart(call_id, name, parent))
                session.emit(ToolCallArgs(call_id, input_text(block["input"])))
                if call_id == cut:
                    session.emit(ToolCallCut(call_id, name, input_text(block["input"])))
                else:
                    session.emit(ToolCallEnd(call_id, name, block["input"]))
        return
    for block in blocks:
        if block.get("type") == "tool_result" and block["tool_use_id"] not in session.reported:
            _result(session, block, denied)


def turn_start(history: Sequence[Any]) -> int:
    """Where the run's last turn starts in its history: after the last message a person wrote."""
    for position in range(len(history) - 1, -1, -1):
        message = history[position]
        if message.get("role") == "user" and not _results(message):
            return position + 1
    return 0


def _results(message: Mapping[str, Any]) -> bool:
    content = message.get("content")
    return not isinstance(content, str) and any(
        block.get("type") == "tool_result" for block in cast("Sequence[Mapping[str, Any]]", content)
    )


def final_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the history's last reply."""
    for message in reversed(messages):
        if message["role"] == "assistant":
            content = message["content"]
            if isinstance(content, str):
                return content
            return "".join(
                str(block.get("text", "")) for block in cast("Sequence[Mapping[str, Any]]", content)
                if block.get("type") == "text"
            )  # fmt: skip
    return ""


# -- as the protocols carry them -------------------------------------------------------------------------


def result_text(content: object) -> str:
    """A tool result's content as text (what is not text, as its type in brackets)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in cast("Sequence[Mapping[str, Any]]", content):
        parts.append(str(block.get("text", "")) if block.get("type") == "text" else f"[{block.get('type')}]")
    return "".join(parts)


def input_text(value: object) -> str:
    """A call's input as the JSON text a protocol carries."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

"""Saved runs as text for a person (the CLI's tables and ``show``) and as JSON data for scripts.

Long values are cut, saying how much was left out: a conversation of a long run stays readable on
a terminal, and ``full=True`` shows everything.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

from .._core.nested import record_in_tree
from .._core.state import CallRecord, CallStatus, Phase, RunState, plain_data
from .._core.tree_audit import decisions_in_tree
from .._core.types import ToolCall
from .._core.unicode import sendable_text
from .._stores.runs import RunStatus, RunSummary, waiting_calls

__all__ = [
    "VIA",
    "Message",
    "Part",
    "age",
    "audit_lines",
    "call_text",
    "conversation",
    "decision_text",
    "going_on",
    "journal",
    "messages",
    "moment",
    "plural",
    "printable",
    "record_data",
    "record_status",
    "result_text",
    "runs_table",
    "shortened",
    "summary_data",
    "table",
    "tool_description",
    "waiting_lines",
]

TEXT_LIMIT = 600
"""Characters of a text block shown before it is cut (``full`` shows all)."""
LINE_LIMIT = 12
"""Lines of a text block shown before it is cut."""
INPUT_LIMIT = 160
"""Characters of a tool call's input shown in a line."""


_CONTROL = {
    code: f"\\x{code:02x}" for code in [*range(0x00, 0x20), *range(0x7F, 0xA0)] if chr(code) not in "\n\t"
}


def printable(text: str) -> str:
    """``text`` safe to print on a terminal: control characters (an escape sequence a model or a
    tool put in the history could move the cursor, or retitle the window) are shown as ``\\xNN``,
    and lone surrogates, which no terminal encoding can carry, as U+FFFD."""
    return sendable_text(text.translate(_CONTROL))


# -- JSON for scripts ---------------------------------------------------------------------------


def summary_data(summary: RunSummary) -> dict[str, Any]:
    """A summary as JSON data (``--json``)."""
    return {
        "run_id": summary.run_id,
        "status": summary.status.value,
        "end_reason": summary.end_reason,
        "waiting": [_call_data(call) for call in summary.waiting],
        "created": summary.created.isoformat(),
        "updated": summary.updated.isoformat(),
        "turns": summary.turns,
        "cost": None if summary.cost is None else str(summary.cost),
        "failure": None if summary.failure is None else dict(summary.failure),
        "lease": None
        if summary.lease is None
        else {"owner": summary.lease.owner, "expires": summary.lease.expires.isoformat()},
    }


def record_data(record: CallRecord) -> dict[str, Any]:
    """A call's journal record as JSON data."""
    return {
        **_call_data(record.call),
        "status": record.status.value,
        "decision": record.decision,
        "decided_by": record.decided_by,
        "decided_at": record.decided_at,
        "approved_input": plain_data(record.approved_input, "approved_input"),
        "result": plain_data(record.result, "result"),
    }


def _call_data(call: ToolCall) -> dict[str, Any]:
    data = {"id": call.id, "name": call.name, "input": plain_data(call.input, "input")}
    return data | {"path": list(call.path)} if call.path else data


# -- tables ---------------------------------------------------------------------------------------


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    """Columns padded to their widest cell; the last column is not padded."""
    widths = [max(len(row[index]) for row in [header, *rows]) for index in range(len(header))]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    return "\n".join(lines)


def runs_table(summaries: Sequence[RunSummary], now: datetime) -> str:
    """A listing as a table: one run a line, the calls that wait in the last column."""
    rows = [
        [
            summary.run_id,
            summary.status.value,
            str(summary.turns),
            _cost(summary),
            f"{moment(summary.updated)} ({age(now - summary.updated)} ago)",
            _waiting(summary, now),
        ]
        for summary in summaries
    ]
    return table(["RUN", "STATUS", "TURNS", "COST", "UPDATED (UTC)", "WAITING / ENDED"], rows)


def _cost(summary: RunSummary) -> str:
    return "?" if summary.cost is None else f"${summary.cost:.4f}"


def _waiting(summary: RunSummary, now: datetime) -> str:
    if summary.waiting:
        first = summary.waiting[0]
        more = f" (+{len(summary.waiting) - 1} more)" if len(summary.waiting) > 1 else ""
        return f"{first.id}: {call_text(first, limit=60)}{more}"
    if summary.failure is not None:
        return f"{summary.failure.get('type')}: {_cut(summary.failure.get('message', ''), 80)}"
    if summary.status is RunStatus.FINISHED:
        return summary.end_reason or ""
    return going_on(summary, now)


def going_on(summary: RunSummary, now: datetime) -> str:
    """What takes a ready, running or failed run on, as its status and lease say (``""``: nothing
    to say: a running run without a lease is in an app's runner, or stopped in one; a failed one
    failed for good)."""
    lease = summary.lease
    if summary.status is RunStatus.FAILED:
        return "" if lease is None else "a resumer tries it again once the lease runs out"
    if summary.status not in (RunStatus.READY, RunStatus.RUNNING):
        return ""
    if lease is not None and lease.expires <= now:
        return f"its resumer {lease.owner} stopped; the next resumer takes the run over"
    if summary.status is RunStatus.READY:
        if lease is not None:
            return f"decided: resumer {lease.owner} takes it up"
        return "decided: goes on once a resumer takes it up, or the app resumes it"
    return "" if lease is None else f"in resumer {lease.owner}"


def plural(count: int, noun: str, many: str | None = None) -> str:
    """``1 run``, ``2 runs`` (``many``: the plural, when it is not ``noun`` + s)."""
    return f"{count:,} {noun if count == 1 else many or noun + 's'}"


def moment(value: datetime) -> str:
    """A time as a person reads it: UTC, to the second."""
    return value.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def age(delta: Any) -> str:
    """A duration in its largest unit: ``42s``, ``5m``, ``3h``, ``12d``."""
    seconds = max(0, int(delta.total_seconds()))
    for unit, size in (("d", 86_400), ("h", 3_600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def call_text(call: ToolCall, *, limit: int | None = INPUT_LIMIT) -> str:
    """A tool call on one line: ``name {"input": ...}``."""
    return f"{call.name} {_cut(_one_line(call.input), limit)}"


# -- a conversation --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Part:
    """One piece of a message as a person reads it: what the text view prints on a line or a few,
    and the inbox shows as one element.

    Attributes:
        kind: ``"text"``, ``"call"`` (a tool_use; ``where`` says whose tool, for a server's or an
            MCP server's), ``"result"`` (a tool_result; ``where`` names the block type of a
            server's result), ``"thinking"``, or ``"other"`` (an image, a document, a block of a
            type this version does not know; ``text`` says which).
        text: The text, the result's text, the thinking, or the label of another block.
        name: A call's tool.
        id: A call's id, or the id of the call a result answers.
        input: A call's input.
        where: See ``kind``.
        error: A result that is an error.
    """

    kind: Literal["text", "call", "result", "thinking", "other"]
    text: str = ""
    name: str = ""
    id: str = ""
    input: object = None
    where: str = ""
    error: bool = False

    @property
    def call(self) -> ToolCall:
        """A call part as a ``ToolCall``."""
        return ToolCall(self.id, self.name, self.input)


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a run's conversation: its role, its parts, and a note (``"the latest
    reply"``: the reply the loop body holds, not in the history yet)."""

    role: str
    parts: tuple[Part, ...]
    note: str = ""


def messages(state: RunState) -> list[Message]:
    """The run's history as a person reads it, message by message, and the reply the loop body
    holds (not in the history yet)."""
    found = [
        _message(plain_data(message, f"messages[{index}]")) for index, message in enumerate(state.messages)
    ]
    if (
        state.phase in (Phase.RECEIVED, Phase.WITH_BODY, Phase.AWAITING)
        and state.reply is not None
        and not state.steered
    ):
        reply = cast("dict[str, Any]", plain_data(state.reply, "reply"))
        found.append(_message({"role": "assistant", "content": reply.get("content", [])}, "the latest reply"))
    return found


def journal(state: RunState) -> list[CallRecord]:
    """The current turn's calls that no longer wait: decided, started or finished."""
    return [record for record in state.calls.values() if record.status is not CallStatus.AWAITING]


def conversation(state: RunState, *, full: bool = False) -> list[str]:
    """The run's history as text lines: each message's role, then its text, tool calls and
    results; the reply the loop body holds (not in the history yet), and the current turn's calls."""
    lines: list[str] = []
    for message in messages(state):
        lines += ["", f"── {message.role}" + (f" ({message.note})" if message.note else "")]
        for part in message.parts:
            lines += _part_lines(part, full)
    records = journal(state)
    if records:
        lines += ["", "── this turn's calls"]
        for record in records:
            lines.append(f"  {record.call.id}  {call_text(record.call)}: {record_status(record)}")
    return lines


VIA = {
    "runner": "in the app",
    "store": "through the store",
    "callback": "by the approve callback",
    "gate": "its gate failed",
    "timeout": "no decision came in time",
}
"""Where a decision came from, as a person reads it (``DecisionRecord.via``)."""


def audit_lines(state: RunState, *, full: bool = False) -> list[str]:
    """The run's audit: every decision taken on its calls, for the life of the run, in order, then
    those inside its sub-agents' runs still in flight (``_core.tree_audit``); a decision inside a
    sub-agent's run says its path."""
    decisions = decisions_in_tree(state)
    if not decisions:
        return []
    lines = ["", "── decisions"]
    limit = None if full else INPUT_LIMIT
    for entry in decisions:
        how = entry.decision + (f" by {printable(entry.by)}" if entry.by else "")
        how += f" at {entry.at}" if entry.at else ""
        how += f", {VIA[entry.via]}" if entry.via in VIA else ""
        lines.append(f"  {entry.call.id}  {call_text(entry.call, limit=limit)}: {how}")
        if entry.path:
            lines.append(f"      in a sub-agent's run: {printable(' → '.join(entry.path))} → {entry.call.id}")
        if entry.approved_input is not None:
            lines.append(f"      ran with the input {_cut(_one_line(entry.approved_input), limit)}")
        if entry.reason is not None:
            lines.append(f"      the model read: {_cut(printable(' '.join(entry.reason.split())), limit)}")
    return lines


def record_status(record: CallRecord) -> str:
    """Where a call of the journal stands, and who decided it."""
    status = record.status.value
    if record.decision is not None:
        status = decision_text(record)
        if record.status is CallStatus.APPROVED:
            status += ", runs when the run goes on"
        elif record.status is CallStatus.STARTED:
            status += ", started"
    if record.approved_input is not None:
        status += f", with the input {_cut(_one_line(record.approved_input), INPUT_LIMIT)}"
    return status


def decision_text(record: CallRecord) -> str:
    """How a call was decided, by whom and when (``denied by ada at 2025-...``); empty if it was not."""
    if record.decision is None:
        return ""
    who = f" by {record.decided_by}" if record.decided_by else ""
    return f"{record.decision}{who}{f' at {record.decided_at}' if record.decided_at else ''}"


def waiting_lines(state: RunState, *, full: bool = False) -> list[str]:
    """The calls that wait for a decision: id, tool and input, and the tool's description (and,
    for a call inside a sub-agent's run, its path)."""
    lines: list[str] = []
    for call in waiting_calls(state):
        record = record_in_tree(state, call.id)
        assert record is not None
        lines.append(f"  {call.id}  {call_text(call, limit=None if full else INPUT_LIMIT)}")
        if call.path:
            lines.append(f"      in a sub-agent's run: {' → '.join(call.path)} → {call.id}")
        description = tool_description(record)
        if description:
            lines.append(f"      {_cut(' '.join(description.split()), None if full else 200)}")
        if (record.tool or {}).get("input_schema") is None:
            lines.append("      (no input schema was saved with it: it can be approved as it is, not edited)")
    return lines


def tool_description(record: CallRecord) -> str:
    """The description of a waiting call's tool, as saved with the call (empty if none was)."""
    description = (record.tool or {}).get("description")
    return description.strip() if isinstance(description, str) else ""


def _message(message: Any, note: str = "") -> Message:
    data: Mapping[str, Any] = cast("Mapping[str, Any]", message) if isinstance(message, Mapping) else {}
    content = data.get("content")
    if isinstance(content, str):
        parts: tuple[Part, ...] = (Part("text", content),)
    else:
        parts = tuple(_part(block) for block in cast("list[Any]", content or []))
    return Message(str(data.get("role", "?")), parts, note)


def _part(block: Any) -> Part:
    if not isinstance(block, Mapping):
        return Part("other", type(block).__name__)
    block = cast("Mapping[str, Any]", block)
    kind = str(block.get("type"))
    if kind == "text":
        return Part("text", str(block.get("text", "")))
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        where = "" if kind == "tool_use" else kind.removesuffix("_tool_use")
        return Part(
            "call",
            name=str(block.get("name")),
            id=str(block.get("id")),
            input=block.get("input"),
            where=where,
        )
    if kind == "tool_result":
        return Part(
            "result",
            result_text(block.get("content")),
            id=str(block.get("tool_use_id")),
            error=bool(block.get("is_error")),
        )
    if kind.endswith("_tool_result"):
        return Part("result", id=str(block.get("tool_use_id")), where=kind)
    if kind == "thinking":
        return Part("thinking", str(block.get("thinking", "")))
    if kind == "document":
        title = block.get("title")
        return Part("other", f"document{f': {title}' if title else ''}")
    return Part("other", kind)


def _part_lines(part: Part, full: bool) -> list[str]:
    limit = None if full else INPUT_LIMIT
    if part.kind == "text":
        return _text(part.text, full)
    if part.kind == "call":
        where = f" ({part.where})" if part.where else ""
        return [f"  → {call_text(part.call, limit=limit)}{where}  [{part.id}]"]
    if part.kind == "result":
        if part.where:
            return [f"  ← [{part.id}] ({part.where})"]
        error = " error:" if part.error else ""
        first, *rest = _text(part.text, full) or ["  "]
        return [f"  ← [{part.id}]{error} {first.strip()}", *rest]
    if part.kind == "thinking":
        return [f"  [thinking: {_cut(' '.join(part.text.split()), None if full else 100)}]"]
    return [f"  [{part.text}]"]


def result_text(content: object) -> str:
    """A tool_result's content as text: its text blocks, and ``[image]`` for the others."""
    if content is None:
        return "(empty)"
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for item in cast("list[Any]", content):
        if isinstance(item, Mapping):
            item = cast("Mapping[str, Any]", item)
            parts.append(str(item.get("text")) if item.get("type") == "text" else f"[{item.get('type')}]")
    return "\n".join(parts)


def shortened(text: str) -> str | None:
    """``text`` cut as the text view cuts a long text (``TEXT_LIMIT`` characters, ``LINE_LIMIT``
    lines, saying how much was left out), or ``None`` if it is short enough to show whole."""
    cut = _cut(text, TEXT_LIMIT)
    lines = cut.splitlines()
    if len(lines) > LINE_LIMIT:
        return "\n".join([*lines[:LINE_LIMIT], f"… ({len(lines) - LINE_LIMIT} more lines)"])
    return None if cut == text else cut


def _text(text: str, full: bool) -> list[str]:
    shown = text if full else shortened(text) or text
    lines = shown.splitlines() or [""]
    return [textwrap.indent(line, "  ") if line else "" for line in lines]


def _one_line(value: object) -> str:
    try:
        return json.dumps(plain_data(value, "value"), ensure_ascii=False)
    except Exception:  # a value the state could not carry either: its repr is what there is
        return repr(value)


def _cut(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"

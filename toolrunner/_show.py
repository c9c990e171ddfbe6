"""Saved runs as text for a person (the CLI's tables and ``show``) and as JSON data for scripts.

Long values are cut, saying how much was left out: a conversation of a long run stays readable on
a terminal, and ``full=True`` shows everything.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any, cast

from ._runs import RunStatus, RunSummary, waiting_calls
from ._state import CallRecord, CallStatus, Phase, RunState, plain_data
from ._text import sendable_text
from ._types import ToolCall

__all__ = [
    "age",
    "call_text",
    "conversation",
    "moment",
    "plural",
    "printable",
    "record_data",
    "runs_table",
    "summary_data",
    "table",
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
    return {"id": call.id, "name": call.name, "input": plain_data(call.input, "input")}


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
            _waiting(summary),
        ]
        for summary in summaries
    ]
    return table(["RUN", "STATUS", "TURNS", "COST", "UPDATED (UTC)", "WAITING / ENDED"], rows)


def _cost(summary: RunSummary) -> str:
    return "?" if summary.cost is None else f"${summary.cost:.4f}"


def _waiting(summary: RunSummary) -> str:
    if summary.waiting:
        first = summary.waiting[0]
        more = f" (+{len(summary.waiting) - 1} more)" if len(summary.waiting) > 1 else ""
        return f"{first.id}: {call_text(first, limit=60)}{more}"
    if summary.failure is not None:
        return f"{summary.failure.get('type')}: {_cut(summary.failure.get('message', ''), 80)}"
    if summary.status is RunStatus.FINISHED:
        return summary.end_reason or ""
    if summary.end_reason == "awaiting_approval":  # paused, and every call decided since
        return "decided: goes on when resumed"
    return ""


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


def conversation(state: RunState, *, full: bool = False) -> list[str]:
    """The run's history as a person reads it: each message's role, then its text, tool calls and
    results; the reply the loop body holds (not in the history yet), and the current turn's calls."""
    lines: list[str] = []
    for index, message in enumerate(state.messages):
        _message(lines, plain_data(message, f"messages[{index}]"), full)
    if (
        state.phase in (Phase.RECEIVED, Phase.WITH_BODY, Phase.AWAITING)
        and state.reply is not None
        and not state.steered
    ):
        reply = cast("dict[str, Any]", plain_data(state.reply, "reply"))
        _message(
            lines, {"role": "assistant", "content": reply.get("content", [])}, full, note="the latest reply"
        )
    journal = [record for record in state.calls.values() if record.status is not CallStatus.AWAITING]
    if journal:
        lines += ["", "── this turn's calls"]
        for record in journal:
            lines.append(f"  {record.call.id}  {call_text(record.call)}: {_record_status(record)}")
    return lines


def _record_status(record: CallRecord) -> str:
    """Where a call of the journal stands, and who decided it."""
    status = record.status.value
    if record.decision is not None:
        who = f" by {record.decided_by}" if record.decided_by else ""
        when = f" at {record.decided_at}" if record.decided_at else ""
        status = f"{record.decision}{who}{when}"
        if record.status is CallStatus.APPROVED:
            status += ", runs when the run goes on"
        elif record.status is CallStatus.STARTED:
            status += ", started"
    if record.approved_input is not None:
        status += f", with the input {_cut(_one_line(record.approved_input), INPUT_LIMIT)}"
    return status


def waiting_lines(state: RunState, *, full: bool = False) -> list[str]:
    """The calls that wait for a decision: id, tool and input, and the tool's description."""
    lines: list[str] = []
    for call in waiting_calls(state):
        record = state.calls[call.id]
        lines.append(f"  {call.id}  {call_text(call, limit=None if full else INPUT_LIMIT)}")
        tool = record.tool or {}
        description = tool.get("description")
        if isinstance(description, str) and description.strip():
            lines.append(f"      {_cut(' '.join(description.split()), None if full else 200)}")
        if tool.get("input_schema") is None:
            lines.append("      (no input schema was saved with it: it can be approved as it is, not edited)")
    return lines


def _message(lines: list[str], message: Any, full: bool, note: str | None = None) -> None:
    data: Mapping[str, Any] = cast("Mapping[str, Any]", message) if isinstance(message, Mapping) else {}
    role = str(data.get("role", "?"))
    lines += ["", f"── {role}" + (f" ({note})" if note else "")]
    content = data.get("content")
    if isinstance(content, str):
        lines += _text(content, full)
        return
    for block in cast("list[Any]", content or []):
        lines += _block(block, full)


def _block(block: Any, full: bool) -> list[str]:
    if not isinstance(block, Mapping):
        return [f"  [{type(block).__name__}]"]
    block = cast("Mapping[str, Any]", block)
    kind = str(block.get("type"))
    limit = None if full else INPUT_LIMIT
    if kind == "text":
        return _text(str(block.get("text", "")), full)
    if kind in ("tool_use", "server_tool_use", "mcp_tool_use"):
        where = "" if kind == "tool_use" else f" ({kind.removesuffix('_tool_use')})"
        call = ToolCall(str(block.get("id")), str(block.get("name")), block.get("input"))
        return [f"  → {call_text(call, limit=limit)}{where}  [{call.id}]"]
    if kind == "tool_result":
        error = " error:" if block.get("is_error") else ""
        body = _result_text(block.get("content"))
        first, *rest = _text(body, full) or ["  "]
        return [f"  ← [{block.get('tool_use_id')}]{error} {first.strip()}", *rest]
    if kind.endswith("_tool_result"):
        return [f"  ← [{block.get('tool_use_id')}] ({kind})"]
    if kind == "thinking":
        return [
            f"  [thinking: {_cut(' '.join(str(block.get('thinking', '')).split()), None if full else 100)}]"
        ]
    if kind == "image":
        return ["  [image]"]
    if kind == "document":
        title = block.get("title")
        return [f"  [document{f': {title}' if title else ''}]"]
    return [f"  [{kind}]"]


def _result_text(content: object) -> str:
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


def _text(text: str, full: bool) -> list[str]:
    if not full:
        text = _cut(text, TEXT_LIMIT)
    lines = text.splitlines() or [""]
    if not full and len(lines) > LINE_LIMIT:
        lines = [*lines[:LINE_LIMIT], f"… ({len(lines) - LINE_LIMIT} more lines)"]
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

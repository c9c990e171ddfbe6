"""What the inbox's pages show, as plain values for the templates: a run's conversation (from
``toolrunner._ops.render``, which the command line prints too), its waiting calls with their tool's
description and input schema, and its decided calls.

Nothing here is HTML: the templates escape every value (Jinja's autoescape), so text a model or a
tool wrote is shown as text, whatever it holds. The run's request params are never shown: the
conversation, the calls and the summary are all a person needs to decide.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, cast

from .._core.nested import record_in_tree, state_at
from .._core.state import CallRecord, DecisionRecord, RunState, plain_data
from .._core.tree_audit import decisions_in_tree
from .._core.types import ToolCall
from .._core.unicode import sendable_text
from .._ops.render import (
    VIA,
    Part,
    age,
    going_on,
    journal,
    messages,
    plural,
    printable,
    result_text,
    shortened,
    tool_description,
)
from .._stores.runs import RunStatus, RunSummary, waiting_calls

__all__ = [
    "Field",
    "Moment",
    "Problem",
    "ShownCall",
    "ShownDecision",
    "ShownMessage",
    "ShownPart",
    "ShownRecord",
    "ShownRun",
    "Text",
    "code_spans",
    "decided_moment",
    "editor_text",
    "outcome",
    "shown_record",
    "shown_run",
    "when",
]

_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# A span of code in a message, as the library writes one (`toolrunner runs list`).
_CODE = re.compile(r"`([^`\n]+)`")


@dataclass(frozen=True, slots=True)
class Text:
    """A text to show: whole, or folded (``preview`` shown, the whole text one click away)."""

    whole: str
    preview: str | None = None

    @classmethod
    def of(cls, text: str) -> Text:
        text = printable(text)
        return cls(text, shortened(text))


@dataclass(frozen=True, slots=True)
class Moment:
    """A time as the pages show it, in a ``<time datetime="iso">`` element: ``text`` for people
    (``27 Nov 2026, 12:00 UTC``, in UTC whatever the server's zone), ``iso`` for machines
    (``2026-11-27T12:00:05Z``; empty for a time that could not be read, shown as it was saved), and
    ``ago`` (``58m ago``) where a page says how long ago it was."""

    iso: str
    text: str
    ago: str = ""


@dataclass(frozen=True, slots=True)
class ShownPart:
    kind: str
    text: Text
    name: str = ""
    id: str = ""
    where: str = ""
    error: bool = False


@dataclass(frozen=True, slots=True)
class ShownMessage:
    role: str
    note: str
    parts: tuple[ShownPart, ...]


@dataclass(frozen=True, slots=True)
class Field:
    """A top-level property of a tool's input schema."""

    name: str
    type: str
    required: bool
    description: str


@dataclass(frozen=True, slots=True)
class Problem:
    """What in an edited input does not fit: its place (``""``: the input as a whole), and why."""

    path: str
    message: str


@dataclass(frozen=True, slots=True)
class ShownCall:
    """A call that waits for a decision."""

    id: str
    name: str
    description: Text
    input: Text
    editor: str  # the input as the JSON editor starts with it
    editable: bool  # an input schema was saved with the call, so an edit can be checked
    fields: tuple[Field, ...]
    schema: str  # the whole input schema, as JSON
    path: str = ""  # inside a sub-agent's run: its path (call id → agent → ...), as a person reads it
    conversation: tuple[ShownMessage, ...] = ()  # inside a sub-agent's run: that run's conversation


@dataclass(frozen=True, slots=True)
class ShownRecord:
    """A call of the current turn that no longer waits: decided, started or finished."""

    id: str
    name: str
    status: str
    decision: str  # how and by whom (``approved by ada``); empty if it was not decided
    decided_by: str
    decided_at: Moment | None
    input: Text
    approved_input: Text | None
    result: Text | None
    error: bool


@dataclass(frozen=True, slots=True)
class ShownDecision:
    """An entry of the run's audit: one decision on a call, for the life of the run."""

    id: str
    name: str
    decision: str  # the verdict and who (``approved by ada``)
    decided_at: Moment | None
    via: str  # where it came from, as a person reads it; empty if not known
    input: Text  # as the model sent it
    approved_input: Text | None  # what it ran with instead
    reason: Text | None  # what the model read for a denial
    path: str = ""  # inside a sub-agent's run: its path (call id → agent → ...), as a person reads it


@dataclass(frozen=True, slots=True)
class ShownRun:
    messages: tuple[ShownMessage, ...]
    waiting: tuple[ShownCall, ...]
    records: tuple[ShownRecord, ...]
    decisions: tuple[ShownDecision, ...] = ()


def shown_run(state: RunState) -> ShownRun:
    """A run's conversation, waiting calls and decided calls, as the run's page shows them."""
    return ShownRun(
        _conversation(state),
        tuple(_waiting(state, call) for call in waiting_calls(state)),
        tuple(shown_record(record) for record in journal(state)),
        tuple(shown_decision(entry) for entry in decisions_in_tree(state)),
    )


def shown_decision(entry: DecisionRecord) -> ShownDecision:
    """An entry of the audit as the run's page shows it."""
    return ShownDecision(
        id=entry.call.id,
        name=printable(entry.call.name),
        decision=printable(entry.decision + (f" by {entry.by}" if entry.by else "")),
        decided_at=decided_moment(entry.at),
        via=VIA.get(entry.via or "", ""),
        input=Text.of(editor_text(entry.call.input)),
        approved_input=None if entry.approved_input is None else Text.of(editor_text(entry.approved_input)),
        reason=None if entry.reason is None else Text.of(entry.reason),
        path=printable(" → ".join(entry.path)) if entry.path else "",
    )


def when(value: datetime, now: datetime | None = None) -> Moment:
    """``value`` as the pages show it: ``27 Nov 2026, 12:00 UTC``, and how long before ``now`` (if
    given) it was."""
    utc = value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)
    return Moment(
        iso=utc.isoformat(timespec="seconds").replace("+00:00", "Z"),
        text=f"{utc.day} {_MONTHS[utc.month - 1]} {utc.year}, {utc:%H:%M} UTC",
        ago="" if now is None else f"{age(now - utc)} ago",
    )


def decided_moment(saved: str | None) -> Moment | None:
    """When a call was decided, from the journal's ISO 8601 text (``decided_at``); a text that is
    not one is shown as it is."""
    if not saved:
        return None
    try:
        value = datetime.fromisoformat(saved)
    except ValueError:
        return Moment("", printable(saved))
    return when(value)


def code_spans(text: str) -> list[str]:
    """A message split at its code spans (a command between backticks, as the library's messages
    and the inbox's own write one): text, code, text, ...; the templates show each odd piece in
    ``<code>``, every piece escaped."""
    return _CODE.split(text)


def cost(summary: RunSummary) -> str:
    return "?" if summary.cost is None else f"${summary.cost:.4f}"


def editor_text(value: object) -> str:
    """``value`` as the JSON editor shows it: indented, and exact (a lone surrogate, which a page
    cannot carry, is written as its ``\\udcXX`` escape, so that approving the text as it is gives
    back the same input)."""
    try:
        data = plain_data(value, "input")
    except Exception:  # the state could not carry it either; its repr is all there is to show
        return repr(value)
    text = json.dumps(data, ensure_ascii=False, indent=2)
    return text if sendable_text(text) is text else json.dumps(data, indent=2)


def _part(part: Part) -> ShownPart:
    if part.kind == "call":
        return ShownPart(
            "call", Text.of(editor_text(part.input)), printable(part.name), printable(part.id), part.where
        )
    return ShownPart(part.kind, Text.of(part.text), id=printable(part.id), where=part.where, error=part.error)


def _conversation(state: RunState) -> tuple[ShownMessage, ...]:
    return tuple(
        ShownMessage(printable(message.role), message.note, tuple(_part(part) for part in message.parts))
        for message in messages(state)
    )


def _waiting(state: RunState, waiting: ToolCall) -> ShownCall:
    """A waiting call of the run, or of a sub-agent's run in it (its path, and that run's
    conversation, which the person decides on)."""
    record = record_in_tree(state, waiting.id)
    assert record is not None, "waiting_calls lists calls of the journal"
    schema: object = (record.tool or {}).get("input_schema")
    call = record.call
    fields: tuple[Field, ...] = ()
    if isinstance(schema, Mapping):
        fields = _fields(cast("Mapping[str, Any]", schema))
    return ShownCall(
        id=call.id,
        name=printable(call.name),
        description=Text.of(tool_description(record)),
        input=Text.of(editor_text(call.input)),
        editor=editor_text(call.input),
        editable=isinstance(schema, Mapping),
        fields=fields,
        schema="" if schema is None else editor_text(cast(object, schema)),
        path=printable(" → ".join(waiting.path)) if waiting.path else "",
        conversation=_conversation(state_at(state, waiting.path)) if waiting.path else (),
    )


def _fields(schema: Mapping[str, Any]) -> tuple[Field, ...]:
    """The schema's top-level properties: name, type, whether required, description."""
    properties: object = schema.get("properties")
    required: object = schema.get("required")
    if not isinstance(properties, Mapping):
        return ()
    needed = set(cast("list[object]", required)) if isinstance(required, list) else set[object]()
    fields: list[Field] = []
    for name, value in cast("Mapping[str, object]", properties).items():
        spec: Mapping[str, object] = cast("Mapping[str, object]", value) if isinstance(value, Mapping) else {}
        kind: object = spec.get("type", "enum" if "enum" in spec else "any")
        shown = " | ".join(map(str, cast("list[object]", kind))) if isinstance(kind, list) else str(kind)
        if "enum" in spec:
            shown += f": one of {editor_text(spec['enum']).replace(chr(10), ' ')}"
        description: object = spec.get("description")
        fields.append(
            Field(
                printable(str(name)),
                printable(shown),
                name in needed,
                printable(description) if isinstance(description, str) else "",
            )
        )
    return tuple(fields)


def shown_record(record: CallRecord) -> ShownRecord:
    """A call of the journal as the run's page shows it: who decided it, when, and its result."""
    result: Text | None = None
    error = False
    if record.result is not None:
        block = cast("Mapping[str, Any]", plain_data(record.result, "result"))
        result = Text.of(result_text(block.get("content")))
        error = bool(block.get("is_error"))
    return ShownRecord(
        id=record.call.id,
        name=printable(record.call.name),
        status=record.status.value,
        decision=""
        if record.decision is None
        else printable(record.decision + (f" by {record.decided_by}" if record.decided_by else "")),
        decided_by=printable(record.decided_by or ""),
        decided_at=None if record.decision is None else decided_moment(record.decided_at),
        input=Text.of(editor_text(record.call.input)),
        approved_input=None if record.approved_input is None else Text.of(editor_text(record.approved_input)),
        result=result,
        error=error,
    )


def outcome(summary: RunSummary, now: datetime) -> str:
    """How a run ended, or where it stands: its failure, its end reason, its waiting calls."""
    if summary.failure is not None:
        return f"failed: {summary.failure.get('type')}: {summary.failure.get('message')}"
    if summary.status is RunStatus.FINISHED:
        return f"ended: {summary.end_reason}"
    if summary.status is RunStatus.AWAITING:
        return f"{plural(len(summary.waiting), 'call')} waiting"
    return going_on(summary, now)

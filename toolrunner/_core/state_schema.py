"""The saved form of a ``RunState``: the migrations from older versions, and the schema of the
current one (version 5), checked once, at load.

A saved state may have been edited by hand or damaged on its way. ``RunState.from_dict`` checks
the whole of it against this schema before it reads a field, so that a wrong type anywhere is
refused at load, with the field's path (``calls[0].status``, ``total.input_tokens``), rather than
being taken in and failing at some later step (``steered: "false"`` read as true, a token count
that is a string). The check is pydantic's, in strict mode (no coercion: ``"12"`` is not a count,
``"false"`` is not a bool), and runs in one pass of pydantic-core, so a long history costs little.

What it checks is what the runner reads: the shape of every field, the literals (phases,
statuses, decisions, end reasons), token counts (ints of 0 or more) and costs (decimal text).
History messages and content blocks are checked as far as the runner reads them (a role, content
that is text or a list of blocks, each an object with a ``type``; the ids, names and results of
tool calls); the rest of a block is the service's to judge. Fields this version does not know are
ignored.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Annotated, Any, Literal, NotRequired, TypeAlias, cast

import pydantic
from pydantic import Field, with_config
from typing_extensions import TypedDict

__all__ = ["check_messages", "check_state", "check_usage", "migrated"]


# -- older versions -------------------------------------------------------------------------------


def migrated(data: Mapping[str, Any], version: int) -> Mapping[str, Any]:
    """Data of an older version (from 1 on) in the current version's form."""
    for old in range(version, len(_MIGRATIONS) + 1):
        data = _MIGRATIONS[old](data)
    return data


def _from_version_1(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Version 1 had no decisions: its call records lack ``approved_input`` and ``decision``."""
    return {**data, "version": 2, "calls": _with_defaults(data, approved_input=None, decision=None)}


def _from_version_2(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Version 2 kept no pending tool changes (they lived in the runner's memory)."""
    return {"tool_changes": [], **data, "version": 3}


def _from_version_3(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Version 3 kept neither who decided a call nor when, nor a waiting call's tool, nor a failure."""
    calls = _with_defaults(data, decided_by=None, decided_at=None, tool=None)
    return {"failure": None, **data, "version": 4, "calls": calls}


def _with_defaults(data: Mapping[str, Any], **defaults: None) -> object:
    """The call records with the fields they lack; what is not a list of records is left for the
    schema to name."""
    calls: object = data.get("calls", [])
    if not isinstance(calls, list):
        return calls
    return [
        {**defaults, **cast("Mapping[str, object]", record)} if isinstance(record, Mapping) else record
        for record in cast("list[object]", calls)
    ]


def _from_version_4(data: Mapping[str, Any]) -> Mapping[str, Any]:
    """Version 4 kept no audit of decisions: the decided calls of its journal start it (where the
    decisions came from is not known); decisions of earlier turns are lost to it."""
    calls: object = data.get("calls", [])
    decisions: list[object] = []
    if isinstance(calls, list):
        for record in cast("list[object]", calls):
            if not isinstance(record, Mapping):
                continue
            record = cast("Mapping[str, Any]", record)
            if record.get("decision") is None:
                continue
            result: object = record.get("result")
            decisions.append(
                {
                    "id": record.get("id"),
                    "name": record.get("name"),
                    "input": record.get("input"),
                    "toolset_name": record.get("toolset_name"),
                    "decision": record.get("decision"),
                    "approved_input": record.get("approved_input"),
                    "reason": _text_of(result) if record.get("decision") == "denied" else None,
                    "by": record.get("decided_by"),
                    "at": record.get("decided_at"),
                    "via": None,
                }
            )
    return {"decisions": decisions, **data, "version": 5}


def _text_of(result: object) -> str | None:
    """The text a denial's tool_result gave the model, if it is text."""
    if not isinstance(result, Mapping):
        return None
    content: object = cast("Mapping[str, object]", result).get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = [
            str(cast("Mapping[str, object]", block).get("text"))
            for block in cast("list[object]", content)
            if isinstance(block, Mapping) and cast("Mapping[str, object]", block).get("type") == "text"
        ]
        return "\n".join(texts) if texts else None
    return None


_MIGRATIONS: dict[int, Callable[[Mapping[str, Any]], Mapping[str, Any]]] = {
    1: _from_version_1,
    2: _from_version_2,
    3: _from_version_3,
    4: _from_version_4,
}
"""From each older version to the next."""


# -- the schema -----------------------------------------------------------------------------------


# Strict: no coercion ("12" is no int, "false" no bool); fields this version does not know are ignored.
_CONFIG = pydantic.ConfigDict(strict=True, extra="ignore")
_Count: TypeAlias = Annotated[int, Field(ge=0)]


# A cost as ``str(Decimal)`` writes one: digits, perhaps a fraction and an exponent; never negative.
_Cost: TypeAlias = Annotated[str, Field(pattern=r"^[0-9]+(\.[0-9]+)?(E[+-]?[0-9]+)?$")]

_EndReason: TypeAlias = Literal[
    "model", "max_iterations", "token_budget", "cost_budget", "closed", "awaiting_approval"
]


@with_config(_CONFIG)
class _Usage(TypedDict):
    input_tokens: _Count
    output_tokens: _Count
    cache_read_input_tokens: _Count
    cache_creation_input_tokens: _Count


@with_config(_CONFIG)
class _RequestUsage(_Usage):
    model: str
    cost: _Cost | None


@with_config(_CONFIG)
class _Block(TypedDict):
    """A content block of any type. The fields the runner reads mean the same in every block type
    that has them (tool_use, server_tool_use, mcp_tool_use, their results, ...), so they are typed
    alike, without a union per type: that keeps the check of a long history in pydantic-core. A
    tool_use without an id or a name, or a tool_result without its tool_use_id, is refused before
    the next request by ``check_history``."""

    type: str
    id: NotRequired[str]
    name: NotRequired[str]
    tool_use_id: NotRequired[str]
    is_error: NotRequired[bool]
    toolset_name: NotRequired[str | None]


@with_config(_CONFIG)
class _Message(TypedDict):
    role: Literal["user", "assistant", "system"]
    content: NotRequired[str | list[_Block] | None]  # None: a directive-only system message


@with_config(_CONFIG)
class _ReplyUsage(TypedDict):
    input_tokens: _Count
    output_tokens: _Count
    cache_read_input_tokens: NotRequired[_Count | None]
    cache_creation_input_tokens: NotRequired[_Count | None]


@with_config(_CONFIG)
class _ReplyMessage(TypedDict):
    role: Literal["assistant"]
    content: list[_Block]
    id: NotRequired[str]
    model: NotRequired[str]
    stop_reason: NotRequired[str | None]
    usage: NotRequired[_ReplyUsage]


@with_config(_CONFIG)
class _Reply(TypedDict):
    beta: bool
    message: _ReplyMessage


@with_config(_CONFIG)
class _ToolResultBlock(TypedDict):
    type: Literal["tool_result"]
    tool_use_id: str


@with_config(_CONFIG)
class _SubRun(TypedDict):
    agent: str
    state: dict[str, Any]


@with_config(_CONFIG)
class _SubRunSummary(TypedDict):
    path: list[str]
    usage: list[_RequestUsage]
    end_reason: _EndReason | None


@with_config(_CONFIG)
class _Record(TypedDict):
    id: str
    name: str
    input: Any
    toolset_name: NotRequired[str | None]
    status: Literal["awaiting", "approved", "started", "finished"]
    result: _ToolResultBlock | None
    approved_input: Any
    decision: Literal["approved", "denied", "answered"] | None
    decided_by: str | None
    decided_at: str | None
    tool: dict[str, Any] | None
    hook: NotRequired[Literal["run", "rewritten", "denied", "limited"] | None]
    """Written only when the run's hooks decided on the call (``_core.hooks``)."""
    hook_input: NotRequired[Any]
    sub_run: NotRequired[_SubRun | None]
    """Written only for a sub-agent's call (``_core.subruns``); its state is checked as a whole
    saved state when it is read."""


@with_config(_CONFIG)
class _Decision(TypedDict):
    id: str
    name: str
    input: Any
    toolset_name: NotRequired[str | None]
    decision: Literal["approved", "denied", "answered"]
    approved_input: Any
    reason: str | None
    by: str | None
    at: str | None
    via: Literal["runner", "store", "callback", "gate", "timeout"] | None
    path: NotRequired[list[str]]
    """Written only for a decision inside a sub-run (``_core.tree_audit``)."""


@with_config(_CONFIG)
class _Params(TypedDict):
    model: NotRequired[str]
    max_tokens: NotRequired[int]


@with_config(_CONFIG)
class _Failure(TypedDict):
    type: str
    message: str


@with_config(_CONFIG)
class _Output(TypedDict):
    schema: str
    retries: _Count


@with_config(_CONFIG)
class _State(TypedDict):
    version: int
    run_id: str | None
    phase: Literal["ready", "received", "streaming", "with_body", "awaiting", "done"]
    params: _Params
    tools: list[str | dict[str, Any]]
    reply: _Reply | None
    steered: bool
    calls: list[_Record]
    total: _Usage
    cost: _Cost | None
    opened_at: _Count
    final_answer: _EndReason | None
    end_reason: _EndReason | None
    tool_changes: list[dict[str, Any]]
    failure: _Failure | None
    decisions: list[_Decision]
    output: NotRequired[_Output | None]
    """Written only for a run with a typed answer (``output_format=``), so older states have none."""
    call_counts: NotRequired[dict[str, _Count]]
    """Written only for a run with hooks or per-tool limits (``_core.hooks``)."""
    sub_runs: NotRequired[list[_SubRunSummary]]
    """Written only for a run whose sub-agents ran (``_core.tree_usage``), so older states have none."""


_FIELDS = frozenset(
    name
    for schema in (_State, _Params, _Record, _Decision, _ToolResultBlock, _Reply, _ReplyMessage, _ReplyUsage)
    for name in schema.__required_keys__ | schema.__optional_keys__
) | frozenset(
    name
    for schema in (_Message, _Block, _RequestUsage, _Failure, _Output, _SubRun, _SubRunSummary)
    for name in schema.__required_keys__ | schema.__optional_keys__
)
"""Every field name of the schema: the other names in an error's location are pydantic's labels of
union members (``str``, ``list[...]``), which a path leaves out."""
_STATE = pydantic.TypeAdapter(_State)
_MESSAGES = pydantic.TypeAdapter(list[_Message], config=_CONFIG)
_USAGE = pydantic.TypeAdapter(list[_RequestUsage], config=_CONFIG)


def check_state(data: Mapping[str, Any]) -> None:
    """Check a state's fields other than ``messages`` and ``usage`` (version 5's form).

    Raises:
        ValueError: The first field that does not fit, by its path, and why.
    """
    _check(_STATE, data, ())


def check_messages(messages: object) -> Sequence[Any]:
    """Check a saved history (``messages``); returns it as it is.

    Raises:
        ValueError: The first message that does not fit, by its path, and why.
    """
    _check(_MESSAGES, messages, ("messages",))
    return cast("Sequence[Any]", messages)


def check_usage(usage: object) -> Sequence[Any]:
    """Check a saved list of per-request usage (``usage``); returns it as it is.

    Raises:
        ValueError: The first entry that does not fit, by its path, and why.
    """
    _check(_USAGE, usage, ("usage",))
    return cast("Sequence[Any]", usage)


def _check(adapter: pydantic.TypeAdapter[Any], data: object, where: tuple[str, ...]) -> None:
    try:
        adapter.validate_python(data)
    except pydantic.ValidationError as error:
        # Of a union's errors, the deepest is that of the member the value was meant to be (a list
        # of blocks, say, rather than a string).
        errors = error.errors(include_url=False)
        deepest = max(errors, key=lambda item: len(_path_parts(item["loc"])))
        raise ValueError(_problem(where + _path_parts(deepest["loc"]), deepest)) from None


def _path_parts(location: tuple[str | int, ...]) -> tuple[str | int, ...]:
    return tuple(part for part in location if isinstance(part, int) or part in _FIELDS)


def _problem(location: tuple[str | int, ...], error: Any) -> str:
    path = _path(location)
    if error["type"] == "missing":
        return f"{path} is missing"
    if error["type"] == "string_pattern_mismatch":  # the pattern of costs
        message = "a cost is an amount of US dollars as decimal text, such as '0.0105'"
    else:
        message = str(error["msg"])
        message = message[:1].lower() + message[1:]
    return f"{path} is {_preview(error['input'])}: {message}"


def _path(location: tuple[str | int, ...]) -> str:
    """``("calls", 0, "status")`` as ``calls[0].status``."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            path += f".{part}" if path else part
    return path or "the state"


def _preview(value: object) -> str:
    try:
        text = repr(value)
    except Exception:
        text = f"a {type(value).__name__!r}"
    return text if len(text) <= 60 else text[:57] + "..."

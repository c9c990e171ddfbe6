"""The values of the hooks that can refuse or change a tool call (``_core.hooks``): what a hook
sees of a call (``ToolCallInfo``), what a ``before_tool_call`` hook answers (``Deny``, ``RunWith``),
what the core knows of a run's hooks (``HookPlan``), and the reason a call over its limit gets.
Plain data (and ``counts_saveable``, what a save leaves out of the counts), apart from the core's chain so that the effects can name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .state import CallRecord, RunState
from .types import ToolCall

__all__ = ["LIMITED", "Deny", "HookPlan", "RequestInfo", "RunWith", "ToolCallInfo", "counts_saveable"]

LIMITED = (
    "This call to {name!r} was not run: the run allows at most {limit} call(s) to {name!r}, and that "
    "limit is reached. Do not call {name!r} again in this run."
)
"""The reason the model reads for a call over its tool's limit (``max_calls=``)."""


@dataclass(frozen=True, slots=True)
class ToolCallInfo:
    """What a tool call hook sees of a call (``Hooks.before_tool_call``, ``Hooks.after_tool_call``).

    Attributes:
        id: The call's tool_use id.
        name: The tool's name.
        input: The input the call would run with: the model's, or the one a person approved
            instead (``call.input`` is always the model's).
        call: The call as the model sent it.
        run_id: The run's name in its store, if it has one.
        approved: Whether a decision approved the call (its tool requires approval).
        approved_by: Who approved it, as they said (``approve(..., by=...)``), if known.
    """

    id: str
    name: str
    input: object
    call: ToolCall
    run_id: str | None = None
    approved: bool = False
    approved_by: str | None = None


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """What a ``before_request`` hook sees of the request about to be sent.

    Attributes:
        messages: The history the request sends, as message params.
        params: The other request params (``model``, ``system``, ...; not ``tools``).
        tools: The names of the tools the run may call (raw definitions as given).
        run_id: The run's name in its store, if it has one.
        requests_sent: How many requests of the run got a reply before this one.
    """

    messages: tuple[Any, ...]
    params: Mapping[str, Any]
    tools: tuple[str | Mapping[str, Any], ...]
    run_id: str | None
    requests_sent: int


@dataclass(frozen=True, slots=True)
class Deny:
    """A hook's refusal: a ``before_tool_call`` hook's (the call does not run; the model reads
    ``reason`` as its error result), or a ``before_request`` or ``check_output`` hook's.

    Raises:
        TypeError: ``reason`` is not a str.
        ValueError: ``reason`` holds nothing but spaces (the service refuses an empty error
            result, and a refusal that says nothing cannot be acted on). Raised in a hook, either
            fails closed as the hook's error does.
    """

    reason: str

    def __post_init__(self) -> None:
        reason: object = self.reason
        if not isinstance(reason, str):
            raise TypeError(f"Deny(reason) takes the reason as a str, not {type(reason).__name__!r}.")
        if not reason.strip():
            raise ValueError(
                "Deny(reason) needs a reason that says something, not an empty one: the model (or the caller "
                "of a refused request) reads it."
            )


@dataclass(frozen=True, slots=True)
class RunWith:
    """A ``before_tool_call`` hook's answer: run the call with ``input`` instead of the model's
    (JSON data, checked against the tool's schema as the model's input is)."""

    input: object


@dataclass(frozen=True, slots=True)
class HookPlan:
    """What the core needs to know of the run's hooks: which are set, and the per-tool limits.
    A run with none has no plan (``CoreBase.hooks is None``), and pays for nothing here."""

    before_tool_call: bool = False
    after_tool_call: bool = False
    before_request: bool = False
    check_output: bool = False
    output_retries: int = 0
    """How many times a final answer ``check_output`` refuses is sent back (``output_retries=``,
    shared with a typed answer's)."""
    max_calls: Mapping[str, int] = field(default_factory=dict[str, int])


def counts_saveable(
    state: RunState, calls: Mapping[str, CallRecord], left_out: Mapping[str, CallRecord | None]
) -> RunState:
    """``state`` with the journal ``calls``, less the counts of the starts ``left_out`` (their
    save is not written: a save leaves them out, ``CoreBase.saveable``), so that a crash never
    counts a call that then runs again."""
    counts = dict(state.call_counts)
    for call_id, previous in left_out.items():
        record = state.calls.get(call_id)
        if (
            record is None
            or record.hook not in ("run", "rewritten")
            or (previous is not None and previous.hook)
        ):
            continue
        name = record.call.name
        if counts.get(name, 0) > 0:
            counts[name] -= 1
    return state.replace(calls=calls, call_counts=counts)

"""The ``AWAITING`` phase of the lifecycle as pure functions over ``RunState``, with no I/O: calls
that wait for a decision (gated), decided here (approved, denied, answered) or through the run's
store (adopted, kept in the audit), and the turn paused and resumed around them.

As in ``_core.transitions``, each function returns a new state and never changes its argument::

    WITH_BODY --calls_gated, turn_paused--> AWAITING --call_decided*, turn_resumed--> WITH_BODY
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, TypedDict, Unpack

from anthropic.types import ToolResultBlockParam

from .errors import ApprovalError
from .results import tool_result_block
from .state import CallRecord, CallStatus, Decision, DecisionRecord, Phase, RunState
from .transitions import pending_calls, record_of
from .types import DecisionSource, ToolCall

__all__ = [
    "DecisionDetails",
    "awaiting",
    "call_adopted",
    "call_decided",
    "calls_gated",
    "decision_kept",
    "decision_of",
    "turn_paused",
    "turn_resumed",
]


def awaiting(state: RunState, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """Those of ``calls`` that wait for a decision."""
    if not state.calls:  # the common case: a turn whose calls are not journaled yet
        return ()
    return tuple(
        call for call in calls if (record := record_of(state, call)) and record.status is CallStatus.AWAITING
    )


def calls_gated(
    state: RunState,
    gated: Sequence[ToolCall],
    denied: Sequence[tuple[ToolCall, str]] = (),
    *,
    tools: Mapping[str, Mapping[str, Any]] | None = None,
) -> RunState:
    """Calls whose tools require approval wait for a decision; those whose gate failed are denied
    with the reason given (fail closed). ``tools`` gives, by tool_use id, the definition of a
    waiting call's tool (name, description, input schema), kept with the call for whoever decides."""
    if not gated and not denied:
        return state
    calls = dict(state.calls)
    for call in gated:
        calls[call.id] = CallRecord(
            call, CallStatus.AWAITING, tool=None if tools is None else tools.get(call.id)
        )
    audit = list(state.decisions)
    for call, reason in denied:
        record = _decided(call, "denied", tool_result_block(call.id, reason, is_error=True))
        calls[call.id] = record
        audit.append(decision_of(record, "gate"))
    return state.replace(calls=calls, decisions=tuple(audit))


class DecisionDetails(TypedDict, total=False):
    """What comes with a decision on a call (``call_decided``, and ``DecisionsCore.decide`` over it);
    each is optional."""

    result: ToolResultBlockParam | None
    """The result of a call denied or answered."""
    approved_input: object
    """The input a person approved the call with, when they edited it."""
    by: str | None
    """Who decided, as the decider said."""
    at: str | None
    """When: an ISO 8601 time."""
    via: DecisionSource
    """Where the decision came from (``"runner"`` when not given)."""


def call_decided(
    state: RunState, tool_use_id: str, decision: Decision, **details: Unpack[DecisionDetails]
) -> RunState:
    """Decide a call of the current turn: approve one that waits (perhaps with an edited input),
    or deny or answer (with ``result``) one that waits or has not started; ``by`` and ``at`` say
    who decided and when (an ISO 8601 time), and are kept with the call; the run's audit
    (``RunState.decisions``) keeps the decision, and ``via``, where it came from.

    Raises:
        ApprovalError: No pending call has that id, or the call is decided, running or done already.
    """
    result, approved_input = details.get("result"), details.get("approved_input")
    by, at, via = details.get("by"), details.get("at"), details.get("via", "runner")
    calls = pending_calls(state)
    call = next((call for call in calls if call.id == tool_use_id), None)
    if call is None:
        open_ids = [call.id for call in awaiting(state, calls)]
        raise ApprovalError(
            f"no pending tool call has the id {tool_use_id!r}; the calls that wait for a decision are "
            f"{open_ids!r}. Decide a call of the reply the runner holds (runner.pending_approvals)."
        )
    record = record_of(state, call)
    status = None if record is None else record.status
    if decision == "approved" and status is not CallStatus.AWAITING:
        what = "needs no approval" if status is None else _DESCRIBED[status]
        raise ApprovalError(f"the tool call {tool_use_id!r} {what}, so it cannot be approved.")
    if status not in (None, CallStatus.AWAITING):
        raise ApprovalError(
            f"the tool call {tool_use_id!r} {_DESCRIBED[status]}, so it cannot be {decision} now."
        )
    tool = None if record is None else record.tool
    if decision == "approved":
        new = CallRecord(
            call,
            CallStatus.APPROVED,
            approved_input=approved_input,
            decision="approved",
            decided_by=by,
            decided_at=at,
            tool=tool,
        )
    else:
        assert result is not None
        new = _decided(call, decision, result, by=by, at=at, tool=tool)
    return state.replace(
        calls={**state.calls, call.id: new}, decisions=(*state.decisions, decision_of(new, via))
    )


def call_adopted(state: RunState, record: CallRecord) -> RunState:
    """Take over a decision made elsewhere (through the run's store) on a call of the current
    turn: ``record`` as the decider saved it, approved and not started, or answered. A decision
    this run took on the call since its last save is overruled (the store's was saved first): its
    entry leaves the audit, which keeps the decision the call goes on with.

    Raises:
        ApprovalError: The record is not of a pending call, or it is not a fresh decision.
    """
    call = record.call
    if call not in pending_calls(state) or record.decision is None:
        raise ApprovalError(f"the record of {call.id!r} is not a decision on a call of the current turn.")
    fresh = CallStatus.APPROVED if record.decision == "approved" else CallStatus.FINISHED
    if record.status is not fresh:
        raise ApprovalError(f"the record of {call.id!r} is {record.status.value}, not a fresh decision.")
    decisions = state.decisions
    mine = state.calls.get(call.id)
    if mine is not None and mine.decision is not None:  # overruled: the store's stands, in the audit too
        kept = [index for index, entry in enumerate(decisions) if entry.call == call]
        if kept:
            decisions = (*decisions[: kept[-1]], *decisions[kept[-1] + 1 :])
    return state.replace(
        calls={**state.calls, call.id: record}, decisions=(*decisions, decision_of(record, "store"))
    )


def decision_kept(state: RunState, record: CallRecord) -> RunState:
    """Keep in the audit a decision made elsewhere (through the run's store) on a call that no
    longer waits in this run (the loop body steered past it, or closed the run): it changes
    nothing else, but it is not lost."""
    return state.replace(decisions=(*state.decisions, decision_of(record, "store")))


def decision_of(record: CallRecord, via: DecisionSource) -> DecisionRecord:
    """The audit's entry for the decision ``record`` holds (``record.decision`` is set)."""
    assert record.decision is not None
    reason = None
    if record.decision == "denied" and record.result is not None:
        content = record.result.get("content")
        reason = content if isinstance(content, str) else None
    return DecisionRecord(
        call=record.call,
        decision=record.decision,
        approved_input=record.approved_input,
        reason=reason,
        by=record.decided_by,
        at=record.decided_at,
        via=via,
    )


_DESCRIBED = {
    CallStatus.AWAITING: "waits for a decision",
    CallStatus.APPROVED: "was approved already",
    CallStatus.STARTED: "is running",
    CallStatus.FINISHED: "has its result already",
}


def _decided(
    call: ToolCall,
    decision: Decision,
    result: ToolResultBlockParam,
    *,
    by: str | None = None,
    at: str | None = None,
    tool: Mapping[str, Any] | None = None,
) -> CallRecord:
    return CallRecord(
        call, CallStatus.FINISHED, result, decision=decision, decided_by=by, decided_at=at, tool=tool
    )


def turn_paused(state: RunState) -> RunState:
    """The body asked for the next reply while calls still wait for decisions: the loop pauses."""
    return state.replace(phase=Phase.AWAITING, end_reason="awaiting_approval")


def turn_resumed(state: RunState) -> RunState:
    """Every call is decided: the paused turn goes on."""
    if state.phase is not Phase.AWAITING:
        return state
    return state.replace(phase=Phase.WITH_BODY, end_reason=None)

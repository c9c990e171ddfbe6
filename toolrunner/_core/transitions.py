"""The tool loop's lifecycle as pure functions over ``RunState``, with no I/O.

A driver (``_runner/runner.py``, and the Temporal workflow) keeps the current state and does the I/O that
these functions ask for: it sends the request that ``request_params`` gives, hands replies to
``reply_received``, runs the calls that ``pending_calls`` names, and ends the turn with
``turn_finished``. Each function returns a new state and never changes its argument, so the
property tests drive the whole lifecycle directly.

One iteration, as the driver goes through it::

    READY --limit_reached--> DONE (or one last request with tool_choice none: final_answer)
    READY --stream_opened--> STREAMING --reply_received--> WITH_BODY
    READY --reply_received--> RECEIVED --delivered-------> WITH_BODY
    WITH_BODY --calls_gated, (call_started, call_finished)*, turn_finished--> READY or DONE
    WITH_BODY --turn_paused--> AWAITING --call_decided*, turn_resumed--> WITH_BODY
    STREAMING --stream_abandoned--> READY (the request is sent again)
    any --closed--> DONE;  DONE --steered--> READY (a follow-up opens the loop again)

A saved state goes on in a new process through ``resumed``.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, cast

from anthropic.types import ToolResultBlockParam

from .caching import Caching
from .errors import ApprovalError
from .messages import TOOL_ID_PATTERN, client_tool_calls, field, reply_param
from .results import tool_result_block
from .state import CallRecord, CallStatus, Decision, DecisionRecord, Phase, RunState
from .types import DecisionSource, EndReason, Reply, ToolCall, ToolFlags, ToolResultMessage
from .usage import RequestUsage

__all__ = [
    "INTERRUPTED",
    "STOP_REASON_STEPS",
    "Limits",
    "Step",
    "awaiting",
    "call_adopted",
    "call_decided",
    "call_finished",
    "call_started",
    "calls_dropped",
    "calls_gated",
    "calls_to_answer",
    "closed",
    "container_param",
    "decision_kept",
    "decision_of",
    "delivered",
    "interrupted",
    "limit_reached",
    "pending_calls",
    "ready_to_send",
    "record_of",
    "reply_received",
    "request_params",
    "resumed",
    "steered",
    "step_for",
    "stream_abandoned",
    "stream_opened",
    "tools_changed",
    "turn_finished",
    "turn_paused",
    "turn_resumed",
]


class Step(enum.Enum):
    """What a reply's stop reason asks the runner to do next."""

    RUN_TOOLS = "run_tools"
    """Answer the reply's client tool calls, then send the next request."""
    RESUME = "resume"
    """Send the history back unchanged so the service continues the turn."""
    STOP = "stop"
    """The model is done (or was cut off): never run this reply's tool calls."""


# The one table of stop reasons. ``tests/test_lifecycle.py`` checks that it covers every value
# of the installed SDK's ``StopReason`` and ``BetaStopReason``. Unknown values map to STOP.
STOP_REASON_STEPS: Mapping[str, Step] = {
    "tool_use": Step.RUN_TOOLS,
    "pause_turn": Step.RESUME,
    # Beta: with ``pause_after_compaction`` the service hands the turn back before answering.
    "compaction": Step.RESUME,
    "end_turn": Step.STOP,
    "stop_sequence": Step.STOP,
    # A max_tokens cut can leave the last tool_use with a truncated input: never run it.
    "max_tokens": Step.STOP,
    "refusal": Step.STOP,
    "model_context_window_exceeded": Step.STOP,
}


def step_for(stop_reason: str | None) -> Step:
    """The step a stop reason asks for; ``None`` and unknown values stop the loop."""
    if stop_reason is None:
        return Step.STOP
    return STOP_REASON_STEPS.get(stop_reason, Step.STOP)


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits a run checks before each request (from the runner's options)."""

    max_iterations: int | None = None
    max_total_tokens: int | None = None
    max_cost: Decimal | None = None
    on_limit: Literal["stop", "final_answer"] = "stop"


# -- decisions ------------------------------------------------------------------------------------


def calls_to_answer(last_message: object | None, last_reply: object | None) -> tuple[ToolCall, ...]:
    """The tool calls the runner answers, given the last message of the history (as it stands,
    or will stand once the reply is appended) and the latest reply.

    When the pending calls are the latest reply's own, its stop reason decides: only
    ``tool_use`` runs them (a ``max_tokens`` cut may have truncated an input). Calls of any other
    message (a history the caller set) are always answered.
    """
    if last_message is None:
        return ()
    calls = client_tool_calls(last_message)
    if not calls or last_reply is None or step_for(field(last_reply, "stop_reason")) is Step.RUN_TOOLS:
        return calls
    reply_ids = [call.id for call in client_tool_calls(last_reply)]
    return () if [call.id for call in calls] == reply_ids else calls


def pending_calls(state: RunState) -> tuple[ToolCall, ...]:
    """The calls the current turn answers: those of the reply the body holds (unless it changed
    the history), or else those of the history's last message."""
    if state.phase in (Phase.WITH_BODY, Phase.AWAITING, Phase.RECEIVED) and not state.steered:
        return calls_to_answer(state.reply, state.reply)
    if state.phase is Phase.STREAMING:
        return ()
    return calls_to_answer(state.messages[-1] if state.messages else None, state.reply)


def limit_reached(state: RunState, limits: Limits) -> EndReason | None:
    """The limit that stops the next request, if one is reached."""
    if limits.max_iterations is not None and state.requests_sent - state.opened_at >= limits.max_iterations:
        return "max_iterations"
    if limits.max_total_tokens is not None and state.total.total_tokens >= limits.max_total_tokens:
        return "token_budget"
    if limits.max_cost is not None and (state.cost or 0) >= limits.max_cost:
        return "cost_budget"
    return None


def container_param(current: object, reply_container_id: str | None) -> object:
    """The ``container`` param to send next, given the current one and the reply's container id.

    The reply's id fills a missing param and an object-form param without an id; an id the caller
    gave is never overwritten. Returns ``current`` itself when nothing changes.
    """
    if reply_container_id is None:
        return current
    if current is None:
        return reply_container_id
    if isinstance(current, Mapping):
        mapping = cast("Mapping[str, object]", current)
        if not mapping.get("id"):
            return {**mapping, "id": reply_container_id}
        return mapping
    return current


def request_params(
    state: RunState, wire_tools: Sequence[Any], cache: Caching | None = None
) -> dict[str, Any]:
    """The keyword arguments of the next request: the params, the history and the tools' definitions;
    a request made the last one by a limit may not call tools. With ``cache``, the prompt-cache
    breakpoints its policy asks for are added (``_core.caching.add_breakpoints``); the state is not
    changed."""
    kwargs = dict(state.params)
    kwargs["messages"] = list(state.messages)
    if wire_tools:
        kwargs["tools"] = wire_tools
        if state.final_answer is not None:
            kwargs["tool_choice"] = {"type": "none"}
    if cache is not None:
        kwargs = cache.params(kwargs, state.messages)
    return kwargs


# -- transitions ----------------------------------------------------------------------------------


def ready_to_send(state: RunState, limits: Limits) -> RunState:
    """In ``READY``: the state to send the next request from, or ``DONE`` at a limit (with
    ``on_limit="final_answer"``, first one last request that may not call tools)."""
    limit = limit_reached(state, limits)
    if limit is None:
        return state
    if limits.on_limit == "final_answer" and state.final_answer is None:
        return state.replace(final_answer=limit)
    return _finish(state, limit)


def stream_opened(state: RunState) -> RunState:
    """A request's reply starts streaming; the body may steer while it holds the stream."""
    return state.replace(phase=Phase.STREAMING, steered=False, calls={})


def stream_abandoned(state: RunState) -> RunState:
    """The stream failed or was dropped before its reply was complete: send the request again
    (what its calls started early gave is dropped with it)."""
    if state.phase is not Phase.STREAMING:
        return state
    return state.replace(phase=Phase.READY, calls={})


def reply_received(state: RunState, reply: Reply, usage: RequestUsage) -> RunState:
    """A complete reply (checked with ``check_reply``): its usage counts, and it waits to be
    handed to the body (``RECEIVED``); a streamed reply is with the body already (it held the
    stream). A reply whose stream the body closed the loop on counts, but the loop stays closed."""
    streamed = state.phase is Phase.STREAMING
    phase = Phase.WITH_BODY if streamed else Phase.RECEIVED
    return state.replace(
        phase=Phase.DONE if state.phase is Phase.DONE else phase,
        reply=reply,
        steered=state.steered if streamed else False,
        calls=state.calls if streamed else {},
        usage=(*state.usage, usage),
        total=state.total + usage.usage,
        cost=None if usage.cost is None or state.cost is None else state.cost + usage.cost,
    )


def delivered(state: RunState) -> RunState:
    """The reply was handed to the loop body, which may steer until it asks for the next."""
    if state.phase is not Phase.RECEIVED:
        return state
    return state.replace(phase=Phase.WITH_BODY)


def steered(state: RunState, **changes: Any) -> RunState:
    """The body changed the history or the params (``changes``): the reply it holds is not
    appended. A loop that had ended opens again, so the follow-up is answered."""
    if state.phase is Phase.DONE:
        changes |= {
            "phase": Phase.READY,
            "end_reason": None,
            "final_answer": None,
            "opened_at": state.requests_sent,
        }
    return state.replace(steered=True, **changes)


def record_of(state: RunState, call: ToolCall) -> CallRecord | None:
    """The journal's record of that very call (id, name and input), if any."""
    record = state.calls.get(call.id)
    if record is None or (record.call is not call and record.call != call):
        return None
    return record


def awaiting(state: RunState, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """Those of ``calls`` that wait for a decision."""
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


def call_decided(
    state: RunState,
    tool_use_id: str,
    decision: Decision,
    *,
    result: ToolResultBlockParam | None = None,
    approved_input: object = None,
    by: str | None = None,
    at: str | None = None,
    via: DecisionSource = "runner",
) -> RunState:
    """Decide a call of the current turn: approve one that waits (perhaps with an edited input),
    or deny or answer (with ``result``) one that waits or has not started; ``by`` and ``at`` say
    who decided and when (an ISO 8601 time), and are kept with the call; the run's audit
    (``RunState.decisions``) keeps the decision, and ``via``, where it came from.

    Raises:
        ApprovalError: No pending call has that id, or the call is decided, running or done already.
    """
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


def call_started(state: RunState, call: ToolCall) -> RunState:
    """A call of the current turn starts running. A decision on it (and the input a person
    approved) stays with it, however often it is started again: after a cancellation, a failed
    save or a crash, what runs is what was decided."""
    record = record_of(state, call)
    if record is None:
        return state.replace(calls={**state.calls, call.id: CallRecord(call, CallStatus.STARTED)})
    started = _with_status(record, CallStatus.STARTED, None)
    return state.replace(calls={**state.calls, call.id: started})


def call_finished(state: RunState, call: ToolCall, result: ToolResultBlockParam) -> RunState:
    """A call finished: its result is kept, and the call never runs again."""
    record = record_of(state, call)
    if record is None:
        finished = CallRecord(call, CallStatus.FINISHED, result)
    else:
        finished = _with_status(record, CallStatus.FINISHED, result)
    return state.replace(calls={**state.calls, call.id: finished})


def _with_status(record: CallRecord, status: CallStatus, result: ToolResultBlockParam | None) -> CallRecord:
    """``dataclasses.replace(record, status=status, result=result)``, without its generic work (a
    call of every turn); ``test_transitions`` checks it keeps every other field."""
    return CallRecord(
        record.call,
        status,
        result,
        record.approved_input,
        record.decision,
        record.decided_by,
        record.decided_at,
        record.tool,
    )


def calls_dropped(state: RunState, ids: Sequence[str]) -> RunState:
    """Forget calls (started early for a reply whose stop reason forbids tools)."""
    if not any(tool_use_id in state.calls for tool_use_id in ids):
        return state
    return state.replace(calls={key: record for key, record in state.calls.items() if key not in ids})


def turn_finished(state: RunState, results: ToolResultMessage | None) -> RunState:
    """End the turn of the reply the body held: append the reply unless the body changed the
    history (and unless it is empty: the service accepts no empty message but the last), then the
    results, and decide whether the loop goes on."""
    reply = state.reply
    assert state.phase in (Phase.WITH_BODY, Phase.AWAITING, Phase.RECEIVED)
    assert reply is not None
    messages = state.messages
    if not state.steered and reply.content:
        messages = (*messages, reply_param(reply))
    if results is not None:
        messages = (*messages, results)
    params = state.params
    if reply.container is not None:
        container = container_param(params.get("container"), reply.container.id)
        if container is not params.get("container"):
            params = {**params, "container": container}
    state = state.replace(messages=messages, params=params, calls={}, phase=Phase.READY, end_reason=None)
    if state.final_answer is not None:
        return _finish(state, state.final_answer)
    if results is not None or state.steered or step_for(reply.stop_reason) is Step.RESUME:
        return state
    return _finish(state, "model")


def closed(state: RunState) -> RunState:
    """End the loop now: a complete reply the body holds is appended if the body left the history
    unchanged, but its calls are not run; a reply still streaming is dropped."""
    if state.phase is Phase.DONE:
        return state
    if (
        state.phase in (Phase.WITH_BODY, Phase.RECEIVED)
        and not state.steered
        and state.reply is not None
        and state.reply.content
    ):
        state = state.replace(messages=(*state.messages, reply_param(state.reply)))
    return _finish(state, "closed")


INTERRUPTED = (
    "The call to {name!r} was interrupted: the program running it stopped before the call finished, so it "
    "may or may not have taken effect. Check before calling it again."
)
"""The is_error result of a call that a crash interrupted (its tool is not idempotent)."""


def interrupted(call: ToolCall) -> ToolResultBlockParam:
    """The result of ``call`` when what ran it was lost before it finished (``INTERRUPTED``): a
    crash (``resumed``), or a Temporal activity that gave up."""
    block = tool_result_block(call.id, INTERRUPTED.format(name=call.name), is_error=True)
    if call.toolset_name is not None:  # a toolset member's result echoes its family
        block["toolset_name"] = call.toolset_name
    return block


def may_start_early(call: ToolCall, tool: ToolFlags | None, state: RunState, *, durable: bool) -> bool:
    """Whether ``call`` may start while its reply still streams (``run_tools_eagerly``).

    Not if its tool is unknown, opted out (``start_early=False``), runs alone (``sequential``: after
    the calls before it, which the reply may not have finished naming) or may need approval; not if it
    started already, or its id is one the reply check will refuse (the reply is then refused
    whole, and none of its calls may have run for it). With a checkpointer (``durable``), only a
    tool that may run again (``idempotent``) starts early: a call that finished before its reply
    was whole and saved would be lost to the journal if the process died then, and the reply,
    requested again, could ask for it again.
    """
    return (
        tool is not None
        and tool.start_early
        and not tool.sequential
        and tool.requires_approval is False
        and (tool.idempotent or not durable)
        and TOOL_ID_PATTERN.fullmatch(call.id) is not None
        and call.id not in state.calls
    )


def resumed(state: RunState, *, may_run_again: Callable[[ToolCall], bool]) -> RunState:
    """A saved state, made ready to go on in a new process. A reply that was still streaming is
    requested again. A call that had started but not finished runs again if ``may_run_again`` says
    so (its tool is idempotent; a person's approval, and the input they approved, still hold);
    otherwise it gets an ``is_error`` result saying it was interrupted
    and may or may not have taken effect. Finished calls keep their results and never run again."""
    if state.phase is Phase.STREAMING:
        state = state.replace(phase=Phase.READY, calls={})
    calls: dict[str, CallRecord] = {}
    for tool_use_id, record in state.calls.items():
        if record.status is CallStatus.STARTED:
            if may_run_again(record.call):
                if record.decision == "approved":  # runs again as approved, with the input approved
                    calls[tool_use_id] = dataclasses.replace(record, status=CallStatus.APPROVED)
                continue
            record = dataclasses.replace(record, status=CallStatus.FINISHED, result=interrupted(record.call))
        calls[tool_use_id] = record
    return state.replace(calls=calls)


def _finish(state: RunState, reason: EndReason) -> RunState:
    # The journal stays: calls the body started may still be running (a tool that closes the
    # runner, say); it is emptied when the next request is sent.
    return state.replace(phase=Phase.DONE, end_reason=reason)


def tools_changed(state: RunState, blocks: Sequence[Mapping[str, Any]]) -> RunState:
    """Tool changes made by the driver (``add_tools``, ``remove_tools``) join the pending ones,
    which the next request sends (``RunState.tool_changes``)."""
    return state.replace(tool_changes=(*state.tool_changes, *(dict(block) for block in blocks)))

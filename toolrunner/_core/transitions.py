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

A saved state goes on in a new process through ``resumed``. The transitions of the ``AWAITING``
phase (calls gated, decided, adopted from a store; the turn paused and resumed) are in
``_core.approval``; what a reply's stop reason asks for is ``_core.stop_reasons``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Literal, TypeVar, cast

from anthropic.types import ToolResultBlockParam

from .caching import Caching
from .messages import TOOL_ID_PATTERN, reply_param
from .results import tool_result_block
from .state import CallRecord, CallStatus, Phase, RunState
from .stop_reasons import StopReasonStep, calls_to_answer, step_for
from .tree_audit import sub_runs_kept
from .tree_usage import spent
from .types import EndReason, Reply, ToolCall, ToolFlags, ToolResultMessage
from .usage import RequestUsage

__all__ = [
    "INTERRUPTED",
    "Limits",
    "call_finished",
    "call_started",
    "calls_dropped",
    "capped",
    "closed",
    "container_param",
    "delivered",
    "interrupted",
    "limit_reached",
    "may_start_early",
    "pending_calls",
    "ready_to_send",
    "record_of",
    "reply_received",
    "request_params",
    "resumed",
    "steered",
    "stream_abandoned",
    "stream_opened",
    "tools_changed",
    "turn_finished",
]


@dataclass(frozen=True, slots=True)
class Limits:
    """The limits a run checks before each request (from the runner's options)."""

    max_iterations: int | None = None
    max_total_tokens: int | None = None
    max_cost: Decimal | None = None
    on_limit: Literal["stop", "final_answer"] = "stop"


# -- before the request ---------------------------------------------------------------------------


def pending_calls(state: RunState) -> tuple[ToolCall, ...]:
    """The calls the current turn answers: those of the reply the body holds (unless it changed
    the history), or else those of the history's last message."""
    if state.phase in (Phase.WITH_BODY, Phase.AWAITING, Phase.RECEIVED) and not state.steered:
        return calls_to_answer(state.reply, state.reply)
    if state.phase is Phase.STREAMING:
        return ()
    return calls_to_answer(state.messages[-1] if state.messages else None, state.reply)


def limit_reached(state: RunState, limits: Limits) -> EndReason | None:
    """The limit that stops the next request, if one is reached. The limits hold for the run's
    tree (``_core.tree_usage``): the requests, tokens and cost of its sub-runs count with its own."""
    if limits.max_iterations is None and limits.max_total_tokens is None and limits.max_cost is None:
        return None
    tree = spent(state)
    if limits.max_iterations is not None and tree.requests - state.opened_at >= limits.max_iterations:
        return "max_iterations"
    if limits.max_total_tokens is not None and tree.total.total_tokens >= limits.max_total_tokens:
        return "token_budget"
    if limits.max_cost is not None and (tree.cost or 0) >= limits.max_cost:
        return "cost_budget"
    return None


def capped(own: Limits, child: RunState, parent: RunState, call_id: str, outer: Limits) -> Limits:
    """The limits of a sub-run (at ``child``, run by the call ``call_id`` of the run at ``parent``)
    when its next request is checked: the least of its ``own`` and what its parent's tree has left
    of the parent's limits (``outer``, themselves capped the same way one level up). What the
    parent's tree spent besides this sub-run counts: the parent's own requests, its ended
    sub-runs, and the sub-runs in flight beside this one (as their last save left them). So a
    sub-run stops once the tree's budget is spent, and its parent at its next check."""
    if outer.max_iterations is None and outer.max_total_tokens is None and outer.max_cost is None:
        return own
    others = spent(parent, leave_out=call_id)
    iterations = (
        None
        if outer.max_iterations is None
        else outer.max_iterations - (others.requests - parent.opened_at) - child.opened_at
    )
    tokens = None if outer.max_total_tokens is None else outer.max_total_tokens - others.total.total_tokens
    cost = None if outer.max_cost is None else outer.max_cost - (others.cost or 0)
    return dataclasses.replace(
        own,
        max_iterations=_least(own.max_iterations, iterations),
        max_total_tokens=_least(own.max_total_tokens, tokens),
        max_cost=_least(own.max_cost, cost),
    )


_N = TypeVar("_N", int, Decimal)


def _least(own: _N | None, left: _N | None) -> _N | None:
    return left if own is None else own if left is None else min(own, left)


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
    return sub_runs_kept(state).replace(phase=Phase.STREAMING, steered=False, calls={})


def stream_abandoned(state: RunState) -> RunState:
    """The stream failed or was dropped before its reply was complete: send the request again
    (what its calls started early gave is dropped with it)."""
    if state.phase is not Phase.STREAMING:
        return state
    return sub_runs_kept(state).replace(phase=Phase.READY, calls={})


def reply_received(
    state: RunState, reply: Reply, usage: RequestUsage, *, handed_over: bool = False
) -> RunState:
    """A complete reply (checked with ``check_reply``): its usage counts, and it waits to be
    handed to the body (``RECEIVED``); a streamed reply is with the body already (it held the
    stream), and so is one ``handed_over`` at once (``delivered`` in the same step, for a driver
    with nothing to do in between). A reply whose stream the body closed the loop on counts, but
    the loop stays closed."""
    streamed = state.phase is Phase.STREAMING
    phase = Phase.WITH_BODY if streamed or handed_over else Phase.RECEIVED
    if not streamed and state.calls:  # the journal of a turn the body went on past is emptied
        state = sub_runs_kept(state)
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
            "opened_at": spent(state).requests,
        }
    return state.replace(steered=True, **changes)


def record_of(state: RunState, call: ToolCall) -> CallRecord | None:
    """The journal's record of that very call (id, name and input), if any."""
    record = state.calls.get(call.id)
    if record is None or (record.call is not call and record.call != call):
        return None
    return record


def call_started(state: RunState, call: ToolCall) -> RunState:
    """A call of the current turn starts running. A decision on it (and the input a person
    approved) stays with it, however often it is started again: after a cancellation, a failed
    save or a crash, what runs is what was decided."""
    record = record_of(state, call)
    if record is None:
        return state.replace(calls={**state.calls, call.id: _new_record(call, CallStatus.STARTED, None)})
    started = _with_status(record, CallStatus.STARTED, None)
    return state.replace(calls={**state.calls, call.id: started})


def call_finished(state: RunState, call: ToolCall, result: ToolResultBlockParam) -> RunState:
    """A call finished: its result is kept, and the call never runs again."""
    record = record_of(state, call)
    if record is None:
        finished = _new_record(call, CallStatus.FINISHED, result)
    else:
        finished = _with_status(record, CallStatus.FINISHED, result)
    return state.replace(calls={**state.calls, call.id: finished})


# The two records of every call are made without CallRecord's __init__, which, the dataclass being
# frozen, sets each of its eleven fields through object.__setattr__; its fields' own setters are
# called instead (``test_transitions`` checks that the records equal those __init__ makes).
_new = object.__new__
(
    _call,
    _status,
    _result,
    _approved_input,
    _decision,
    _decided_by,
    _decided_at,
    _tool,
    _hook,
    _hook_input,
    _sub_run,
) = (
    cast("Callable[[CallRecord, object], None]", getattr(CallRecord, item.name).__set__)
    for item in dataclasses.fields(CallRecord)
)


def _new_record(call: ToolCall, status: CallStatus, result: ToolResultBlockParam | None) -> CallRecord:
    """``CallRecord(call, status, result)``."""
    new = _new(CallRecord)
    _call(new, call)
    _status(new, status)
    _result(new, result)
    _approved_input(new, None)
    _decision(new, None)
    _decided_by(new, None)
    _decided_at(new, None)
    _tool(new, None)
    _hook(new, None)
    _hook_input(new, None)
    _sub_run(new, None)
    return new


def _with_status(record: CallRecord, status: CallStatus, result: ToolResultBlockParam | None) -> CallRecord:
    """``dataclasses.replace(record, status=status, result=result)``, without its generic work (a
    call of every turn)."""
    new = _new(CallRecord)
    _call(new, record.call)
    _status(new, status)
    _result(new, result)
    _approved_input(new, record.approved_input)
    _decision(new, record.decision)
    _decided_by(new, record.decided_by)
    _decided_at(new, record.decided_at)
    _tool(new, record.tool)
    _hook(new, record.hook)
    _hook_input(new, record.hook_input)
    _sub_run(new, record.sub_run)
    return new


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
    appended: tuple[Any, ...] = (reply_param(reply),) if not state.steered and reply.content else ()
    if results is not None:
        appended = (*appended, results)
    if appended:  # one new tuple for the turn's messages
        messages = (*messages, *appended)
    params = state.params
    if reply.container is not None:
        container = container_param(params.get("container"), reply.container.id)
        if container is not params.get("container"):
            params = {**params, "container": container}
    state = sub_runs_kept(state).replace(
        messages=messages, params=params, calls={}, phase=Phase.READY, end_reason=None
    )
    if state.final_answer is not None:
        return _finish(state, state.final_answer)
    if results is not None or state.steered or step_for(reply.stop_reason) is StopReasonStep.RESUME:
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
        state = sub_runs_kept(state).replace(phase=Phase.READY, calls={})
    calls: dict[str, CallRecord] = {}
    for tool_use_id, record in state.calls.items():
        if record.status is CallStatus.STARTED:
            if may_run_again(record.call):
                if record.decision == "approved" or record.hook is not None:
                    # runs again as approved, with the input approved, and as the hooks decided
                    calls[tool_use_id] = dataclasses.replace(record, status=CallStatus.APPROVED)
                elif record.sub_run is not None:  # a sub-agent's call goes on with its sub-run
                    calls[tool_use_id] = record
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

"""Calls that wait for a decision inside sub-runs (issue 30), as pure functions over the tree of
states: a sub-agent's call whose sub-run paused for decisions (``suspended``), the tree's waiting
calls with their path (``waiting_in_tree``), and a decision on a call anywhere in the tree
(``decided_in_tree``).

A sub-run lives in its parent's state, in the record of the call that runs it
(``CallRecord.sub_run``, ``_core.subruns``). When a call of the sub-run needs a decision, the
sub-run pauses (``AWAITING``) and its parent's call is *suspended*: it stays ``STARTED``, the
parent's turn cannot finish, and the parent pauses too. A decision on the nested call is
``approval.call_decided`` applied to the sub-run's state, the records above it replaced; once no
call of the sub-run waits, the parent's call is no longer suspended, and its program runs it again
(the sub-run goes on from its record, with the decision).

A path is that of ``SubRunEvent``: the id of the parent's call and the sub-agent's name, then the
same pair for each level below (``("toolu_1", "coordinator", "toolu_7", "specialist")``); a call
of the run's own turn has the path ``()``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Unpack

from .approval import DecisionDetails, awaiting, call_adopted, call_decided
from .errors import ApprovalError
from .state import CallRecord, CallStatus, Decision, Phase, RunState, SubRun
from .transitions import pending_calls, record_of
from .types import ToolCall

__all__ = [
    "adopted_in_tree",
    "decided_in_tree",
    "record_in_tree",
    "settled",
    "state_at",
    "suspended",
    "suspended_calls",
    "waiting_in_tree",
]


def suspended(record: CallRecord | None) -> bool:
    """Whether ``record`` is that of a sub-agent's call whose sub-run paused with calls that wait
    for a decision (in it, or further down): the call stays started, and does not run again
    until they are decided."""
    if record is None or record.status is not CallStatus.STARTED or record.sub_run is None:
        return False
    child = record.sub_run.state
    return child.phase is Phase.AWAITING and bool(waiting_in_tree(child))


def settled(state: RunState, call: ToolCall) -> bool:
    """Whether ``call``'s program left it settled: with its result, or suspended (a driver that
    runs a call's program checks this after it). One look in the journal, for ``result_of`` and
    ``record_of`` both (a call's own record, or none)."""
    record = state.calls.get(call.id)
    if record is None or (record.call is not call and record.call != call):
        return False
    return record.result is not None or suspended(record)


def suspended_calls(state: RunState, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
    """Those of ``calls`` that are suspended (``suspended``)."""
    journal = state.calls  # only a sub-agent's call can be: a loop that looks no further for the others
    found: list[ToolCall] = []
    for call in calls:
        record = journal.get(call.id)
        if record is not None and record.sub_run is not None and suspended(record_of(state, call)):
            found.append(call)
    return tuple(found)


def waiting_in_tree(state: RunState) -> tuple[ToolCall, ...]:
    """The calls of the tree that wait for a decision: the run's own (of its current turn, path
    ``()``) first, in tool_use order, then those of its suspended calls' sub-runs, each with its
    ``path`` (the module docstring), depth first in tool_use order."""
    calls = pending_calls(state)
    own = awaiting(state, calls)
    nested: list[ToolCall] = []
    for call in calls:
        record = record_of(state, call)
        if record is None or record.status is not CallStatus.STARTED or record.sub_run is None:
            continue
        child = record.sub_run.state
        if child.phase is not Phase.AWAITING:
            continue
        where = (call.id, record.sub_run.agent)
        nested.extend(
            dataclasses.replace(inner, path=(*where, *inner.path)) for inner in waiting_in_tree(child)
        )
    return (*own, *nested)


def state_at(state: RunState, path: Sequence[str]) -> RunState:
    """The state of the sub-run at ``path`` (``state`` itself at ``()``).

    Raises:
        ApprovalError: No sub-run is at that path.
    """
    for call_id, agent in zip(path[::2], path[1::2], strict=True):
        record = state.calls.get(call_id)
        if record is None or record.sub_run is None or record.sub_run.agent != agent:
            raise ApprovalError(f"no sub-run of the agent {agent!r} runs in the call {call_id!r}.")
        state = record.sub_run.state
    return state


def decided_in_tree(
    state: RunState, tool_use_id: str, decision: Decision, **details: Unpack[DecisionDetails]
) -> tuple[RunState, tuple[str, ...]]:
    """Decide the call ``tool_use_id`` wherever it is in the tree (``approval.call_decided``
    applied to its sub-run's state, the sub-run's audit keeping the decision); the new state, and
    the path of the sub-run the call is in (``()``: the run's own).

    Raises:
        ApprovalError: No call of the tree can be decided with that id (the message lists those
            that wait), more than one has it, or ``call_decided`` refuses the decision.
    """
    places = _places(state, tool_use_id)
    if len(places) > 1:
        shown = ", ".join(" → ".join(path) or "the run's own turn" for path in places)
        raise ApprovalError(
            f"more than one call of the tree has the id {tool_use_id!r} (in {shown}), so which one to decide is "
            "ambiguous; nothing was decided."
        )
    if not places:
        if not any(call.path for call in waiting_in_tree(state)):
            call_decided(state, tool_use_id, decision, **details)  # raises its own error
        waiting = [call.id for call in waiting_in_tree(state)]
        raise ApprovalError(
            f"no pending tool call has the id {tool_use_id!r}; the calls that wait for a decision are "
            f"{waiting!r} (some in sub-runs). Decide a call the runner lists (runner.pending_approvals)."
        )
    (path,) = places
    return _replaced_at(
        state, path, lambda inner: call_decided(inner, tool_use_id, decision, **details)
    ), path


def adopted_in_tree(state: RunState, record: CallRecord) -> tuple[RunState, tuple[str, ...]] | None:
    """Take over a decision made through the store on a call inside a sub-run
    (``approval.call_adopted`` applied to its sub-run's state): the new state and the sub-run's
    path; ``None`` if no sub-run of the tree has that call in its current turn."""
    places = [path for path in _places(state, record.call.id) if path]
    if len(places) != 1:
        return None
    (path,) = places
    return _replaced_at(state, path, lambda inner: call_adopted(inner, record)), path


def record_in_tree(state: RunState, tool_use_id: str) -> CallRecord | None:
    """The journal's record of the call ``tool_use_id``: the run's own, or else one in a sub-run
    its journal keeps (depth first), if any."""
    record = state.calls.get(tool_use_id)
    if record is not None:
        return record
    for kept in state.calls.values():
        if (
            kept.sub_run is not None
            and (found := record_in_tree(kept.sub_run.state, tool_use_id)) is not None
        ):
            return found
    return None


def _places(state: RunState, tool_use_id: str, path: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """The paths of the (sub-)runs whose current turn has a call ``tool_use_id``: the run's own,
    and its started sub-agent calls' sub-runs, down the tree."""
    places: list[tuple[str, ...]] = []
    for call in pending_calls(state):
        if call.id == tool_use_id:
            places.append(path)
        record = record_of(state, call)
        if record is not None and record.status is CallStatus.STARTED and record.sub_run is not None:
            places.extend(_places(record.sub_run.state, tool_use_id, (*path, call.id, record.sub_run.agent)))
    return places


def _replaced_at(state: RunState, path: Sequence[str], change: Callable[[RunState], RunState]) -> RunState:
    """``state`` with the sub-run at ``path`` changed by ``change`` (the records above it replaced)."""
    if not path:
        return change(state)
    call_id, agent, *rest = path
    record = state.calls[call_id]
    assert record.sub_run is not None
    child = _replaced_at(record.sub_run.state, rest, change)
    kept = dataclasses.replace(record, sub_run=SubRun(agent=agent, state=child))
    return state.replace(calls={**state.calls, call_id: kept})

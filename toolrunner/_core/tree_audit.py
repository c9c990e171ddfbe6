"""The audit of a run's tree (issue 30): the decisions taken inside its sub-runs, kept in the
run's own audit (``RunState.decisions``) with their path, for the life of the run.

A decision on a call inside a sub-run (by the runner, through the store, a gate that failed, the
time for decisions running out) is a transition of the sub-run's state (``_core.nested``), so the
sub-run's own audit keeps it, in the record of the call that runs it (``CallRecord.sub_run``). That
record leaves the journal with the parent's turn; before it does, the sub-run's audit joins the
parent's (``decisions_joined``), with its summary (``_core.tree_usage.sub_run_ended``): when the
sub-run ends (``sub_run_kept``), or, for one its parent went on without (the body steered past it
after a close or a cancellation), when its call leaves the journal (``sub_runs_kept``, which the
transitions that empty the journal call). Each entry keeps its path: the call id and sub-agent's
name of each level down to the sub-run that decided it, as ``SubRunEvent.path``. So, level by
level, the root's audit ends up with every decision of its tree.

Until it joins, a sub-run's decision is in its own state; ``decisions_in_tree`` reads both (the
command line's ``runs show``, the inbox's run page and the store's deciding do). All pure
functions over ``RunState``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

from .state import DecisionRecord, RunState
from .tree_usage import ended_calls, sub_run_ended

__all__ = ["decisions_in_tree", "decisions_joined", "sub_run_kept", "sub_runs_kept"]


def sub_run_kept(state: RunState, call_id: str, agent: str, child: RunState) -> RunState:
    """The sub-run of the call ``call_id`` (to the sub-agent ``agent``) ended at ``child`` (or its
    parent goes on without it): what the parent keeps of it for the life of the run, its summaries
    (``_core.tree_usage.sub_run_ended``) and its audit (``decisions_joined``)."""
    return decisions_joined(sub_run_ended(state, call_id, agent, child), (call_id, agent), child)


def sub_runs_kept(state: RunState) -> RunState:
    """Before the journal of ``state`` is emptied: the sub-runs of its calls that have not ended
    (a turn the body steered past after a close or a cancellation) leave what ``sub_run_kept``
    keeps, as they stand, so that what they spent and decided is not lost with their records."""
    for record in state.calls.values():  # a loop, not any() of a generator: a call of every turn
        if record.sub_run is not None:
            break
    else:
        return state  # the common case: no sub-agent's call in the journal
    ended = ended_calls(state)
    for record in tuple(state.calls.values()):
        if record.sub_run is None or record.call.id in ended:
            continue
        state = sub_run_kept(state, record.call.id, record.sub_run.agent, record.sub_run.state)
    return state


def decisions_joined(state: RunState, prefix: tuple[str, ...], child: RunState) -> RunState:
    """The run at ``state`` with the audit of its sub-run at ``prefix`` (the id of the call that
    runs it and the sub-agent's name), standing at ``child``, in its own: each entry with its path
    under ``prefix``. A sub-run whose audit joined before (its call ran again: a cancellation after
    its end) replaces its entries, at the end."""
    if not child.decisions and not any(entry.path[:2] == prefix for entry in state.decisions):
        return state  # the common case: nothing was decided in the sub-run
    kept = tuple(entry for entry in state.decisions if entry.path[:2] != prefix)
    joined = tuple(_under(prefix, entry) for entry in child.decisions)
    return state.replace(decisions=(*kept, *joined))


def decisions_in_tree(state: RunState) -> tuple[DecisionRecord, ...]:
    """Every decision of the run's tree as it stands: its own audit (with the decisions of the
    sub-runs that joined it), then those of its sub-runs in flight, each with its path, depth
    first in the journal's order."""
    if not state.calls:  # the common case: nothing in flight
        return state.decisions
    return (*state.decisions, *_in_flight(state, ()))


def _in_flight(state: RunState, path: tuple[str, ...]) -> Iterator[DecisionRecord]:
    ended = ended_calls(state)
    for record in state.calls.values():
        if record.sub_run is None or record.call.id in ended:
            continue  # not a sub-agent's call, or its sub-run ended: its audit joined already
        where = (*path, record.call.id, record.sub_run.agent)
        child = record.sub_run.state
        for entry in child.decisions:
            yield _under(where, entry)
        yield from _in_flight(child, where)


def _under(prefix: tuple[str, ...], entry: DecisionRecord) -> DecisionRecord:
    return dataclasses.replace(entry, path=(*prefix, *entry.path))

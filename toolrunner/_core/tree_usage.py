"""The usage of a run's tree: its own requests and its sub-runs' (issue 30's "one budget").

A run's tree is the run and the sub-runs below it (``_core.subruns``). What it spent (``spent``)
adds up the run's own requests, the summaries of the sub-runs that ended (``RunState.sub_runs``,
flat: a sub-run of a sub-run has its own summary, with its path) and the sub-runs in flight (the
states the current turn's call records keep, ``CallRecord.sub_run``, each a tree of its own). The
limits (``_core.transitions.limit_reached``) are checked against it, and a sub-run's limits are
capped by what its parent's tree has left (``_core.transitions.capped``).

What a person reads of a run (a store's summary, ``toolrunner runs list`` and ``runs show``, the
inbox) is the tree's too: ``spent`` for its requests, tokens and cost, ``spent_by_agent`` for the
figures of each path of sub-agents (their sum is ``spent``).

When a sub-run ends, ``sub_run_ended`` keeps its summary, and those of the sub-runs below it, in
the parent's state (through ``_core.tree_audit.sub_run_kept``, which keeps its audit too): the call's record, and the sub-run's state in it, leave the journal with the
turn; the summaries stay for the life of the run. All pure functions over ``RunState``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal

from .state import RunState, SubRunSummary
from .usage import RequestUsage, Usage

__all__ = [
    "Spent",
    "ended_calls",
    "requests_by_agent",
    "spent",
    "spent_by_agent",
    "sub_run_ended",
    "summaries_below",
]


@dataclass(frozen=True, slots=True)
class Spent:
    """What a tree spent: its requests that got a reply, their tokens, and their cost in US
    dollars (``None`` once one had no price)."""

    requests: int
    total: Usage
    cost: Decimal | None


def spent(state: RunState, *, leave_out: str | None = None) -> Spent:
    """What the tree of the run at ``state`` spent: its own requests, its ended sub-runs' and
    those in flight, but the one the call ``leave_out`` (an id of the current turn) runs."""
    records = [
        record
        for record in state.calls.values()
        if record.sub_run is not None and record.call.id != leave_out
    ]
    if not state.sub_runs and not records:  # the common case: a run without sub-agents
        return Spent(state.requests_sent, state.total, state.cost)
    requests, total, cost = state.requests_sent, state.total, state.cost
    for summary in state.sub_runs:
        requests += len(summary.usage)
        total += summary.total
        cost = _plus(cost, summary.cost)
    ended = ended_calls(state)
    for record in records:
        assert record.sub_run is not None
        if record.call.id in ended:  # its summary counts (the record stays until the turn's end)
            continue
        below = spent(record.sub_run.state)
        requests += below.requests
        total += below.total
        cost = _plus(cost, below.cost)
    return Spent(requests, total, cost)


def _plus(cost: Decimal | None, more: Decimal | None) -> Decimal | None:
    return None if cost is None or more is None else cost + more


def ended_calls(state: RunState) -> set[str]:
    """The ids of the calls (of this run, not below it) whose sub-run ended and left its summary."""
    return {summary.path[0] for summary in state.sub_runs if len(summary.path) == 2}


def sub_run_ended(state: RunState, call_id: str, agent: str, child: RunState) -> RunState:
    """The sub-run of the call ``call_id`` (to the sub-agent ``agent``) ended at ``child``: its
    summary, and those of the sub-runs below it, join the parent's ``sub_runs``. A call that ran
    again (its sub-run already ended: a cancellation after its end) replaces its summaries."""
    prefix = (call_id, agent)
    kept = tuple(summary for summary in state.sub_runs if summary.path[:2] != prefix)
    return state.replace(sub_runs=(*kept, *summaries_below(prefix, child)))


def summaries_below(path: tuple[str, ...], state: RunState) -> Iterator[SubRunSummary]:
    """The summaries a sub-run at ``path``, standing at ``state``, leaves: its own (its requests),
    then those of the sub-runs below it that ended, and of those still in flight (a sub-run that
    paused), their paths under ``path``."""
    yield SubRunSummary(path=path, usage=state.usage, end_reason=state.end_reason)
    for summary in state.sub_runs:
        yield SubRunSummary(path=(*path, *summary.path), usage=summary.usage, end_reason=summary.end_reason)
    ended = ended_calls(state)
    for record in state.calls.values():
        if record.sub_run is not None and record.call.id not in ended:
            yield from summaries_below((*path, record.call.id, record.sub_run.agent), record.sub_run.state)


def requests_by_agent(state: RunState) -> dict[tuple[str, ...], list[RequestUsage]]:
    """The usage of the tree's requests by the path of sub-agents' names that sent them: ``()``
    for the run's own, ``("researcher",)``, ``("researcher", "searcher")``, ...; each path's
    sub-runs (ended, then in flight) in order."""
    found: dict[tuple[str, ...], list[RequestUsage]] = {(): list(state.usage)}
    for summary in _all_summaries(state):
        found.setdefault(summary.agents, []).extend(summary.usage)
    return found


def _all_summaries(state: RunState) -> Iterator[SubRunSummary]:
    """The summaries of the tree's sub-runs: those that ended, then those in flight as they stand."""
    yield from state.sub_runs
    ended = ended_calls(state)
    for record in state.calls.values():
        if record.sub_run is not None and record.call.id not in ended:
            yield from summaries_below((record.call.id, record.sub_run.agent), record.sub_run.state)


def spent_by_agent(state: RunState) -> dict[tuple[str, ...], Spent]:
    """What the tree of the run at ``state`` spent, by the path of sub-agents' names that spent it
    (``requests_by_agent``): ``()`` for the run's own requests, as ``spent`` counts them; the
    figures add up to ``spent(state)``."""
    found: dict[tuple[str, ...], Spent] = {}
    for path, requests in requests_by_agent(state).items():
        if not path:
            found[path] = Spent(state.requests_sent, state.total, state.cost)
            continue
        total = Usage()
        cost: Decimal | None = Decimal(0)
        for request in requests:
            total += request.usage
            cost = _plus(cost, request.cost)
        found[path] = Spent(len(requests), total, cost)
    return found

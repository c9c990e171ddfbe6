"""A run's sub-runs in flight, as its state says they stand (issue 30's steering): ``SubRunProgress``
and ``sub_runs_in_progress``, pure functions over ``RunState``.

A sub-run in flight lives in the record of the call that runs it (``CallRecord.sub_run``,
``_core.subruns``): its state as its last step left it (the adapter puts it there at each of its
saves, and, for a run that has a listener, before each of its events is heard, so that a listener
reads what the event reports). So whoever holds the parent's state (the loop body, a listener, a
task beside the run, a process that loaded it from the store) sees each sub-run's progress: where
it is, its requests and their usage, its latest reply, and whether it runs or waits for a decision.

A sub-run is in flight from its call's start until it ends (its summary joins the parent's
``RunState.sub_runs``, ``_core.tree_usage``); a sub-run of a sub-run is listed too, after its
parent, with its whole path.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Literal, TypeAlias

from .history import text_of
from .nested import waiting_in_tree
from .state import CallStatus, Phase, RunState
from .tree_usage import ended_calls
from .types import Reply
from .usage import RequestUsage, Usage

__all__ = ["SubRunProgress", "SubRunStatus", "sub_runs_in_progress"]

SubRunStatus: TypeAlias = Literal["running", "awaiting", "ready", "finished"]
"""Where a sub-run in flight stands (``SubRunProgress.status``)."""


@dataclass(frozen=True, slots=True)
class SubRunProgress:
    """A sub-run in flight, as its parent's state holds it (``runner.sub_runs_in_progress``).

    Attributes:
        path: Where it runs, as ``SubRunEvent.path`` says it: the id of the call that runs it and
            the sub-agent's name, then the same pair for each level below.
        state: The sub-run's own state, as its last step left it (its history starts with the task).
    """

    path: tuple[str, ...]
    state: RunState

    @property
    def call_id(self) -> str:
        """The id of the call that runs it (in the run one level up)."""
        return self.path[-2]

    @property
    def agent(self) -> str:
        """The sub-agent's name."""
        return self.path[-1]

    @property
    def agents(self) -> tuple[str, ...]:
        """The path of sub-agents' names alone (``("researcher", "searcher")``)."""
        return self.path[1::2]

    @property
    def task(self) -> str:
        """The task the sub-agent was given (its first message)."""
        return text_of(self.state.messages[0]) if self.state.messages else ""

    @property
    def status(self) -> SubRunStatus:
        """``"running"``: it goes on while its call runs (or, after a cancellation or a crash,
        once the run is iterated again or resumed); ``"awaiting"``: it paused, and calls in it (or
        below it) wait for a decision; ``"ready"``: it paused, and every call that waited is
        decided (it goes on when the run does); ``"finished"``: its loop ended, and its answer is
        becoming its call's result."""
        phase = self.state.phase
        if phase is Phase.DONE:
            return "finished"
        if phase is Phase.AWAITING:
            return "awaiting" if waiting_in_tree(self.state) else "ready"
        return "running"

    @property
    def requests_sent(self) -> int:
        """How many of its own requests got a reply."""
        return self.state.requests_sent

    @property
    def usage(self) -> tuple[RequestUsage, ...]:
        """The usage of each of its own requests that got a reply (its sub-runs' are theirs)."""
        return self.state.usage

    @property
    def total(self) -> Usage:
        """The sum of ``usage``."""
        return self.state.total

    @property
    def cost(self) -> Decimal | None:
        """What its own requests cost in US dollars; ``None`` once one had no price."""
        return self.state.cost

    @property
    def last_message(self) -> Reply | None:
        """Its latest complete reply, or ``None`` before the first."""
        return self.state.reply


def sub_runs_in_progress(state: RunState) -> tuple[SubRunProgress, ...]:
    """The sub-runs in flight in the tree of the run at ``state`` (the module docstring): those of
    its current turn's calls, in the journal's order, each followed by those below it."""
    if not state.calls:  # the common case: no call of the turn is journaled, so none runs a sub-run
        return ()
    return tuple(_in_flight(state, ()))


def _in_flight(state: RunState, path: tuple[str, ...]) -> list[SubRunProgress]:
    found: list[SubRunProgress] = []
    ended: set[str] | None = None
    for record in state.calls.values():
        if record.sub_run is None or record.status is not CallStatus.STARTED:
            continue
        if ended is None:
            ended = ended_calls(state)
        if record.call.id in ended:  # it ended: its summary is kept, and its call gets its answer now
            continue
        where = (*path, record.call.id, record.sub_run.agent)
        found.append(SubRunProgress(where, record.sub_run.state))
        found.extend(_in_flight(record.sub_run.state, where))
    return found

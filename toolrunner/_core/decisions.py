"""Decisions on calls (``DecisionsCore``): which calls wait for one (gates), the ``approve=``
callback, approving, denying and answering, the decisions taken through the run's store (read,
adopted, and a save they refused taken again), their audit entries and events, and the calls
still waiting when the run's time for decisions ran out.

A link of ``RunCore``'s chain (``_core.base``); the reasons the model reads are ``_core.reasons``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Unpack

from .approval import (
    DecisionDetails,
    awaiting,
    call_adopted,
    call_decided,
    calls_gated,
    decision_kept,
    turn_paused,
    turn_resumed,
)
from .base import ToolT
from .effects import Ask, Gate, Gated, Program, ReadDecisions
from .errors import ApprovalError, DecidedMeanwhileError, describe
from .events import ApprovalDecided, ApprovalRequested, RunnerEvent, SubRunEvent
from .nested import adopted_in_tree, decided_in_tree, record_in_tree, state_at, waiting_in_tree
from .plan import log_handled
from .reasons import TIMED_OUT, denied_reason, failed_reason
from .results import tool_result_block
from .state import CallRecord, Decision, DecisionRecord
from .transitions import pending_calls, record_of
from .types import DecisionSource, ToolCall
from .window import WindowCore

__all__ = ["DecisionsCore", "decided_event"]


class DecisionsCore(WindowCore[ToolT]):
    """Decisions on the turn's calls (see the module docstring)."""

    # -- gates and the approve= callback -------------------------------------------------------------

    def _gate(self, calls: Sequence[ToolCall]) -> Program[None]:
        """Find which of ``calls`` (not yet in the journal) must wait for a decision; a gate is
        asked once per call."""
        if not self.tools.gated or not calls:
            return
        state = self.state
        fresh = tuple(
            call for call in calls if record_of(state, call) is None and self._cleared.get(call.id) != call
        )
        gated: Gated = (yield Gate(fresh)) if fresh else Gated()
        held = {call.id for call in gated.waiting} | {call.id for call, _ in gated.denied}
        cleared = {call.id: call for call in fresh if call.id not in held}
        # Kept for the calls of this turn only (``calls`` are the turn's pending calls).
        self._cleared = {call.id: call for call in calls if self._cleared.get(call.id) == call} | cleared
        self.make_current(calls_gated(self.state, gated.waiting, gated.denied, tools=gated.tools))
        for call in gated.waiting:
            self.emit(ApprovalRequested(call=call))
        if gated.denied:
            for entry in self.state.decisions[-len(gated.denied) :]:
                self.emit(decided_event(entry))

    def _ask(self) -> Program[None]:
        """Let the run's ``approve=`` callback decide the calls that wait (fail closed)."""
        if not self.asks:
            return
        for call in self.waiting():
            try:
                verdict = yield Ask(call)
            except Exception as error:
                log_handled(
                    error, "The approve callback raised for tool_use %r: %s", call.id, describe(error)
                )
                self.deny(call.id, failed_reason(call, "asking for approval", error), via="callback")
                continue
            if verdict is True:
                self.decide(call.id, "approved", via="callback")
            else:
                reason = verdict if isinstance(verdict, str) and verdict else denied_reason(call)
                self.deny(call.id, reason, via="callback")

    # -- deciding -----------------------------------------------------------------------------------

    def waiting(self) -> list[ToolCall]:
        """The calls of the current turn that wait for a decision, in tool_use order."""
        return list(awaiting(self.state, pending_calls(self.state)))

    def waiting_in_tree(self) -> list[ToolCall]:
        """The calls that wait for a decision: the current turn's, then those inside its
        sub-agents' paused runs, each with its ``path`` (``_core.nested.waiting_in_tree``)."""
        return list(waiting_in_tree(self.state))

    def find(self, tool_use_id: str) -> ToolCall | None:
        """The pending call with that id, if any."""
        return next((call for call in pending_calls(self.state) if call.id == tool_use_id), None)

    def decide(self, tool_use_id: str, decision: Decision, **details: Unpack[DecisionDetails]) -> None:
        """Decide a call (``approval.call_decided``): one of the current turn, or one inside a
        sub-run, wherever in the tree (``_core.nested.decided_in_tree``; its ``ApprovalDecided`` is
        heard as a ``SubRunEvent`` with its path). A driver whose decisions may come from several
        threads at once (``SyncToolRunner``) makes them one at a time: of two decisions on one
        call, the second is then refused (``ApprovalError``)."""
        if self.find(tool_use_id) is not None:  # the common case: a call of the run's own turn
            self.make_current(call_decided(self.state, tool_use_id, decision, **details))
            self._decided(decided_event(self.state.decisions[-1]))
            return
        state, path = decided_in_tree(self.state, tool_use_id, decision, **details)
        self.make_current(state)
        event = decided_event(state_at(state, path).decisions[-1])
        self._decided(SubRunEvent(path, event) if path else event)

    def _decided(self, event: RunnerEvent) -> None:
        """A call of the waiting turn was decided: listeners hear of it, and so does one that comes later."""
        self._decided_since_pause.append(event)
        self.emit(event)

    def deny(
        self,
        tool_use_id: str,
        reason: str,
        *,
        by: str | None = None,
        at: str | None = None,
        via: DecisionSource = "runner",
    ) -> None:
        """Deny a call with ``reason``, which the model reads as its error result."""
        self.decide(
            tool_use_id,
            "denied",
            result=tool_result_block(tool_use_id, reason, is_error=True),
            by=by,
            at=at,
            via=via,
        )

    def decided_since_pause(self) -> list[RunnerEvent]:
        """The ``ApprovalDecided`` events of the waiting turn so far (for a listener that comes later)."""
        return list(self._decided_since_pause)

    # -- decisions through the store ----------------------------------------------------------------

    def _read_decisions(self, calls: Sequence[ToolCall]) -> Program[None]:
        """Take over the decisions taken through the run's store while the turn was paused, then
        claim the turn: a save that marks it going on, after which the store takes no decision on
        it (until it pauses again). A decision that lands between the read and the claim makes the
        claim's save refused (``DecidedMeanwhileError``): read again. Once claimed, the decisions
        through the store not reported yet (a resumed run's) are reported.

        A decision saved to the store first stands over one this process made since its last save
        on the same call: that one is dropped, and ``ApprovalError`` says so once all are taken over."""
        while True:
            decided: Mapping[str, CallRecord] = yield ReadDecisions(tuple(calls))
            self._adopt(decided)
            self.make_current(turn_resumed(self.state))
            if not self.durable:  # no store: nothing to claim the turn in, nothing decided meanwhile
                break
            try:
                yield self._save_effect()
            except DecidedMeanwhileError:
                self.make_current(turn_paused(self.state))
                continue
            break
        for call in calls:
            record = record_of(self.state, call)
            if record is None or record.decision is None or call.id in self._reported:
                continue
            entry = self._audit_entry(call)
            if entry is not None and entry.via == "store":
                self._reported.add(call.id)
                self._decided(decided_event(entry))

    def _audit_entry(self, call: ToolCall) -> DecisionRecord | None:
        """The audit's latest entry on ``call`` (this turn's: an id is not reused within a turn)."""
        return next((entry for entry in reversed(self.state.decisions) if entry.call == call), None)

    def _adopt(self, decided: Mapping[str, CallRecord]) -> None:
        """Take over decisions made through the store: on a call that waits in this turn, into the
        journal; on one the loop body steered past (or closed the run on), into the audit only."""
        overruled: list[str] = []
        pending = pending_calls(self.state)
        for tool_use_id, theirs in decided.items():
            if theirs.call not in pending:
                mine = record_in_tree(self.state, tool_use_id)
                nested = adopted_in_tree(self.state, theirs)
                if nested is not None:
                    # A call inside a sub-run: its sub-run's journal takes it (its audit too, an
                    # overruled decision of this runner's leaving it); the sub-run reports it (a
                    # SubRunEvent) when it goes on, as it reports one it finds after a resume.
                    if mine is not None and mine.decision is not None:
                        overruled.append(_overruled(tool_use_id, theirs, mine))
                    self.make_current(nested[0])
                    continue
                self.make_current(decision_kept(self.state, theirs))
                self._decided(decided_event(self.state.decisions[-1]))
                continue
            mine = self.state.calls.get(tool_use_id)
            if mine is not None and mine.decision is not None:
                overruled.append(_overruled(tool_use_id, theirs, mine))
            self.make_current(call_adopted(self.state, theirs))
            self._reported.add(tool_use_id)
            self._decided(decided_event(self.state.decisions[-1]))
        if overruled:
            raise ApprovalError(
                "; ".join(overruled)
                + ". A decision saved to the store first stands; iterate the runner again to go on."
            )

    def _save(self, starting: str | None = None, *, shielded: bool = False) -> Program[None]:
        """Save. A save refused because decisions were taken through the store since the last one
        (the run was paused there, and the loop body steered or closed it before going on) takes
        them over (``_adopt``) and saves again: a decision through the store is never lost, and
        never stops the run. A run without a store (not ``durable``) has nothing to save: no
        ``Save`` is yielded, and none of its steps waits on one. ``shielded``: written even while
        the task is cancelled (a result that cannot be had again: ``TurnCore.call``)."""
        if not self.durable:
            return
        while True:
            try:
                yield self._save_effect(starting, shielded=shielded)
            except DecidedMeanwhileError:
                decided: Mapping[str, CallRecord] = yield ReadDecisions(pending_calls(self.state))
                self._adopt(decided)
                continue
            return

    # -- the time for decisions ---------------------------------------------------------------------

    _timeout = "the time allowed"
    """How long a driver that waits for decisions waits, in words (``timed_out``)."""

    def timed_out(self, timeout: str) -> None:
        """Say how long the driver waits for decisions before it answers ``AwaitDecisions`` with
        ``TIMED_OUT`` (``timeout``: "8 hours"), for the reason the model reads (``TIMED_OUT``)."""
        self._timeout = timeout

    def _deny_undecided(self, calls: Sequence[ToolCall]) -> None:
        """The time for decisions ran out: deny the calls still waiting (those inside sub-runs
        too), as any decision is taken and reported. No one decided, so the journal keeps no
        ``decided_by``; the result says why."""
        for call in awaiting(self.state, calls):
            self.deny(call.id, TIMED_OUT.format(name=call.name, timeout=self._timeout), via="timeout")
        for call in waiting_in_tree(self.state):
            if call.path:
                self.deny(call.id, TIMED_OUT.format(name=call.name, timeout=self._timeout), via="timeout")


def _overruled(tool_use_id: str, theirs: CallRecord, mine: CallRecord) -> str:
    """What ``ApprovalError`` says of a decision of this runner's that the store's overruled."""
    return (
        f"{tool_use_id!r} was {theirs.decision} by {theirs.decided_by or 'someone'!r} at "
        f"{theirs.decided_at or 'an unknown time'} through the store, so this runner's decision "
        f"({mine.decision}) is dropped"
    )


def decided_event(entry: DecisionRecord) -> ApprovalDecided:
    """The ``ApprovalDecided`` event of an entry of the run's audit."""
    return ApprovalDecided(
        call=entry.call,
        decision=entry.decision,
        by=entry.by,
        input=entry.approved_input,
        reason=entry.reason,
        via=entry.via,
    )

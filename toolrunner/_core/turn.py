"""The turn (``TurnCore``): a complete reply taken (sent whole, or the rest of its stream read),
then its turn finished: its calls settled (gated, asked, decided, or the loop pauses), run in
``CallPlan``'s order, each one journaled and saved before and after its tool runs, and the results
appended in one transition.

A link of ``RunCore``'s chain (``_core.base``).
"""

from __future__ import annotations

from collections.abc import Sequence

from anthropic.types import ToolResultBlockParam

from .approval import awaiting, turn_paused, turn_resumed
from .base import ToolT
from .effects import (
    LOST,
    AwaitDecisions,
    CancelledAfter,
    Decisions,
    DropStream,
    EndStream,
    Execute,
    Lost,
    OpenTools,
    Program,
    ReadStream,
    RunCalls,
    StateDerived,
)
from .events import MessageFinished, TextDelta, ToolCallFinished, ToolCallStarted
from .hook_types import counts_saveable
from .hooks import HooksCore
from .message_checks import check_reply
from .nested import settled, suspended_calls
from .output import answer_judged
from .plan import CallPlan, not_executed
from .state import CallRecord, CallStatus, Phase
from .stop_reasons import StopReasonStep, step_for
from .subruns import AgentPlan, agent_plan_of
from .transitions import (
    call_finished,
    call_started,
    calls_dropped,
    interrupted,
    pending_calls,
    record_of,
    reply_received,
    stream_abandoned,
    turn_finished,
)
from .types import Reply, ToolCall, ToolResultMessage

__all__ = ["TurnCore"]


class TurnCore(HooksCore[ToolT]):
    """A reply's turn, finished (see the module docstring)."""

    # -- the reply ----------------------------------------------------------------------------------

    def _accept(self, reply: Reply, *, streamed: bool = False, handed_over: bool = False) -> None:
        """Take a complete reply: it is the latest, its usage counts, listeners hear of it; with
        ``handed_over``, the body has it at once (``reply_received``)."""
        check_reply(reply)
        if self.output is not None:  # a typed answer: the reply as the SDK's runner yields it
            reply = self.output.parse(reply)
        self.make_current(reply_received(self.state, reply, self.usage_of(reply), handed_over=handed_over))
        if self.listener is not None:
            if not streamed:  # a streamed reply's text was reported as it arrived
                for index, block in enumerate(reply.content):
                    if block.type == "text":
                        self.emit(TextDelta(text=block.text, index=index))
            self.emit(MessageFinished(message=reply, requests=self.state.usage))

    def _read_stream(self) -> Program[None]:
        """The rest of the stream the body holds: take its reply; keep or forget what its calls
        started early gave. If the stream fails, it is dropped (the next iteration sends the
        request again) and its error raised."""
        try:
            reply = yield ReadStream()
            if reply is not None:
                check_reply(reply)
        except BaseException:
            yield DropStream()
            self.make_current(stream_abandoned(self.state))
            raise
        if reply is None:  # the body read the stream and got its error already: send again
            yield DropStream()
            self.make_current(stream_abandoned(self.state))
            return
        self._accept(reply, streamed=True)
        dropped = yield EndStream(keep=step_for(reply.stop_reason) is StopReasonStep.RUN_TOOLS)
        self.make_current(calls_dropped(self.state, dropped))
        if self.tools.gated:  # else no call waits: the reply's calls are not read for nothing
            yield from self._gate(pending_calls(self.state))
        yield from self._save()

    # -- the turn -----------------------------------------------------------------------------------

    def _finish_turn(self) -> Program[None]:
        """Finish the turn of the reply the body held. The history changes in one transition, after
        the tools ran, so a turn cut short leaves it as it was and can be finished again. While
        calls wait for a decision, the loop pauses instead (``AWAITING``)."""
        if self.state.phase is Phase.STREAMING:
            yield from self._read_stream()
        if self.state.phase not in (Phase.WITH_BODY, Phase.AWAITING):
            return  # the stream failed and was dropped: the request is sent again
        calls = pending_calls(self.state)
        results = None
        if calls:
            results = yield from self._settle_turn(calls)
            if results is None:
                return  # paused, or closed while calls waited
        message: ToolResultMessage | None = {"role": "user", "content": results} if results else None
        before = self.state
        finished = turn_finished(turn_resumed(before) if before.phase is Phase.AWAITING else before, message)
        rejected = None
        if self.output is not None and message is None:  # a final answer: does it fit? (_core.output)
            finished, rejected = answer_judged(finished, self.output)
        if message is None and rejected is None and self.hooks is not None and self.hooks.check_output:
            finished, rejected = yield from self._check_output(finished, before)  # a guardrail (_core.hooks)
        adjusted = self._compacting is not None or self.pending_compaction is not None  # for compaction
        self.make_current(self._turn_ended(finished) if adjusted else finished)
        self._decided_since_pause = []
        self._reported = set()
        if self.durable and self.state is finished and finished.phase is Phase.READY:
            yield StateDerived(before)  # written with the next save that has news
        if not before.steered and self.state.messages is finished.messages:
            # A reply and the results of all its calls, as the runner appends them, are valid as
            # made: the next check starts after them. A reply appended without results may hold
            # calls its stop reason kept from running: the check starts at it.
            self.checked = len(finished.messages) - (message is None)
        if self.compaction_control is not None:
            yield from self._after_turn()
        if rejected is not None:  # no retries left: the run ended with that answer, saved
            yield from self._save()
            raise rejected

    def _settle_turn(self, calls: Sequence[ToolCall]) -> Program[list[ToolResultBlockParam] | None]:
        """Settle the turn's calls; while calls wait, the loop pauses (``PAUSED``: the next
        iteration goes on with the decisions taken meanwhile), unless the driver waited for them
        and the run's time for decisions ran out (``TIMED_OUT``): then the calls still waiting are
        denied, and the turn goes on at once."""
        while True:
            results = yield from self.settle(calls)
            if results is not None:
                return results
            self.make_current(turn_paused(self.state))
            outcome = yield AwaitDecisions(awaiting(self.state, calls))
            if outcome is Decisions.PAUSED or self.closing:
                return None
            self._deny_undecided(calls)
            self.make_current(turn_resumed(self.state))

    def settle(self, calls: Sequence[ToolCall]) -> Program[list[ToolResultBlockParam] | None]:
        """Find the calls that wait, let the ``approve=`` callback decide them, run what may run
        (those that need no decision, and those approved, also while this runs); then all the
        results in order, or ``None`` while calls still wait."""
        if self.tools.opens:  # the calls' tools are open (a resumed run's toolsets, say)
            yield OpenTools()
        if self.state.phase is Phase.AWAITING:  # after a pause: decisions may have come through the store
            yield from self._read_decisions(calls)
        if self.tools.gated:
            yield from self._gate(calls)
        if self.asks:
            yield from self._ask()
        if not awaiting(self.state, calls):  # the common case: nothing waits
            if self.hooks is not None and self.hooks.max_calls:
                yield from self._limit_in_order(calls)
            yield from self._run(calls)
            if suspended_calls(self.state, calls):  # a sub-run paused for decisions (_core.nested)
                return None
            return self.results(calls)
        while True:
            state = self.state
            waiting = (*awaiting(state, calls), *suspended_calls(state, calls))
            ready = [call for call in calls if call not in waiting and state.result_of(call) is None]
            if not ready:
                break
            if self.hooks is not None and self.hooks.max_calls:
                yield from self._limit_in_order(ready)
            yield from self._run(ready)
        if waiting:
            return None
        return self.results(calls)

    def results(self, calls: Sequence[ToolCall]) -> list[ToolResultBlockParam]:
        """The journal's results of ``calls``, in order, as copies (a caller may edit them)."""
        blocks: list[ToolResultBlockParam] = []
        for call in calls:
            block = self.state.result_of(call)
            assert block is not None
            blocks.append(ToolResultBlockParam(**block))
        return blocks

    # -- the calls ----------------------------------------------------------------------------------

    def _run(self, calls: Sequence[ToolCall]) -> Program[None]:
        """Run the calls without a result, in the order ``CallPlan`` gives (consecutive ordinary
        calls at once, a sequential tool's call alone, a toolset family's members in order until
        one fails); a call another caller ran but did not finish (it was cancelled) runs again. A
        sub-agent's call whose sub-run paused for decisions (``_core.nested.suspended``) waits: it
        runs again once they are decided."""
        if len(calls) == 1:  # the common case: one call, nothing to order or to halt
            only = calls[0]
            while not settled(self.state, only):
                yield RunCalls((only,))
            return
        while missing := [call for call in calls if not settled(self.state, call)]:
            if len(missing) == 1:  # nothing to order or to halt
                yield RunCalls((missing[0],))
                continue
            plan = CallPlan(missing, self._runs_alone)
            while (step := plan.next_step()) is not None:
                if step.skip:
                    yield from self._answer(step.calls[0], not_executed(step.calls[0]))
                    continue
                yield RunCalls(step.calls)
                for call in step.calls:
                    block = self.state.result_of(call)
                    if block is not None:
                        plan.ran(call, block)

    def _runs_alone(self, call: ToolCall) -> bool:
        tool = self.tool_of(call)
        return tool is not None and tool.sequential

    def call(self, call: ToolCall, *, early: bool = False) -> Program[None]:
        """One call: journaled as started and saved before the tool runs (a crash from here on is an
        interruption), then its result journaled and saved (it never runs again).

        Until its own save is written, the start is left out of every other save (``saveable``),
        and if that save fails or is cancelled, the start is undone: the tool never began, so the
        call did not start, and a crash must not report it interrupted."""
        previous = record_of(self.state, call)
        if self.hooks is None:
            self.make_current(call_started(self.state, call))
        elif not (yield from self._start_hooked(call, previous)):
            return  # answered without running: over its tool's limit, or denied by a hook
        if self.durable:  # without a store there is no save to wait for, nor a start to undo
            self._starting[call.id] = previous
            try:
                yield from self._save(starting=call.id)
            except BaseException:
                self._unstart(call)
                raise
            del self._starting[call.id]
        # A call with no record before it started has no other input (none approved, no hook's).
        given = call.input if previous is None and self.hooks is None else self.input_of(call)
        if self.listener is not None and not _going_on(previous):
            self.emit(ToolCallStarted(call=call, early=early, input=None if given is call.input else given))
        removed = self.removed()  # once: the tool's lookup and the driver's execution both need it
        tool = self.tool_of(call, removed)
        plan = None if tool is None else agent_plan_of(tool)
        block: ToolResultBlockParam | Lost  # ``LOST`` from a driver that lost the call half way
        cancellation: BaseException | None = None
        try:
            if plan is None:
                outcome = yield Execute(call, given, removed, may_repeat=tool is None or tool.idempotent)
                if type(outcome) is CancelledAfter:  # cancelled while a tool it cannot stop ran on
                    block, seconds, cancellation = outcome.block, outcome.seconds, outcome.cancellation
                else:
                    block, seconds = outcome
            else:  # a sub-agent: its run, inside this program (_core.subruns), timed by the driver's clock
                clock = self.clock
                started = 0.0 if clock is None else clock()
                answer = yield from self._sub_agent(call, given, plan)
                if answer is None:  # its sub-run paused for decisions: the call stays started (_core.nested)
                    return
                block, seconds = answer, 0.0 if clock is None else clock() - started
            if block is LOST:  # the driver lost it half way: it may or may not have acted
                block = interrupted(call)
            if self.hooks is not None and self.hooks.after_tool_call:
                # the tool ran: a call cut off while its hook is asked is cut off as in its tool
                block = yield from self._after_call(call, block)
        except BaseException:
            self._cut_off(call)
            raise
        self._finished(call, block, seconds)
        if self.durable:
            # Shielded: the tool ran to its end (a sync tool finishes in its thread even when the
            # task is cancelled), so its result is written before a cancellation goes on; else the
            # store would hold the call started, and a resume would answer it as interrupted.
            yield from self._save(shielded=True)
        if cancellation is not None:  # the result is kept: now the cancellation goes on
            raise cancellation

    def _sub_agent(
        self, call: ToolCall, input: object, plan: AgentPlan
    ) -> Program[ToolResultBlockParam | None]:
        """The program of a call to a sub-agent (``RunCore``'s: ``_core.subruns``): its answer, or
        ``None`` if its sub-run paused for decisions."""
        raise NotImplementedError

    def _cut_off(self, call: ToolCall) -> None:
        """A call was cut off while its tool ran, or while its ``after_tool_call`` hook was asked
        (a cancellation): with a store, its start is saved, so it is answered as after a crash:
        interrupted, unless its tool may run again. Without a store nothing was saved, and it runs
        again; so inside a sub-run of a run without a store (``stored``)."""
        if not self.stored:
            return
        record = record_of(self.state, call)
        if record is None or record.status is not CallStatus.STARTED:
            return
        tool = self.tool_of(call)
        if tool is not None and tool.idempotent:
            return
        self.make_current(call_finished(self.state, call, interrupted(call)))

    def _answer(self, call: ToolCall, block: ToolResultBlockParam) -> Program[None]:
        """Answer a call that is not run with ``block``, journaled like a call that ran."""
        self.make_current(
            call_started(self.state, call)
        )  # nothing runs, so nothing to save before the result
        if self.listening:
            self.emit(ToolCallStarted(call=call, early=False))
        self._finished(call, block, 0.0)
        yield from self._save()

    def _unstart(self, call: ToolCall) -> None:
        """Undo a start whose save did not happen: the call's record is as it was."""
        previous = self._starting.pop(call.id)
        record = record_of(self.state, call)
        if record is None or record.status is not CallStatus.STARTED:
            return  # decided or finished meanwhile
        calls = dict(self.state.calls)
        if previous is None:
            del calls[call.id]
        else:
            calls[call.id] = previous
        if self.state.call_counts:  # nor is it counted
            self.make_current(counts_saveable(self.state, calls, {call.id: previous}))
            return
        self.make_current(self.state.replace(calls=calls))

    def _finished(self, call: ToolCall, block: ToolResultBlockParam, seconds: float) -> None:
        self.make_current(call_finished(self.state, call, block))
        if self.listener is not None:
            self.emit(ToolCallFinished(call=call, duration=seconds, is_error=bool(block.get("is_error"))))

    def input_of(self, call: ToolCall) -> object:
        """The input ``call`` runs with: the one a hook gave instead, the one a person approved
        instead, or the model's."""
        record = record_of(self.state, call)
        if record is not None and record.hook == "rewritten":
            return record.hook_input
        if record is not None and record.approved_input is not None:
            return record.approved_input
        return call.input


def _going_on(previous: CallRecord | None) -> bool:
    """Whether a call goes on from where its sub-run stood (a sub-agent's call that paused, was
    cancelled or failed, and runs again): it was reported started when it first started, and a
    call is reported once (``ToolCallStarted``), across a pause and a resume."""
    return previous is not None and previous.status is CallStatus.STARTED and previous.sub_run is not None

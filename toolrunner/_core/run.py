"""The run's orchestration, sans-I/O: which effects happen, in which order (``RunCore``).

``_core.transitions`` says how the state changes; this module says when: when a call is journaled, when
the state is saved, when calls run, when a decision is awaited, what is appended, when a reply is
handed to the loop body. It does no I/O and awaits nothing: its programs are generators that yield
effects (``_core.effects``) and get their outcomes back, as h11's connection yields events. Every
driver performs the same effects, so a feature is written here once:

- ``ToolRunner`` (``_runner/runner.py``, and ``SyncToolRunner`` through it) performs them in the caller's
  task, with its store, its tools and the loop body;
- the Temporal workflow (``temporal/_workflow.py``) performs them as activities and updates.

One iteration (``RunCore.iteration``)::

    finish the turn the body held (read the rest of its stream; settle its calls: gate, ask,
    run them in CallPlan's order, each journaled, saved, executed, saved; or pause), append,
    compact if asked;  stop at a limit, or when closed;  prepare the tools, check the history,
    save, send;  take the reply (RECEIVED), gate its calls, save, hand it over (WITH_BODY).

A program's state is ``RunCore.state`` and a few fields that a new program can start from again:
when a driver's effect raises (a failed save, a cancelled task, a dying process), the program is
dropped, and the next iteration starts over from the state as it stands, as a resumed run does
from the last save. That is what makes every effect a safe place for a fault.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field as dataclass_field
from typing import Any, Generic, Protocol, TypeVar, cast

from anthropic.types import ToolResultBlockParam

from .compaction import (
    DEFAULT_THRESHOLD,
    CompactionControl,
    compaction_answered,
    has_summary,
    kept_open_for_compaction,
    split_point,
    summarized_history,
    summary_counted,
    summary_text,
    tokens_used,
)
from .effects import (
    LOST,
    Ask,
    AwaitDecisions,
    Decisions,
    Derive,
    DropStream,
    Ended,
    EndStream,
    Execute,
    Gate,
    Gated,
    OpenStream,
    Prepare,
    Program,
    ReadDecisions,
    ReadStream,
    Request,
    RunCalls,
    Save,
    Send,
    Summarize,
)
from .errors import ApprovalError, DecidedMeanwhileError, ParamsError, ToolRunnerError, describe, message_of
from .events import (
    ApprovalDecided,
    ApprovalRequested,
    LoopFinished,
    MessageFinished,
    RunnerEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .log import INFO, WARNING, log
from .messages import check_history, check_reply, client_tool_calls, field
from .plan import CallPlan, log_handled, not_executed
from .results import tool_result_block
from .state import CallRecord, CallStatus, Decision, DecisionRecord, Phase, RunState
from .tool_changes import last_changes, pending_message, removed_by, removed_tools
from .transitions import (
    Limits,
    Step,
    awaiting,
    call_adopted,
    call_decided,
    call_finished,
    call_started,
    calls_dropped,
    calls_gated,
    closed,
    decision_kept,
    delivered,
    interrupted,
    may_start_early,
    pending_calls,
    ready_to_send,
    record_of,
    reply_received,
    resumed,
    steered,
    step_for,
    stream_abandoned,
    stream_opened,
    tools_changed,
    turn_finished,
    turn_paused,
    turn_resumed,
)
from .types import DecisionSource, Reply, ToolCall, ToolFlags, ToolResultMessage
from .usage import RequestUsage

__all__ = ["TIMED_OUT", "Elided", "RunCore", "Tools"]

TIMED_OUT = "No decision on this call to {name!r} came within {timeout}; it did not run."
"""The reason the model reads for a call whose decision did not come in the run's time for one."""


T = TypeVar("T")
ToolT = TypeVar("ToolT", bound=ToolFlags)
ToolT_co = TypeVar("ToolT_co", bound=ToolFlags, covariant=True)


class Tools(Protocol[ToolT_co]):
    """The run's tools as the core sees them (the driver's index: tools are code). The core reads
    their flags (``ToolFlags``) and hands them back to the driver, which runs them."""

    def find(self, call: ToolCall) -> ToolT_co | None:
        """The tool that answers ``call`` (tool changes aside), if the run has one."""
        ...

    @property
    def gated(self) -> bool:
        """Whether any tool may need approval (if none does, no call is ever gated)."""
        ...


@dataclass(frozen=True, slots=True)
class Elided:
    """What a driver left out of the state it keeps (``RunCore.elide``): the start of the history
    and of the requests' usage, kept elsewhere. A Temporal run keeps a window of its latest
    messages across continue-as-new (the whole history is in its payload store); ``ToolRunner``
    elides nothing. What the core reads of the elided part is kept here."""

    messages: int = 0
    """Messages of the history before the first one the state holds."""
    requests: int = 0
    """Requests that got a reply before the first one whose usage the state holds."""
    counted: int = 0
    """Of those requests, how many count toward ``max_iterations`` (sent since the loop last opened)."""
    changes: Mapping[str, bool] = dataclass_field(default_factory=dict[str, bool])
    """The tool changes of the elided messages, folded (``_core.tool_changes.last_changes``)."""


class RunCore(Generic[ToolT]):
    """One run's orchestration: its state, and the programs that drive it (see the module docstring).

    Args:
        state: Where the run stands.
        tools: The run's tools (what the core reads of them: order, gates, idempotence).
        usage_of: A reply's usage, and its cost at the run's prices.
        limits: The limits checked before each request.
        stream: Whether replies are streamed to the loop body.
        durable: Whether the run has a store (only idempotent tools then start early).
        asks: Whether the run has an ``approve=`` callback (``Ask`` effects).
        compaction_control: Client-side compaction, if on.
        ended: Told of the state each time the loop ends or pauses.
    """

    def __init__(
        self,
        state: RunState,
        *,
        tools: Tools[ToolT],
        usage_of: Callable[[Reply], RequestUsage],
        limits: Limits,
        stream: bool = False,
        durable: bool = False,
        asks: bool = False,
        compaction_control: CompactionControl | None = None,
        ended: Callable[[RunState], None] | None = None,
    ) -> None:
        self.state = state
        self.tools = tools
        self.usage_of = usage_of
        self.limits = limits
        self.stream = stream
        self.durable = durable
        self.asks = asks
        self.compaction_control = compaction_control
        self.listener: Callable[[RunnerEvent], None] | None = None
        """Hears every event as it happens (the runner's ``on_event``, or ``events()``)."""
        self._ended = ended
        self.closing = False
        """``close()`` came while a program ran: the step under way finishes whole, then the loop ends."""
        self._held: set[str] = set()
        """The ids of the streaming reply's calls held back from starting early (``hold``)."""
        self.stepping = 0
        """How many steps (``step``) are under way: a driver's ``close()`` meanwhile waits for them."""
        self.checked = 0
        """The history is known to be valid before this index (``check_history``)."""
        self.history_epoch = 0
        """Grows when the history is replaced rather than appended to (a store then writes it anew)."""
        self._saved_epoch = 0
        """The history's epoch when a save last took the state to write."""
        self._starting: dict[str, CallRecord | None] = {}
        """Calls journaled as started whose own save is not written yet, with their record before."""
        self._cleared: dict[str, ToolCall] = {}
        """The current turn's calls whose gate said no decision is needed: a gate is asked once."""
        self._decided_since_pause: list[RunnerEvent] = []
        """The decisions taken on the waiting turn, for listeners that come later (``events()``)."""
        self._reported: set[str] = set()
        """The calls of the turn whose decision through the store this process reported."""
        self.pending_compaction: dict[str, Any] | None = None
        """``compact_before_next_turn()``'s config, until its request is sent."""
        self._compacting: tuple[dict[str, Any], int] | None = None
        """The config of the compaction request under way and the history length it summarizes."""
        self._final_compaction = False  # the loop ends once the compaction request is answered
        self.kept_removals: frozenset[str] = frozenset()
        """Tools a compaction's summary dropped the removal of: they stay removed (in memory, as the
        SDK's runner keeps them)."""
        self._folded: tuple[tuple[Any, ...], tuple[Mapping[str, Any], ...], dict[str, bool]] | None = None
        self._removed: frozenset[str] = frozenset()
        self.elided = Elided()
        """What the state leaves out of the history (``elide``); nothing unless a driver elides."""

    # -- the state ------------------------------------------------------------------------------

    def set(self, state: RunState) -> None:
        """Make ``state`` current; the one place the state changes, and where the end is reported."""
        ended = state.finished and not self.state.finished
        self.state = state
        if ended:
            assert state.end_reason is not None
            if self._ended is not None:
                self._ended(state)
            self.emit(LoopFinished(message=state.reply, reason=state.end_reason, requests=state.usage))

    def load(self, saved: RunState) -> None:
        """Take a saved state as it was saved (a run that ended is not reported ending again), for
        what a driver reads of it before the run goes on (its tools); then ``resume()``."""
        self.state = saved

    def resume(self) -> None:
        """Go on from the state ``load`` took: durable from now on, and each call that started and
        has no result is answered as interrupted, unless its tool is idempotent (it runs again)."""
        self.durable = True
        self.state = resumed(self.state, may_run_again=self._may_run_again)

    def _may_run_again(self, call: ToolCall) -> bool:
        tool = self.tool_of(call)
        return tool is not None and tool.idempotent

    def emit(self, event: RunnerEvent) -> None:
        """Report ``event`` to the listener, if any."""
        if self.listener is not None:
            self.listener(event)

    @property
    def listening(self) -> bool:
        """Whether anyone hears events (they are made only then)."""
        return self.listener is not None

    def removed(self) -> frozenset[str]:
        """The tools the history and the pending changes removed (folded again only when either
        changed; appended messages only, so a turn's cost does not grow with the history)."""
        state = self.state
        folded = self._folded
        if folded is None or folded[0] is not state.messages or folded[1] is not state.tool_changes:
            messages = state.messages
            if folded is not None and messages[: len(folded[0])] == folded[0]:
                history = folded[2] | last_changes(messages[len(folded[0]) :])
            else:
                history = dict(self.elided.changes) | last_changes(messages)
            self._removed = removed_by(history | last_changes((pending_message(state.tool_changes),)))
            self._folded = (messages, state.tool_changes, history)
        return self._removed | self.kept_removals if self.kept_removals else self._removed

    def tool_of(self, call: ToolCall) -> ToolT | None:
        """The tool that runs ``call`` now: none if the run has none, or a tool change removed it."""
        if call.toolset_name is None and call.name in self.removed():
            return None
        return self.tools.find(call)

    def may_start_early(self, call: ToolCall) -> bool:
        """Whether ``call`` may start while its reply still streams: not held (``hold``), and as
        ``_core.transitions.may_start_early`` says."""
        return call.id not in self._held and may_start_early(
            call, self.tool_of(call), self.state, durable=self.durable
        )

    def hold(self, tool_use_id: str) -> None:
        """Keep a call of the reply streaming now from starting early (``defer_tool_call``): it runs
        with the rest of its turn. An id the reply does not have is held for nothing."""
        self._held.add(tool_use_id)

    def held(self, streamed: Sequence[ToolCall]) -> list[ToolCall]:
        """Of ``streamed`` (the calls whose blocks finished streaming, in order), those held that
        have not run (``deferred_tool_calls``): once the reply is received, only its pending ones."""
        state = self.state
        pending = {call.id for call in pending_calls(state)} if state.phase is not Phase.STREAMING else None
        return [
            call
            for call in streamed
            if call.id in self._held
            and (pending is None or call.id in pending)
            and state.result_of(call) is None
        ]

    # -- one iteration --------------------------------------------------------------------------

    def iteration(self) -> Program[Any]:
        """One step of the loop: finish the turn the body held, then send the next request and
        return what the body gets (the reply, or the stream); ``None`` once the loop stops."""
        if self.state.phase is Phase.RECEIVED:  # a reply the body has not had (its save failed, or resumed)
            if not self.stream:
                return (yield from self._hand_over())
            # A body that reads streams cannot be handed a complete reply (a run saved by a runner
            # that did not stream, resumed by one that does): its turn goes on as if handed over.
            self.set(delivered(self.state))
        if self.state.phase in (Phase.STREAMING, Phase.WITH_BODY, Phase.AWAITING):
            yield from self._finish_turn()
        if self.state.phase is Phase.READY:
            self.set(ready_to_send(self.state, self._limits()))
        if self.closing:
            self._close_now()
        if self.state.finished:
            yield from self._save()
            yield Ended()
            return None
        item = yield from self._send()
        if self.closing:  # closed while the request was out: keep the reply, run nothing
            yield DropStream()
            self._close_now()
            yield from self._save()
            yield Ended()
            return None
        return item

    def _limits(self) -> Limits:
        """The limits, less the elided requests that count toward ``max_iterations``."""
        counted, limits = self.elided.counted, self.limits
        if not counted or limits.max_iterations is None:
            return limits
        return dataclasses.replace(limits, max_iterations=limits.max_iterations - counted)

    def change_tools(self, blocks: Sequence[Mapping[str, Any]]) -> None:
        """Tool changes (``tool_addition``/``tool_removal`` blocks: ``addition``, ``removal``) to
        send with the next request (``add_tools``, ``remove_tools``); the driver runs the tools."""
        self.set(tools_changed(self.state, blocks))

    def carry(self) -> dict[str, Any]:
        """What a new segment of this run needs of the core besides its state, as JSON data: what
        was elided (``elide``), how far the window is checked, and the removals kept; ``restore``
        gives it to the next segment's core."""
        elided = self.elided
        return {
            "elided": {
                "messages": elided.messages,
                "requests": elided.requests,
                "counted": elided.counted,
                "changes": dict(elided.changes),
            },
            "checked": self.checked,
            "kept_removals": sorted(self.kept_removals),
        }

    def restore(self, carried: Mapping[str, Any]) -> None:
        """Know what the segment before knew (``carry``'s data)."""
        elided = carried["elided"]
        self.elided = Elided(
            messages=elided["messages"],
            requests=elided["requests"],
            counted=elided["counted"],
            changes=dict(elided["changes"]),
        )
        self.checked = carried["checked"]
        self.kept_removals = frozenset(carried["kept_removals"])

    def elide(self, messages: int, requests: int) -> None:
        """Leave the first ``messages`` of the history and the usage of the first ``requests``
        requests out of the state, for a driver that keeps them elsewhere (``Elided``): the tool
        changes they made still count, and so do the requests toward ``max_iterations``. The part
        of the history kept must hold what the core reads: the messages not sent yet, and for
        client-side compaction the turns it keeps (and one before them)."""
        state = self.state
        if not 0 <= messages <= len(state.messages) or not 0 <= requests <= len(state.usage):
            raise ValueError(f"cannot elide {messages} messages and {requests} requests of {state!r}")
        elided = self.elided
        self.elided = Elided(
            messages=elided.messages + messages,
            requests=elided.requests + requests,
            counted=elided.counted + max(requests - state.opened_at, 0),
            changes=dict(elided.changes) | last_changes(state.messages[:messages]),
        )
        # The window's first message is not the conversation's: the checks of the first message
        # (a user's) were made on the whole, and the window is checked from its second on.
        self.checked = max(self.checked - messages, 1 if self.elided.messages else 0)
        self._folded = None
        self.set(
            state.replace(
                messages=state.messages[messages:],
                usage=state.usage[requests:],
                opened_at=max(state.opened_at - requests, 0),
            )
        )

    def _history_replaced(self, *, whole: bool = True) -> None:
        """The history was replaced (a store writes it anew); ``whole``: by one that stands whole,
        nothing of it elided (a summary, or the body's new history)."""
        self.history_epoch += 1
        if whole and (self.elided.messages or self.elided.changes):
            self.elided = dataclasses.replace(self.elided, messages=0, changes={})
            self._folded = None

    def _reopening(self) -> None:
        """The body steers: a loop that ended opens again, and counts its requests anew."""
        if self.state.phase is Phase.DONE and self.elided.counted:
            self.elided = dataclasses.replace(self.elided, counted=0)

    def _close_now(self) -> None:
        self.closing = False
        self.set(closed(self.state))

    def _send(self) -> Program[Any]:
        yield Prepare()
        self._before_send()
        state = self.state
        check_history(state.messages, self.checked)
        self.checked = max(len(state.messages) - 1, 0)
        yield from self._save()
        request = Request(state, None if self._compacting is None else self._compacting[0])
        if self.stream:
            self._held = set()  # a new reply: none of its calls is held yet
            stream = yield OpenStream(request)
            self.set(stream_opened(self.state))
            return stream
        reply = yield Send(request)
        self._accept(reply)
        return (yield from self._hand_over())

    def _hand_over(self) -> Program[Reply]:
        """A complete reply (``RECEIVED``): its calls that need a decision wait, it is saved, and
        the body gets it. If the save fails, the next iteration saves and hands it over again."""
        yield Prepare()  # after a resume, the tools (a toolset's) may not be open yet
        yield from self._gate(pending_calls(self.state))
        yield from self._save()
        self.set(delivered(self.state))
        assert self.state.reply is not None
        return self.state.reply

    def _accept(self, reply: Reply, *, streamed: bool = False) -> None:
        """Take a complete reply: it is the latest, its usage counts, listeners hear of it."""
        check_reply(reply)
        self.set(reply_received(self.state, reply, self.usage_of(reply)))
        if self.listening:
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
            self.set(stream_abandoned(self.state))
            raise
        if reply is None:  # the body read the stream and got its error already: send again
            yield DropStream()
            self.set(stream_abandoned(self.state))
            return
        self._accept(reply, streamed=True)
        dropped = yield EndStream(keep=step_for(reply.stop_reason) is Step.RUN_TOOLS)
        self.set(calls_dropped(self.state, dropped))
        yield from self._gate(pending_calls(self.state))
        yield from self._save()

    def finish_stream(self) -> Program[None]:
        """Read the rest of the stream the body holds, if one is open (before its calls are run)."""
        if self.state.phase is Phase.STREAMING:
            yield from self._read_stream()

    def abandon_stream(self) -> Program[None]:
        """Drop the stream the body holds, and what it started early; the request is sent again."""
        yield DropStream()
        self.set(stream_abandoned(self.state))

    # -- the turn ---------------------------------------------------------------------------------

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
        finished = turn_finished(turn_resumed(before), message)
        self.set(self._turn_ended(finished))
        self._decided_since_pause = []
        self._reported = set()
        if self.state is finished and finished.phase is Phase.READY:
            yield Derive(before)  # written with the next save that has news
        if not before.steered and self.state.messages is finished.messages:
            # A reply and the results of all its calls, as the runner appends them, are valid as
            # made: the next check starts after them. A reply appended without results may hold
            # calls its stop reason kept from running: the check starts at it.
            self.checked = len(finished.messages) - (message is None)
        yield from self._after_turn()

    def _settle_turn(self, calls: Sequence[ToolCall]) -> Program[list[ToolResultBlockParam] | None]:
        """Settle the turn's calls; while calls wait, the loop pauses (``PAUSED``: the next
        iteration goes on with the decisions taken meanwhile), unless the driver waited for them
        and the run's time for decisions ran out (``TIMED_OUT``): then the calls still waiting are
        denied, and the turn goes on at once."""
        while True:
            results = yield from self.settle(calls)
            if results is not None:
                return results
            self.set(turn_paused(self.state))
            outcome = yield AwaitDecisions(awaiting(self.state, calls))
            if outcome is Decisions.PAUSED or self.closing:
                return None
            self._deny_undecided(calls)
            self.set(turn_resumed(self.state))

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
            self.set(turn_resumed(self.state))
            try:
                yield self._save_effect()
            except DecidedMeanwhileError:
                self.set(turn_paused(self.state))
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
                self.set(decision_kept(self.state, theirs))
                self._decided(decided_event(self.state.decisions[-1]))
                continue
            mine = self.state.calls.get(tool_use_id)
            if mine is not None and mine.decision is not None:
                overruled.append(
                    f"{tool_use_id!r} was {theirs.decision} by {theirs.decided_by or 'someone'!r} at "
                    f"{theirs.decided_at or 'an unknown time'} through the store, so this runner's decision "
                    f"({mine.decision}) is dropped"
                )
            self.set(call_adopted(self.state, theirs))
            self._reported.add(tool_use_id)
            self._decided(decided_event(self.state.decisions[-1]))
        if overruled:
            raise ApprovalError(
                "; ".join(overruled)
                + ". A decision saved to the store first stands; iterate the runner again to go on."
            )

    def step(self, program: Program[T]) -> Program[T]:
        """Drive ``program`` as a step of the run: an error that stops it is recorded in the state
        (``failure``) and saved (shielded, best effort), for whoever lists the runs; a later step
        that succeeds clears it. Every driver runs its programs through this."""
        if self.state.failure is not None:
            self.set(self.state.replace(failure=None))
        self.stepping += 1
        try:
            return (yield from program)
        except Exception as error:
            self.set(
                self.state.replace(
                    failure={"type": type(error).__name__, "message": message_of(error)[:2000]}
                )
            )
            with contextlib.suppress(Exception):  # the step's own error is the one to raise
                yield self._save_effect(shielded=True)
            raise
        finally:
            self.stepping -= 1

    def save(self) -> Program[None]:
        """Save the state as it stands (``_save``): for a driver that changed it outside a program
        (``close()``)."""
        yield from self._save()

    def _save(self, starting: str | None = None) -> Program[None]:
        """Save. A save refused because decisions were taken through the store since the last one
        (the run was paused there, and the loop body steered or closed it before going on) takes
        them over (``_adopt``) and saves again: a decision through the store is never lost, and
        never stops the run."""
        while True:
            try:
                yield self._save_effect(starting)
            except DecidedMeanwhileError:
                decided: Mapping[str, CallRecord] = yield ReadDecisions(pending_calls(self.state))
                self._adopt(decided)
                continue
            return

    def _save_effect(self, starting: str | None = None, *, shielded: bool = False) -> Save:
        """A ``Save`` of the state as ``saveable(starting)`` gives it when the store writes. The
        history was replaced since the last save written if its epoch moved: the store then writes
        all of it (``Save.history_replaced``); once a save is written, that is its epoch."""
        epoch = self.history_epoch
        replaced = epoch != self._saved_epoch

        def state() -> RunState:
            if replaced:  # the save that writes it anew is under way: later ones build on it
                self._saved_epoch = epoch
            return self.saveable(starting)

        return Save(state, starting=starting, history_replaced=replaced, shielded=shielded)

    _timeout = "the time allowed"
    """How long a driver that waits for decisions waits, in words (``timed_out``)."""

    def timed_out(self, timeout: str) -> None:
        """Say how long the driver waits for decisions before it answers ``AwaitDecisions`` with
        ``TIMED_OUT`` (``timeout``: "8 hours"), for the reason the model reads (``TIMED_OUT``)."""
        self._timeout = timeout

    def _deny_undecided(self, calls: Sequence[ToolCall]) -> None:
        """The time for decisions ran out: deny the calls still waiting, as any decision is taken
        and reported. No one decided, so the journal keeps no ``decided_by``; the result says why."""
        for call in awaiting(self.state, calls):
            self.deny(call.id, TIMED_OUT.format(name=call.name, timeout=self._timeout), via="timeout")

    def settle(self, calls: Sequence[ToolCall]) -> Program[list[ToolResultBlockParam] | None]:
        """Find the calls that wait, let the ``approve=`` callback decide them, run what may run
        (those that need no decision, and those approved, also while this runs); then all the
        results in order, or ``None`` while calls still wait."""
        yield Prepare()  # the calls' tools are open (a resumed run's toolsets, say)
        if self.state.phase is Phase.AWAITING:  # after a pause: decisions may have come through the store
            yield from self._read_decisions(calls)
        yield from self._gate(calls)
        yield from self._ask()
        if not awaiting(self.state, calls):  # the common case: nothing waits
            yield from self._run(calls)
            return self.results(calls)
        while True:
            state = self.state
            waiting = awaiting(state, calls)
            ready = [call for call in calls if call not in waiting and state.result_of(call) is None]
            if not ready:
                break
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

    def _run(self, calls: Sequence[ToolCall]) -> Program[None]:
        """Run the calls without a result, in the order ``CallPlan`` gives (consecutive ordinary
        calls at once, a sequential tool's call alone, a toolset family's members in order until
        one fails); a call another caller ran but did not finish (it was cancelled) runs again."""
        while missing := [call for call in calls if self.state.result_of(call) is None]:
            if len(missing) == 1:  # the common case: nothing to order or to halt
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
        self.set(call_started(self.state, call))
        self._starting[call.id] = previous
        try:
            yield from self._save(starting=call.id)
        except BaseException:
            self._unstart(call)
            raise
        del self._starting[call.id]
        given = self.input_of(call)
        if self.listening:
            self.emit(ToolCallStarted(call=call, early=early, input=None if given is call.input else given))
        tool = self.tool_of(call)
        try:
            block, seconds = yield Execute(
                call, given, self.removed(), may_repeat=tool is None or tool.idempotent
            )
        except BaseException:
            self._cut_off(call)
            raise
        if block is LOST:  # the driver lost it half way: it may or may not have acted
            block = interrupted(call)
        self._finished(call, block, seconds)
        yield from self._save()

    def _cut_off(self, call: ToolCall) -> None:
        """A call was cut off while its tool ran (a cancellation): with a store, its start is saved,
        so it is answered as after a crash: interrupted, unless its tool may run again. Without a
        store nothing was saved, and it runs again."""
        if not self.durable:
            return
        record = record_of(self.state, call)
        if record is None or record.status is not CallStatus.STARTED:
            return
        tool = self.tool_of(call)
        if tool is not None and tool.idempotent:
            return
        self.set(call_finished(self.state, call, interrupted(call)))

    def _answer(self, call: ToolCall, block: ToolResultBlockParam) -> Program[None]:
        """Answer a call that is not run with ``block``, journaled like a call that ran."""
        self.set(call_started(self.state, call))  # nothing runs, so nothing to save before the result
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
        self.set(self.state.replace(calls=calls))

    def saveable(self, starting: str | None = None) -> RunState:
        """The state a save writes: the current one, less the starts of calls (other than
        ``starting``) whose own save has not been written yet, which may not have begun."""
        pending = self._starting
        if not pending or (len(pending) == 1 and starting in pending):
            return self.state
        calls = dict(self.state.calls)
        for call_id, previous in pending.items():
            if call_id == starting:
                continue
            if previous is None:
                calls.pop(call_id, None)
            else:
                calls[call_id] = previous
        return self.state.replace(calls=calls)

    def _finished(self, call: ToolCall, block: ToolResultBlockParam, seconds: float) -> None:
        self.set(call_finished(self.state, call, block))
        if self.listening:
            self.emit(ToolCallFinished(call=call, duration=seconds, is_error=bool(block.get("is_error"))))

    def input_of(self, call: ToolCall) -> object:
        """The input ``call`` runs with: the one a person approved instead, or the model's."""
        record = record_of(self.state, call)
        if record is not None and record.approved_input is not None:
            return record.approved_input
        return call.input

    # -- decisions --------------------------------------------------------------------------------

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
        self.set(calls_gated(self.state, gated.waiting, gated.denied, tools=gated.tools))
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

    def waiting(self) -> list[ToolCall]:
        """The calls of the current turn that wait for a decision, in tool_use order."""
        return list(awaiting(self.state, pending_calls(self.state)))

    def find(self, tool_use_id: str) -> ToolCall | None:
        """The pending call with that id, if any."""
        return next((call for call in pending_calls(self.state) if call.id == tool_use_id), None)

    def decide(
        self,
        tool_use_id: str,
        decision: Decision,
        *,
        result: ToolResultBlockParam | None = None,
        approved_input: object = None,
        by: str | None = None,
        at: str | None = None,
        via: DecisionSource = "runner",
    ) -> None:
        """Decide a call (``transitions.call_decided``). A driver whose decisions may come from
        several threads at once (``SyncToolRunner``) makes them one at a time: of two decisions on
        one call, the second is then refused (``ApprovalError``)."""
        self.set(
            call_decided(
                self.state,
                tool_use_id,
                decision,
                result=result,
                approved_input=approved_input,
                by=by,
                at=at,
                via=via,
            )
        )
        self._decided(decided_event(self.state.decisions[-1]))

    def _decided(self, event: ApprovalDecided) -> None:
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

    # -- steering ---------------------------------------------------------------------------------

    def check_history_may_change(self, method: str) -> None:
        """Refuse a change of the history that would lose a reply or results the run holds."""
        state = self.state
        if state.phase is Phase.RECEIVED:
            raise ToolRunnerError(
                f"{method}() was called while a reply the loop body has not seen waits to be handed over (its "
                "save failed, or the run was resumed); iterate the runner again to receive it, then steer."
            )
        if state.phase is Phase.AWAITING:
            ran = [
                call.id
                for call in pending_calls(state)
                if (record := record_of(state, call)) is not None
                and record.status in (CallStatus.STARTED, CallStatus.FINISHED)
            ]
            if ran:
                raise ApprovalError(
                    f"{method}() was called while the run waits for decisions, and the calls {ran!r} of the "
                    "waiting reply already ran: changing the history now would drop their results. Decide the "
                    "waiting calls first (approve, deny or answer), iterate to append the results, then steer."
                )

    def push(self, messages: Sequence[Any]) -> None:
        """Append messages (each one read by ``message_param``) to the history: the body steered.

        Raises:
            HistoryError: The history would be one the service rejects, whatever came next (a
                misplaced system message, a tool_result that answers nothing, ...); nothing is
                appended. The calls of the last message may wait for their results.
        """
        history = self.state.messages
        start = min(self.checked, max(len(history) - 1, 0))
        new = (*history, *messages)
        self.check_steered(new, start)
        self.checked = start
        self._reopening()
        self.set(steered(self.state, messages=new))

    def check_compaction(self, compaction: object) -> dict[str, Any]:
        """The compaction config ``compact_next`` would take (``{"type": "summarize"}`` for
        ``None``), checked against the run's params; nothing changes.

        Raises:
            ParamsError: The config is not a mapping, or ``context_management`` has a compaction
                edit, which the service does not take together with a compaction block.
        """
        edits = field(self.state.params.get("context_management"), "edits") or ()
        if any(str(field(edit, "type") or "").startswith("compact_") for edit in edits):
            raise ParamsError(
                "compact_before_next_turn() cannot be used while context_management has a compaction edit, which "
                "the service does not take together with a compaction block; remove the edit first."
            )
        if compaction is None:
            return {"type": "summarize"}
        if not isinstance(compaction, Mapping):
            raise ParamsError(
                f"compact_before_next_turn() takes a compaction config (a dict), not {compaction!r}."
            )
        return dict(cast("Mapping[str, Any]", compaction))

    def compact_next(self, compaction: object) -> None:
        """Compact the conversation before the model's next turn (``compact_before_next_turn``),
        with ``compaction`` checked as ``check_compaction`` does; a later call replaces it."""
        self.pending_compaction = self.check_compaction(compaction)

    @staticmethod
    def check_steered(history: Sequence[Any], start: int = 0) -> None:
        """Refuse a history the body made (from ``start`` on) that could never be sent, whatever
        came next (``check_history(..., open_end=True)``)."""
        check_history(history, start, open_end=True)

    def install(self, changes: Mapping[str, Any], *, steer: bool) -> None:
        """Make new params, history and tools current (already checked: a history the body made
        with ``check_steered``); from the body, it steered."""
        if steer:
            self._reopening()
            self._history_replaced()
            self.checked = 0
            self.set(steered(self.state, **changes))
        else:
            self.set(self.state.replace(**changes))

    def close(self) -> None:
        """End the loop (``closed``): now, or, while a step is under way (from a callback or
        another task), once that step finished whole (a request's reply is kept, its tools not run;
        a turn's tools finish and their results are appended). Every driver's ``close()``."""
        if self.stepping:
            self.closing = True
        else:
            self.set(closed(self.state))

    # -- requests: tool changes and compaction ---------------------------------------------------

    def _before_send(self) -> None:
        """Pending tool changes go with the next request (a ``role: "system"`` message, unless a
        paused turn is resumed); a pending compaction becomes the request's job."""
        state = self.state
        if state.tool_changes:
            messages = state.messages
            if (
                field(messages[-1], "role") if messages else None
            ) != "assistant":  # a resumed turn stays last
                system = pending_message(state.tool_changes)
                state = state.replace(messages=(*messages, system), tool_changes=())
                self.set(state)
        if self.pending_compaction is None:
            return
        paused = state.reply is not None and step_for(state.reply.stop_reason) is Step.RESUME
        if not paused:  # a paused turn is resumed first
            self._compacting = (self.pending_compaction, len(state.messages))
            self.pending_compaction = None

    def _turn_ended(self, state: RunState) -> RunState:
        """``state`` is what ``turn_finished`` made of the turn; adjust it for compaction."""
        if self._compacting is not None:
            compacted = self._compacting[1]
            self._compacting = None
            summarized = state.reply is not None and has_summary(state.reply)
            if not summarized:
                log(WARNING, "Compaction produced no summary; keeping the conversation as it is.")
            last, self._final_compaction = self._final_compaction, False
            answered = compaction_answered(state, compacted, last=last)
            self._keep_removals(state, answered)
            self._history_replaced(whole=summarized)
            return answered
        if self.pending_compaction is not None and state.phase is Phase.DONE and state.end_reason == "model":
            reply = state.reply
            if reply is not None and client_tool_calls(reply):
                log(
                    WARNING,
                    "The pending compaction was skipped because the last turn (stop_reason=%r) ended with tool calls "
                    "whose results were not sent. Call compact_before_next_turn() again if you continue the "
                    "conversation.",
                    reply.stop_reason,
                )
                self.pending_compaction = None
                return state
            self._final_compaction = True
            return kept_open_for_compaction(state)
        return state

    def _keep_removals(self, before: RunState, after: RunState) -> None:
        """A compaction replaced the history: the removals of the part it summarized stay in force."""
        lost = removed_by(dict(self.elided.changes) | last_changes(before.messages)) - removed_tools(
            after.messages
        )
        if lost:
            self.kept_removals |= lost

    def _after_turn(self) -> Program[None]:
        """Client-side compaction: once a turn whose reply reached the threshold is finished, and
        the loop goes on, replace the older turns with a summary."""
        control, state = self.compaction_control, self.state
        if control is None or not control["enabled"] or state.phase is not Phase.READY or state.reply is None:
            return
        threshold = control.get("context_token_threshold", DEFAULT_THRESHOLD)
        used = tokens_used(state.reply)
        if used < threshold:
            return
        point = split_point(state.messages, control.get("keep_turns", 1))
        if point == 0:
            return
        log(INFO, "Token usage %d has exceeded the threshold of %d. Performing compaction.", used, threshold)
        reply = yield Summarize(state, point, control)
        usage = self.usage_of(reply)
        summary = summary_text(reply)
        state = self.state
        if summary is None:
            log(WARNING, "The summary request gave no text; keeping the conversation as it is.")
            self.set(summary_counted(state, None, usage))
            return
        self.set(summary_counted(state, summarized_history(state.messages, point, summary), usage))
        self._keep_removals(state, self.state)
        self._history_replaced()
        log(  # as the SDK's line: the new token usage is the summary's output
            INFO,
            "Compaction complete. New token usage: %d (messages replaced with a summary: %d).",
            reply.usage.output_tokens,
            point,
        )


DENIED = "A person denied this call to {name!r}; it did not run. Do not call it again in the same way."
"""The reason the model reads when a call is denied without one."""


def denied_reason(call: ToolCall) -> str:
    """The reason the model reads for ``call`` denied without one."""
    return DENIED.format(name=call.name)


def failed_reason(call: ToolCall, what: str, error: Exception) -> str:
    """The reason the model reads for a call denied because deciding on it raised (fail closed)."""
    return (
        f"This call to {call.name!r} was denied because {what} failed ({type(error).__name__}: "
        f"{message_of(error)}); it did not run."
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

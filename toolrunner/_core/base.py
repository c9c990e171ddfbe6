"""The core's fields, and what every part of the orchestration reads of them (``CoreBase``).

``RunCore`` (``_core.run``) is one class built in a single chain, each link a concern, each in its
own module, each reading only what is below it::

    CoreBase      (base)       the fields; the state made current (``make_current``) and reported
                               (``emit``); the tools as the history leaves them; a save's state
                               (``saveable``)
    WindowCore    (window)     what a driver elides of the history, and compaction's requests
    DecisionsCore (decisions)  gates, ``approve=``, decisions through the store, their audit
    HooksCore     (hooks)      per-tool limits, and the hooks that can refuse or change a call
    TurnCore      (turn)       a reply taken, and its turn finished: its calls settled and run
    RunCore       (run)        one iteration, requests, steps and saves, steering

All the fields are made here, in one ``__init__``, so that no link declares a field another makes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field as dataclass_field
from typing import Any, Generic, Protocol, TypeVar

from .compaction import CompactionControl
from .effects import Save
from .events import LoopFinished, RunnerEvent
from .hook_types import HookPlan, counts_saveable
from .output import OutputFormat
from .state import FINISHED_PHASES, CallRecord, Phase, RunState
from .tool_changes import last_changes, pending_message, removed_by
from .transitions import Limits, may_start_early, pending_calls, resumed
from .types import Reply, ToolCall, ToolFlags
from .usage import RequestUsage

__all__ = ["CoreBase", "Elided", "ToolT", "Tools"]

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

    @property
    def opens(self) -> bool:
        """Whether the driver has something to do before tools run (open a toolset, say): ``OpenTools``
        is yielded only then."""
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


class CoreBase(Generic[ToolT]):
    """The run's state and the core's fields (``RunCore`` is the class drivers make; see
    ``_core.run``).

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
        output: The typed final answer (``output_format=``), if the run has one.
        hooks: The run's hooks and per-tool limits (``_core.hooks.HookPlan``), if it has any.
        clock: The driver's clock (seconds, as ``time.perf_counter``), which times a sub-agent's
            call (``ToolCallFinished.duration``) as the driver times the tools it performs; the
            core never reads a clock itself. Without one, such a call reports ``0.0``.
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
        output: OutputFormat | None = None,
        hooks: HookPlan | None = None,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.state = state
        self.tools = tools
        self.usage_of = usage_of
        self.limits = limits
        self._unlimited: Limits | None = (
            limits
            if limits.max_iterations is None and limits.max_total_tokens is None and limits.max_cost is None
            else None
        )
        """``limits`` if it limits nothing (none is ever reached: the loop checks none)."""
        self.stream = stream
        self.durable = durable
        self.asks = asks
        self.compaction_control = compaction_control
        self.listener: Callable[[RunnerEvent], None] | None = None
        """Hears every event as it happens (the runner's ``on_event``, or ``events()``)."""
        self._ended = ended
        self.closing: bool = False
        """``close()`` came while a program ran: the step under way finishes whole, then the loop ends."""
        self._held: set[str] = set()
        """The ids of the streaming reply's calls held back from starting early (``hold``)."""
        self.stepping: int = 0
        """How many steps (``step``) are under way: a driver's ``close()`` meanwhile waits for them."""
        self.checked: int = 0
        """The history is known to be valid before this index (``check_history``)."""
        self.history_epoch: int = 0
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
        self._final_compaction: bool = False  # the loop ends once the compaction request is answered
        self.kept_removals: frozenset[str] = frozenset()
        """Tools a compaction's summary dropped the removal of: they stay removed (in memory, as the
        SDK's runner keeps them)."""
        self._folded: tuple[tuple[Any, ...], tuple[Mapping[str, Any], ...], dict[str, bool]] | None = None
        self._removed: frozenset[str] = frozenset()
        self.elided: Elided = Elided()
        """What the state leaves out of the history (``elide``); nothing unless a driver elides."""
        self.output = output
        """The typed final answer (``output_format=``, ``_core.output``), if the run has one."""
        self.hooks = hooks
        """The run's hooks and per-tool limits (``_core.hooks``); ``None``: none, nothing to check."""
        self.clock = clock
        """The driver's clock, for a sub-agent's call's duration (``None``: it reports ``0.0``)."""
        self.cap: Callable[[RunState, Limits], Limits] | None = None
        """For a sub-run: its limits (given its state), capped by what its parent's tree has left
        (set by its adapter, ``_core.subruns``; ``_core.transitions.capped``)."""
        self.root_stored: bool | None = None
        """For a sub-run (always ``durable``: its saves are mapped onto its parent's), whether the
        root of its tree has a store (set by its adapter); ``None`` for a root. See ``stored``."""

    # -- the state ------------------------------------------------------------------------------

    def make_current(self, state: RunState) -> None:
        """Make ``state`` current; the one place the state changes, and where the end is reported."""
        # ``finished``, read inline: this runs at every change of the state
        ended = state.phase in FINISHED_PHASES and self.state.phase not in FINISHED_PHASES
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

    @property
    def stored(self) -> bool:
        """Whether the run's starts are saved where a crash would leave them: it has a store
        (``durable``), or, for a sub-run, the root of its tree has one. Without, a call cut off
        (a cancellation) runs again, at every level of the tree (``_cut_off``)."""
        return self.durable if self.root_stored is None else self.root_stored

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

    # -- the tools, as the history and the pending changes leave them ------------------------------

    def removed(self) -> frozenset[str]:
        """The tools the history and the pending changes removed (folded again only when either
        changed; appended messages only, so a turn's cost does not grow with the history)."""
        state = self.state
        folded = self._folded
        if folded is None or folded[0] is not state.messages or folded[1] is not state.tool_changes:
            messages, pending = state.messages, state.tool_changes
            if folded is not None and messages[: len(folded[0])] == folded[0]:
                appended = last_changes(messages[len(folded[0]) :])
                if not appended and not pending and not folded[1]:  # a turn without tool changes
                    self._folded = (messages, pending, folded[2])
                    return self._removed | self.kept_removals if self.kept_removals else self._removed
                history = folded[2] | appended
            else:
                history = dict(self.elided.changes) | last_changes(messages)
            self._removed = removed_by(
                history | last_changes((pending_message(pending),)) if pending else history
            )
            self._folded = (messages, pending, history)
        return self._removed | self.kept_removals if self.kept_removals else self._removed

    def tool_of(self, call: ToolCall, removed: frozenset[str] | None = None) -> ToolT | None:
        """The tool that runs ``call`` now: none if the run has none, or a tool change removed it
        (``removed``: what ``removed()`` gives now, for a caller that has it already)."""
        if call.toolset_name is None and call.name in (self.removed() if removed is None else removed):
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

    # -- what a save writes -----------------------------------------------------------------------

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
        if self.state.call_counts:  # the starts left out are not counted either
            return counts_saveable(
                self.state, calls, {key: value for key, value in pending.items() if key != starting}
            )
        return self.state.replace(calls=calls)

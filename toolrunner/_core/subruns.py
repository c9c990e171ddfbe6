"""Sub-agents' runs, inside their parent's (``run_sub_agent``; issue 30).

A sub-agent (``SubAgent``, ``_tools.subagents``) is offered to the model as a tool that takes a
task. Its call does not yield ``Execute``: the parent's call program makes a child ``RunCore``
over the sub-run's state (a new one: the sub-agent's params, the task as the first message; or
the one the call's record keeps, ``CallRecord.sub_run``) and runs the child's iterations inside
its own, through an adapter (``SubRunner``) that maps the child's effects:

- the child's ``Save`` (and ``StateDerived``) is the parent's transition ``sub_run_saved`` (the
  record's ``sub_run`` replaced, at the time the store writes) and the parent's save: one save of
  the parent saves the tree, so a crash anywhere in a sub-run resumes it where its last save left
  it (its finished calls never run again);
- ``Send``'s request, ``Gate`` and ``Execute`` gain the path of sub-agents (``agent_path``),
  which the driver reads to find the sub-agent's tools; ``RunCalls`` names the sub-run whose call
  programs run (``runs``), each one adapted the same way;
- the child's events reach the parent's listener wrapped in ``SubRunEvent`` with the path (the
  record takes the child's state first, so a listener reads what the event reports:
  ``_core.progress``);
- the parent's ``close()`` reaches the child after each effect: a sub-run ends (``"closed"``) at
  the end of its step under way, as its parent does, and answers its call with what it had found;
- the child's pause (``AwaitDecisions``), its decisions read through the store and its loop's end
  are answered here: a child that pauses for decisions ends its iteration, and the call's
  program returns ``None``: the call stays started, suspended, its sub-run awaiting in its
  record, and the parent pauses too (``_core.nested``: the tree's waiting calls, decided there;
  the decisions are in the child's state when the call runs again, so ``ReadDecisions`` reads
  none here).

When the child ends, its answer is the call's result (``_core.subrun_answers``): its final text,
or an ``is_error`` result naming the limit it stopped at and what it had found so far, or, for a
sub-agent with a typed answer (``AgentPlan.output``: the child parses and checks its final answer
and sends it back as a run does, ``_core.output``) whose answer still does not fit, the answer's
errors (``sub_run_typed``; an answer that fits is the type's JSON, a refusal an error result; judged from the ended state, so a sub-run resumed after it ended
is answered the same); and its summary
(its requests' usage, why it ended), with those of the sub-runs below it, joins the parent's
``RunState.sub_runs`` (``_core.tree_usage.sub_run_ended``), and its audit the parent's
``RunState.decisions`` (``_core.tree_audit``). A request of the child that failed
with an error the same request meets again (``_core.api_errors.permanent``: a wrong model id, an
invalid request) ends it too, its answer an ``is_error`` result naming the sub-agent and the
error (``sub_run_failed``); any other error is raised through the parent's program as before,
with a note naming the path of the sub-run it came from (``noted``), the run resumable.

The child is ``durable`` whatever its root is (its saves are mapped); a call of it cut off by a
cancellation is answered as its root's own calls are (``CoreBase.stored``): "interrupted" if the
root has a store, run again if it has none.

One budget: the limits hold for the tree. The child's limits, when each of its requests is
checked, are the least of its own and what the parent's tree has left of the parent's limits
(``_core.transitions.capped``, through the child core's ``cap``), so the tree's budget spent stops
the child, whose call is answered with the limit's error result, and the parent at its next check.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from anthropic.types import ToolResultBlockParam

from .api_errors import permanent
from .effects import (
    AwaitDecisions,
    CallRunner,
    Decisions,
    DropStream,
    Effect,
    Execute,
    Gate,
    LoopStopped,
    Program,
    ReadDecisions,
    RunCalls,
    Save,
    Send,
    StateDerived,
)
from .errors import OutputValidationError, ToolRunnerError
from .events import RunnerEvent, SubRunEvent
from .log import WARNING, log
from .output import OutputFormat
from .results import tool_result_block
from .state import Phase, RunState, SubRun
from .subrun_answers import (
    error_text,
    noted,
    sub_run_answer,
    sub_run_failed,
    sub_run_resumed,
    sub_run_typed,
)
from .transitions import Limits, capped, record_of
from .tree_audit import sub_run_kept
from .types import Reply, ToolCall, ToolFlags
from .usage import RequestUsage

__all__ = [
    "AgentPlan",
    "AgentTools",
    "agent_plan_of",
    "run_sub_agent",
    "sub_run_saved",
]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class AgentPlan:
    """What the core reads of a sub-agent (``SubAgent.agent_plan``): data, and its tools' flags.

    Attributes:
        name: The sub-agent's name (its tool's).
        params: The request params of its run but ``messages`` and ``tools`` (``model``,
            ``max_tokens``, ``system``, ...).
        tools: Its tools as its saved state names them.
        flags: Its runnable tools' flags, by name (a ``SubAgent`` among them is one level down).
        limits: The limits of its run.
        output: Its typed answer (``SubAgent(output_format=...)``), if it has one: its sub-run's
            final answer is parsed and checked as a run's is (``_core.output``).
    """

    name: str
    params: Mapping[str, Any]
    tools: tuple[str, ...]
    flags: Mapping[str, ToolFlags]
    limits: Limits
    output: OutputFormat | None = None


@dataclass(frozen=True, slots=True)
class AgentTools:
    """A sub-agent's tools as its core sees them (``Tools``): found by name; none needs opening."""

    tools: Mapping[str, ToolFlags]

    def find(self, call: ToolCall) -> ToolFlags | None:
        return None if call.toolset_name is not None else self.tools.get(call.name)

    @property
    def gated(self) -> bool:
        return any(tool.requires_approval is not False for tool in self.tools.values())

    @property
    def opens(self) -> bool:
        return False


def agent_plan_of(tool: object) -> AgentPlan | None:
    """The plan of ``tool`` if it is a sub-agent (it has an ``agent_plan``), else ``None``."""
    plan = getattr(tool, "agent_plan", None)
    return plan if isinstance(plan, AgentPlan) else None


def sub_run_saved(state: RunState, call: ToolCall, agent: str, child: RunState) -> RunState:
    """The sub-run of ``call`` (a sub-agent's, ``agent``) stands at ``child``: the record keeps it."""
    record = record_of(state, call)
    if record is None:  # not journaled (cannot be: a call is journaled before it runs)
        return state
    kept = dataclasses.replace(record, sub_run=SubRun(agent=agent, state=child))
    return state.replace(calls={**state.calls, call.id: kept})


# -- the adapter ------------------------------------------------------------------------------------


class Core(Protocol):
    """What the adapter needs of a run's core (``RunCore`` is one): the parent's and the child's."""

    state: RunState
    durable: bool
    closing: bool
    root_stored: bool | None
    listener: Callable[[RunnerEvent], None] | None
    usage_of: Callable[[Reply], RequestUsage]

    cap: Callable[[RunState, Limits], Limits] | None
    clock: Callable[[], float] | None

    @property
    def stored(self) -> bool: ...
    def make_current(self, state: RunState) -> None: ...
    def limits_now(self) -> Limits: ...
    def emit(self, event: RunnerEvent) -> None: ...
    def saveable(self, starting: str | None = None) -> RunState: ...
    def save(self) -> Program[None]: ...
    def iteration(self) -> Program[Any]: ...
    def call(self, call: ToolCall, *, early: bool = False) -> Program[None]: ...
    def resume(self) -> None: ...


class MakeCore(Protocol):
    """How the adapter makes the child's core (``RunCore`` itself)."""

    def __call__(
        self,
        state: RunState,
        *,
        tools: AgentTools,
        usage_of: Callable[[Reply], RequestUsage],
        limits: Limits,
        durable: bool,
        clock: Callable[[], float] | None,
        output: OutputFormat | None,
    ) -> Core: ...


def run_sub_agent(
    parent: Core, make: MakeCore, call: ToolCall, input: object, plan: AgentPlan
) -> Program[ToolResultBlockParam | None]:
    """The program of ``call`` (to the sub-agent ``plan``, with ``input``), inside the parent's
    call program: the sub-run to its end, and its answer; or ``None`` if it paused for decisions
    (see the module docstring)."""
    task = cast("Mapping[str, object]", input).get("task") if isinstance(input, Mapping) else None
    if not isinstance(task, str) or not task.strip():
        return tool_result_block(
            call.id,
            f'The sub-agent {plan.name!r} takes an input {{"task": string}}: the task it is to do, in words.',
            is_error=True,
        )
    failed: Exception | None = None
    try:
        runner = SubRunner(parent, make, call, plan, task)
    except Exception as error:  # its saved state cannot go on with this sub-agent (another output type)
        noted(error, (call.id, plan.name))
        raise
    try:
        while (yield from runner.adapted(runner.child.iteration())) is not None:
            pass  # a reply handed over: nobody steers a sub-run, and the next iteration finishes its turn
    except OutputValidationError:  # its typed answer does not fit, its retries spent: it ended (below)
        pass
    except Exception as error:
        if not permanent(error):  # it may pass (or is no API error): the run stays resumable
            noted(error, runner.path)
            raise
        failed = error  # its request would fail again: the sub-run ends, and the model is told
    ended = runner.child.state
    if failed is None and ended.phase is Phase.AWAITING:  # paused: its calls wait for decisions
        return None
    # Its summary and its audit are kept (saved with the call's result, by the call program's next save).
    parent.make_current(sub_run_kept(parent.state, call.id, plan.name, ended))
    if failed is not None:
        log(
            WARNING,
            "The sub-agent %r (the call %r) stopped: its request failed with %s, which the same request "
            "meets again; the call is answered with an error result.",
            plan.name,
            call.id,
            error_text(failed),
        )
        return sub_run_failed(call, plan.name, ended, failed)
    if plan.output is not None and (typed := sub_run_typed(call, plan.name, ended, plan.output)):
        return typed
    return sub_run_answer(call, plan.name, ended, plan.limits)


class SubRunner:
    """The child's core, and the mapping of its effects onto the parent's (the module docstring)."""

    def __init__(self, parent: Core, make: MakeCore, call: ToolCall, plan: AgentPlan, task: str) -> None:
        self.parent = parent
        self.call = call
        self.agent = plan.name
        self.path = (call.id, plan.name)
        record = record_of(parent.state, call)
        saved = None if record is None or record.sub_run is None else record.sub_run.state
        if saved is not None:  # its typed answer's schema is the one it started with; its reply parsed again
            saved = sub_run_resumed(saved, call, plan.name, plan.output)
        state = saved or RunState(
            params=dict(plan.params),
            tools=plan.tools,
            messages=({"role": "user", "content": task},),
            output=None if plan.output is None else plan.output.record(),
        )
        # Durable whatever the parent is: its saves are mapped onto the parent's (which writes
        # nothing without a store). A call of it cut off is answered as the root's own calls are:
        # as after a crash with a store, run again without one (``stored``).
        self.child = make(
            state,
            tools=AgentTools(plan.flags),
            usage_of=parent.usage_of,
            limits=plan.limits,
            durable=True,
            clock=parent.clock,  # its sub-agents' calls are timed as its parent's are
            output=plan.output,
        )
        self.child.root_stored = stored = parent.stored
        if saved is not None and stored:  # after a crash, or a cancellation: its calls cut off are answered
            self.child.resume()
        self.child.cap = self._capped  # one budget: the tree's limits hold for the sub-run
        self.child.closing = parent.closing  # started after its parent's close(): it ends at once
        if parent.listener is not None:
            self.child.listener = self._heard

    def _heard(self, event: RunnerEvent) -> None:
        """The child's event, heard by the parent's listener with the path; the record holds what
        it reports first (``child.saveable()``: none of the child's unsaved starts, which only their
        own saves write), so a listener reading the parent's state (``_core.progress``) sees it."""
        self._keep(self.child.saveable())
        if isinstance(event, SubRunEvent):
            self.parent.emit(SubRunEvent((*self.path, *event.path), event.event))
        else:
            self.parent.emit(SubRunEvent(self.path, event))

    def _capped(self, child: RunState, own: Limits) -> Limits:
        """The child's limits when its next request is checked (``capped``): its own, or what the
        parent's tree has left of the parent's limits (themselves capped one level up)."""
        return capped(own, child, self.parent.state, self.call.id, self.parent.limits_now())

    def _keep(self, child: RunState) -> None:
        self.parent.make_current(sub_run_saved(self.parent.state, self.call, self.agent, child))

    # -- the trampoline ------------------------------------------------------------------------------

    def adapted(self, program: Program[T]) -> Program[T]:
        """``program`` (one of the child's) with its effects mapped onto the parent's."""
        return _mapped(program, self._performed, after_failure=self._resync)

    def _performed(self, effect: Effect) -> Program[Any]:
        """``effect`` mapped and performed; then the parent's ``close()`` reaches the child: a
        parent closing (the step under way finishes, then its loop ends) closes its sub-runs the
        same way, each at the end of its own step under way, so they end (``"closed"``) and
        answer their calls, and the parent's turn can finish."""
        try:
            return (yield from self._effect(effect))
        finally:
            if self.parent.closing:
                self.child.closing = True

    def _resync(self) -> None:
        """After the child took in a failure (a save refused: it undid a call's start), the record
        holds what it may save now, so that no other save writes the start it undid."""
        self._keep(self.child.saveable())

    def _effect(self, effect: Effect) -> Program[Any]:
        if isinstance(effect, Save):
            yield from self._saved(effect.state)
            return None
        if isinstance(effect, StateDerived):
            yield from self._saved(self.child.saveable)
            return None
        if isinstance(effect, Send):
            request = effect.request
            return (yield Send(dataclasses.replace(request, agent_path=(self.agent, *request.agent_path))))
        if isinstance(effect, Gate | Execute):
            return (yield dataclasses.replace(effect, agent_path=(self.agent, *effect.agent_path)))
        if isinstance(effect, RunCalls):
            runs = self.child if effect.runs is None else effect.runs
            return (yield RunCalls(effect.calls, runs=_Adapted(self, runs)))
        if isinstance(effect, ReadDecisions):
            return {}  # decided in the tree (_core.nested): the child's state holds them already
        if isinstance(effect, AwaitDecisions):
            return Decisions.PAUSED  # its iteration ends paused, and the parent's call is suspended
        if isinstance(effect, LoopStopped | DropStream):
            return None  # the parent's tools and stream are not the sub-run's to close
        raise ToolRunnerError(
            f"the sub-agent {self.agent!r} asked for {type(effect).__name__}, which a sub-run cannot do yet "
            "(a sub-run has no hooks, no approve= callback, no streaming and no toolsets)."
        )

    def _saved(self, state: Callable[[], RunState]) -> Program[None]:
        """The child's save: its state (``state()``, when the store writes) goes into the call's
        record, and the parent saves."""
        if not self.parent.durable:  # nothing is written: the record keeps it in memory
            self._keep(state())
            return

        def save(effect: Effect) -> Program[Any]:
            if not isinstance(effect, Save):
                return (yield effect)
            parents = effect.state

            def tree() -> RunState:
                self._keep(state())
                return parents()

            return (yield dataclasses.replace(effect, state=tree))

        yield from _mapped(self.parent.save(), save)


class _Adapted:
    """A sub-run's call programs, adapted (``RunCalls.runs``)."""

    def __init__(self, runner: SubRunner, inner: CallRunner) -> None:
        self._runner = runner
        self._inner = inner

    @property
    def state(self) -> RunState:
        return self._inner.state

    def call(self, call: ToolCall, *, early: bool = False) -> Program[None]:
        return self._runner.adapted(self._inner.call(call, early=early))


def _mapped(
    program: Program[T],
    effect_of: Callable[[Effect], Program[Any]],
    *,
    after_failure: Callable[[], None] | None = None,
) -> Program[T]:
    """``program``, each of its effects replaced by the program ``effect_of`` makes of it (whose
    value, or error, goes back to ``program``), as ``drive`` drives a program."""
    outcome: Any = None
    failure: BaseException | None = None
    while True:
        try:
            effect: Effect = program.send(outcome) if failure is None else program.throw(failure)
        except StopIteration as stop:
            return cast(T, stop.value)
        finally:
            if failure is not None and after_failure is not None:
                after_failure()
        outcome, failure = None, None
        try:
            outcome = yield from effect_of(effect)
        except GeneratorExit:
            program.close()
            raise
        except BaseException as error:
            failure = error

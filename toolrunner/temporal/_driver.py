"""The workflow's driver of the run's orchestration: ``RunCore``'s effects, performed on Temporal.

``WorkflowDriver`` is to a workflow what ``ToolRunner`` is to a process: a driver of ``RunCore``
(``toolrunner._core.run``), which decides what happens and in which order. This module only performs
each effect the core asks for, with its parts: ``RunRequests`` (``_requests.py``: the request,
summary and gate activities), ``ClientControls`` (``_controls.py``: what clients ask, and the
pause) and ``EventForwarder`` (``_forwarding.py``: the events the workers' ``on_event`` gets):

====================  ==================================================================
effect                on Temporal
====================  ==================================================================
``Save``,             nothing is written: the workflow's history is the save (a ``Save``'s state
``StateDerived``      is taken, as a store would take it: a sub-run's goes into its call's record)
``OpenTools``         nothing (the workers hold the tools); the run may continue as new here
``Send``              the ``toolrunner.request`` activity (which also gates the reply's calls)
``Summarize``         the ``toolrunner.summarize`` activity
``Gate``              what the request activity found; ``toolrunner.gate`` for calls no request
                      gated (those of a history a client set)
``RunCalls``          each call's program (``RunCore.call``) at once, ``max_concurrency`` at a time;
                      a sub-run's calls (``runs``) at once, in their parent call's slot
``Execute``           the ``toolrunner.tool`` activity; a call whose activity Temporal gave up
                      on is answered "interrupted"
``ReadDecisions``     none taken elsewhere (decisions come as updates); the core then claims the
                      turn with a ``Save``, which is nothing here, as for a ``ToolRunner``
``AwaitDecisions``    the workflow waits (holding no worker) for decisions, steering or ``close``:
                      ``PAUSED``, and it iterates again; or ``TIMED_OUT`` once ``approval_timeout``
                      passed, and the core denies the calls still waiting
``LoopStopped``       nothing (the workers hold the tools)
``BeforeToolCall``,   the ``toolrunner.hook`` activity, on a worker that has the run's hooks
``AfterToolCall``,    (``RunHooks``, ``_hook_driver.py``)
``BeforeRequest``,
``CheckOutput``
====================  ==================================================================

The loop body is the workflow's own: after each reply is handed over (the point where a
``ToolRunner``'s loop body runs), it applies the steering clients queued with updates; on a paused
run, steering applies at once. Events that no activity witnesses (decisions, calls answered
without running, the end of the loop) go to the workers' ``on_event`` through a local activity.

A long run continues as new between two turns: the next segment's input carries a window of the
latest messages (``RunCore.elide``), and the whole history stays in the payload store.

A sub-agent's call runs its sub-run inside the call's program (``_core.subruns``), so inside this
workflow: the same programs as in a ``ToolRunner``, one history, one state. Its effects that need
code name the sub-agents' path (``agent_path``); the driver adds the ids of the calls it drives
those programs in (each call's program is driven with the ids of the calls above it), which make
the sub-run's path (``SubRunEvent.path``) that its activities carry, and by which the workers find
the sub-agent's tools and tag the events they report.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Mapping
from datetime import timedelta
from decimal import Decimal
from typing import Any, NoReturn, TypeVar, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from anthropic.types import ToolResultBlockParam
    from anthropic.types.beta import BetaMessage

    from .._core.compaction import CompactionControl
    from .._core.drive import drive
    from .._core.effects import (
        LOST,
        AfterToolCall,
        Ask,
        AwaitDecisions,
        BeforeRequest,
        BeforeToolCall,
        CallRunner,
        CheckOutput,
        Decisions,
        DropStream,
        Effect,
        EndStream,
        Execute,
        Gate,
        LoopStopped,
        Lost,
        OpenStream,
        OpenTools,
        Program,
        ReadDecisions,
        ReadStream,
        RunCalls,
        Save,
        Send,
        StateDerived,
        Summarize,
    )
    from .._core.errors import OutputValidationError, RequestRefusedError, ToolRunnerError
    from .._core.events import HookDecided, RunnerEvent
    from .._core.nested import settled
    from .._core.run import RunCore
    from .._core.state import CallStatus, Phase, RunState, usage_data
    from .._core.transitions import Limits
    from .._core.types import Reply, ToolCall
    from .._core.usage import RequestUsage
    from .._tools.toolsets import RunnableTool
    from ._activity_options import ActivityOptions
    from ._controls import ClientControls, spoken_duration
    from ._data import Answer, Approval, Denial, RunInput, RunResult, ToolInput, ToolSpec
    from ._forwarding import EventForwarder
    from ._hook_driver import RunHooks
    from ._names import (
        TOOL_ACTIVITY,
        TOOL_NOT_REGISTERED,
    )
    from ._output import RemoteOutput, rejected
    from ._requests import RunRequests
    from ._segments import cut, go_on, may_cut
    from ._spec_tools import SpecTools, effect_path, specs_at
    from ._tracing import RunSpans

__all__ = ["WorkflowDriver"]

T = TypeVar("T")

_MARGIN = timedelta(minutes=1)  # a tool's own timeout answers before its activity's


class WorkflowDriver:
    """One run (or one segment of it) on Temporal: a ``RunCore`` and the performers of its effects.
    ``ToolRunnerWorkflow`` hands it its signal, queries and updates, which go to its
    ``ClientControls``; its requests are ``RunRequests``'s, its events ``EventForwarder``'s."""

    def __init__(self, run: RunInput) -> None:
        self._input = run
        self._run_id = run_id = workflow.info().workflow_id
        self._options = options = ActivityOptions.from_data(run.activities)
        self._specs: dict[str, ToolSpec] = {spec.name: spec for spec in run.tools}
        self._limiter = asyncio.Semaphore(run.max_concurrency) if run.max_concurrency else None
        self._approval_timeout = (
            None if run.approval_timeout is None else timedelta(seconds=run.approval_timeout)
        )
        self._events = events = EventForwarder(run_id)
        max_cost = run.limits.get("max_cost")
        state = RunState.from_dict(run.state).replace(run_id=run_id)
        output: RemoteOutput | None = None if run.output is None else RemoteOutput.of(run.output)
        self._output = output
        self._core = core = RunCore(
            state,
            tools=SpecTools(self._specs, state.tools),
            usage_of=self._usage_of,
            clock=workflow.time,  # a sub-agent call's duration, from the workflow's deterministic clock
            limits=Limits(
                max_iterations=run.limits.get("max_iterations"),
                max_total_tokens=run.limits.get("max_total_tokens"),
                max_cost=None if max_cost is None else Decimal(max_cost),
                on_limit=run.limits.get("on_limit", "stop"),
            ),
            durable=True,
            compaction_control=cast("CompactionControl | None", run.compaction_control),
            ended=self._ended,
            output=output,
        )
        self._spans = RunSpans(run.tracing)
        core.listener = events.heard.append if run.tracing is None else self._heard
        if self._approval_timeout is not None:
            core.timed_out(spoken_duration(self._approval_timeout))
        self._requests = RunRequests(core, run, run_id, options, self._specs, self._spans, output)
        self._controls = ClientControls(core, run_id, options, events, self._approval_timeout)
        self._hooks = hooks = RunHooks(core, run, run_id, options, self._requests, output)
        self._segment = 1
        segment = run.segment
        if segment is not None:
            self._segment = segment.number + 1
            self._spans.traced = go_on(core, segment)
        requests = self._requests
        self._performers: dict[type[Any], Callable[[Any], Awaitable[Any]]] = {
            Save: self._save,
            StateDerived: self._nothing,
            OpenTools: self._open_tools,
            Summarize: requests.summarize,
            OpenStream: self._never,
            ReadStream: self._never,
            EndStream: self._never,
            DropStream: self._nothing,
            Ask: self._never,
            ReadDecisions: self._no_decisions,
            AwaitDecisions: self._await_decisions,
            LoopStopped: self._nothing,
            BeforeToolCall: hooks.before_tool_call,
            AfterToolCall: hooks.after_tool_call,
            BeforeRequest: hooks.before_request,
            CheckOutput: hooks.check_output,
        }

    def _heard(self, event: RunnerEvent) -> None:
        """The core's listener in a traced run: a call the hooks stopped gets its span."""
        self._events.heard.append(event)
        if isinstance(event, HookDecided) and event.decision in ("denied", "limited") and event.call:
            self._spans.stopped(event, self._core.input_of(event.call))

    def _ended(self, state: RunState) -> None:
        self._spans.ended(state)  # made after the core

    def _usage_of(self, reply: Reply) -> RequestUsage:
        return self._requests.usage_of(reply)  # made after the core, which it reads

    @property
    def core(self) -> RunCore[RunnableTool]:
        """The run's orchestration (its state: ``core.state``)."""
        return self._core

    # -- from clients (``ClientControls``) ------------------------------------------------------------

    def check_steering(self, method: str, messages: object) -> None:
        """Refuse (before anything is recorded) steering that could never apply."""
        self._controls.check_steering(method, messages)

    async def steer(
        self,
        method: str,
        messages: list[Any],
        compaction: dict[str, Any] | None = None,
        *,
        params: dict[str, Any] | None = None,
    ) -> None:
        """Steer at the next point where the loop body could; return once it is applied."""
        await self._controls.steer(method, messages, compaction, params=params)

    def check_approve(self, approval: Approval) -> None:
        self._controls.check_approve(approval)

    def check_deny(self, denial: Denial) -> None:
        self._controls.check_deny(denial)

    def check_answer(self, answer: Answer) -> None:
        self._controls.check_answer(answer)

    async def approve(self, approval: Approval) -> None:
        await self._controls.approve(approval)

    async def deny(self, denial: Denial) -> None:
        await self._controls.deny(denial)

    async def answer(self, answer: Answer) -> None:
        await self._controls.answer(answer)

    def close(self) -> None:
        """``ToolRunner.close()``: while a step is under way it finishes whole, then the loop ends."""
        self._controls.close()

    def state(self) -> dict[str, Any]:
        return self._controls.state()

    def pending_approvals(self) -> list[dict[str, Any]]:
        return self._controls.pending_approvals()

    # -- the loop -------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        """Iterate to the end, as ``await runner.until_done()`` would with a loop body that
        applies the clients' steering, and iterates again once a pause is over."""
        core = self._core
        await self._hooks.start()
        while True:
            item = await self._advance(core.iteration())
            if item is not None:  # a reply handed over: the loop body's turn
                self._controls.apply_steering()
                continue
            if core.state.phase is Phase.AWAITING:  # the pause is over (``_await_decisions``)
                continue
            break
        self._controls.drop_steering()
        await self._events.forward()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._result()

    async def _advance(self, program: Program[T]) -> T:
        """Drive one program; an error of the run (a history the service would reject) fails it."""
        try:
            return await self._drive(self._core.step(program))
        except OutputValidationError as error:  # the answer never fit: RunHandle.result() raises it
            events = (
                self._events
            )  # the end of the loop, heard on the way, as a ToolRunner's listener hears it
            events.sort(gated=False)
            await events.forward()
            raise rejected(error) from None
        except RequestRefusedError as error:  # RunHandle.result() raises it again (refused_error)
            raise ApplicationError(
                f"the request was not sent ({error.reason}). A Temporal run fails with this error: it cannot "
                "be iterated again to ask the hook again; start a new run to go on.",
                error.reason,
                type=type(error).__name__,
                non_retryable=True,
            ) from None
        except ToolRunnerError as error:
            raise ApplicationError(str(error), type=type(error).__name__, non_retryable=True) from None

    async def _drive(self, program: Program[T], calls: tuple[str, ...] = ()) -> T:
        """Perform the effects ``program`` yields (``drive``, the core's one trampoline); the events
        heard on the way are sorted, and forwarded to the workers, before each effect and at the end.
        ``calls``: the ids of the calls whose programs ``program`` runs in (the run's own call's,
        then a sub-run's, ...), which, with an effect's ``agent_path``, make its sub-run's path."""
        events, gated, requests = self._events, False, self._requests

        async def perform(effect: Effect) -> Any:
            nonlocal gated
            if isinstance(effect, Execute):
                events.executed.add(effect.call.id)
            events.sort(gated=gated)
            await events.forward()
            gated = isinstance(effect, Gate)
            if isinstance(effect, Send):
                return await requests.send(effect, effect_path(calls, effect.request.agent_path))
            if isinstance(effect, Gate):
                return await requests.gate(effect, effect_path(calls, effect.agent_path))
            if isinstance(effect, Execute):
                return await self._execute(effect, effect_path(calls, effect.agent_path))
            if isinstance(effect, RunCalls):
                return await self._run_calls(effect, calls)
            return await self._performers[type(effect)](effect)

        value = await drive(program, perform, core=self._core)
        events.sort(gated=gated)
        await events.forward()
        return value

    # -- the effects ------------------------------------------------------------------------------

    async def _nothing(self, effect: Effect) -> None:
        return None

    async def _save(self, effect: Save) -> None:
        # Nothing to write, but the state is taken as a store would take it when it writes: a
        # sub-run's save puts the sub-run's state into its call's record (``_core.subruns``).
        effect.state()

    async def _never(self, effect: Effect) -> NoReturn:
        raise AssertionError(f"a Temporal run has no streams and no approve callback: {effect!r}")

    async def _open_tools(self, effect: OpenTools) -> None:
        if may_cut(self._input, self._core, steering=self._controls.steering):
            await self._continue_as_new()

    async def _continue_as_new(self) -> NoReturn:
        """Go on in a new segment (``_segments``): its input carries a window of the history."""
        node, sent = self._requests.delta(self._core.state)
        segment = cut(
            self._core,
            node=node,
            sent=sent,
            control=self._input.compaction_control,
            traced=self._spans.traced,
            number=self._segment,
        )
        await self._events.forward()
        workflow.continue_as_new(
            dataclasses.replace(
                self._hooks.carried(self._input),
                state=self._core.state.to_dict(),
                tools=list(self._specs.values()),
                segment=segment,
                output=None if self._output is None else self._output.data(),
            )
        )

    async def _run_calls(self, effect: RunCalls, calls: tuple[str, ...]) -> None:
        runs = effect.runs
        if runs is not None:  # a sub-run's calls (_core.subruns): their slot is their parent call's
            todo = [call for call in effect.calls if not settled(runs.state, call)]
            programs = [self._drive_call(runs.call(call), (*calls, call.id), runs) for call in todo]
        else:
            state = self._core.state
            todo = [call for call in effect.calls if not settled(state, call)]
            programs = [self._run_call(call) for call in todo]
        if len(programs) == 1:
            await programs[0]
        elif programs:
            await asyncio.gather(*programs)

    async def _run_call(self, call: ToolCall) -> None:
        """One call's program, holding a concurrency slot from before the call is journaled."""
        if self._limiter is None:
            await self._drive_call(self._core.call(call), (call.id,), self._core)
            return
        async with self._limiter:
            await self._drive_call(self._core.call(call), (call.id,), self._core)

    async def _drive_call(self, program: Program[None], calls: tuple[str, ...], runs: CallRunner) -> None:
        """Drive the program of the call ``calls[-1]`` (one of ``runs``'); in a traced run, a
        sub-agent's call that ended has its spans (``RunSpans.sub_run_ended``)."""
        await self._drive(program, calls)
        if self._input.tracing is None:
            return
        record = runs.state.calls.get(calls[-1])
        if record is not None and record.sub_run is not None and record.status is CallStatus.FINISHED:
            self._spans.sub_run_ended(record.call, record.sub_run.agent, record.sub_run.state, record.result)

    def _spec_of(self, call: ToolCall, removed: frozenset[str], path: tuple[str, ...]) -> ToolSpec | None:
        if path:  # a sub-run's call: its sub-agent's tool
            return specs_at(self._specs, path[1::2]).get(call.name)
        if call.toolset_name is None and call.name in removed:
            return None
        return self._specs.get(call.toolset_name or call.name)

    def _names(self, path: tuple[str, ...]) -> tuple[list[str], list[str]]:
        """The names of the tools of the run (or of the sub-run at ``path``), for the message of a
        call to none of them: those that run, and the raw definitions."""
        if path:
            return sorted(specs_at(self._specs, path[1::2])), []
        state = self._core.state
        return sorted({*self._specs, *(tool for tool in state.tools if isinstance(tool, str))}), [
            cast(str, tool["name"]) for tool in state.tools if isinstance(tool, Mapping) and "name" in tool
        ]

    async def _execute(
        self, effect: Execute, path: tuple[str, ...] = ()
    ) -> tuple[ToolResultBlockParam | Lost, float]:
        call, options, run = effect.call, self._options, self._input
        spec = self._spec_of(call, effect.removed, path)
        timeout = run.tool_timeout if spec is None or spec.timeout is None else spec.timeout
        available, unrunnable = (None, []) if spec is not None else self._names(path)
        started = workflow.time()
        try:
            block: dict[str, Any] = await workflow.execute_activity(
                TOOL_ACTIVITY,
                ToolInput(
                    run_id=self._run_id,
                    id=call.id,
                    name=call.name,
                    input=call.input,
                    toolset_name=call.toolset_name,
                    timeout=run.tool_timeout,
                    available=available,
                    unrunnable=unrunnable,
                    approved_input=None if effect.input is call.input else effect.input,
                    removed=sorted(effect.removed),
                    trace=None if run.tracing is None else self._trace_of(call),
                    path=list(path) if path else None,
                ),
                result_type=dict,
                start_to_close_timeout=options.tool_start_to_close
                if timeout is None
                else max(options.tool_start_to_close, timedelta(seconds=timeout) + _MARGIN),
                heartbeat_timeout=options.heartbeat_timeout,
                # A call that may have acted runs again only if the core says that does no harm.
                retry_policy=options.tool_retry if effect.may_repeat else RetryPolicy(maximum_attempts=1),
                task_queue=options.task_queue,
                summary=call.name,
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == TOOL_NOT_REGISTERED:
                raise ApplicationError(cause.message, type=TOOL_NOT_REGISTERED, non_retryable=True) from None
            workflow.logger.warning("Tool call %r (%s) was lost: %s", call.id, call.name, cause or error)
            return LOST, workflow.time() - started
        return cast(ToolResultBlockParam, block), workflow.time() - started

    def _trace_of(self, call: ToolCall) -> dict[str, Any]:
        """What the tool activity's span carries: content or not, and what the hooks decided."""
        assert self._input.tracing is not None
        record = self._core.state.calls.get(call.id)
        hook = None if record is None else record.hook
        return {"content": bool(self._input.tracing.get("content")), **({"hook": hook} if hook else {})}

    async def _no_decisions(self, effect: ReadDecisions) -> dict[str, Any]:
        # No store to read: decisions reach the workflow as updates. The effects stay a ToolRunner's
        # with a store (the claim's Save follows), and none of them is a Temporal command.
        return {}

    async def _await_decisions(self, effect: AwaitDecisions) -> Decisions:
        """The run is paused: wait for the clients (``ClientControls.pause``)."""
        return await self._controls.pause()

    # -- the end ------------------------------------------------------------------------------------

    def _result(self) -> RunResult:
        core = self._core
        state = core.state
        assert state.end_reason is not None
        reply = state.reply
        base, sent = self._requests.delta(state)
        return RunResult(
            run_id=self._run_id,
            end_reason=state.end_reason,
            reply=None
            if reply is None
            else reply.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False),
            beta=isinstance(reply, BetaMessage),
            history=base,
            appended=list(state.messages[sent:]),
            requests=state.requests_sent + core.elided.requests,
            usage=usage_data(state.total),
            cost=None if state.cost is None else str(state.cost),
            output=None if self._output is None else self._output.value(reply),
        )

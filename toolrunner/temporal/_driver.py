"""The workflow's driver of the run's orchestration: ``RunCore``'s effects, performed on Temporal.

``WorkflowDriver`` is to a workflow what ``ToolRunner`` is to a process: a driver of ``RunCore``
(``toolrunner._core.run``), which decides what happens and in which order. This module only performs
each effect the core asks for:

===================  ===================================================================
effect               on Temporal
===================  ===================================================================
``Save``, ``StateDerived``  nothing: the workflow's history is the save
``OpenTools``          nothing (the workers hold the tools); the run may continue as new here
``Send``             the ``toolrunner.request`` activity (which also gates the reply's calls)
``Summarize``        the ``toolrunner.summarize`` activity
``Gate``             what the request activity found; ``toolrunner.gate`` for calls no request
                     gated (those of a history a client set)
``RunCalls``         each call's program (``RunCore.call``) at once, ``max_concurrency`` at a time
``Execute``          the ``toolrunner.tool`` activity; a call whose activity Temporal gave up
                     on is answered "interrupted"
``ReadDecisions``    none taken elsewhere (decisions come as updates); the core then claims the
                     turn with a ``Save``, which is nothing here, as for a ``ToolRunner``
``AwaitDecisions``   the workflow waits (holding no worker) for decisions, steering or ``close``:
                     ``PAUSED``, and it iterates again; or ``TIMED_OUT`` once ``approval_timeout``
                     passed, and the core denies the calls still waiting
``LoopStopped``            nothing (the workers hold the tools)
===================  ===================================================================

The loop body is the workflow's own: after each reply is handed over (the point where a
``ToolRunner``'s loop body runs), it applies the steering clients queued with updates; on a paused
run, steering applies at once. Events that no activity witnesses (decisions, calls answered
without running, the end of the loop) go to the workers' ``on_event`` through a local activity.

A long run continues as new between two turns: the next segment's input carries a window of the
latest messages (``RunCore.elide``), and the whole history stays in the payload store.
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
    from anthropic.types import Message, ToolResultBlockParam
    from anthropic.types.beta import BetaMessage

    from .._core.compaction import CompactionControl
    from .._core.drive import drive
    from .._core.effects import (
        LOST,
        Ask,
        AwaitDecisions,
        Decisions,
        DropStream,
        Effect,
        EndStream,
        Execute,
        Gate,
        Gated,
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
    from .._core.errors import ToolRunnerError
    from .._core.events import RunnerEvent
    from .._core.messages import client_tool_calls
    from .._core.run import RunCore
    from .._core.state import Phase, RunState, read_request_usage, usage_data
    from .._core.transitions import Limits
    from .._core.types import Reply, ToolCall
    from .._core.usage import RequestUsage
    from .._tools.toolsets import RunnableTool
    from ._controls import RunControls, Steering
    from ._data import (
        ActivityOptions,
        GateInput,
        GateOutput,
        RequestInput,
        RequestOutput,
        RunInput,
        RunResult,
        SummaryInput,
        SummaryOutput,
        ToolInput,
        ToolSpec,
    )
    from ._event_data import call_data
    from ._names import (
        GATE_ACTIVITY,
        REQUEST_ACTIVITY,
        SUMMARY_ACTIVITY,
        TOOL_ACTIVITY,
        TOOL_NOT_REGISTERED,
    )
    from ._segments import cut, go_on, may_cut
    from ._spec_tools import SpecTools
    from ._tracing import RunSpans

__all__ = ["WorkflowDriver"]

T = TypeVar("T")

_MARGIN = timedelta(minutes=1)  # a tool's own timeout answers before its activity's


class WorkflowDriver(RunControls):
    """One run (or one segment of it) on Temporal: a ``RunCore`` and the performers of its effects.
    ``ToolRunnerWorkflow`` hands it its signal, queries and updates."""

    def __init__(self, run: RunInput) -> None:
        self._input = run
        self._run_id = workflow.info().workflow_id
        self._options = ActivityOptions.from_data(run.activities)
        self._specs: dict[str, ToolSpec] = {spec.name: spec for spec in run.tools}
        self._limiter = asyncio.Semaphore(run.max_concurrency) if run.max_concurrency else None
        self._approval_timeout = (
            None if run.approval_timeout is None else timedelta(seconds=run.approval_timeout)
        )
        self._heard: list[RunnerEvent] = []  # events the core emitted since the last look
        max_cost = run.limits.get("max_cost")
        state = RunState.from_dict(run.state).replace(run_id=self._run_id)
        self._core = core = RunCore(
            state,
            tools=SpecTools(self._specs, state.tools),
            usage_of=self._usage_of,
            limits=Limits(
                max_iterations=run.limits.get("max_iterations"),
                max_total_tokens=run.limits.get("max_total_tokens"),
                max_cost=None if max_cost is None else Decimal(max_cost),
                on_limit=run.limits.get("on_limit", "stop"),
            ),
            durable=True,
            compaction_control=cast("CompactionControl | None", run.compaction_control),
            ended=lambda state: self._spans.ended(state),
        )
        core.listener = self._heard.append
        if self._approval_timeout is not None:
            core.timed_out(_duration(self._approval_timeout))
        # What the store holds: the history node of the last request, how many of the state's
        # messages it holds, and what that request was sent with (for the next one's delta).
        self._node: str | None = None
        self._sent = 0
        self._epoch = 0  # the core's history_epoch when that node was written
        self._sent_params: Mapping[str, Any] | None = None
        self._sent_tools: tuple[Any, ...] | None = None
        self._sent_messages: tuple[Any, ...] = ()
        self._segment = 1
        self._spans = RunSpans(run.tracing)
        segment = run.segment
        if segment is not None:
            self._node, self._sent, self._segment = segment.history, segment.sent, segment.number + 1
            self._sent_messages = state.messages  # the node holds the first ``sent`` of them
            self._spans.traced = go_on(core, segment)
        self._reply_usage: tuple[Reply, RequestUsage] | None = None
        self._verdicts: dict[str, tuple[ToolCall, str, str | None]] = {}  # the last reply's gates
        self._definitions: dict[str, dict[str, Any]] = {}
        self._outbox: list[RunnerEvent] = []  # events to hand the workers' on_event
        self._forwarding = asyncio.Lock()
        self._executed: set[str] = set()  # calls whose tool an activity ran (it reports them)
        self._steering: list[Steering] = []
        self._paused = False  # the run waits for decisions
        self._performers: dict[type[Any], Callable[[Any], Awaitable[Any]]] = {
            Save: self._nothing,
            StateDerived: self._nothing,
            OpenTools: self._prepare,
            Send: self._send,
            Summarize: self._summarize,
            OpenStream: self._never,
            ReadStream: self._never,
            EndStream: self._never,
            DropStream: self._nothing,
            Gate: self._gate,
            Ask: self._never,
            RunCalls: self._run_calls,
            Execute: self._execute,
            ReadDecisions: self._no_decisions,
            AwaitDecisions: self._await_decisions,
            LoopStopped: self._nothing,
        }

    @property
    def core(self) -> RunCore[RunnableTool]:
        """The run's orchestration (its state: ``core.state``)."""
        return self._core

    # -- the loop -------------------------------------------------------------------------------

    async def run(self) -> RunResult:
        """Iterate to the end, as ``await runner.until_done()`` would with a loop body that
        applies the clients' steering, and iterates again once a pause is over."""
        core = self._core
        while True:
            item = await self._advance(core.iteration())
            if item is not None:  # a reply handed over: the loop body's turn
                self._apply_steering()
                continue
            if core.state.phase is Phase.AWAITING:  # the pause is over (``_await_decisions``)
                continue
            break
        self._drop_steering()
        await self._forward()
        await workflow.wait_condition(workflow.all_handlers_finished)
        return self._result()

    async def _advance(self, program: Program[T]) -> T:
        """Drive one program; an error of the run (a history the service would reject) fails it."""
        try:
            return await self._drive(self._core.step(program))
        except ToolRunnerError as error:
            raise ApplicationError(str(error), type=type(error).__name__, non_retryable=True) from None

    async def _drive(self, program: Program[T]) -> T:
        """Perform the effects ``program`` yields (``drive``, the core's one trampoline); the events
        heard on the way are sorted, and forwarded to the workers, before each effect and at the end."""
        gated = False

        async def perform(effect: Effect) -> Any:
            nonlocal gated
            if isinstance(effect, Execute):
                self._executed.add(effect.call.id)
            self._sort(gated=gated)
            await self._forward()
            gated = isinstance(effect, Gate)
            return await self._performers[type(effect)](effect)

        value = await drive(program, perform, core=self._core)
        self._sort(gated=gated)
        await self._forward()
        return value

    # -- the effects ------------------------------------------------------------------------------

    async def _nothing(self, effect: Effect) -> None:
        return None

    async def _never(self, effect: Effect) -> NoReturn:
        raise AssertionError(f"a Temporal run has no streams and no approve callback: {effect!r}")

    async def _prepare(self, effect: OpenTools) -> None:
        if may_cut(self._input, self._core, steering=bool(self._steering)):
            await self._continue_as_new()

    async def _continue_as_new(self) -> NoReturn:
        """Go on in a new segment (``_segments``): its input carries a window of the history."""
        node, sent = self._delta(self._core.state)
        segment = cut(
            self._core,
            node=node,
            sent=sent,
            control=self._input.compaction_control,
            traced=self._spans.traced,
            number=self._segment,
        )
        await self._forward()
        workflow.continue_as_new(
            dataclasses.replace(
                self._input,
                state=self._core.state.to_dict(),
                tools=list(self._specs.values()),
                segment=segment,
            )
        )

    def _delta(self, state: RunState) -> tuple[str | None, int]:
        """The history node to build on, and how many of ``state``'s messages it holds: the last
        request's, unless the history changed since in more than what was appended (a history
        that replaced it, a summary: a new chain of nodes)."""
        core = self._core
        sent, messages = self._sent, state.messages
        appended = core.history_epoch == self._epoch or (
            len(messages) >= sent and messages[:sent] == self._sent_messages[:sent]
        )
        if self._node is None or not appended:
            if core.elided.messages:  # a history that replaced the whole one elides nothing
                raise ApplicationError(
                    "the run's history was replaced in part; this is a bug.", non_retryable=True
                )
            return None, 0
        return self._node, self._sent

    async def _send(self, effect: Send) -> Reply:
        request = effect.request
        state = request.state
        base, sent = self._delta(state)
        params = dict(state.params) if base is None or state.params != self._sent_params else None
        tools = list(state.tools) if base is None or state.tools != self._sent_tools else None
        removed = self._core.removed()
        output: RequestOutput = await workflow.execute_activity(
            REQUEST_ACTIVITY,
            RequestInput(
                run_id=self._run_id,
                base=base,
                params=params,
                tools=tools,
                messages=list(state.messages[sent:]),
                final_answer=state.final_answer,
                cache=self._input.cache,
                compaction=None if request.compaction is None else dict(request.compaction),
                removed=sorted(removed) if removed else None,
            ),
            result_type=RequestOutput,
            start_to_close_timeout=self._options.request_start_to_close,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=self._options.request_retry,
            task_queue=self._options.task_queue,
            summary=str(state.params.get("model", "")),
        )
        self._node, self._sent, self._epoch = output.history, len(state.messages), self._core.history_epoch
        self._sent_messages = state.messages
        self._sent_params, self._sent_tools = state.params, state.tools
        self._spans.sent(state)
        reply = _read_reply(output.reply, beta=output.beta)
        self._reply_usage = (reply, read_request_usage(output.usage))
        self._verdicts = {}
        for call in client_tool_calls(reply):
            if call.id in output.gated:
                self._verdicts[call.id] = (call, "wait", None)
            elif call.id in output.denied:
                self._verdicts[call.id] = (call, "deny", output.denied[call.id])
            else:
                self._verdicts[call.id] = (call, "clear", None)
        self._definitions = output.definitions
        for spec in output.specs:
            self._specs[spec.name] = spec
        return reply

    def _usage_of(self, reply: Reply) -> RequestUsage:
        """The usage of the reply an activity just gave (computed there, at the workers' prices)."""
        given = self._reply_usage
        assert given is not None, "the usage of a reply no activity gave"
        assert given[0] is reply, "the usage of a reply no activity gave"
        return given[1]

    async def _summarize(self, effect: Summarize) -> Reply:
        state = effect.state
        base, sent = self._delta(state)
        output: SummaryOutput = await workflow.execute_activity(
            SUMMARY_ACTIVITY,
            SummaryInput(
                run_id=self._run_id,
                base=base,
                params=dict(state.params),
                messages=list(state.messages[sent:]),
                point=(0 if base is None else self._core.elided.messages) + effect.point,
                control=dict(effect.control),
            ),
            result_type=SummaryOutput,
            start_to_close_timeout=self._options.request_start_to_close,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=self._options.request_retry,
            task_queue=self._options.task_queue,
            summary=f"summary {effect.control.get('model', state.params.get('model', ''))}",
        )
        reply = _read_reply(output.reply, beta=output.beta)
        self._reply_usage = (reply, read_request_usage(output.usage))
        return reply

    async def _gate(self, effect: Gate) -> Gated:
        calls = effect.calls
        verdicts = self._verdicts
        if all((verdict := verdicts.get(call.id)) is not None and verdict[0] == call for call in calls):
            return Gated(
                waiting=[call for call in calls if verdicts[call.id][1] == "wait"],
                denied=[
                    (call, cast(str, verdicts[call.id][2]))
                    for call in calls
                    if verdicts[call.id][1] == "deny"
                ],
                tools={call.id: self._definitions[call.id] for call in calls if call.id in self._definitions},
            )
        removed = self._core.removed()
        output: GateOutput = await workflow.execute_activity(
            GATE_ACTIVITY,
            GateInput(
                run_id=self._run_id, calls=[call_data(call) for call in calls], removed=sorted(removed)
            ),
            result_type=GateOutput,
            start_to_close_timeout=self._options.tool_start_to_close,
            retry_policy=self._options.tool_retry,
            task_queue=self._options.task_queue,
            summary=f"gate {len(calls)} call(s)",
        )
        return Gated(
            waiting=[call for call in calls if call.id in output.gated],
            denied=[(call, output.denied[call.id]) for call in calls if call.id in output.denied],
            tools=output.definitions,
        )

    async def _run_calls(self, effect: RunCalls) -> None:
        state = self._core.state
        todo = [call for call in effect.calls if state.result_of(call) is None]
        if len(todo) == 1:
            await self._run_call(todo[0])
        elif todo:
            await asyncio.gather(*(self._run_call(call) for call in todo))

    async def _run_call(self, call: ToolCall) -> None:
        """One call's program, holding a concurrency slot from before the call is journaled."""
        if self._limiter is None:
            await self._drive(self._core.call(call))
            return
        async with self._limiter:
            await self._drive(self._core.call(call))

    def _spec_of(self, call: ToolCall, removed: frozenset[str]) -> ToolSpec | None:
        if call.toolset_name is None and call.name in removed:
            return None
        return self._specs.get(call.toolset_name or call.name)

    async def _execute(self, effect: Execute) -> tuple[ToolResultBlockParam | Lost, float]:
        call, options, run = effect.call, self._options, self._input
        spec = self._spec_of(call, effect.removed)
        timeout = run.tool_timeout if spec is None or spec.timeout is None else spec.timeout
        state = self._core.state
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
                    available=None
                    if spec is not None
                    else sorted({*self._specs, *(tool for tool in state.tools if isinstance(tool, str))}),
                    unrunnable=[]
                    if spec is not None
                    else [
                        cast(str, tool["name"])
                        for tool in state.tools
                        if isinstance(tool, Mapping) and "name" in tool
                    ],
                    approved_input=None if effect.input is call.input else effect.input,
                    removed=sorted(effect.removed),
                    trace=None if run.tracing is None else {"content": bool(run.tracing.get("content"))},
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

    async def _no_decisions(self, effect: ReadDecisions) -> dict[str, Any]:
        # No store to read: decisions reach the workflow as updates. The effects stay a ToolRunner's
        # with a store (the claim's Save follows), and none of them is a Temporal command.
        return {}

    async def _await_decisions(self, effect: AwaitDecisions) -> Decisions:
        """The run is paused: clients decide, steer or close it (steering queued while the turn
        ran applies now). Wait, holding no worker, until no call waits (decided, or steered away)
        or the run is closed: ``PAUSED``, and ``run`` iterates again, as a ``ToolRunner``'s caller
        would; or until ``approval_timeout`` passes: ``TIMED_OUT``, and the core denies the calls
        still waiting."""
        core = self._core
        self._paused = True
        try:
            self._apply_steering()
            await workflow.wait_condition(
                lambda: core.closing or not core.waiting(), timeout=self._approval_timeout
            )
        except TimeoutError:
            return Decisions.TIMED_OUT
        finally:
            self._paused = False
        return Decisions.PAUSED

    # -- the end ------------------------------------------------------------------------------------

    def _result(self) -> RunResult:
        core = self._core
        state = core.state
        assert state.end_reason is not None
        reply = state.reply
        base, sent = self._delta(state)
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
        )


def _read_reply(data: dict[str, Any], *, beta: bool) -> Reply:
    return (BetaMessage if beta else Message).model_validate(data)


def _duration(span: timedelta) -> str:
    """A span as a person says it, for the reason the model reads: "3 days", "8 hours", "90 seconds"."""
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"

"""The effects of the run's orchestration, performed in the caller's task (``Performer``, a part of
``ToolRunner``).

``RunCore``'s programs yield effects (send this request, save, run these calls, execute this tool,
wait for decisions); ``Performer.drive`` performs each one with the runner's client, store, tools
and task group, and sends the outcome back (``_core.drive``, the one trampoline). ``step`` drives a
program as a step of the run, and ``iterate`` one iteration of the runner, by one task at a time.

What lives here and not in the state cannot be saved: the client, open streams, the calls running
now, and the transport params sent with each request.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, ClassVar, TypeVar, cast

import anyio
import anyio.abc
from anthropic.types import ToolResultBlockParam

from .._core.compaction import compaction_request, summary_request
from .._core.drive import drive
from .._core.effects import (
    AfterToolCall,
    Ask,
    AwaitDecisions,
    BeforeRequest,
    BeforeToolCall,
    CancelledAfter,
    CheckOutput,
    Decisions,
    DropStream,
    Effect,
    EndStream,
    Execute,
    Gate,
    LoopStopped,
    OpenStream,
    OpenTools,
    Program,
    ReadDecisions,
    ReadStream,
    Request,
    RunCalls,
    Save,
    Send,
    StateDerived,
    Summarize,
)
from .._core.errors import ToolRunnerError
from .._core.nested import settled
from .._core.run import RunCore
from .._core.state import CallRecord, Phase
from .._core.transitions import request_params
from .._core.types import Reply, ReplyStream, ToolCall
from .._tools.approvals import ask, gate
from .._tools.execution import ToolFinishedCancelled, execute
from .._tools.subagents import agent_at, execution_at, tool_at, transport_at
from .._tools.tool import ToolContext
from .._tools.toolsets import RunnableTool
from .._tracing.trace import NO_TRACE, RunTrace
from .hooks import after_tool_call, before_request, before_tool_call, check_output
from .options import Options
from .requests import Client, send_request
from .running_calls import RunningCalls, raise_single
from .saver import Saver
from .sdk_features import RunnerTools
from .streaming import StreamWatch

__all__ = ["CLOCK", "Performer"]

T = TypeVar("T")

CLOCK = time.perf_counter
"""The clock the runner times a call with: a tool it performs (``Execute``), and a sub-agent's call,
whose sub-run the core drives (``RunCore(clock=CLOCK)``)."""


class Performer:
    """Performs the core's effects for one ``ToolRunner`` (see the module docstring).

    Args:
        core: The run's core, whose programs it drives.
        options: The runner's options.
        client: The client requests go through.
        tools: The runner's tools (what runs, and their lifetime).
        trace: The run's trace.
        saver: The runner's side of saving, if the run has a store.
        context: The ``ToolContext`` a call's tool gets (it names the runner).
    """

    def __init__(
        self,
        core: RunCore[RunnableTool],
        options: Options,
        client: Client,
        tools: RunnerTools,
        trace: RunTrace,
        saver: Saver | None,
        context: Callable[[ToolCall], ToolContext],
    ) -> None:
        self._core = core
        self._options = options
        self._client = client
        self._tools = tools
        self._trace = trace
        self.saver = saver
        self._context = context
        self.transport: dict[str, Any] = {}
        """The transport params (headers, query, timeout) sent with each request, never saved."""
        self.task_group: anyio.abc.TaskGroup | None = None
        """The entered runner's task group, where tools started early run."""
        self.streamed: list[ToolCall] = []
        """The client calls whose blocks finished streaming in the current reply, in order."""
        self.advancing = False
        """Inside ``__anext__``: steering now would change the history under the turn."""
        self._running = RunningCalls()
        self._open: StreamWatch | None = None  # the stream of the reply being received

    # -- driving --------------------------------------------------------------------------------

    async def drive(self, program: Program[T]) -> T:
        """Perform the effects ``program`` yields (``drive``, the core's one trampoline)."""
        return await drive(program, self._perform, core=self._core)

    async def step(self, program: Program[T]) -> T:
        """Drive ``program`` as a step of the run (``RunCore.step``: a failure is recorded and saved)."""
        return await drive(self._core.step(program), self._perform, core=self._core)

    async def iterate(self) -> object:
        """One iteration of the runner (``__anext__``): ``RunCore.iteration`` driven as a step, inside
        the trace's iteration (none to enter without tracing). One task advances the runner at a
        time (``advancing``, a plain flag and ``try``/``finally``: this runs at every iteration).

        Raises:
            ToolRunnerError: Another task is advancing this runner now.
        """
        if self.advancing:
            raise ToolRunnerError(
                "this runner is already advancing in another task; iterate a runner from one task at a time."
            )
        self.advancing = True
        core = self._core
        try:
            if self._trace is NO_TRACE:
                return await drive(core.step(core.iteration()), self._perform, core=core)
            with self._trace.iteration():
                return await drive(core.step(core.iteration()), self._perform, core=core)
        finally:
            self.advancing = False

    def close_now(self) -> None:
        """``ToolRunner.close``: the loop ends (``RunCore.close``), with the reply of a stream the
        body read to its end."""
        watch = self._open
        self._core.close(None if watch is None else watch.read_whole())

    async def close(self) -> None:
        """``ToolRunner.aclose``: the loop ends; an unread stream is closed, tools started early are
        cancelled, the state is saved, and the tools close unless the runner is entered."""
        self.close_now()
        with anyio.CancelScope(shield=True):
            await self.drive(self._core.abandon_stream())
            await self.drive(self._core.save())
        await self._tools.at_end()  # not shielded: a toolset's close() must be the innermost scope

    async def enter(self) -> None:
        """``async with``'s entry: the toolsets open, then the task group of the calls started early."""
        self._tools.entered = True
        try:
            # Before the task group, so that they close after it: what a toolset's open() enters (an
            # MCP session's task group) must be exited innermost first, in this task.
            await self._tools.open()
        except BaseException:
            self._tools.entered = False
            await self.close()
            raise
        group = anyio.create_task_group()
        await group.__aenter__()
        self.task_group = group

    async def exit(self, exc: BaseException | None) -> None:
        """``async with``'s exit: ``leave``, then the task group ends and the toolsets close."""
        group, self.task_group = self.task_group, None
        assert group is not None, "__aexit__ without __aenter__"
        # A cancellation must reach the task group's scope (it may be its own); an error of the
        # block is not the group's, and would come out of it wrapped in an ExceptionGroup.
        passed = (
            (type(exc), exc, exc.__traceback__)
            if exc is not None and not isinstance(exc, Exception)
            else (None, None, None)
        )
        try:
            await self.leave(failed=exc is not None)
        finally:
            group.cancel_scope.cancel()  # tools started early whose results nobody asked for
            try:
                await group.__aexit__(*passed)
            except BaseExceptionGroup as error:
                raise_single(error)
            finally:
                self._tools.entered = False
                await self._tools.close()

    async def leave(self, *, failed: bool) -> None:
        """Leaving ``async with`` (or ``with``): the loop ends (``close``), unless the run waits
        for a decision, which may come days later, or the block is left by an exception (a crash, a
        shutdown's cancellation): then the run stays as the last step saved it, to be resumed or
        iterated again; only an unread stream is dropped."""
        if failed or self._core.state.phase is Phase.AWAITING:
            with anyio.CancelScope(shield=True):
                await self.drive(self._core.abandon_stream())
            await self._tools.at_end()  # the tools close (in ``async with``, its exit closes them)
            return
        await self.close()

    def _perform(self, effect: Effect) -> Awaitable[Any]:
        # The effect's own performer, awaited by ``drive``: no frame of its own per effect.
        return self._PERFORMERS[type(effect)](self, effect)

    # -- the effects ------------------------------------------------------------------------------

    async def _save(self, effect: Save) -> None:
        saver = self.saver
        assert saver is not None, "the core yields Save only for a run with a store (durable)"
        if effect.history_replaced:
            saver.history_replaced()
        if effect.shielded:
            with anyio.CancelScope(shield=True):
                await saver.save(effect.state)
        else:
            await saver.save(effect.state)

    async def _state_derived(self, effect: StateDerived) -> None:
        assert self.saver is not None, "the core yields StateDerived only for a run with a store (durable)"
        self.saver.derived(effect.before, self._core.state)

    async def _open_tools(self, effect: OpenTools) -> None:
        await self._tools.open()

    def _kwargs(self, request: Request) -> dict[str, Any]:
        if request.agent_path:  # a sub-agent's request: its tools, its typed answer (no cache policy)
            tools = self._tools.execution.tools
            agent = agent_at(tools, request.agent_path)
            kwargs = request_params(request.state, agent.wire)
            if agent.output is not None:
                kwargs = agent.output.request(kwargs)
            return kwargs | transport_at(tools, request.agent_path, self.transport)
        kwargs = request_params(request.state, self._tools.index.wire, self._options.cache)
        if self._core.output is not None:  # the typed answer's schema, as the SDK's runner sends it
            kwargs = self._core.output.request(kwargs)
        if request.compaction is not None:
            kwargs = compaction_request(kwargs, request.compaction)
        if self.transport:
            kwargs |= self.transport
        return kwargs

    async def _send(self, effect: Send) -> Reply:
        kwargs = self._kwargs(effect.request)
        if effect.request.agent_path:  # a sub-run's request: under its span
            with self._trace.agent(effect.request.agent_path):
                return cast(Reply, await send_request(self._client, kwargs))
        if self._trace is not NO_TRACE:
            self._trace.sending()
        reply: Reply = await send_request(self._client, kwargs)  # type: ignore[assignment]  # not a stream: a reply (no cast call per request)
        return reply

    async def _summarize(self, effect: Summarize) -> Reply:
        self._trace.sending()
        state = effect.state
        kwargs = summary_request(state.params, state.messages[: effect.point], effect.control)
        return cast(Reply, await send_request(self._client, {**kwargs, **self.transport}))

    async def _open_stream(self, effect: OpenStream) -> ReplyStream:
        if self._options.run_tools_eagerly and self.task_group is None:
            raise ToolRunnerError(
                "run_tools_eagerly=True runs tools in the runner's task group: enter the runner first, "
                "with `async with ToolRunner(...) as runner:`."
            )
        kwargs = self._kwargs(effect.request)
        self.streamed = []
        self._trace.sending()
        self._open = cast(
            StreamWatch,
            await send_request(
                self._client,
                kwargs,
                stream=True,
                emit=self._core.listener,
                on_tool_use=self._start_early if self._options.run_tools_eagerly else None,
            ),
        )
        if self._core.output is not None:  # the final message gets its parsed_output, as the SDK's stream
            self._open.on_final = self._core.output.annotate
        return self._open.stream

    async def _read_stream(self, effect: ReadStream) -> Reply | None:
        watch = self._open
        assert watch is not None, "ReadStream without an open stream"
        if watch.error is not None:  # the body read the stream and got its error already
            return None
        return await watch.final_message()

    async def _end_stream(self, effect: EndStream) -> list[str]:
        watch, self._open = self._open, None
        assert watch is not None, "EndStream without an open stream"
        await watch.close()
        return await self._running.settle_early(watch.tool_use_ids, keep=effect.keep)

    async def _drop_stream(self, effect: DropStream) -> None:
        with anyio.CancelScope(shield=True):
            watch, self._open = self._open, None
            if watch is None:
                return
            await watch.close()
            await self._running.settle_early(watch.tool_use_ids, keep=False)

    async def _gate(self, effect: Gate) -> Any:
        if effect.agent_path:  # a sub-agent's calls: its tools' gates
            execution = self._tools.execution
            return await gate(effect.calls, lambda call: tool_at(execution, effect.agent_path, call))
        return await gate(effect.calls, self._core.tool_of)

    async def _ask(self, effect: Ask) -> object:
        callback = self._options.approve
        assert callback is not None
        return await ask(callback, effect.call)

    async def _before_tool_call(self, effect: BeforeToolCall) -> object:
        hooks = self._options.hooks
        assert hooks is not None
        assert hooks.before_tool_call is not None
        return await before_tool_call(
            hooks.before_tool_call, effect.info, self._core.tool_of(effect.info.call)
        )

    async def _after_tool_call(self, effect: AfterToolCall) -> object:
        hooks = self._options.hooks
        assert hooks is not None
        assert hooks.after_tool_call is not None
        return await after_tool_call(hooks.after_tool_call, effect.info, effect.block)

    async def _before_request(self, effect: BeforeRequest) -> str | None:
        hooks = self._options.hooks
        assert hooks is not None
        assert hooks.before_request is not None
        return await before_request(hooks.before_request, effect.info)

    async def _check_output(self, effect: CheckOutput) -> str | None:
        hooks = self._options.hooks
        assert hooks is not None
        assert hooks.check_output is not None
        return await check_output(hooks.check_output, effect.reply)

    async def _run_calls(self, effect: RunCalls) -> None:
        runs = effect.runs
        if runs is not None:  # a sub-run's calls (_core.subruns): their slot is their parent call's
            await self._running.run(
                effect.calls,
                lambda call: settled(runs.state, call),
                lambda call: self._traced(call, runs.call(call), lambda: runs.state.result_of(call)),
            )
            return
        await self._running.run(effect.calls, self._settled, self._run_call)

    def _settled(self, call: ToolCall) -> bool:
        return settled(self._core.state, call)

    async def _run_call(self, call: ToolCall, *, early: bool = False) -> None:
        """One call's program, holding a concurrency slot from before the call is journaled."""
        limiter = self._tools.limiter
        if limiter is None:
            if self._trace is NO_TRACE:  # nothing to do around the program: no context, no closure
                await drive(self._core.call(call, early=early), self._perform, core=self._core)
                return
            await self._traced(
                call, self._core.call(call, early=early), lambda: self._core.state.result_of(call)
            )
            return
        async with limiter:
            await self._traced(
                call, self._core.call(call, early=early), lambda: self._core.state.result_of(call)
            )

    async def _traced(
        self, call: ToolCall, program: Program[None], result: Callable[[], ToolResultBlockParam | None]
    ) -> None:
        """Drive a call's program; the trace ends there the spans of the sub-run it ran, if any."""
        with self._trace.call(call, result):
            await self.drive(program)

    async def _execute(self, effect: Execute) -> tuple[Any, float] | CancelledAfter:
        started = CLOCK()
        try:
            # The run's own call: ``agent`` leaves the span as it is, so it is not entered.
            if not effect.agent_path:
                block = await execute(
                    effect.call,
                    effect.input,
                    self._tools.execution,
                    self._context,
                    self._trace.tool_call,
                    removed=effect.removed,
                    keep_cancelled=True,
                )
                return block, CLOCK() - started
            with self._trace.agent(effect.agent_path):  # a sub-run's call: under its span
                block = await execute(
                    effect.call,
                    effect.input,
                    execution_at(self._tools.execution, effect.agent_path),
                    self._context,
                    self._trace.tool_call,
                    removed=effect.removed,
                    keep_cancelled=True,
                )
            return block, CLOCK() - started
        except ToolFinishedCancelled as finished:  # the core keeps the result, then raises the cancellation
            return CancelledAfter(finished.block, CLOCK() - started, finished.cancellation)

    async def _read_decisions(self, effect: ReadDecisions) -> Mapping[str, CallRecord]:
        return {} if self.saver is None else await self.saver.decisions()

    async def _await_decisions(self, effect: AwaitDecisions) -> Decisions:
        return Decisions.PAUSED  # the loop pauses; it goes on when iterated again

    async def _loop_stopped(self, effect: LoopStopped) -> None:
        await self._tools.at_end()

    def _start_early(self, call: ToolCall) -> None:
        """A client tool_use block of the streaming reply is complete: start it, if it may start."""
        assert self.task_group is not None
        self.streamed.append(call)
        if self._core.may_start_early(call):
            self._running.start_early(call, self.task_group, lambda call: self._run_call(call, early=True))

    _PERFORMERS: ClassVar[dict[type[Any], Callable[[Performer, Any], Awaitable[Any]]]] = {
        Save: _save,
        StateDerived: _state_derived,
        OpenTools: _open_tools,
        Send: _send,
        Summarize: _summarize,
        OpenStream: _open_stream,
        ReadStream: _read_stream,
        EndStream: _end_stream,
        DropStream: _drop_stream,
        Gate: _gate,
        Ask: _ask,
        BeforeToolCall: _before_tool_call,
        AfterToolCall: _after_tool_call,
        BeforeRequest: _before_request,
        CheckOutput: _check_output,
        RunCalls: _run_calls,
        Execute: _execute,
        ReadDecisions: _read_decisions,
        AwaitDecisions: _await_decisions,
        LoopStopped: _loop_stopped,
    }
    """What performs each effect: one table for every runner, not a dict of bound methods made per
    runner."""

"""The async driver: ``ToolRunner`` performs the effects of the run's orchestration (``_core.run``).

What to do next, and in which order, is ``RunCore``'s: its programs yield effects (send this
request, save, run these calls, execute this tool, wait for decisions) and this module performs
each one with the runner's client, store, tools and task group, in the caller's task, and sends
the outcome back (``_drive``). One iteration (``__anext__``) drives ``RunCore.iteration`` and
hands its result to the loop body.

What lives here and not in the state cannot be saved: the client, the tools, open streams, the
calls running now, and the guard that one task advances the runner at a time.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Mapping
from types import TracebackType
from typing import Any, Generic, Literal, Self, TypeVar, cast, overload

import anthropic
import anyio
import anyio.abc
from typing_extensions import TypeVar as DefaultTypeVar, Unpack

from .._core.compaction import compaction_request, summary_request
from .._core.drive import drive
from .._core.effects import (
    Ask,
    AwaitDecisions,
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
from .._core.errors import CheckpointError, ParamsError, ToolRunnerError
from .._core.events import RunnerEvent
from .._core.run import RunCore
from .._core.state import CallRecord, RunState
from .._core.tool_changes import added_definitions, pending_message
from .._core.transitions import request_params
from .._core.types import Reply, ReplyStream, ToolCall
from .._core.usage import DEFAULT_PRICES, request_usage
from .._tools.approvals import ask, gate
from .._tools.execution import ExecutionOptions, execute
from .._tools.tool import ToolContext
from .._tools.toolsets import RunnableTool
from .._tracing.trace import start_trace
from .body import RunnerControls
from .options import ResumeArguments, RunnerArguments, read_options
from .params import TRANSPORT, ToolIndex, resolve_tools
from .requests import Client, send_request
from .running_calls import RunningCalls, raise_single
from .saver import Saver
from .sdk_features import RunnerExtensions
from .streaming import StreamWatch

__all__ = ["ToolRunner"]

ItemT = DefaultTypeVar("ItemT", default=Reply)
T = TypeVar("T")


class ToolRunner(RunnerControls, RunnerExtensions, Generic[ItemT]):
    """Runs Claude's tool-use loop: sends requests, yields replies, runs the requested tools.

    Args:
        client: An ``anthropic.AsyncAnthropic`` (or ``anthropic.Anthropic``, whose requests then
            run in a worker thread).
        stream: Yield the SDK's ``AsyncMessageStream`` of each reply instead of the message.
        **options: The options of ``RunnerOptions`` (``tools``, ``max_iterations``, ...) and any
            parameter of ``client.messages.create`` (``model``, ``max_tokens`` and ``messages`` are
            required). ``betas=[...]``, or a param only ``client.beta.messages.create`` takes, sends
            through ``client.beta.messages``.
    """

    @overload
    def __init__(
        self: ToolRunner[Reply],
        client: Client,
        *,
        stream: Literal[False] = False,
        **options: Unpack[RunnerArguments],
    ) -> None: ...
    @overload
    def __init__(
        self: ToolRunner[ReplyStream],
        client: anthropic.AsyncAnthropic,
        *,
        stream: Literal[True],
        **options: Unpack[RunnerArguments],
    ) -> None: ...
    def __init__(self, client: Client, *, stream: bool = False, **options: Unpack[RunnerArguments]) -> None:
        self._start(client, stream, options, from_sync_code=False)

    def _start(
        self, client: Client, stream: bool, options: Mapping[str, Any], *, from_sync_code: bool
    ) -> None:
        """Make a new run (``__init__``; ``SyncToolRunner`` with ``from_sync_code``)."""
        params = self._configure(client, stream, options, from_sync_code=from_sync_code)
        self._install({**params, "tools": self._options.tools}, steer=False)

    @overload
    @classmethod
    async def resume(
        cls, client: Client, *, stream: Literal[False] = False, **options: Unpack[ResumeArguments]
    ) -> ToolRunner[Reply]: ...
    @overload
    @classmethod
    async def resume(
        cls, client: anthropic.AsyncAnthropic, *, stream: Literal[True], **options: Unpack[ResumeArguments]
    ) -> ToolRunner[ReplyStream]: ...
    @classmethod
    async def resume(
        cls, client: Client, *, stream: bool = False, **options: Unpack[ResumeArguments]
    ) -> ToolRunner[Any]:
        """Go on with a saved run: ``await ToolRunner.resume(client, run_id=..., checkpointer=..., tools=[...])``.

        The request params and the history come from the saved state; the options (tools above
        all: they are code) are given again, and so are the transport params (``extra_headers``,
        ``extra_query``, ``timeout``), which are never saved. Calls that finished are answered from
        the journal and never run again; a call that had started but not finished runs again if
        its tool is ``idempotent``, and otherwise gets an ``is_error`` result saying it was
        interrupted.

        Tools changed mid-run stay changed: a tool the history (or a pending change) removed is not
        run, and a tool that ``add_tools()`` added (a ``tool_addition`` of the saved history) may be
        given again in ``tools=[...]``: it runs, and is not sent in the ``tools`` param.

        Raises:
            CheckpointError: The checkpointer has no run of that name.
            ParamsError: A tool of the saved run is not given, a tool given is not one of the run's
                (nor added by it), or request params are given.
        """
        return await cls._resumed(client, stream, options, from_sync_code=False)

    @classmethod
    async def _resumed(
        cls, client: Client, stream: bool, options: Mapping[str, Any], *, from_sync_code: bool
    ) -> ToolRunner[Any]:
        """Go on with a saved run (``resume``; ``SyncToolRunner.resume`` with ``from_sync_code``)."""
        checkpointer, run_id = options.get("checkpointer"), options.get("run_id")
        if checkpointer is None or run_id is None:
            raise ParamsError("resume needs the checkpointer=... and the run_id=... of the saved run.")
        runner = cls.__new__(cls)
        params = runner._configure(client, stream, options, from_sync_code=from_sync_code)
        runner._transport = {name: params.pop(name) for name in TRANSPORT if name in params}
        if params:
            raise ParamsError(
                f"resume takes the request params from the saved run, so {sorted(params)!r} cannot be given; "
                "change them after resuming with set_messages_params()."
            )
        loaded = await checkpointer.load(run_id)
        if loaded is None:
            raise CheckpointError(
                f"{checkpointer!r} has no saved run named {run_id!r}; start it with ToolRunner(..., run_id={run_id!r})."
            )
        saved = loaded.state
        added = added_definitions((*saved.messages, pending_message(saved.tool_changes)))
        tools, extra = resolve_tools(saved.tools, runner._options.tools, run_id, added=added)
        runner._tool_changes.update(extra)  # run, but not sent in the tools param: as add_tools() left them
        runner._core.load(saved)  # what the fold of tool changes reads, and may_run_again
        runner._index_tools(tools)
        runner._saver = Saver(checkpointer, run_id, loaded=loaded)
        runner._core.resume()
        return runner

    def _configure(
        self, client: Client, stream: bool, options: Mapping[str, Any], *, from_sync_code: bool
    ) -> dict[str, Any]:
        """Everything but the state; returns the request params among ``options``. A runner a
        ``SyncToolRunner`` drives (``from_sync_code``) runs each step in a task of its own unless
        entered, and with ``stream`` yields the SDK's sync streams, which the body reads in its own
        thread (``read_options`` refuses ``stream=True`` with a sync client everywhere else)."""
        if not isinstance(client, anthropic.AsyncAnthropic | anthropic.Anthropic):
            raise ParamsError(
                f"client must be an anthropic.AsyncAnthropic or anthropic.Anthropic, not {type(client).__name__!r}; "
                "create one with anthropic.AsyncAnthropic()."
            )
        self._options, params = read_options(
            options, stream=stream, is_async=from_sync_code or isinstance(client, anthropic.AsyncAnthropic)
        )
        self._transport: dict[str, Any] = {}
        self._client = client
        self._prices = DEFAULT_PRICES if self._options.prices is None else self._options.prices
        checkpointer, run_id = self._options.checkpointer, self._options.run_id
        self._saver = None if checkpointer is None or run_id is None else Saver(checkpointer, run_id)
        self._execution = ExecutionOptions(tools={}, adapter=self._options.result_adapter)
        self._limiter: anyio.CapacityLimiter | None = None
        self._deciding = threading.RLock()  # decisions may come from several threads (a sync runner's)
        self._core: RunCore[RunnableTool] = RunCore(
            RunState(params={}, run_id=run_id),
            tools=self._execution,
            usage_of=lambda reply: request_usage(reply, self._prices),
            limits=self._options.limits,
            stream=self._options.stream,
            durable=self._saver is not None,
            asks=self._options.approve is not None,
            compaction_control=self._options.compaction_control,
            ended=lambda state: self._trace.ended(state),
        )
        self._core.listener = self._options.on_event
        self._trace = start_trace(self._options.tracing, client, lambda: self._core.state)
        self._running = RunningCalls()
        self._open: StreamWatch | None = None  # the stream of the reply being received
        self._advancing = False  # inside __anext__
        self._task_group: anyio.abc.TaskGroup | None = None
        self._index = ToolIndex(tools=[], wire=[], runnable={}, unrunnable=frozenset())
        self._performers: dict[type[Any], Callable[[Any], Any]] = {
            Save: self._do_save,
            StateDerived: self._do_derive,
            OpenTools: self._do_prepare,
            Send: self._do_send,
            Summarize: self._do_summarize,
            OpenStream: self._do_open_stream,
            ReadStream: self._do_read_stream,
            EndStream: self._do_end_stream,
            DropStream: self._do_drop_stream,
            Gate: self._do_gate,
            Ask: self._do_ask,
            RunCalls: self._do_run_calls,
            Execute: self._do_execute,
            ReadDecisions: self._do_read_decisions,
            AwaitDecisions: self._do_await_decisions,
            LoopStopped: self._do_ended,
        }
        self._init_extensions(from_sync_code=from_sync_code)
        return params

    async def __aenter__(self) -> Self:
        """Enter the runner: its toolsets open; tools started early (``run_tools_eagerly``) run in its
        task group."""
        self._entered = True
        try:
            # Before the task group, so that they close after it: what a toolset's open() enters (an
            # MCP session's task group) must be exited innermost first, in this task.
            await self._open_tools()
        except BaseException:
            self._entered = False
            await self.aclose()
            raise
        group = anyio.create_task_group()
        await group.__aenter__()
        self._task_group = group
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Leave the runner (see ``_leave``). An exception of the block passes through as itself:
        the runner's task group holds only the calls started early, and is not told of it."""
        group, self._task_group = self._task_group, None
        assert group is not None, "__aexit__ without __aenter__"
        # A cancellation must reach the task group's scope (it may be its own); an error of the
        # block is not the group's, and would come out of it wrapped in an ExceptionGroup.
        passed = (
            (exc_type, exc, tb) if exc is not None and not isinstance(exc, Exception) else (None, None, None)
        )
        try:
            await self._leave(failed=exc is not None)
        finally:
            group.cancel_scope.cancel()  # tools started early whose results nobody asked for
            try:
                await group.__aexit__(*passed)
            except BaseExceptionGroup as error:
                raise_single(error)
            finally:
                self._entered = False
                await self._close_tools()
        return None

    # -- iteration --------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ItemT]:
        return self

    async def __anext__(self) -> ItemT:
        with self._advance(), self._trace.iteration():
            item = await self._step(self._core.iteration())
        if item is None:
            raise StopAsyncIteration
        return cast(ItemT, item)

    async def _step(self, program: Program[T]) -> T:
        """Drive ``program`` as a step of the run (``RunCore.step``: a failure is recorded and saved)."""
        return await self._drive(self._core.step(program))

    @contextlib.contextmanager
    def _advance(self) -> Generator[None]:
        if self._advancing:
            raise ToolRunnerError(
                "this runner is already advancing in another task; iterate a runner from one task at a time."
            )
        self._advancing = True
        try:
            yield
        finally:
            self._advancing = False

    async def _drive(self, program: Program[T]) -> T:
        """Perform the effects ``program`` yields (``drive``, the core's one trampoline)."""
        return await drive(program, self._perform, core=self._core)

    async def _perform(self, effect: Effect) -> Any:
        return await self._performers[type(effect)](effect)

    # -- the effects ------------------------------------------------------------------------------

    async def _do_save(self, effect: Save) -> None:
        saver = self._saver
        if saver is None:
            return
        if effect.history_replaced:
            saver.history_replaced()
        if effect.shielded:
            with anyio.CancelScope(shield=True):
                await saver.save(effect.state)
        else:
            await saver.save(effect.state)

    async def _do_derive(self, effect: StateDerived) -> None:
        if self._saver is not None:
            self._saver.derived(effect.before, self._core.state)

    async def _do_prepare(self, effect: OpenTools) -> None:
        index = self._index
        if index.sdk_objects or index.toolsets:
            await self._open_tools()

    def _kwargs(self, request: Request) -> dict[str, Any]:
        kwargs = request_params(request.state, self._index.wire, self._options.cache)
        if request.compaction is not None:
            kwargs = compaction_request(kwargs, request.compaction)
        if self._transport:
            kwargs |= self._transport
        return kwargs

    async def _do_send(self, effect: Send) -> Reply:
        kwargs = self._kwargs(effect.request)
        self._trace.sending()
        return cast(Reply, await send_request(self._client, kwargs))

    async def _do_summarize(self, effect: Summarize) -> Reply:
        self._trace.sending()
        state = effect.state
        kwargs = summary_request(state.params, state.messages[: effect.point], effect.control)
        return cast(Reply, await send_request(self._client, {**kwargs, **self._transport}))

    async def _do_open_stream(self, effect: OpenStream) -> ReplyStream:
        if self._options.run_tools_eagerly and self._task_group is None:
            raise ToolRunnerError(
                "run_tools_eagerly=True runs tools in the runner's task group: enter the runner first, "
                "with `async with ToolRunner(...) as runner:`."
            )
        kwargs = self._kwargs(effect.request)
        self._streamed = []
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
        return self._open.stream

    async def _do_read_stream(self, effect: ReadStream) -> Reply | None:
        watch = self._open
        assert watch is not None, "ReadStream without an open stream"
        if watch.error is not None:  # the body read the stream and got its error already
            return None
        return await watch.final_message()

    async def _do_end_stream(self, effect: EndStream) -> list[str]:
        watch, self._open = self._open, None
        assert watch is not None, "EndStream without an open stream"
        await watch.close()
        return await self._running.settle_early(watch.tool_use_ids, keep=effect.keep)

    async def _do_drop_stream(self, effect: DropStream) -> None:
        with anyio.CancelScope(shield=True):
            watch, self._open = self._open, None
            if watch is None:
                return
            await watch.close()
            await self._running.settle_early(watch.tool_use_ids, keep=False)

    async def _do_gate(self, effect: Gate) -> Any:
        return await gate(effect.calls, self._core.tool_of)

    async def _do_ask(self, effect: Ask) -> object:
        callback = self._options.approve
        assert callback is not None
        return await ask(callback, effect.call)

    async def _do_run_calls(self, effect: RunCalls) -> None:
        await self._running.run(
            effect.calls, lambda call: self._core.state.result_of(call) is not None, self._run_call
        )

    async def _run_call(self, call: ToolCall, *, early: bool = False) -> None:
        """One call's program, holding a concurrency slot from before the call is journaled."""
        if self._limiter is None:
            await self._drive(self._core.call(call, early=early))
            return
        async with self._limiter:
            await self._drive(self._core.call(call, early=early))

    async def _do_execute(self, effect: Execute) -> tuple[Any, float]:
        started = time.perf_counter()
        block = await execute(
            effect.call,
            effect.input,
            self._execution,
            self._context,
            self._trace.tool_call,
            removed=effect.removed,
        )
        return block, time.perf_counter() - started

    def _context(self, call: ToolCall) -> ToolContext:
        return ToolContext(call=call, runner=self)

    async def _do_read_decisions(self, effect: ReadDecisions) -> Mapping[str, CallRecord]:
        return {} if self._saver is None else await self._saver.decisions()

    async def _do_await_decisions(self, effect: AwaitDecisions) -> Decisions:
        return Decisions.PAUSED  # the loop pauses; it goes on when iterated again

    async def _do_ended(self, effect: LoopStopped) -> None:
        await self._at_end()

    # -- helpers ----------------------------------------------------------------------------------

    def _start_early(self, call: ToolCall) -> None:
        """A client tool_use block of the streaming reply is complete: start it, if it may start."""
        assert self._task_group is not None
        self._streamed.append(call)
        if self._core.may_start_early(call):
            self._running.start_early(call, self._task_group, lambda call: self._run_call(call, early=True))

    def _report(self, event: RunnerEvent) -> None:
        self._core.emit(event)

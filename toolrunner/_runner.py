"""The async driver: the I/O of a tool loop, around the pure lifecycle of ``_lifecycle``.

The run's state is one value, ``self._state`` (a ``RunState``); every change to it goes through a
transition of ``_lifecycle`` and ``_set``. One iteration (``__anext__``):

1. finish the previous turn if a reply is out with the loop body (``_finish_turn``): read the
   rest of its stream, answer the calls ``pending_calls`` names, and let ``turn_finished`` append
   what belongs in the history and decide whether the loop goes on;
2. stop if the loop is over, or a limit is reached (``ready_to_send``);
3. check the history, send the request, hand the reply (or its stream) to the body.

What lives here and not in the state cannot be saved: the client, the tools, open streams, the
events of calls running now, and the guard that one task advances the runner at a time.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Generator, Mapping, Sequence
from types import TracebackType
from typing import Any, Generic, Literal, Self, cast, overload

import anthropic
import anyio
import anyio.abc
from anthropic.types import ToolResultBlockParam
from typing_extensions import TypeVar, Unpack

from ._approvals import Approvals
from ._availability import added_definitions, pending_message
from ._calls import RunnerLink, TurnCalls
from ._checkpoint import Saver
from ._controls import RunnerControls
from ._errors import ApprovalError, CheckpointError, ParamsError, ToolRunnerError
from ._events import LoopFinished, MessageFinished, RunnerEvent, TextDelta
from ._execution import ExecutionOptions
from ._extensions import RunnerExtensions
from ._lifecycle import (
    Step,
    calls_dropped,
    closed,
    pending_calls,
    ready_to_send,
    reply_received,
    request_params,
    resumed,
    step_for,
    stream_abandoned,
    stream_opened,
    turn_finished,
    turn_paused,
    turn_resumed,
)
from ._messages import check_history, check_reply
from ._options import RunnerOptions, read_options
from ._params import ToolIndex, resolve_tools
from ._requests import Client, send_request
from ._state import Phase, RunState
from ._streaming import StreamWatch
from ._tools import ToolContext
from ._tracing import start_trace
from ._types import Reply, ReplyStream, ToolCall, ToolResultMessage
from ._usage import DEFAULT_PRICES, UsageTracker, request_usage

__all__ = ["ToolRunner"]

ItemT = TypeVar("ItemT", default=Reply)


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
        **options: Unpack[RunnerOptions],
    ) -> None: ...
    @overload
    def __init__(
        self: ToolRunner[ReplyStream],
        client: anthropic.AsyncAnthropic,
        *,
        stream: Literal[True],
        **options: Unpack[RunnerOptions],
    ) -> None: ...
    def __init__(self, client: Client, *, stream: bool = False, **options: Unpack[RunnerOptions]) -> None:
        params = self._configure(client, stream, options)
        self._install({**params, "tools": self._options.tools}, steer=False)
        self._state = self._state.replace(run_id=self._options.run_id)

    @overload
    @classmethod
    async def resume(
        cls, client: Client, *, stream: Literal[False] = False, **options: Unpack[RunnerOptions]
    ) -> ToolRunner[Reply]: ...
    @overload
    @classmethod
    async def resume(
        cls, client: anthropic.AsyncAnthropic, *, stream: Literal[True], **options: Unpack[RunnerOptions]
    ) -> ToolRunner[ReplyStream]: ...
    @classmethod
    async def resume(
        cls, client: Client, *, stream: bool = False, **options: Unpack[RunnerOptions]
    ) -> ToolRunner[Any]:
        """Go on with a saved run: ``await ToolRunner.resume(client, run_id=..., checkpointer=..., tools=[...])``.

        The request params and the history come from the saved state; the options (tools above
        all: they are code) are given again. Calls that finished are answered from the journal and
        never run again; a call that had started but not finished runs again if its tool is
        ``idempotent``, and otherwise gets an ``is_error`` result saying it was interrupted.

        Tools changed mid-run stay changed: a tool the history (or a pending change) removed is not
        run, and a tool that ``add_tools()`` added (a ``tool_addition`` of the saved history) may be
        given again in ``tools=[...]``: it runs, and is not sent in the ``tools`` param.

        Raises:
            CheckpointError: The checkpointer has no run of that name.
            ParamsError: A tool of the saved run is not given, a tool given is not one of the run's
                (nor added by it), or request params are given.
        """
        checkpointer, run_id = options.get("checkpointer"), options.get("run_id")
        if checkpointer is None or run_id is None:
            raise ParamsError("resume needs the checkpointer=... and the run_id=... of the saved run.")
        runner = cls.__new__(cls)
        params = runner._configure(client, stream, options)
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
        runner._state = saved  # what _execution() folds, and may_run_again reads
        runner._index_tools(tools)
        runner._saver = Saver(checkpointer, run_id, loaded=loaded)
        runner._state = resumed(loaded.state, may_run_again=runner._may_run_again)
        return runner

    def _configure(self, client: Client, stream: bool, options: Mapping[str, Any]) -> dict[str, Any]:
        """Everything but the state; returns the request params among ``options``."""
        if not isinstance(client, anthropic.AsyncAnthropic | anthropic.Anthropic):
            raise ParamsError(
                f"client must be an anthropic.AsyncAnthropic or anthropic.Anthropic, not {type(client).__name__!r}; "
                "create one with anthropic.AsyncAnthropic()."
            )
        self._options, params = read_options(
            options, stream=stream, is_async=isinstance(client, anthropic.AsyncAnthropic)
        )
        self._client = client
        self._emit = self._options.on_event
        self._prices = DEFAULT_PRICES if self._options.prices is None else self._options.prices
        self._trace = start_trace(self._options.tracing, client, lambda: self._state)
        link = RunnerLink(
            state=lambda: self._state,
            update=self._set,
            emit=self._report,
            listening=lambda: self._emit is not None,
            saving=lambda: self._saver is not None,
            save=self._save,
            context=lambda call: ToolContext(call=call, runner=self),
            trace=self._trace.tool_call,
        )
        self._calls = TurnCalls(link, ExecutionOptions(tools={}, adapter=self._options.result_adapter))
        self._approvals = Approvals(
            link,
            find=lambda call: self._execution().find(call),
            gated=lambda: self._execution().gated,
            adapter=self._options.result_adapter,
            callback=self._options.approve,
        )
        checkpointer, run_id = self._options.checkpointer, self._options.run_id
        self._saver = None if checkpointer is None or run_id is None else Saver(checkpointer, run_id)
        self._open: StreamWatch | None = None  # the stream of the reply being received
        self._advancing = False  # inside __anext__
        self._closing = False  # close() came from another task while advancing
        self._task_group: anyio.abc.TaskGroup | None = None
        self._checked = 0  # the history is known to be valid before this index (see check_history)
        self._index = ToolIndex(tools=[], wire=[], runnable={}, unrunnable=frozenset())
        self._usage: tuple[tuple[object, ...], UsageTracker] | None = None
        self._folded: tuple[tuple[Any, ...], tuple[Mapping[str, Any], ...], dict[str, bool]] | None = None
        self._state = RunState(params={})
        self._init_extensions(self._options.compaction_control)
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
        group, self._task_group = self._task_group, None
        assert group is not None, "__aexit__ without __aenter__"
        try:
            await self._leave(failed=exc is not None)
        finally:
            group.cancel_scope.cancel()  # tools started early whose results nobody asked for
            try:
                await group.__aexit__(exc_type, exc, tb)
            finally:
                self._entered = False
                await self._close_tools()
        return None

    # -- tools ------------------------------------------------------------------------------------

    async def generate_tool_response(self) -> ToolResultMessage | None:
        """The user message holding the tool_result blocks for the pending tool calls, or ``None``.

        The pending calls are those of the reply the loop body holds (unless the body changed
        the history), or else of the last message of the history. Results are computed once per
        tool_use id and shared by concurrent callers; the history is never changed. With
        ``stream=True`` it first reads the rest of the reply's stream.

        Raises:
            ApprovalError: Calls wait for a decision (the others ran); decide them first.
        """
        await self._read_stream()
        calls = pending_calls(self._state)
        if not calls:
            return None
        results = await self._settle(calls)
        if results is None:
            waiting = [call.id for call in self._approvals.waiting()]
            raise ApprovalError(
                f"the tool calls {waiting!r} wait for a decision, so there is no complete tool response yet (the "
                "calls that need none ran); decide them with approve(), deny() or answer() first."
            )
        return {"role": "user", "content": results}

    async def _settle(self, calls: Sequence[ToolCall]) -> list[ToolResultBlockParam] | None:
        """Find the calls that wait, let the ``approve=`` callback decide them, run what may run;
        the results in order, or ``None`` while calls still wait."""
        self._execution()
        await self._approvals.gate(calls)
        await self._approvals.ask()
        return await self._calls.settle(calls)

    # -- iteration --------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ItemT]:
        return self

    async def __anext__(self) -> ItemT:
        with self._advance(), self._trace.iteration():
            if self._state.phase in (Phase.STREAMING, Phase.WITH_BODY, Phase.AWAITING):
                await self._finish_turn()
            if self._state.phase is Phase.READY:
                self._set(ready_to_send(self._state, self._options.limits))
            if self._closing:
                self._close_now()
            if self._state.finished:
                await self._save()
                await self._at_end()
                raise StopAsyncIteration
            item = await self._send()
            if self._closing:  # closed while the request was out: keep the reply, run nothing
                with anyio.CancelScope(shield=True):
                    await self._abandon_stream()
                self._close_now()
                await self._save()
                await self._at_end()
                raise StopAsyncIteration
        return cast(ItemT, item)

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

    def _close_now(self) -> None:
        self._closing = False
        self._set(closed(self._state))

    async def _finish_turn(self) -> None:
        """Steps 3 to 5 for the reply the body held. The history changes in one transition, after
        the tools ran, so a cancelled turn leaves it as it was and can be finished again. While
        calls wait for a decision, the loop pauses instead (``AWAITING``)."""
        await self._read_stream()
        if self._state.phase not in (Phase.WITH_BODY, Phase.AWAITING):
            return  # the stream failed and was dropped: the request is sent again
        calls = pending_calls(self._state)
        results = await self._settle(calls) if calls else None
        if calls and results is None:
            self._set(turn_paused(self._state))
            return
        message: ToolResultMessage | None = {"role": "user", "content": results} if results else None
        before = self._state
        finished = turn_finished(turn_resumed(before), message)
        self._set(self._turn_ended(finished))
        if self._saver is not None and self._state is finished and finished.phase is Phase.READY:
            self._saver.derived(before, finished)  # written with the next save that has news
        steered = before.steered
        if not steered and self._state.messages is finished.messages:
            # A reply and the results of all its calls, as the runner appends them, are valid as
            # made: the next check starts after them. A reply appended without results may hold
            # calls its stop reason kept from running: the check starts at it.
            self._checked = len(finished.messages) - (message is None)
        await self._after_turn()

    def _start_early(self, call: ToolCall) -> None:
        assert self._task_group is not None
        self._execution()
        self._calls.start_early(call, self._task_group)

    def _report(self, event: RunnerEvent) -> None:
        if self._emit is not None:
            self._emit(event)

    def _set(self, state: RunState) -> None:
        """Make ``state`` current; the one place the state changes, and where the end is reported."""
        ended = state.finished and not self._state.finished
        self._state = state
        if ended:
            assert state.end_reason is not None
            self._trace.ended(state)
            self._report(LoopFinished(message=state.reply, reason=state.end_reason))

    def _accept(self, reply: Reply, *, streamed: bool = False) -> None:
        """Take a complete reply (checked): it is the latest, its usage counts, listeners hear of it."""
        check_reply(reply)
        self._set(reply_received(self._state, reply, request_usage(reply, self._prices)))
        if self._emit is not None:
            if not streamed:  # a streamed reply's text was reported as it arrived
                for index, block in enumerate(reply.content):
                    if block.type == "text":
                        self._emit(TextDelta(text=block.text, index=index))
            self._emit(MessageFinished(message=reply))

    async def _gate_and_save(self) -> None:
        """After a reply: its calls that need a decision wait; the state is saved."""
        if self._execution().gated:
            await self._approvals.gate(pending_calls(self._state))
        await self._save()

    async def _send(self) -> Reply | ReplyStream:
        if self._options.run_tools_eagerly and self._task_group is None:
            raise ToolRunnerError(
                "run_tools_eagerly=True runs tools in the runner's task group: enter the runner first, "
                "with `async with ToolRunner(...) as runner:`."
            )
        await self._before_send()
        state = self._state
        check_history(state.messages, self._checked)
        self._checked = max(len(state.messages) - 1, 0)
        await self._save()
        kwargs = self._adjust_request(request_params(state, self._index.wire, self._options.cache))
        self._trace.sending()
        if not self._options.stream:
            reply = cast(Reply, await send_request(self._client, kwargs))
            self._accept(reply)
            await self._gate_and_save()
            return reply
        self._open = cast(
            StreamWatch,
            await send_request(
                self._client,
                kwargs,
                stream=True,
                emit=self._emit,
                on_tool_use=self._start_early if self._options.run_tools_eagerly else None,
            ),
        )
        self._set(stream_opened(self._state))
        return self._open.stream

    async def _read_stream(self) -> None:
        """Read the rest of the stream the body holds and take its final message. If the stream
        fails here, drop it and what started early, and raise its error; if the body already got
        the error, just drop them. Either way the next iteration sends the request again."""
        watch = self._open
        if watch is None:
            return
        if watch.error is not None:  # the body read the stream and got its error already
            await self._abandon_stream()
            return
        try:
            reply = await watch.final_message()
            check_reply(reply)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._abandon_stream()
            raise
        await watch.close()
        self._accept(reply, streamed=True)
        self._open = None
        keep = step_for(reply.stop_reason) is Step.RUN_TOOLS
        dropped = await self._calls.settle_early(watch.tool_use_ids, keep=keep)
        self._set(calls_dropped(self._state, dropped))
        await self._gate_and_save()

    async def _abandon_stream(self) -> None:
        watch, self._open = self._open, None
        if watch is None:
            return
        await watch.close()
        await self._calls.settle_early(watch.tool_use_ids, keep=False)
        self._set(stream_abandoned(self._state))

    def _may_run_again(self, call: ToolCall) -> bool:
        tool = self._execution().find(call)
        return tool is not None and tool.idempotent

    async def _save(self) -> None:
        """Save the current state to the checkpointer, if there is one and the state changed."""
        if self._saver is not None:
            await self._saver.save(lambda: self._state)

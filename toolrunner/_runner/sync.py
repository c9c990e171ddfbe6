"""The blocking front end: ``for message in runner`` over the async driver.

No lifecycle code lives here. Each ``for`` loop (and each blocking call made outside one) runs the
async ``ToolRunner`` in an event loop of its own thread through an anyio blocking portal, which
closes when the loop ends or is left by ``break``. Requests go through a sync
``anthropic.Anthropic`` in worker threads, so no state is tied to one event loop and a loop left
by ``break`` can be resumed later.
"""

from __future__ import annotations

import asyncio
import sys
import threading
from collections.abc import Awaitable, Callable, Generator, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from functools import partial
from types import TracebackType
from typing import Any, Generic, Literal, Self, TypeAlias, cast, overload

import anthropic
import anyio
from anthropic.lib.streaming import BetaMessageStream, MessageStream
from anyio.from_thread import BlockingPortal, start_blocking_portal
from typing_extensions import TypeVar, Unpack

from .._core.errors import ParamsError, ToolRunnerError
from .._core.progress import SubRunProgress
from .._core.state import RunState
from .._core.types import EndReason, ParsedReply, Reply, ToolCall, ToolResultMessage
from .._core.usage import UsageTracker
from .options import ResumeArguments, RunnerArguments
from .runner import ToolRunner

__all__ = ["SyncReplyStream", "SyncToolRunner"]

T = TypeVar("T")
OutputT = TypeVar("OutputT")
SyncReplyStream: TypeAlias = MessageStream[Any] | BetaMessageStream[Any]
"""What a streaming ``SyncToolRunner`` yields: the SDK's sync stream of one reply."""
SyncItemT = TypeVar("SyncItemT", default=Reply)


class SyncToolRunner(Generic[SyncItemT]):
    """``ToolRunner`` for synchronous code: ``for message in runner`` and blocking methods.

    Takes the same options as ``ToolRunner``, with a sync ``anthropic.Anthropic`` client. Tools may
    be sync or async; they still run concurrently. It refuses to run inside an event loop (it
    would block it): use ``ToolRunner`` there.

    Args:
        client: An ``anthropic.Anthropic``.
        stream: Yield the SDK's sync ``MessageStream`` of each reply, as the SDK's runner does with
            ``stream=True``; read it in the loop body (its events, ``text_stream``,
            ``get_final_message()``).
        **options: As for ``ToolRunner``.
    """

    # fmt: off
    @overload
    def __init__(self: SyncToolRunner[Reply], client: anthropic.Anthropic, *, stream: Literal[False] = False,
                 output_format: None = None, **options: Unpack[RunnerArguments]) -> None: ...
    @overload  # output_format=T: the items are ParsedReply[T] (docs/typed-output.md)
    def __init__(self: SyncToolRunner[ParsedReply[OutputT]], client: anthropic.Anthropic, *,
                 stream: Literal[False] = False, output_format: type[OutputT],
                 **options: Unpack[RunnerArguments]) -> None: ...
    @overload
    def __init__(self: SyncToolRunner[Reply], client: anthropic.Anthropic, *, stream: Literal[False] = False,
                 output_format: type[Any] | None, **options: Unpack[RunnerArguments]) -> None: ...
    @overload
    def __init__(self: SyncToolRunner[SyncReplyStream], client: anthropic.Anthropic, *, stream: Literal[True],
                 output_format: type[Any] | None = None, **options: Unpack[RunnerArguments]) -> None: ...
    # fmt: on
    def __init__(self, client: anthropic.Anthropic, *, stream: bool = False, **options: Any) -> None:
        if not isinstance(client, anthropic.Anthropic):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ParamsError(
                f"SyncToolRunner needs a sync anthropic.Anthropic client, not {type(client).__name__!r}; "
                "with anthropic.AsyncAnthropic use ToolRunner and `async for`."
            )
        _refuse_eager_streams(stream, options)
        self._runner = ToolRunner.__new__(ToolRunner)
        self._runner._start(client, stream, options, from_sync_code=True)  # pyright: ignore[reportPrivateUsage]
        self._portal: BlockingPortal | None = None
        self._block: ExitStack | None = None  # inside ``with runner:``: the portal and the entered runner
        self._iterating = False
        self._left_running: threading.Event | None = None  # a step an interrupt left stopping (``_step``)

    # fmt: off
    @overload
    @classmethod
    def resume(cls, client: anthropic.Anthropic, *, stream: Literal[False] = False, output_format: None = None,
               **options: Unpack[ResumeArguments]) -> SyncToolRunner[Reply]: ...
    @overload
    @classmethod
    def resume(  # pyright: ignore[reportOverlappingOverload]  # a type[Any] | None takes the next one
        cls, client: anthropic.Anthropic, *, stream: Literal[False] = False, output_format: type[OutputT],
        **options: Unpack[ResumeArguments]) -> SyncToolRunner[ParsedReply[OutputT]]: ...
    @overload
    @classmethod
    def resume(cls, client: anthropic.Anthropic, *, stream: Literal[False] = False,
               output_format: type[Any] | None,
               **options: Unpack[ResumeArguments]) -> SyncToolRunner[Reply]: ...
    @overload
    @classmethod
    def resume(cls, client: anthropic.Anthropic, *, stream: Literal[True], output_format: type[Any] | None = None,
               **options: Unpack[ResumeArguments]) -> SyncToolRunner[SyncReplyStream]: ...
    # fmt: on
    @classmethod
    def resume(
        cls, client: anthropic.Anthropic, *, stream: bool = False, **options: Any
    ) -> SyncToolRunner[Any]:
        """Go on with a saved run (see ``ToolRunner.resume``): ``SyncToolRunner.resume(client,
        run_id=..., checkpointer=..., tools=[...])``; with ``stream=True`` it yields the SDK's sync
        streams, as ``SyncToolRunner(stream=True)`` does."""
        if not isinstance(client, anthropic.Anthropic):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ParamsError(
                f"SyncToolRunner needs a sync anthropic.Anthropic client, not {type(client).__name__!r}."
            )
        _refuse_eager_streams(stream, options)
        _refuse_inside_an_event_loop()
        with start_blocking_portal() as portal:
            runner = portal.call(
                partial(ToolRunner._resumed, client, stream, options, from_sync_code=True)  # pyright: ignore[reportPrivateUsage]
            )
        sync = cast("SyncToolRunner[Any]", cls.__new__(cls))
        sync._runner = runner
        sync._portal = None
        sync._block = None
        sync._iterating = False
        sync._left_running = None
        return sync

    @property
    def runner(self) -> ToolRunner:
        """The async runner underneath."""
        return self._runner

    @property
    def state(self) -> RunState:
        """The run's state (see ``ToolRunner.state``)."""
        return self._runner.state

    @property
    def params(self) -> Mapping[str, Any]:
        """The params of the next request; ``params["messages"]`` is the history."""
        return self._runner.params

    @property
    def messages(self) -> Sequence[Any]:
        """The history."""
        return self._runner.messages

    @property
    def last_message(self) -> Reply | None:
        """The latest reply, or ``None`` before the first."""
        return self._runner.last_message

    @property
    def requests_sent(self) -> int:
        """How many requests got a reply."""
        return self._runner.requests_sent

    @property
    def usage(self) -> UsageTracker:
        """Token usage per request and in total, and the cost when the model has a price (the run's own)."""
        return self._runner.usage

    @property
    def tree_usage(self) -> UsageTracker:
        """The usage of the run's tree: its own requests, then its sub-agents' (``ToolRunner.tree_usage``)."""
        return self._runner.tree_usage

    def usage_by_agent(self) -> dict[tuple[str, ...], UsageTracker]:
        """The tree's usage by the path of sub-agents' names (``ToolRunner.usage_by_agent()``)."""
        return self._runner.usage_by_agent()

    @property
    def sub_runs_in_progress(self) -> list[SubRunProgress]:
        """The sub-agents' runs in flight in the run's tree (``ToolRunner.sub_runs_in_progress``)."""
        return self._runner.sub_runs_in_progress

    @property
    def finished(self) -> bool:
        """Whether the loop has ended."""
        return self._runner.finished

    @property
    def end_reason(self) -> EndReason | None:
        """Why the loop ended, or ``None`` while it goes on (see ``ToolRunner.end_reason``)."""
        return self._runner.end_reason

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """Append messages to the history (see ``ToolRunner.push_messages``)."""
        self._runner.push_messages(*messages)

    def append_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """The SDK runner's name for ``push_messages()``."""
        self._runner.push_messages(*messages)

    def add_tools(self, *tools: object) -> None:
        """Give the model more tools mid-run (see ``ToolRunner.add_tools``)."""
        self._runner.add_tools(*tools)

    def remove_tools(self, *tools: object) -> None:
        """Take tools away from the model mid-run (see ``ToolRunner.remove_tools``)."""
        self._runner.remove_tools(*tools)

    def compact_before_next_turn(self, compaction: Mapping[str, Any] | None = None) -> None:
        """Compact the conversation before the next turn (see ``ToolRunner.compact_before_next_turn``)."""
        self._runner.compact_before_next_turn(compaction)

    def set_messages_params(
        self, params: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]
    ) -> None:
        """Replace or map the params (see ``ToolRunner.set_messages_params``)."""
        self._runner.set_messages_params(params)

    @property
    def pending_approvals(self) -> list[ToolCall]:
        """The calls of the current turn that wait for a decision (see ``ToolRunner``)."""
        return self._runner.pending_approvals

    def approve(self, tool_use_id: str, *, input: object = None, by: str | None = None) -> None:
        """Approve a call that waits (see ``ToolRunner.approve``)."""
        self._runner.approve(tool_use_id, input=input, by=by)

    def deny(self, tool_use_id: str, reason: str, *, by: str | None = None) -> None:
        """Deny a call (see ``ToolRunner.deny``)."""
        self._runner.deny(tool_use_id, reason, by=by)

    def answer(
        self, tool_use_id: str, result: object, *, is_error: bool = False, by: str | None = None
    ) -> None:
        """Answer a call with a result computed elsewhere (see ``ToolRunner.answer``)."""
        self._runner.answer(tool_use_id, result, is_error=is_error, by=by)

    def generate_tool_response(self) -> ToolResultMessage | None:
        """The tool_result message for the pending calls, or ``None`` (cached; see ``ToolRunner``)."""
        return self._call(self._runner.generate_tool_response)

    def generate_tool_call_response(self) -> ToolResultMessage | None:
        """The SDK runner's name for ``generate_tool_response()``."""
        return self._call(self._runner.generate_tool_response)

    @overload
    def until_done(self: SyncToolRunner[Reply]) -> Reply: ...
    @overload
    def until_done(self: SyncToolRunner[ParsedReply[OutputT]]) -> ParsedReply[OutputT]: ...
    @overload
    def until_done(self) -> Reply: ...
    def until_done(self) -> Reply:
        """Run the loop to its end and return the final reply (see ``ToolRunner.until_done``: a run
        that pauses for decisions raises ``AwaitingApprovalError``)."""
        return self._call(self._runner.until_done)

    def close(self) -> None:
        """End the loop now (see ``ToolRunner.close``)."""
        self._runner.close()

    def __enter__(self) -> Self:
        """The blocking ``async with``: one event loop, in a thread of its own, runs every step
        until the block is left, and one task in it enters the runner and leaves it, so toolsets
        (an MCP session) open and close in one task, and the tools stay open across ``for`` loops
        and follow-ups in the block."""
        if self._portal is not None:
            raise ToolRunnerError(
                "this SyncToolRunner is already entered or being iterated; use one `with runner:` block around "
                "its loops (iterate inside it, never enter it twice), and leave a `for` loop before entering it."
            )
        _refuse_inside_an_event_loop()
        block = ExitStack()
        try:
            self._portal = block.enter_context(start_blocking_portal())
            block.enter_context(self._portal.wrap_async_context_manager(self._runner))
        except BaseException:
            self._portal = None
            block.close()
            raise
        self._block = block
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        """Leave the runner as ``async with`` does (see ``ToolRunner``): the tools close, and the
        loop ends, unless the run waits for a decision or the block is left by an exception."""
        block, self._block = self._block, None
        if exc is not None and not isinstance(exc, Exception):
            # Raised in this thread (Ctrl-C, SystemExit), so not the event loop's to raise: on asyncio,
            # an interrupt that leaves a task stops the loop. The runner learns that the block failed
            # (the run stays resumable), and the exception goes on from here, as itself.
            exc_type, exc, tb = _BlockInterrupted, _BlockInterrupted(repr(exc)), None
        try:
            if block is not None:
                block.__exit__(exc_type, exc, tb)
        finally:
            self._portal = None

    def __iter__(self) -> Iterator[SyncItemT]:
        return self._iterate()

    def _iterate(self) -> Generator[SyncItemT]:
        if self._iterating:
            raise ToolRunnerError(
                "this SyncToolRunner is already being iterated (a `for` loop over it inside another); finish or "
                "break the outer loop first, or steer it from the outer loop's body."
            )
        with self._open_portal() as portal:
            self._iterating = True
            try:
                while (message := self._step(portal, self._next)) is not None:
                    yield cast(SyncItemT, message)
            finally:
                self._iterating = False

    async def _next(self) -> object | None:
        # StopAsyncIteration must not cross the portal's futures.
        try:
            item: object = await self._runner.__anext__()
        except StopAsyncIteration:
            return None
        return item

    def _call(self, function: Callable[[], Awaitable[T]]) -> T:
        if self._portal is not None:  # inside a ``for`` loop over this runner
            return self._step(self._portal, function)
        with self._open_portal() as portal:
            return self._step(portal, function)

    def _step(self, portal: BlockingPortal, function: Callable[[], Awaitable[T]]) -> T:
        """Run one step of the async runner in the portal's event loop, and wait for it.

        An interrupt the step raises in the loop's thread (a tool's ``KeyboardInterrupt`` or
        ``SystemExit``) is carried out of the loop, which on asyncio it would stop, and raised here
        as itself. If this thread's wait is interrupted (Ctrl-C), the step is cancelled and waited
        for before the interrupt goes on: a sync tool that is running finishes in its thread and its
        result is kept, and nothing of the run is left running behind the caller (a ``with
        runner:`` block leaves the runner after the step stopped). A second Ctrl-C stops that wait:
        the step then goes on stopping behind the caller, and the next step waits for its end
        first, so it is not taken for another task advancing the runner.
        """
        left = self._left_running
        if left is not None:
            left.wait()  # interruptible (Ctrl-C): then it is still the one to wait for
            self._left_running = None
        stopped = threading.Event()

        async def step() -> tuple[T | None, BaseException | None]:
            try:
                return await function(), None
            except (anyio.get_cancelled_exc_class(), Exception):
                raise
            except BaseException as interrupt:  # KeyboardInterrupt, SystemExit, from a tool
                return None, interrupt
            finally:
                stopped.set()

        future = portal.start_task_soon(step)
        try:
            value, interrupt = future.result()
        except BaseException:
            if future.cancel():  # not done: this thread's wait was interrupted, and the step goes on
                try:
                    while not stopped.wait(0.1):
                        try:
                            portal.call(_nothing)
                        except RuntimeError:  # the portal stopped: nothing of the step runs any more
                            break
                except BaseException:  # a second Ctrl-C: the step stops behind the caller
                    self._left_running = stopped
                    raise
            raise
        if interrupt is not None:
            raise interrupt
        return cast(T, value)

    @contextmanager
    def _open_portal(self) -> Generator[BlockingPortal]:
        if self._block is not None:  # inside ``with runner:``: its portal serves every step
            assert self._portal is not None
            yield self._portal
            return
        if self._portal is not None:
            raise ToolRunnerError(
                "this SyncToolRunner is already being iterated (a `for` loop over it inside another); finish or "
                "break the outer loop first, or steer it from the outer loop's body."
            )
        _refuse_inside_an_event_loop()
        with start_blocking_portal() as portal:
            self._portal = portal
            try:
                yield portal
            finally:
                self._portal = None


class _BlockInterrupted(Exception):
    """What the runner's exit is told when ``with runner:`` is left by an interrupt of the caller's
    thread (``KeyboardInterrupt``, ``SystemExit``): that the block failed, not the interrupt itself."""


def _nothing() -> None:
    """Run in the portal to ask whether it still runs (``BlockingPortal.call`` raises if not)."""


def _refuse_eager_streams(stream: bool, options: Mapping[str, object]) -> None:
    if stream and options.get("run_tools_eagerly"):
        raise ParamsError(
            "SyncToolRunner(stream=True) does not take run_tools_eagerly=True: your code reads each stream in "
            "its own thread, and the tools start once the reply is complete. Leave run_tools_eagerly out, or "
            "use ToolRunner with an anthropic.AsyncAnthropic client to start tools while a reply streams."
        )


def _refuse_inside_an_event_loop() -> None:
    """A blocking runner would stall the event loop it is called from (and every task on it)."""
    inside: str | None
    try:
        asyncio.get_running_loop()
        inside = "asyncio"
    except RuntimeError:
        inside = "trio" if _in_trio_run() else None
    if inside is not None:
        raise ToolRunnerError(
            f"SyncToolRunner was used inside a running {inside} event loop, which it would block; use "
            "ToolRunner with `async for` there (an anthropic.AsyncAnthropic client is best), or run the sync "
            "code in a worker thread."
        )


def _in_trio_run() -> bool:
    """Whether this thread runs a trio event loop. ``trio.lowlevel.in_trio_run()`` says so from
    trio 0.29 on; anyio runs on trio from 0.26.1, so ask for the run's token, which every trio has."""
    trio = sys.modules.get("trio")
    if trio is None:
        return False
    try:
        trio.lowlevel.current_trio_token()
    except RuntimeError:
        return False
    return True

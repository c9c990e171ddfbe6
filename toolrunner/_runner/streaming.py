"""``stream=True``: watching the SDK's stream as the loop body (or the runner) reads it.

The runner yields the SDK's own ``AsyncMessageStream``. To report text as it arrives, to start tool
calls as soon as their ``tool_use`` block closes, and to know whether the stream ended well, it
wraps the stream's event iterator: the same seam the SDK's own tool runner uses for its eager
tools. Whoever reads the stream (its events, its ``text_stream`` or ``get_final_message()``) drives
the wrapper.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any, TypeAlias, cast

import anyio.to_thread
from anthropic.lib.streaming import (
    AsyncMessageStreamManager,
    BetaAsyncMessageStreamManager,
    BetaMessageStream,
    BetaMessageStreamManager,
    MessageStream,
    MessageStreamManager,
)
from anthropic.types import Message
from anthropic.types.beta import BetaMessage

from .._core.errors import ToolRunnerError
from .._core.events import RunnerEvent, TextDelta
from .._core.types import ReplyStream, ToolCall

__all__ = ["StreamManager", "StreamWatch", "SyncStreamManager", "watch_stream", "watch_sync_stream"]

StreamManager: TypeAlias = AsyncMessageStreamManager[Any] | BetaAsyncMessageStreamManager[Any]
SyncStreamManager: TypeAlias = MessageStreamManager[Any] | BetaMessageStreamManager[Any]


class StreamWatch:
    """An open reply stream and what the runner saw of it."""

    def __init__(self, manager: StreamManager | SyncStreamManager, stream: Any) -> None:
        self.stream: ReplyStream = stream
        """The SDK's stream: an ``AsyncMessageStream``, or a sync ``MessageStream`` (``SyncToolRunner``)."""
        self.tool_use_ids: list[str] = []
        """The client tool_use blocks completed so far."""
        self.error: BaseException | None = None
        """What reading the stream raised, if anything (the body may have seen it first)."""
        self.complete = False
        """Whether ``message_stop`` arrived."""
        self._manager: StreamManager | SyncStreamManager | None = manager
        self.on_final: Callable[[Any], None] | None = None
        """Given the stream's final message when ``message_stop`` arrives (a typed answer's
        ``parsed_output`` is set on it then, as the SDK's stream sets it: ``_core.output``)."""

    def read_whole(self) -> Message | BetaMessage | None:
        """The reply, if whoever read the stream read it to its end (``message_stop`` arrived, and
        nothing failed); ``None`` otherwise. Reads nothing."""
        if not self.complete or self.error is not None:
            return None
        message: Message | BetaMessage = self.stream.current_message_snapshot
        return message

    async def final_message(self) -> Message | BetaMessage:
        """The reply, reading what is left of the stream; raises what broke the stream."""
        if self.error is not None:  # the body saw the stream fail
            raise self.error
        manager = self._manager
        message: Message | BetaMessage
        if isinstance(
            manager, MessageStreamManager | BetaMessageStreamManager
        ):  # a sync stream: read in a thread
            sync_stream = cast("MessageStream[Any] | BetaMessageStream[Any]", self.stream)
            message = await anyio.to_thread.run_sync(sync_stream.get_final_message)
        else:
            message = await self.stream.get_final_message()
        if self.error is not None:
            raise self.error
        if not self.complete:
            raise ToolRunnerError(
                "the reply's stream ended before message_stop; iterate the runner again to send the request again."
            )
        return message

    def see(
        self,
        event: Any,
        emit: Callable[[RunnerEvent], None] | None,
        on_tool_use: Callable[[ToolCall], None] | None,
    ) -> None:
        """Take in one event of the stream as it is read: a text delta goes to ``emit``, a client
        tool_use block that closes to ``on_tool_use`` (and is counted), ``message_stop`` completes it."""
        if event.type == "content_block_delta":
            if emit is not None and event.delta.type == "text_delta":
                emit(TextDelta(text=event.delta.text, index=event.index))
        elif event.type == "content_block_stop":
            block = event.content_block
            if block.type == "tool_use":
                self.tool_use_ids.append(block.id)
                if on_tool_use is not None:
                    on_tool_use(
                        ToolCall(
                            id=block.id,
                            name=block.name,
                            input=block.input,
                            toolset_name=getattr(block, "toolset_name", None),
                        )
                    )
        elif event.type == "message_stop":
            self.complete = True
            if self.on_final is not None:
                self.on_final(self.stream.current_message_snapshot)

    async def close(self) -> None:
        """Close the response (idempotent)."""
        manager, self._manager = self._manager, None
        if isinstance(manager, MessageStreamManager | BetaMessageStreamManager):
            await anyio.to_thread.run_sync(manager.__exit__, None, None, None)
        elif manager is not None:
            await manager.__aexit__(None, None, None)


async def watch_stream(
    manager: StreamManager,
    *,
    emit: Callable[[RunnerEvent], None] | None,
    on_tool_use: Callable[[ToolCall], None] | None,
) -> StreamWatch:
    """Send the request of ``manager`` and watch its stream: text deltas go to ``emit``, completed
    client tool_use blocks to ``on_tool_use``, as the events are read."""
    stream = await manager.__aenter__()
    watch = StreamWatch(manager, stream)
    inner: AsyncIterator[Any] = stream._iterator  # pyright: ignore[reportPrivateUsage]

    async def watched() -> AsyncIterator[Any]:
        try:
            async for event in inner:
                watch.see(event, emit, on_tool_use)
                yield event
        except Exception as error:
            watch.error = error
            raise

    stream._iterator = watched()  # pyright: ignore[reportPrivateUsage, reportAttributeAccessIssue]
    return watch


def watch_sync_stream(
    manager: SyncStreamManager, *, emit: Callable[[RunnerEvent], None] | None
) -> StreamWatch:
    """``watch_stream`` for a sync client's stream (blocking: call it in a worker thread). Its
    events are read, and reported, in the thread that reads the stream."""
    stream = manager.__enter__()
    watch = StreamWatch(manager, stream)
    inner: Iterator[Any] = stream._iterator  # pyright: ignore[reportPrivateUsage]

    def watched() -> Iterator[Any]:
        try:
            for event in inner:
                watch.see(event, emit, None)
                yield event
        except Exception as error:
            watch.error = error
            raise

    stream._iterator = watched()  # pyright: ignore[reportPrivateUsage]
    return watch

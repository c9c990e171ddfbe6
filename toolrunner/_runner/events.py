"""``runner.events()``: run the loop in the background and hand its events over as they happen."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager

import anyio

from .._core.events import Listener, RunnerEvent

__all__ = ["run_with_events"]


@asynccontextmanager
async def run_with_events(
    run: Callable[[], Awaitable[object]],
    listen: Callable[[Listener | None], Listener | None],
    backlog: Sequence[RunnerEvent] = (),
) -> AsyncGenerator[AsyncIterator[RunnerEvent]]:
    """Run ``run()`` in the background and hand over its events as they happen, after ``backlog``
    (events that happened before, which the iteration is about to act on).

    ``listen(listener)`` installs the runner's listener and returns the one it replaces, which
    keeps hearing every event and is put back at the end. The iteration ends when ``run()`` does;
    its error is raised as the block exits. Leaving the block early cancels ``run()``.
    """
    send, receive = anyio.create_memory_object_stream[RunnerEvent](float("inf"))
    for event in backlog:
        send.send_nowait(event)
    failure: list[BaseException] = []

    def emit(event: RunnerEvent) -> None:
        if previous is not None:
            previous(event)
        with contextlib.suppress(anyio.BrokenResourceError):  # the block was left: nobody listens
            send.send_nowait(event)

    async def drive() -> None:
        with send:
            try:
                await run()
            except Exception as error:
                failure.append(error)

    previous = listen(emit)
    try:
        async with anyio.create_task_group() as group, receive:
            group.start_soon(drive)
            yield receive
            group.cancel_scope.cancel()
    except BaseExceptionGroup as group_error:  # the body's own error: raise it as it was
        if len(group_error.exceptions) == 1:
            raise group_error.exceptions[0] from None
        raise
    finally:
        listen(previous)
    if failure:
        raise failure[0]

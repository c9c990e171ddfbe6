"""Group commit: the saves that one event loop asks of a store while a write is under way are
written together, in one transaction, by one worker thread.

Many runs that share a store save at about the same moments; handing each save to a worker thread
of its own costs more CPU than the save (threads contending for one connection, each a context
switch). Here the first save of an idle loop takes the write; the saves that arrive meanwhile
queue, and the first of them writes the whole queue when the write under way is done. A save
returns once its batch is committed (or failed), never before, so it is as durable as a save
written alone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Generic, TypeVar

import anyio
import anyio.lowlevel
import anyio.to_thread

__all__ = ["GroupCommit"]

T = TypeVar("T")
SIZES: list[int] = []


@dataclass(eq=False, slots=True)
class _Ticket(Generic[T]):
    item: T
    woken: anyio.Event = field(default_factory=anyio.Event)
    done: bool = False
    error: BaseException | None = None


@dataclass(eq=False, slots=True)
class _Queue(Generic[T]):
    waiting: list[_Ticket[T]] = field(default_factory=list[_Ticket[T]])
    busy: bool = False


class GroupCommit(Generic[T]):
    """Writes the items submitted in one event loop in batches, through ``write`` in a worker thread.

    Args:
        write: Writes a batch in one transaction (in a worker thread); returns, for each item in
            order, ``None`` or the error of that item alone. An error it raises fails the whole batch.
        name: A name for the loop-local queue (in error messages only).
    """

    def __init__(self, write: Callable[[Sequence[T]], Sequence[Exception | None]], *, name: str) -> None:
        self._write = write
        # Each event loop has its own queue: the events that wake its tasks belong to it.
        self._queues = anyio.lowlevel.RunVar[_Queue[T]](name)

    async def submit(self, item: T) -> None:
        """Write ``item`` with the batch it joins; return when that batch is committed.

        Raises:
            Exception: The item's own error, or the batch's.
        """
        queue = self._queues.get(None)
        if queue is None:
            queue = _Queue[T]()
            self._queues.set(queue)
        ticket = _Ticket(item)
        queue.waiting.append(ticket)
        # Shielded: a save that was asked for completes or fails as a whole before a cancellation
        # reaches its caller (as one written in a worker thread of its own does), so the caller
        # knows whether the store holds it; and a queued save is never left without a writer.
        with anyio.CancelScope(shield=True):
            if queue.busy:
                await ticket.woken.wait()  # done, or woken to write the queue
            else:
                queue.busy = True
                # Let the tasks that are ready run first: the saves they make join this batch.
                await anyio.lowlevel.cancel_shielded_checkpoint()
            if not ticket.done:
                await self._flush(queue)
        if ticket.error is not None:
            raise ticket.error

    async def _flush(self, queue: _Queue[T]) -> None:
        batch, queue.waiting = queue.waiting, []
        SIZES.append(len(batch))
        errors: Sequence[BaseException | None] = [None] * len(batch)
        try:
            errors = await anyio.to_thread.run_sync(self._write, [ticket.item for ticket in batch])
        except BaseException as error:
            errors = [error] * len(batch)
            raise
        finally:
            for ticket, failure in zip(batch, errors, strict=True):
                ticket.done, ticket.error = True, failure
                ticket.woken.set()
            if queue.waiting:
                queue.waiting[0].woken.set()  # it writes what queued meanwhile
            else:
                queue.busy = False

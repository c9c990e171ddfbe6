"""Waiting for runs to take up (``RunStore.wait_ready``), for the stores that look themselves:
``MemoryCheckpointer`` (told by its own saves) and ``SQLiteCheckpointer`` (told by its own saves,
and looking every ``poll_interval`` seconds for those of other processes). ``PostgresCheckpointer``
is told by the server (``LISTEN``) instead.
"""

from __future__ import annotations

import threading
from collections.abc import Awaitable, Callable

import anyio

from .leases import check_seconds, wait_time

__all__ = ["Look", "Waiters", "check_wait", "wait_until_claimable"]

Look = Callable[[], Awaitable[tuple[bool, float | None, float]]]
"""Reads the store: whether a run is claimable now, the earliest lease of a running or ready run
still to run out (or ``None``), and the store's time."""


class Waiters:
    """The tasks of this process that wait for a run to take up, woken by the store's saves that
    make a run ready and by leases given up. Only those of the waking thread are woken (an event
    belongs to its event loop); the others find the run when they look again."""

    def __init__(self) -> None:
        self._events: list[tuple[anyio.Event, int]] = []

    def wake(self) -> None:
        """Wake every task of this thread that waits."""
        thread = threading.get_ident()
        events, self._events = self._events, []
        for event, owner in events:
            if owner == thread:
                event.set()
            else:
                self._events.append((event, owner))

    async def wait(self, seconds: float) -> None:
        """Wait until woken, or ``seconds``."""
        entry = anyio.Event(), threading.get_ident()
        self._events.append(entry)
        try:
            with anyio.move_on_after(seconds):
                await entry[0].wait()
        finally:
            if entry in self._events:
                self._events.remove(entry)


def check_wait(poll_interval: float) -> None:
    """The argument of ``wait_ready``, checked (``_stores.leases.check_seconds``)."""
    check_seconds(poll_interval, "poll_interval", "1.0")


async def wait_until_claimable(look: Look, waiters: Waiters, poll_interval: float | None) -> None:
    """Look, and wait until woken, the next lease runs out or ``poll_interval`` passes (``None``:
    the store is told of every change), then look again, until a run is claimable."""
    while True:
        found, next_expiry, now = await look()
        if found:
            return
        seconds = wait_time(now, next_expiry)
        if poll_interval is not None:
            seconds = min(seconds, poll_interval)
        await waiters.wait(seconds)

"""A run's log as a client follows it (``Session.follow``), whatever the protocol: from where the
client says it is, never from the middle of a block, to the end of the request's part."""

from __future__ import annotations

import anyio
import pytest

from toolrunner.web._events import Entry, RunFinished, TextDelta, TextEnd, TextStart, UIEvent
from toolrunner.web._session import Session

pytestmark = pytest.mark.anyio


async def followed(session: Session, after: int, *later: UIEvent) -> list[UIEvent]:
    """What ``follow(after)`` yields while ``later`` is logged once it waits."""
    got: list[UIEvent] = []

    async def read() -> None:
        async for entry in session.follow(after):
            if isinstance(entry, Entry):
                got.append(entry.event)

    async with anyio.create_task_group() as group:
        group.start_soon(read)
        await anyio.wait_all_tasks_blocked()
        for event in later:
            session.emit(event)
    return got


async def test_an_after_past_the_logs_end_follows_from_the_end_to_the_end_event() -> None:
    session = Session("r", running=True)
    session.emit(TextStart("m"))
    got = await followed(session, 10**30, TextDelta("m", "hi"), TextEnd("m"), RunFinished("model"))
    assert got[-1] == RunFinished("model")

"""Where MCP sessions live: a toolset that holds a cancel scope between ``open()`` and ``close()``.

An MCP session runs a task group from the moment it is entered until it is exited, and anyio and
trio require that group to be exited in the task that entered it, while it is that task's
innermost cancel scope. These tests hold the runner to that with the smallest such toolset, one
that holds a task group of its own.
"""

from __future__ import annotations

from collections.abc import Sequence

import anyio
import anyio.abc
import pytest

from tests.helpers import MODEL, USER, results_of
from toolrunner import ToolRunner, Toolset, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@tool
def ping() -> str:
    """Ping."""
    return "pong"


class Holding(Toolset):
    """Holds a task group (with a task in it) from open() to close(), as an MCP session does."""

    def __init__(self) -> None:
        super().__init__(name="holding")
        self.group: anyio.abc.TaskGroup | None = None
        self.tasks: list[str] = []

    def tools(self) -> Sequence[object]:
        return (ping,)

    async def open(self) -> None:
        self.group = anyio.create_task_group()
        await self.group.__aenter__()
        self.group.start_soon(anyio.sleep_forever)
        self.tasks.append(f"open in {anyio.get_current_task().id}")

    async def close(self) -> None:
        group, self.group = self.group, None
        assert group is not None
        self.tasks.append(f"close in {anyio.get_current_task().id}")
        group.cancel_scope.cancel()
        # Raises (RuntimeError on asyncio, a corrupted cancel-scope stack on trio) unless this is
        # the task that entered the group and the group is its innermost scope.
        await group.__aexit__(None, None, None)


def runner_for(toolset: Toolset) -> ToolRunner:
    fake = FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="a")), text_reply("Done.")])
    return ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[toolset])


async def test_a_toolset_holding_a_task_group_opens_and_closes_in_the_task_that_enters_the_runner(
    caplog: pytest.LogCaptureFixture,
) -> None:
    holding = Holding()
    async with runner_for(holding) as runner:
        await runner.until_done()
    task = anyio.get_current_task().id
    assert holding.tasks == [f"open in {task}", f"close in {task}"]
    assert results_of(runner.messages[2]) == [("a", "pong", False)]
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


async def test_a_toolset_holding_a_task_group_closes_when_a_runner_not_entered_ends(
    caplog: pytest.LogCaptureFixture,
) -> None:
    holding = Holding()
    runner = runner_for(holding)
    await runner.until_done()
    task = anyio.get_current_task().id
    assert holding.tasks == [f"open in {task}", f"close in {task}"]
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


async def test_a_toolset_holding_a_task_group_closes_when_the_runner_is_left_by_cancellation(
    caplog: pytest.LogCaptureFixture,
) -> None:
    holding = Holding()
    with anyio.CancelScope() as scope:
        async with runner_for(holding):
            scope.cancel()
            await anyio.sleep_forever()
    assert scope.cancelled_caught
    assert [event.split()[0] for event in holding.tasks] == ["open", "close"]
    assert not [record for record in caplog.records if record.levelname == "ERROR"]


async def test_every_toolset_closes_even_when_closing_one_fails(caplog: pytest.LogCaptureFixture) -> None:
    class Failing(Holding):
        def tools(self) -> Sequence[object]:
            return ()

        async def close(self) -> None:
            await super().close()
            raise OSError("the connection was already gone")

    first, second = Holding(), Failing()
    fake = FakeMessagesAPI([text_reply("Done.")])
    async with ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[first, second]
    ) as runner:
        await runner.until_done()
    assert [event.split()[0] for event in first.tasks + second.tasks] == ["open", "close", "open", "close"]
    assert [record.getMessage() for record in caplog.records if record.levelname == "ERROR"] == [
        f"Closing the toolset {second!r} failed"
    ]

"""A tool cancelled from inside (it awaits something someone else cancelled) gets an ``is_error`` result
and its siblings run once; a cancellation from outside still propagates (docs/errors.md, "Hostile
replies").
"""

from __future__ import annotations

import asyncio

import anyio
import pytest

from tests.support.counted_tools import look_numbered as look, runs
from tests.support.helpers import make_runner, results_of, roles, sent_messages
from toolrunner import tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

# -- 1. a tool cancelled from inside ----------------------------------------------------------------


@tool
async def cancelled_inside() -> str:
    """Await something that someone else cancelled."""
    runs["cancelled_inside"] += 1
    if anyio.get_cancelled_exc_class() is asyncio.CancelledError:
        future = asyncio.get_running_loop().create_future()
        future.cancel()
        await future  # raises CancelledError, but this task was not cancelled
    raise asyncio.CancelledError  # on trio, asyncio's CancelledError is just an exception
    return "never"


async def test_a_tool_cancelled_from_inside_gets_an_error_result_and_its_siblings_run_once() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("cancelled_inside", {}, id="c"), tool_call("look", {"q": "a"}, id="a")),
            text_reply("ok"),
        ]
    )
    with anyio.fail_after(10):
        await make_runner(fake, cancelled_inside, look).until_done()
    assert runs == {"cancelled_inside": 1, "a": 1}
    [(_, content, is_error), (_, sibling, sibling_error)] = results_of(sent_messages(fake)[1][2])
    assert is_error
    assert "cancelled from inside the tool" in content
    assert (sibling, sibling_error) == ("found a (run 1)", False)


async def test_a_cancellation_from_outside_still_propagates() -> None:
    started = anyio.Event()

    @tool
    async def slow() -> str:
        """Take a while."""
        runs["slow"] += 1
        started.set()
        await anyio.sleep_forever()
        return "never"

    fake = FakeMessagesAPI([tool_reply(tool_call("slow", {}, id="s")), text_reply("ok")])
    runner = make_runner(fake, slow)
    with anyio.CancelScope() as scope:
        async for _ in runner:
            async with anyio.create_task_group() as group:
                group.start_soon(runner.generate_tool_response)
                await started.wait()
                scope.cancel()
    assert scope.cancelled_caught
    assert roles(runner.messages) == ["user"]  # nothing appended: the turn can be finished again

"""Tools at the edges of a turn, where the order of the run's effects decides (``_core``): a tool
asking for its own turn's results is refused; a resumed run's toolsets are open before its calls
run; held calls (``defer_tool_call``) do not start early.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from tests.support.counted_tools import look_keyed as look, runs
from tests.support.helpers import MODEL, USER, make_runner, plain, results_of
from toolrunner import (
    Checkpoint,
    MemoryCheckpointer,
    Phase,
    SyncToolRunner,
    ToolContext,
    ToolRunner,
    tool,
)
from toolrunner.mcp import MCPToolset
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

# -- tools ---------------------------------------------------------------------------------------


async def test_a_tool_that_asks_for_its_own_turns_results_is_refused_instead_of_waiting_forever() -> None:
    @tool
    async def selfish(context: ToolContext) -> str:
        """Wait for the turn's results."""
        await context.runner.generate_tool_response()  # type: ignore[attr-defined]
        return "never"

    fake = FakeMessagesAPI([tool_reply(tool_call("selfish", {}, id="s")), text_reply("Done.")])
    runner = make_runner(fake, selfish)
    with anyio.fail_after(30):  # a guard against the hang this test is about, not a measurement
        await runner.until_done()
    [(call_id, content, is_error)] = results_of(runner.messages[2])
    assert call_id == "s"
    assert is_error
    assert "its own result forever" in str(content)


class Adding(MCPServer[Any]):
    def __init__(self) -> None:
        super().__init__("adding", log_level="WARNING")

        @self.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            runs["add"] += 1
            return a + b


@pytest.mark.parametrize("entered", [True, False], ids=["async with", "not entered"])
async def test_a_resumed_run_opens_its_mcp_toolset_before_its_calls_run(entered: bool) -> None:
    server = Adding()
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([tool_reply(tool_call("add", {"a": 2, "b": 3}, id="a")), text_reply("5.")])
    async with make_runner(fake, MCPToolset(Client(server)), checkpointer=store, run_id="r") as first:
        async for _ in first:
            break
        saved = await store.load("r")  # as the process that dies here left it
    assert saved is not None
    crashed = MemoryCheckpointer()
    await crashed.save(Checkpoint("r", saved.state, 0, 0, 0))
    again = await ToolRunner.resume(
        fake.async_client(), checkpointer=crashed, run_id="r", tools=[MCPToolset(Client(server))]
    )
    if entered:
        async with again:
            await again.until_done()
    else:
        await again.until_done()
    assert runs == Counter({"add": 1})
    [(_, content, is_error)] = results_of(again.messages[2])
    assert not is_error, content


def test_a_resumed_sync_run_streams() -> None:
    from anthropic.lib.streaming import MessageStream

    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    first = SyncToolRunner(
        fake.client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look],
        checkpointer=store,
        run_id="r",
    )
    for _ in first:
        break
    again = SyncToolRunner.resume(fake.client(), stream=True, checkpointer=store, run_id="r", tools=[look])
    kinds = [type(stream) for stream in again]
    assert kinds == [MessageStream]
    assert again.end_reason == "model"
    assert plain(again.messages[-1])["content"] == [{"type": "text", "text": "Done."}]


async def test_a_deferred_call_does_not_start_while_its_reply_streams() -> None:
    started: list[str] = []
    one_started = anyio.Event()

    @tool
    async def act(n: int, context: ToolContext) -> str:
        """Act."""
        started.append(context.call.id)
        one_started.set()
        return f"did {n}"

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("act", {"n": 1}, id="one"), tool_call("act", {"n": 2}, id="two")),
            text_reply("Done."),
        ]
    )
    runner = ToolRunner(
        fake.async_client(), stream=True, model=MODEL, max_tokens=64, messages=[USER], tools=[act],
        run_tools_eagerly=True,
    )  # fmt: skip
    held: list[list[str]] = []
    async with runner:
        async for stream in runner:
            async for event in stream:
                if (
                    event.type == "content_block_start"
                    and event.content_block.type == "tool_use"
                    and event.content_block.id == "two"
                ):
                    runner.defer_tool_call(event.content_block)
            await stream.get_final_message()
            held.append([call.id for call in runner.deferred_tool_calls])
            if held[-1]:
                with anyio.fail_after(10):  # what starts early starts (however loaded the machine)
                    await one_started.wait()
                await anyio.sleep(0.01)  # and the deferred call, had it been started, would have too
                assert started == ["one"]
    assert held == [["two"], []]
    assert sorted(started) == ["one", "two"]
    assert runner.state.phase is Phase.DONE

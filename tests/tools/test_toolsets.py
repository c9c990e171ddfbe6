"""Toolsets and stateful tools: who opens them, who closes them, and tools that change mid-run."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from anthropic.lib.tools import BetaRunnableToolset, beta_tool
from anthropic.lib.tools.agent_toolset import AgentToolContext, beta_bash_tool
from anthropic.tools import BetaToolsetCallContext
from anthropic.types.beta import BetaComputerToolset20260801Param

from tests.support.helpers import MODEL, USER, results_of
from toolrunner import SyncToolRunner, ToolRunner, ToolRunnerError, Toolset, tool
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@tool
def ping() -> str:
    """Ping."""
    return "pong"


@tool
def pong() -> str:
    """Pong."""
    return "ping"


class Session(Toolset):
    """A toolset holding a 'session': it records where it was opened and closed, and its tools can change."""

    def __init__(self) -> None:
        super().__init__(name="session")
        self.events: list[tuple[str, int]] = []
        self.listed: Sequence[object] = (ping,)

    def tools(self) -> Sequence[object]:
        return self.listed

    async def open(self) -> None:
        self.events.append(("open", anyio.get_current_task().id))

    async def close(self) -> None:
        self.events.append(("close", anyio.get_current_task().id))


def two_turns() -> FakeMessagesAPI:
    return FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="a")), text_reply("Done.")])


def runner_for(fake: FakeMessagesAPI, tools: list[Any], **options: Any) -> ToolRunner:
    return ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=tools, **options
    )


async def test_an_entered_runner_opens_its_toolsets_and_closes_them_on_exit_in_its_task() -> None:
    session = Session()
    async with runner_for(two_turns(), [session]) as runner:
        assert [event for event, _ in session.events] == ["open"]
        await runner.until_done()
        assert [event for event, _ in session.events] == ["open"]  # the loop ended; the block has not
    task = anyio.get_current_task().id
    assert session.events == [("open", task), ("close", task)]
    assert results_of(runner.messages[2]) == [("a", "pong", False)]
    assert not session.is_open


async def test_without_async_with_the_toolsets_open_before_the_first_request_and_close_when_the_loop_ends() -> (
    None
):
    session = Session()
    runner = runner_for(two_turns(), [session])
    assert session.events == []
    await runner.until_done()
    assert [event for event, _ in session.events] == ["open", "close"]


async def test_a_toolset_you_opened_is_shared_and_never_closed_by_a_runner() -> None:
    session = Session()
    async with session:
        for _ in range(2):
            async with runner_for(two_turns(), [session]) as runner:
                await runner.until_done()
        assert [event for event, _ in session.events] == ["open"]
    assert [event for event, _ in session.events] == ["open", "close"]


async def test_a_toolset_you_opened_with_open_is_open_and_never_opened_again_by_a_runner() -> None:
    session = Session()
    await session.open()
    assert session.is_open
    await session.open()
    async with runner_for(two_turns(), [session]) as runner:
        await runner.until_done()
    assert [event for event, _ in session.events] == ["open"]
    assert session.is_open
    await session.close()
    await session.close()
    assert [event for event, _ in session.events] == ["open", "close"]
    assert not session.is_open


class Layered(Session):
    """A toolset whose open() and close() call the ones of its parent class."""

    async def open(self) -> None:
        await super().open()
        self.events.append(("layered open", 0))

    async def close(self) -> None:
        self.events.append(("layered close", 0))
        await super().close()


async def test_open_and_close_that_call_the_parents_run_each_layer_once() -> None:
    layered = Layered()
    async with runner_for(two_turns(), [layered]) as runner:
        await runner.until_done()
    assert [event for event, _ in layered.events] == ["open", "layered open", "layered close", "close"]
    assert not layered.is_open


async def test_two_tasks_opening_one_toolset_open_it_once() -> None:
    release = anyio.Event()

    class Slow(Session):
        async def open(self) -> None:
            await super().open()
            await release.wait()

    slow = Slow()
    async with anyio.create_task_group() as group:
        group.start_soon(slow.open)
        group.start_soon(slow.open)
        await anyio.wait_all_tasks_blocked()
        release.set()
    assert [event for event, _ in slow.events] == ["open"]
    assert slow.is_open
    await slow.close()


async def test_a_toolset_that_lists_other_tools_is_read_again_before_the_next_request() -> None:
    session = Session()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("ping", {}, id="a")),
            tool_reply(tool_call("pong", {}, id="b")),
            text_reply("Done."),
        ]
    )
    async with runner_for(fake, [session]) as runner:
        async for message in runner:
            if message.stop_reason == "tool_use" and runner.requests_sent == 1:
                session.listed = (ping, pong)  # the server's list changed (MCP: list_changed)
    assert [[tool["name"] for tool in request.tools] for request in fake.requests] == [
        ["ping"],
        ["ping", "pong"],
        ["ping", "pong"],
    ]
    assert results_of(runner.messages[4]) == [("b", "ping", False)]


class Computer(BetaRunnableToolset):
    toolset_name = "computer"

    def __init__(self) -> None:
        self.closed = 0

    def to_dict(self) -> BetaComputerToolset20260801Param:
        return {"type": "computer_toolset_20260801"}

    def call(self, context: BetaToolsetCallContext, name: str, input: Mapping[str, object]) -> str:
        return name

    def close(self) -> None:
        super().close()
        self.closed += 1


async def test_sdk_toolsets_and_tools_with_a_cleanup_hook_are_closed_when_the_runner_exits() -> None:
    closed: list[str] = []

    @beta_tool
    def lookup(q: str) -> str:
        """Lookup."""
        return q

    lookup.close = lambda: closed.append("lookup")
    computer = Computer()
    async with runner_for(two_turns(), [computer, lookup, ping]) as runner:
        await runner.until_done()
        assert computer.closed == 0
    assert computer.closed == 1
    assert closed == ["lookup"]


@pytest.mark.parametrize("entered", [True, False], ids=["async-with", "loop-end"])
async def test_an_sdk_tool_the_body_took_out_of_tools_is_closed_all_the_same(entered: bool) -> None:
    """A runner runs the cleanup of every SDK tool it was given, also one that the loop body swapped
    out of ``tools`` with ``set_messages_params()`` before the end."""
    closed: list[str] = []

    @beta_tool
    def lookup(q: str) -> str:
        """Lookup."""
        return q

    lookup.close = lambda: closed.append("lookup")
    fake = FakeMessagesAPI([tool_reply(tool_call("lookup", {"q": "x"})), text_reply("Done.")])
    runner = runner_for(fake, [lookup])

    async def loop() -> None:
        async for message in runner:
            if message.stop_reason == "tool_use":
                runner.set_messages_params(lambda params: {**params, "tools": [ping]})

    if entered:
        async with runner:
            await loop()
            assert closed == []  # entered: open until the block exits
    else:
        await loop()
    assert closed == ["lookup"]
    assert [tool["name"] for tool in fake.requests[-1].body["tools"]] == ["ping"]


async def test_after_the_loop_closed_its_sdk_tools_a_follow_up_needs_async_with() -> None:
    computer = Computer()
    fake = FakeMessagesAPI([text_reply("One."), text_reply("Two.")])
    runner = runner_for(fake, [computer])
    await runner.until_done()
    assert computer.closed == 1
    runner.push_messages({"role": "user", "content": "And?"})
    with pytest.raises(ToolRunnerError, match=r"is closed .* enter the runner \(`async with runner:`"):
        await runner.until_done()

    computer = Computer()
    async with runner_for(FakeMessagesAPI([text_reply("One."), text_reply("Two.")]), [computer]) as runner:
        await runner.until_done()
        runner.push_messages({"role": "user", "content": "And?"})
        await runner.until_done()
        assert computer.closed == 0
    assert computer.closed == 1


async def test_sdk_tools_inside_a_toolset_belong_to_the_toolset() -> None:
    computer = Computer()
    shared = Toolset([computer, ping])
    async with shared:
        for _ in range(2):
            async with runner_for(two_turns(), [shared]) as runner:
                await runner.until_done()
        assert computer.closed == 0
    assert computer.closed == 1


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.skipif(not Path("/bin/bash").exists(), reason="the agent toolset's bash tool runs /bin/bash")
async def test_the_agent_toolsets_bash_shell_is_closed_when_the_runner_exits(tmp_path: Path) -> None:
    bash = beta_bash_tool(AgentToolContext(workdir=tmp_path))
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("bash", {"command": "echo $$"}, id="a")), text_reply("Done.")]
    )
    async with runner_for(fake, [bash]) as runner:
        await runner.until_done()
        [(_, output, is_error)] = results_of(runner.messages[2])
        assert not is_error
        pid = int(output.strip())
        assert _alive(pid)
    assert not _alive(pid)


def test_the_sync_runner_closes_its_tools_when_the_loop_ends_or_the_block_exits() -> None:
    computer = Computer()
    fake = FakeMessagesAPI([message_reply([{"type": "text", "text": "Hi."}], stop_reason="end_turn")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=100, messages=[USER], tools=[computer])
    runner.until_done()
    assert computer.closed == 1

    computer = Computer()
    fake = FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="a")), text_reply("Done.")])
    with SyncToolRunner(
        fake.client(), model=MODEL, max_tokens=100, messages=[USER], tools=[computer, ping]
    ) as sync:
        for _ in sync:
            break
        assert computer.closed == 0
    assert computer.closed == 1

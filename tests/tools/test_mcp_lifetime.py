"""Where MCP sessions live: a toolset that holds a cancel scope between ``open()`` and ``close()``.

An MCP session runs a task group from the moment it is entered until it is exited, and anyio and
trio require that group to be exited in the task that entered it, while it is that task's
innermost cancel scope. These tests hold the runner to that with the smallest such toolset, one
that holds a task group of its own.
"""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from collections.abc import AsyncGenerator, Iterator, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import pytest
from mcp import Client, ClientSession, StdioServerParameters
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage
from mcp.types import Tool as MCPTool

from tests.support.helpers import MODEL, USER, results_of
from toolrunner import ToolRunner, ToolRunnerError, Toolset, tool
from toolrunner.mcp import MCPToolset
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


# -- MCP sessions: in memory, a stdio subprocess, streamable HTTP, and a session of yours ------------


class Watched(MCPServer[Any]):
    """An in-memory MCP server that records when its connection starts and ends (its lifespan)."""

    def __init__(self) -> None:
        self.events: list[str] = []

        @asynccontextmanager
        async def lifespan(_: MCPServer[Any]) -> AsyncGenerator[None]:
            self.events.append("connected")
            try:
                yield
            finally:
                self.events.append("disconnected")

        super().__init__("watched", log_level="WARNING", lifespan=lifespan)

        @self.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b


def adding() -> FakeMessagesAPI:
    return FakeMessagesAPI([tool_reply(tool_call("add", {"a": 2, "b": 3}, id="a")), text_reply("5.")])


def errors(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("entered", [True, False], ids=["async with", "not entered"])
async def test_an_in_memory_session_opens_and_closes_in_one_task(
    mode: str, entered: bool, caplog: pytest.LogCaptureFixture
) -> None:
    server = Watched()
    toolset = MCPToolset(Client(server, mode=mode))
    runner = ToolRunner(
        adding().async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[toolset]
    )
    if entered:
        async with runner:
            assert server.events == ["connected"]
            await runner.until_done()
            assert server.events == ["connected"]  # the loop ended; the block has not
    else:
        await runner.until_done()
    assert server.events == ["connected", "disconnected"]
    assert not toolset.is_open
    assert results_of(runner.messages[2])[0][2] is False
    assert errors(caplog) == []


async def test_a_session_is_closed_when_opening_the_toolset_fails(caplog: pytest.LogCaptureFixture) -> None:
    def refuse(tool: MCPTool) -> bool:
        raise LookupError(f"no policy for {tool.name}")

    server = Watched()
    runner = ToolRunner(
        adding().async_client(),
        model=MODEL,
        max_tokens=100,
        messages=[USER],
        tools=[MCPToolset(server, filter=refuse)],
    )
    with pytest.raises(LookupError, match="no policy for add"):
        async with runner:
            pass
    assert server.events == ["connected", "disconnected"]
    assert errors(caplog) == []


async def test_a_toolset_opened_with_open_is_open_and_a_runner_uses_its_session() -> None:
    """``await toolset.open()`` (public) marks the toolset open: a runner uses that session and leaves it
    open, where it used to open a second session and leak the first."""
    server = Watched()
    toolset = MCPToolset(server)
    await toolset.open()
    assert toolset.is_open
    session = toolset.session
    await toolset.open()  # open already: nothing happens
    for _ in range(2):
        async with ToolRunner(
            adding().async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[toolset]
        ) as runner:
            await runner.until_done()
        [(_, _, is_error)] = results_of(runner.messages[2])
        assert not is_error
        assert toolset.session is session
    assert server.events == ["connected"]
    await toolset.close()
    assert not toolset.is_open
    await toolset.close()  # closed already: nothing happens
    assert server.events == ["connected", "disconnected"]


async def test_closing_a_toolset_in_another_task_than_the_one_that_opened_it_is_refused() -> None:
    server = Watched()
    toolset = MCPToolset(server)
    leave = anyio.Event()

    async def hold(*, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with toolset:
            task_status.started()
            await leave.wait()

    async with anyio.create_task_group() as group:
        await group.start(hold)
        with pytest.raises(
            ToolRunnerError, match=r"^The MCP toolset 'mcp' was opened in one task and closed in another"
        ):
            await toolset.close()
        assert toolset.is_open  # the refused close left it open, for its task to close
        leave.set()
    assert server.events == ["connected", "disconnected"]


SERVER = """\
import os, sys
from mcp.server.mcpserver import MCPServer
from mcp.shared.message import SessionMessage

server = MCPServer("process", log_level="WARNING")


@server.tool()
def pid() -> int:
    \"\"\"The server's process id.\"\"\"
    return os.getpid()


if sys.argv[1:] == ["stdio"]:
    server.run()
else:
    import socket

    import uvicorn

    listening = socket.create_server(("127.0.0.1", 0))
    print(listening.getsockname()[1], flush=True)  # connections wait in its backlog until uvicorn runs
    uvicorn.Server(uvicorn.Config(server.streamable_http_app(), log_level="warning")).run(sockets=[listening])
"""


@pytest.fixture(scope="module")
def server_script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mcp") / "server.py"
    path.write_text(SERVER, encoding="utf-8")
    return path


def asking_for_the_pid() -> FakeMessagesAPI:
    return FakeMessagesAPI([tool_reply(tool_call("pid", {}, id="p")), text_reply("Found it.")])


@pytest.mark.parametrize("entered", [True, False], ids=["async with", "not entered"])
async def test_a_stdio_server_is_started_and_stopped_by_the_task_that_runs_the_loop(
    server_script: Path, entered: bool, caplog: pytest.LogCaptureFixture
) -> None:
    toolset = MCPToolset(StdioServerParameters(command=sys.executable, args=[str(server_script), "stdio"]))
    runner = ToolRunner(
        asking_for_the_pid().async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[toolset]
    )
    if entered:
        async with runner:
            await runner.until_done()
    else:
        await runner.until_done()
    [(_, content, is_error)] = results_of(runner.messages[2])
    pid = int(content[0]["text"])
    assert not is_error
    assert pid != os.getpid()
    with pytest.raises(ProcessLookupError):  # the server process was stopped, and reaped
        os.kill(pid, 0)
    assert errors(caplog) == []


@pytest.fixture(scope="module")
def http_server(server_script: Path) -> Iterator[str]:
    command = [sys.executable, str(server_script), "http"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True) as process:
        try:
            assert process.stdout is not None
            port = int(process.stdout.readline())
            yield f"http://127.0.0.1:{port}/mcp"
        finally:
            process.terminate()


async def test_a_streamable_http_session_opens_and_closes_in_one_task(
    http_server: str, caplog: pytest.LogCaptureFixture
) -> None:
    toolset = MCPToolset(http_server)
    async with ToolRunner(
        asking_for_the_pid().async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[toolset]
    ) as runner:
        await runner.until_done()
    [(_, content, is_error)] = results_of(runner.messages[2])
    assert not is_error
    assert int(content[0]["text"]) != os.getpid()
    assert not toolset.is_open
    assert errors(caplog) == []


async def test_a_session_you_opened_stays_open_and_yours() -> None:
    server = Watched()
    async with Client(server) as client:
        runner = ToolRunner(
            adding().async_client(),
            model=MODEL,
            max_tokens=100,
            messages=[USER],
            tools=[MCPToolset(client.session)],
        )
        await runner.until_done()
        assert server.events == ["connected"]
    assert server.events == ["connected", "disconnected"]
    assert results_of(runner.messages[2])[0][2] is False


async def test_a_session_that_is_not_initialized_is_refused() -> None:
    to_server, from_client = anyio.create_memory_object_stream[SessionMessage](1)
    to_client, from_server = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    with to_server, from_client, to_client, from_server:
        session = ClientSession(from_server, to_server)
        with pytest.raises(
            ToolRunnerError, match=r"^The ClientSession of the MCP toolset 'mcp' is not initialized"
        ):
            async with MCPToolset(session):
                pass


# -- the blocking runner ---------------------------------------------------------------------------


def sync_runner_for(toolset: Toolset, *extra: Any) -> Any:
    from toolrunner import SyncToolRunner

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("ping", {}, id="a")), text_reply("Done."), *extra], validate=False
    )
    return SyncToolRunner(fake.client(), model=MODEL, max_tokens=100, messages=[USER], tools=[toolset])


def test_with_sync_tool_runner_opens_and_closes_a_toolset_in_one_task_across_loops_and_follow_ups() -> None:
    """``with SyncToolRunner(...)`` is the blocking ``async with``: one task enters the runner and
    leaves it, so a toolset holding a task group (as an MCP session does) works across ``for``
    loops and follow-ups in the block, and closes when the block is left."""
    holding = Holding()
    with sync_runner_for(holding, tool_reply(tool_call("ping", {}, id="b")), text_reply("Again.")) as runner:
        for _ in runner:
            pass
        assert holding.group is not None  # still open: the block has not ended
        runner.push_messages({"role": "user", "content": "Once more."})
        runner.until_done()
        assert [result[0] for result in results_of(runner.messages[-2])] == ["b"]
    assert [event.split()[0] for event in holding.tasks] == ["open", "close"]
    assert len({event.split()[-1] for event in holding.tasks}) == 1  # one task


def test_a_sync_runner_not_in_a_with_block_refuses_to_open_a_toolset_and_says_how() -> None:
    runner = sync_runner_for(Holding())
    with pytest.raises(ToolRunnerError, match=r"with SyncToolRunner\(\.\.\.\) as runner:"):
        for _ in runner:
            pass


def test_an_mcp_session_works_in_a_with_sync_tool_runner_block() -> None:
    from toolrunner import SyncToolRunner

    server = MCPServer("shop")

    @server.tool()
    def stock(item: str) -> str:
        """How many of an item are in stock."""
        return f"3 {item}"

    fake = FakeMessagesAPI([tool_reply(tool_call("stock", {"item": "tea"}, id="s")), text_reply("Three.")])
    with SyncToolRunner(
        fake.client(), model=MODEL, max_tokens=100, messages=[USER], tools=[MCPToolset(server)]
    ) as runner:
        for _ in runner:
            pass
    ((tool_use_id, content, is_error),) = results_of(runner.messages[2])
    assert (tool_use_id, is_error) == ("s", False)
    assert content[0] == {"type": "text", "text": "3 tea"}

"""MCPToolset: an MCP server's tools in a real ToolRunner, against an in-memory MCPServer.

Each test runs on asyncio and trio; those about the protocol run under both of its eras, the
initialize handshake (``legacy``, whose server sends list_changed unasked) and 2026-07-28
(``auto``, whose server sends it on a ``subscriptions/listen`` stream).
"""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import anyio
import pytest
from mcp import Client, MCPError
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError as ServerToolError
from mcp.types import Tool as MCPTool, ToolListChangedNotification

from tests.support.helpers import MODEL, USER, results_of
from toolrunner import (
    ToolCall,
    ToolDefinitionError,
    ToolInputError,
    ToolRunner,
    ToolRunnerError,
    Toolset,
    tool as tool_decorator,
)
from toolrunner.mcp import MCPToolset
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


class Shop(MCPServer[Any]):
    """A small MCP server; it counts the tools/list requests it answers."""

    def __init__(self) -> None:
        super().__init__("shop", log_level="WARNING")
        self.listings = 0
        self.relisted: anyio.Event | None = None  # set when the next listing is asked for
        self.hold: anyio.Event | None = None  # listings wait for it, when there is one

        @self.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

        @self.tool()
        def stock(item: str) -> dict[str, int]:
            """How many of an item are in stock."""
            return {"count": 3 if item == "tea" else 0}

        @self.tool()
        def order(item: str) -> str:
            """Order an item."""
            raise ServerToolError(f"{item} is out of stock; order another item.")

        @self.tool(name="files.read")
        def read(path: str) -> str:
            """Read a file."""
            return f"contents of {path}"

        @self.tool()
        async def unlock(ctx: Context) -> str:
            """Unlock the admin tools."""

            def shutdown() -> str:
                """Shut the shop."""
                return "closed"

            self.add_tool(shutdown)
            self.relisted = anyio.Event()
            if ctx.protocol_version == "2026-07-28":
                await ctx.notify_tools_changed()
            else:
                await ctx.session.send_tool_list_changed()
            # The call ends once the client has asked for the new list: the client must still offer
            # the new tool in its next request, whichever answer reaches it first. (The limit only
            # turns a client that never asks into a failed call instead of a hung test.)
            with anyio.fail_after(30):
                await self.relisted.wait()
            return "unlocked"

    async def list_tools(self) -> list[MCPTool]:
        self.listings += 1
        if self.relisted is not None:
            self.relisted.set()
        if self.hold is not None:
            await self.hold.wait()
        return await super().list_tools()


@pytest.fixture(params=["legacy", "auto"])
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def runner_for(fake: FakeMessagesAPI, *tools: Toolset) -> ToolRunner:
    return ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=list(tools))


def names(fake: FakeMessagesAPI, request: int) -> list[str]:
    return [tool["name"] for tool in fake.requests[request].tools]


async def test_the_servers_tools_are_offered_with_its_schemas_and_a_call_reaches_the_server(
    mode: str,
) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("add", {"a": 2, "b": 3}, id="a")), text_reply("5.")])
    async with runner_for(fake, MCPToolset(Client(Shop(), mode=mode))) as runner:
        await runner.until_done()
    assert names(fake, 0) == ["add", "stock", "order", "files_read", "unlock"]
    add = fake.requests[0].tools[0]
    assert add["description"] == "Add two numbers."
    assert add["input_schema"]["properties"] == {
        "a": {"title": "A", "type": "integer"},
        "b": {"title": "B", "type": "integer"},
    }
    # MCPServer sends a structured {"result": 5} with the text "5": the model reads both.
    assert results_of(runner.messages[2]) == [
        ("a", [{"type": "text", "text": "5"}, {"type": "text", "text": '{"result": 5}'}], False)
    ]


async def test_a_name_the_api_refuses_is_offered_with_underscores_and_called_by_the_servers_name() -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("files_read", {"path": "a.txt"}, id="r")), text_reply("Read.")]
    )
    async with runner_for(fake, MCPToolset(Shop())) as runner:
        await runner.until_done()
    [(_, content, is_error)] = results_of(runner.messages[2])
    assert (content[0]["text"], is_error) == ("contents of a.txt", False)


async def test_a_prefix_and_a_filter_choose_the_names_and_the_tools_offered() -> None:
    def read_only(tool: MCPTool) -> bool:
        return tool.name in ("add", "stock")

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("shop_stock", {"item": "tea"}, id="s"), tool_call("order", {"item": "tea"}, id="o")
            ),
            text_reply("3."),
        ]
    )
    async with runner_for(fake, MCPToolset(Shop(), prefix="shop", filter=read_only)) as runner:
        await runner.until_done()
    assert names(fake, 0) == ["shop_add", "shop_stock"]
    assert results_of(runner.messages[2]) == [
        ("s", '{\n  "count": 3\n}', False),  # the text holds the structured content: it is not repeated
        ("o", "There is no tool named 'order'. The available tools are: 'shop_add', 'shop_stock'.", True),
    ]


async def test_two_servers_tools_do_not_clash_with_prefixes() -> None:
    fake = FakeMessagesAPI([text_reply("Hello.")])
    first, second = MCPToolset(Shop(), prefix="north"), MCPToolset(Shop(), prefix="south")
    async with runner_for(fake, first, second) as runner:
        await runner.until_done()
    assert names(fake, 0) == [
        *(f"north_{name}" for name in ("add", "stock", "order", "files_read", "unlock")),
        *(f"south_{name}" for name in ("add", "stock", "order", "files_read", "unlock")),
    ]
    assert (first.name, second.name) == ("north", "south")


async def test_two_servers_whose_tools_clash_are_refused_with_prefix_as_the_fix() -> None:
    fake = FakeMessagesAPI([text_reply("Hello.")])
    first, second = MCPToolset(Shop(), name="north"), MCPToolset(Shop(), name="south")
    assert first.prefix is None
    with pytest.raises(
        ToolDefinitionError,
        match=(
            r"^two tools are named 'add' \(one of the toolset 'north' and one of the toolset 'south'\); tool names "
            r"must be unique\. Give the toolset 'south' a prefix \(MCPToolset\(\.\.\., prefix='\.\.\.'\) offers its "
            r"tools as '<prefix>_add'\)\.$"
        ),
    ):
        async with first, second:
            await runner_for(fake, first, second).until_done()
    assert fake.requests == []
    assert not first.is_open
    assert not second.is_open


async def test_a_server_tool_that_clashes_with_a_function_tool_names_both_fixes() -> None:
    @tool_decorator
    def add(a: int, b: int) -> int:
        """Add two numbers, locally."""
        return a + b

    fake = FakeMessagesAPI([text_reply("Hello.")])
    shop = MCPToolset(Shop(), name="shop")
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[add, shop])
    with pytest.raises(
        ToolDefinitionError, match=r"a prefix .*, or rename the other tool with @tool\(name=\.\.\.\)\.$"
    ):
        async with shop:
            await runner.until_done()


async def test_an_error_the_server_reports_is_an_is_error_result_the_model_reads(mode: str) -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("order", {"item": "tea"}, id="o"), tool_call("add", {"a": "two", "b": 3}, id="a")
            ),
            text_reply("Sorry."),
        ]
    )
    async with runner_for(fake, MCPToolset(Client(Shop(), mode=mode))) as runner:
        await runner.until_done()
    [order, add] = results_of(runner.messages[2])
    assert order == ("o", "Error executing tool order: tea is out of stock; order another item.", True)
    # The input is the server's to check, against its own schema; its answer reaches the model.
    assert add[::2] == ("a", True)
    assert "Input should be a valid integer" in add[1]


async def test_only_an_input_that_is_not_an_object_is_refused_before_the_server_sees_it() -> None:
    async with MCPToolset(Shop()) as toolset:
        add = toolset.tools()[0]
        assert add.parse_input({"a": "two"}) == {"arguments": {"a": "two"}}
        assert add.parse_input('{"a": 1}') == {"arguments": {"a": 1}}
        with pytest.raises(ToolInputError) as raised:
            add.parse_input([1, 2])
    assert str(raised.value).startswith(
        "The input for tool 'add' must be a JSON object matching its input_schema"
    )


async def test_a_protocol_error_from_the_server_is_an_is_error_result() -> None:
    class Strict(Shop):
        async def call_tool(
            self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
        ) -> Any:
            raise MCPError(-32602, f"unknown arguments for {name}")

    fake = FakeMessagesAPI([tool_reply(tool_call("add", {"a": 1, "b": 2}, id="a")), text_reply("No.")])
    async with runner_for(fake, MCPToolset(Strict())) as runner:
        await runner.until_done()
    assert results_of(runner.messages[2]) == [
        ("a", "The MCP server could not run tool 'add': unknown arguments for add", True)
    ]


async def test_the_tool_list_is_read_again_when_the_server_says_it_changed_mid_run(mode: str) -> None:
    server = Shop()
    toolset = MCPToolset(Client(server, mode=mode))
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("unlock", {}, id="u")),
            tool_reply(tool_call("shutdown", {}, id="s")),
            text_reply("Closed."),
        ]
    )
    async with runner_for(fake, toolset) as runner:
        listed = toolset.tools()
        assert toolset.tools() is listed  # unchanged: the same tuple, so the runner re-reads nothing
        await runner.until_done()
        assert toolset.tools() is not listed
    assert names(fake, 0) == ["add", "stock", "order", "files_read", "unlock"]
    assert names(fake, 1) == [*names(fake, 0), "shutdown"]
    assert results_of(runner.messages[4]) == [
        ("s", [{"type": "text", "text": "closed"}, {"type": "text", "text": '{"result": "closed"}'}], False)
    ]
    assert server.listings == 2  # when it opened, and once after the notice: never per request


async def test_tools_changed_lists_the_tools_again_and_a_call_that_ends_meanwhile_waits_for_the_list() -> (
    None
):
    server = Shop()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("add", {"a": 1, "b": 1}, id="1")),
            tool_reply(tool_call("add", {"a": 2, "b": 2}, id="2")),
            text_reply("Done."),
        ]
    )
    async with MCPToolset(server) as toolset:
        listed = toolset.tools()
        async for _ in (runner := runner_for(fake, toolset)):
            if runner.requests_sent == 1:
                toolset.tools_changed()  # nothing changed: listed again, and found the same
            elif runner.requests_sent == 2:
                assert toolset.tools() is listed
                server.remove_tool("unlock")
                toolset.tools_changed()
    assert server.listings == 3
    assert names(fake, 1) == ["add", "stock", "order", "files_read", "unlock"]
    assert names(fake, 2) == ["add", "stock", "order", "files_read"]
    assert toolset.tools() == ()  # closed


async def test_a_call_that_ends_while_the_tools_are_listed_again_waits_for_the_new_list(mode: str) -> None:
    server = Shop()
    done: list[object] = []
    async with MCPToolset(Client(server, mode=mode)) as toolset:
        [unlock] = [tool for tool in toolset.tools() if tool.name == "unlock"]
        server.hold = anyio.Event()
        async with anyio.create_task_group() as group:

            async def call() -> None:
                done.append(await unlock.function(arguments={}))

            group.start_soon(call)
            await anyio.wait_all_tasks_blocked()
            # The server answered the call, and is slow to answer the listing it announced.
            assert (done, [tool.name for tool in toolset.tools()][-1]) == ([], "unlock")
            server.hold.set()
        assert done == [
            [{"type": "text", "text": "unlocked"}, {"type": "text", "text": '{"result": "unlocked"}'}]
        ]
        assert [tool.name for tool in toolset.tools()][-1] == "shutdown"


async def test_a_call_to_an_mcp_tool_waits_for_approval_and_runs_with_the_approved_input() -> None:
    def orders_only(call: ToolCall) -> bool:
        return call.name == "shop_add"

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("shop_stock", {"item": "tea"}, id="s"),
                tool_call("shop_add", {"a": 1, "b": 1}, id="a"),
            ),
            text_reply("Done."),
        ]
    )
    async with runner_for(fake, MCPToolset(Shop(), prefix="shop", requires_approval=orders_only)) as runner:
        async for _ in runner:
            if runner.pending_approvals:
                assert [call.id for call in runner.pending_approvals] == ["a"]
                runner.approve("a", input={"a": 20, "b": 22})
    assert results_of(runner.messages[2]) == [
        ("s", '{\n  "count": 3\n}', False),
        ("a", [{"type": "text", "text": "42"}, {"type": "text", "text": '{"result": 42}'}], False),
    ]


async def test_a_denied_mcp_call_never_reaches_the_server() -> None:
    calls: list[str] = []

    class Watched(Shop):
        async def call_tool(
            self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
        ) -> Any:
            calls.append(name)
            return await super().call_tool(name, arguments, context)

    fake = FakeMessagesAPI([tool_reply(tool_call("add", {"a": 1, "b": 1}, id="a")), text_reply("Fine.")])
    async with runner_for(fake, MCPToolset(Watched(), requires_approval=True)) as runner:
        async for _ in runner:
            for call in runner.pending_approvals:
                runner.deny(call.id, "Not today.")
    assert results_of(runner.messages[2]) == [("a", "Not today.", True)]
    assert calls == []


async def test_the_toolsets_options_reach_its_tools() -> None:
    toolset = MCPToolset(
        Shop(), sequential=True, timeout=5, start_early=False, idempotent=True, requires_approval=True
    )
    async with toolset:
        tool = toolset.tools()[0]
        assert (
            tool.name,
            tool.sequential,
            tool.timeout,
            tool.start_early,
            tool.idempotent,
            tool.requires_approval,
        ) == (
            "add",
            True,
            5.0,
            False,
            True,
            True,
        )


async def test_a_session_you_opened_is_used_as_it_is_and_left_open() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("add", {"a": 1, "b": 2}, id="a")), text_reply("3.")])
    async with Client(Shop()) as client:
        toolset = MCPToolset(client.session)
        async with runner_for(fake, toolset) as runner:
            await runner.until_done()
            assert toolset.session is client.session
        assert not toolset.is_open
        result = await client.session.call_tool("add", {"a": 2, "b": 2})  # still open: it is yours
    assert results_of(runner.messages[2])[0][2] is False
    assert result.structured_content == {"result": 4}


async def test_on_a_session_of_yours_changes_are_heard_or_forwarded_to_tools_changed(mode: str) -> None:
    toolsets: list[MCPToolset] = []

    async def forward(message: object) -> None:  # what a legacy session of yours needs
        if isinstance(message, ToolListChangedNotification):
            toolsets[0].tools_changed()

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("unlock", {}, id="u")),
            tool_reply(tool_call("shutdown", {}, id="s")),
            text_reply("Shut."),
        ]
    )
    handler = forward if mode == "legacy" else None  # from 2026-07-28 on, the toolset subscribes itself
    async with Client(Shop(), mode=mode, message_handler=handler) as client:
        toolsets.append(MCPToolset(client.session))
        async with runner_for(fake, toolsets[0]) as runner:
            await runner.until_done()
    assert names(fake, 1)[-1] == "shutdown"
    assert results_of(runner.messages[4])[0][2] is False


async def test_a_toolset_opened_by_you_serves_several_runners_over_one_connection() -> None:
    server = Shop()
    async with MCPToolset(server) as toolset:
        for _ in range(2):
            fake = FakeMessagesAPI([tool_reply(tool_call("add", {"a": 1, "b": 2}, id="a")), text_reply("3.")])
            async with runner_for(fake, toolset) as runner:
                await runner.until_done()
            assert toolset.is_open
    assert server.listings == 1


async def test_a_toolset_made_from_a_server_connects_anew_each_time_it_opens() -> None:
    server = Shop()
    toolset = MCPToolset(server)
    for _ in range(2):
        await runner_for(FakeMessagesAPI([text_reply("Hi.")]), toolset).until_done()
    assert server.listings == 2


async def test_an_mcp_client_connects_once() -> None:
    toolset = MCPToolset(Client(Shop()))
    await runner_for(FakeMessagesAPI([text_reply("Hi.")]), toolset).until_done()
    with pytest.raises(
        ToolRunnerError, match=r"^The mcp.Client of the MCP toolset 'mcp' was connected already"
    ):
        await runner_for(FakeMessagesAPI([text_reply("Hi.")]), toolset).until_done()


async def test_your_message_handler_still_gets_the_sessions_messages() -> None:
    heard: list[str] = []

    async def handler(message: object) -> None:
        heard.append(type(message).__name__)

    server = Shop()
    fake = FakeMessagesAPI([tool_reply(tool_call("unlock", {}, id="u")), text_reply("Unlocked.")])
    async with runner_for(fake, MCPToolset(Client(server, mode="legacy", message_handler=handler))) as runner:
        await runner.until_done()
    assert heard == ["ToolListChangedNotification"]
    assert names(fake, 1)[-1] == "shutdown"


async def test_the_session_is_there_while_the_toolset_is_open() -> None:
    toolset = MCPToolset(Shop(), name="shop")
    with pytest.raises(ToolRunnerError, match=r"^The MCP toolset 'shop' is closed, so it has no session"):
        _ = toolset.session
    async with toolset:
        resources = await toolset.session.list_resources()
    assert resources.resources == []


def test_options_are_checked_when_the_toolset_is_made() -> None:
    with pytest.raises(ToolDefinitionError, match=r"^MCPToolset takes an MCP server, not 'int'"):
        MCPToolset(3)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ToolDefinitionError, match=r"^The tool name prefix 'my tools' is invalid"):
        MCPToolset(Shop(), prefix="my tools")
    with pytest.raises(ToolDefinitionError, match=r"^The timeout 0 of the MCP toolset 'mcp' is invalid"):
        MCPToolset(Shop(), timeout=0)
    with pytest.raises(
        ToolDefinitionError, match=r"^requires_approval of the MCP toolset 'mcp' must be a bool"
    ):
        MCPToolset(Shop(), requires_approval="yes")  # pyright: ignore[reportArgumentType]
    assert isinstance(MCPToolset(Shop()), Toolset)


def test_import_toolrunner_does_not_import_mcp() -> None:
    code = "import sys, toolrunner, toolrunner.testing; print(sorted(m for m in sys.modules if m.split('.')[0] in ('mcp', 'mcp_types')))"
    assert (
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
        == "[]\n"
    )


def test_without_mcp_installed_toolrunner_mcp_says_what_to_install() -> None:
    code = "import sys; sys.modules['mcp'] = None\ntry:\n    import toolrunner.mcp\nexcept ImportError as error:\n    print(error)"
    output = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert (
        output
        == "toolrunner.mcp needs the mcp package, version 2.3 or later; install it with: pip install 'claude-toolrunner[mcp]'\n"
    )

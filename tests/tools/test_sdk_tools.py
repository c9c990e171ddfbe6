"""The SDK's own tools and toolsets (``anthropic.lib.tools``) run in toolrunner as they are.

Every tool here is one of the installed SDK's real classes: ``@beta_tool``/``@beta_async_tool``,
a ``BetaAbstractMemoryTool`` subclass, the tools ``anthropic.lib.tools.mcp`` makes, and runnable
toolsets.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import anyio
import anyio.lowlevel
import pytest
from anthropic.lib.tools import (
    BetaAbstractMemoryTool,
    BetaAsyncAbstractMemoryTool,
    BetaAsyncRunnableToolset,
    BetaFunctionToolResultType,
    BetaRunnableToolset,
    ToolError as SdkToolError,
    beta_async_tool,
    beta_tool,
)
from anthropic.lib.tools.agent_toolset import AgentToolContext, beta_agent_toolset_20260401
from anthropic.tools import BetaToolsetCallContext
from anthropic.types.beta import (
    BetaBrowserToolset20260801Param,
    BetaComputerToolset20260801Param,
    BetaMemoryTool20250818CreateCommand,
    BetaMemoryTool20250818DeleteCommand,
    BetaMemoryTool20250818InsertCommand,
    BetaMemoryTool20250818RenameCommand,
    BetaMemoryTool20250818StrReplaceCommand,
    BetaMemoryTool20250818ViewCommand,
)

from tests.support.helpers import MODEL, USER, plain, results_of
from toolrunner import SyncToolRunner, ToolDefinitionError, ToolError, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@beta_tool
def get_weather(city: str) -> str:
    """Get the weather of a city.

    Args:
        city: The city's name.
    """
    return f"{city}: sunny"


@beta_async_tool
async def get_time(city: str) -> str:
    """Get the time in a city."""
    return f"{city}: noon"


@beta_tool
def undocumented(city: str) -> str:
    return city


def runner_for(fake: FakeMessagesAPI, tools: list[Any], **options: Any) -> ToolRunner:
    return ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=tools, **options
    )


async def test_sdk_function_tools_run_and_go_on_the_wire_as_the_sdk_sends_them() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("get_weather", {"city": "Paris"}, id="a"),
                tool_call("get_time", {"city": "Rome"}, id="b"),
            ),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [get_weather, get_time, undocumented])
    await runner.until_done()
    assert fake.requests[0].tools == [get_weather.to_dict(), get_time.to_dict(), undocumented.to_dict()]
    assert results_of(runner.messages[2]) == [("a", "Paris: sunny", False), ("b", "Rome: noon", False)]
    assert runner.params["tools"] == [get_weather, get_time, undocumented]  # as given
    assert runner.state.tools == ("get_weather", "get_time", "undocumented")  # saved by name


async def test_the_sdks_tool_error_is_an_error_result_with_its_content_and_no_traceback(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @beta_tool
    def pick(x: int) -> str:
        """Pick x."""
        raise SdkToolError("bad x, use 2")

    @beta_async_tool
    async def show(x: int) -> BetaFunctionToolResultType:
        """Show x."""
        raise SdkToolError([{"type": "text", "text": "cannot show"}])

    @tool
    def ours(x: int) -> str:
        """Ours."""
        raise ToolError("not this x")

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("pick", {"x": 1}, id="a"),
                tool_call("show", {"x": 1}, id="b"),
                tool_call("ours", {"x": 1}, id="c"),
            ),
            text_reply("Done."),
        ]
    )
    with caplog.at_level(logging.DEBUG, logger="toolrunner"):
        runner = runner_for(fake, [pick, show, ours])
        await runner.until_done()
    assert results_of(runner.messages[2]) == [
        ("a", "bad x, use 2", True),
        ("b", [{"type": "text", "text": "cannot show"}], True),
        ("c", "not this x", True),
    ]
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []


async def test_invalid_input_to_an_sdk_tool_tells_the_model_what_was_wrong(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"town": "Paris"}, id="a")), text_reply("Done.")]
    )
    with caplog.at_level(logging.DEBUG, logger="toolrunner"):
        runner = runner_for(fake, [get_weather])
        await runner.until_done()
    [(_, content, is_error)] = results_of(runner.messages[2])
    assert is_error
    assert content.startswith("The input for tool 'get_weather' is invalid (")
    assert "- city: Missing required argument" in content
    assert content.endswith("Call get_weather again with corrected input.")
    assert [record for record in caplog.records if record.levelno >= logging.ERROR] == []


async def test_an_exception_from_an_sdk_tool_is_an_error_result_and_is_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @beta_tool
    def broken(x: int) -> str:
        """Broken."""
        raise RuntimeError("boom")

    fake = FakeMessagesAPI([tool_reply(tool_call("broken", {"x": 1}, id="a")), text_reply("Done.")])
    with caplog.at_level(logging.WARNING, logger="toolrunner"):
        runner = runner_for(fake, [broken])
        await runner.until_done()
    assert results_of(runner.messages[2]) == [("a", "RuntimeError('boom')", True)]
    assert [record.levelno for record in caplog.records] == [logging.WARNING]


class Memory(BetaAbstractMemoryTool):
    """A memory tool over a dict, as the SDK's docs show."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, str] = {"/memories/notes.md": "likes coffee"}

    def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        return self.files.get(command.path, "no such file")

    def create(self, command: BetaMemoryTool20250818CreateCommand) -> BetaFunctionToolResultType:
        self.files[command.path] = command.file_text
        return "created"

    def str_replace(self, command: BetaMemoryTool20250818StrReplaceCommand) -> BetaFunctionToolResultType:
        raise NotImplementedError

    def insert(self, command: BetaMemoryTool20250818InsertCommand) -> BetaFunctionToolResultType:
        raise NotImplementedError

    def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> BetaFunctionToolResultType:
        raise NotImplementedError

    def rename(self, command: BetaMemoryTool20250818RenameCommand) -> BetaFunctionToolResultType:
        raise NotImplementedError


async def test_the_memory_tool_runs_as_a_built_in_tool() -> None:
    memory = Memory()
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("memory", {"command": "view", "path": "/memories/notes.md"}, id="a"),
                tool_call(
                    "memory", {"command": "create", "path": "/memories/b.md", "file_text": "tea"}, id="b"
                ),
            ),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [memory])
    await runner.until_done()
    assert fake.requests[0].tools == [{"type": "memory_20250818", "name": "memory"}]
    assert results_of(runner.messages[2]) == [("a", "likes coffee", False), ("b", "created", False)]
    assert memory.files["/memories/b.md"] == "tea"


class SlowMemory(BetaAsyncAbstractMemoryTool):
    """An async memory tool whose commands yield to the event loop, so overlapping calls interleave."""

    def __init__(self) -> None:
        super().__init__()
        self.files: dict[str, str] = {}
        self.log: list[str] = []

    async def _step(self, name: str) -> None:
        self.log.append(f"start {name}")
        for _ in range(3):
            await anyio.lowlevel.checkpoint()
        self.log.append(f"end {name}")

    async def view(self, command: BetaMemoryTool20250818ViewCommand) -> BetaFunctionToolResultType:
        await self._step("view")
        return self.files[command.path]

    async def create(self, command: BetaMemoryTool20250818CreateCommand) -> BetaFunctionToolResultType:
        await self._step("create")
        self.files[command.path] = command.file_text
        return "created"

    async def str_replace(
        self, command: BetaMemoryTool20250818StrReplaceCommand
    ) -> BetaFunctionToolResultType:
        await self._step("str_replace")
        self.files[command.path] = self.files[command.path].replace(command.old_str, command.new_str)
        return "edited"

    async def insert(self, command: BetaMemoryTool20250818InsertCommand) -> BetaFunctionToolResultType:
        raise NotImplementedError

    async def delete(self, command: BetaMemoryTool20250818DeleteCommand) -> BetaFunctionToolResultType:
        raise NotImplementedError

    async def rename(self, command: BetaMemoryTool20250818RenameCommand) -> BetaFunctionToolResultType:
        raise NotImplementedError


async def test_the_sdks_built_in_tools_run_a_replys_calls_one_at_a_time_in_order() -> None:
    memory = SlowMemory()
    path = "/memories/a.md"
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("memory", {"command": "create", "path": path, "file_text": "hello world"}, id="a"),
                tool_call(
                    "memory",
                    {"command": "str_replace", "path": path, "old_str": "world", "new_str": "there"},
                    id="b",
                ),
                tool_call("memory", {"command": "view", "path": path}, id="c"),
            ),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [memory])
    await runner.until_done()
    assert results_of(runner.messages[2]) == [
        ("a", "created", False),
        ("b", "edited", False),
        ("c", "hello there", False),
    ]
    steps = ["create", "str_replace", "view"]
    assert memory.log == [f"{edge} {step}" for step in steps for edge in ("start", "end")]


async def test_the_agent_toolsets_calls_run_in_order_so_cd_then_pwd_works(tmp_path: Path) -> None:
    tools = beta_agent_toolset_20260401(AgentToolContext(workdir=tmp_path))
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("write", {"file_path": "notes.txt", "content": "v1"}, id="a"),
                tool_call("read", {"file_path": "notes.txt"}, id="b"),
                tool_call("bash", {"command": "mkdir -p sub && cd sub"}, id="c"),
                tool_call("bash", {"command": "pwd"}, id="d"),
            ),
            text_reply("Done."),
        ]
    )
    async with runner_for(fake, tools) as runner:
        await runner.until_done()
        (_, read, _), (_, cd, _), (_, pwd, _) = results_of(runner.messages[2])[1:]
    assert "v1" in str(read)
    assert cd == ""
    assert Path(str(pwd).strip()) == (tmp_path / "sub").resolve()


async def test_the_users_own_sdk_function_tools_run_concurrently_as_tool_tools_do() -> None:
    started = 0
    all_started = anyio.Event()

    @beta_async_tool
    async def wait_for_all(n: int) -> str:
        """Wait until all three calls run."""
        nonlocal started
        started += 1
        if started == 3:
            all_started.set()
        await all_started.wait()
        return str(n)

    fake = FakeMessagesAPI(
        [tool_reply(*(tool_call("wait_for_all", {"n": n}) for n in range(3))), text_reply("Done.")]
    )
    with anyio.fail_after(10):  # a guard against a hang, not a timing
        await runner_for(fake, [wait_for_all]).until_done()


class Browser(BetaAsyncRunnableToolset):
    """A browser toolset that records its member calls; ``fail`` fails."""

    toolset_name = "browser"

    def __init__(self) -> None:
        self.calls: list[tuple[str, str | None, Mapping[str, object]]] = []

    def to_dict(self) -> BetaBrowserToolset20260801Param:
        return {"type": "browser_toolset_20260801"}

    async def call(
        self, context: BetaToolsetCallContext, name: str, input: Mapping[str, object]
    ) -> str | list[Any]:
        assert context.tool_use is not None
        self.calls.append((name, context.tool_use.id, input))
        if name == "fail":
            raise SdkToolError("the page is gone")
        return f"{name} done"


class SyncBrowser(BetaRunnableToolset):
    toolset_name = "computer"

    def to_dict(self) -> BetaComputerToolset20260801Param:
        return {"type": "computer_toolset_20260801"}

    def call(self, context: BetaToolsetCallContext, name: str, input: Mapping[str, object]) -> str:
        return f"computer {name}"


def member(name: str, tool_use_id: str, toolset: str = "browser", **input: object) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": input, "toolset_name": toolset}


async def test_toolset_members_are_dispatched_by_toolset_name_and_their_results_echo_it() -> None:
    @tool
    def screenshot() -> str:
        """A custom tool sharing a member's name."""
        return "custom screenshot"

    browser = Browser()
    fake = FakeMessagesAPI(
        [
            message_reply(
                [
                    member("navigate", "a", url="https://example.com"),
                    {"type": "tool_use", "id": "b", "name": "screenshot", "input": {}},
                    member("screenshot", "c"),
                    member("screenshot", "d", toolset="computer"),
                ],
                stop_reason="tool_use",
            ),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [browser, SyncBrowser(), screenshot])
    await runner.until_done()
    assert fake.requests[0].tools == [
        {"type": "browser_toolset_20260801"},
        {"type": "computer_toolset_20260801"},
        screenshot.to_param(),
    ]
    assert plain(runner.messages[2])["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "navigate done", "toolset_name": "browser"},
        {"type": "tool_result", "tool_use_id": "b", "content": "custom screenshot"},
        {"type": "tool_result", "tool_use_id": "c", "content": "screenshot done", "toolset_name": "browser"},
        {
            "type": "tool_result",
            "tool_use_id": "d",
            "content": "computer screenshot",
            "toolset_name": "computer",
        },
    ]
    assert browser.calls == [("navigate", "a", {"url": "https://example.com"}), ("screenshot", "c", {})]
    assert runner.state.tools == ("toolset:browser", "toolset:computer", "screenshot")


async def test_after_a_member_fails_its_familys_later_calls_are_not_executed() -> None:
    browser = Browser()
    fake = FakeMessagesAPI(
        [
            message_reply(
                [member("navigate", "a"), member("fail", "b"), member("click", "c"), member("type", "d")],
                stop_reason="tool_use",
            ),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [browser])
    await runner.until_done()
    assert results_of(runner.messages[2]) == [
        ("a", "navigate done", False),
        ("b", "the page is gone", True),
        ("c", "Not executed: an earlier action in this turn failed.", True),
        ("d", "Not executed: an earlier action in this turn failed.", True),
    ]
    assert [name for name, _, _ in browser.calls] == ["navigate", "fail"]


async def test_a_call_to_a_toolset_the_runner_does_not_have_is_an_error_result() -> None:
    fake = FakeMessagesAPI(
        [
            message_reply(
                [member("navigate", "a"), {"type": "tool_use", "id": "b", "name": "computer", "input": {}}],
                stop_reason="tool_use",
            ),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [SyncBrowser()])
    await runner.until_done()
    assert plain(runner.messages[2])["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "a",
            "content": "There is no toolset named 'browser' (member 'navigate'). The available toolsets are: 'computer'.",
            "is_error": True,
            "toolset_name": "browser",
        },
        {
            "type": "tool_result",
            "tool_use_id": "b",
            "content": "'computer' is a toolset: call its member tools (with their toolset_name), not the toolset itself.",
            "is_error": True,
        },
    ]


async def test_two_toolsets_of_one_family_are_refused() -> None:
    with pytest.raises(ToolDefinitionError, match="two toolsets are of the family 'browser'"):
        runner_for(FakeMessagesAPI(), [Browser(), Browser()])


async def test_the_tools_anthropic_lib_tools_mcp_makes_run() -> None:
    import mcp.types
    from anthropic.lib.tools.mcp import async_mcp_tool

    class Session:
        """Stands in for an MCP ``ClientSession``: only ``call_tool`` is used."""

        async def call_tool(self, name: str, arguments: dict[str, object]) -> mcp.types.CallToolResult:
            if arguments.get("fail"):
                return mcp.types.CallToolResult(
                    content=[mcp.types.TextContent(type="text", text="no")], is_error=True
                )
            return mcp.types.CallToolResult(
                content=[mcp.types.TextContent(type="text", text=f"{name}: {arguments}")]
            )

    definition = mcp.types.Tool(
        name="lookup",
        description="Look something up.",
        input_schema={"type": "object", "properties": {"q": {"type": "string"}, "fail": {"type": "boolean"}}},
    )
    lookup = async_mcp_tool(definition, cast(Any, Session()))
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("lookup", {"q": "x"}, id="a"), tool_call("lookup", {"q": "y", "fail": True}, id="b")
            ),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [lookup])
    await runner.until_done()
    assert fake.requests[0].tools == [lookup.to_dict()]
    assert results_of(runner.messages[2]) == [
        ("a", [{"type": "text", "text": "lookup: {'q': 'x'}"}], False),
        ("b", [{"type": "text", "text": "no"}], True),
    ]


def test_the_sync_runner_runs_sdk_tools() -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"city": "Oslo"}, id="a")), text_reply("Done.")]
    )
    runner = SyncToolRunner(
        fake.client(), model=MODEL, max_tokens=100, messages=[USER], tools=[get_weather, Memory()]
    )
    runner.until_done()
    assert results_of(runner.messages[2]) == [("a", "Oslo: sunny", False)]


async def test_the_sync_mcp_tool_runs_in_a_worker_thread() -> None:
    import mcp.types
    from anthropic.lib.tools.mcp import mcp_tool

    class Session:
        async def call_tool(self, name: str, arguments: dict[str, object]) -> mcp.types.CallToolResult:
            return mcp.types.CallToolResult(
                content=[mcp.types.TextContent(type="text", text=f"{name} {arguments}")]
            )

    definition = mcp.types.Tool(
        name="find", description="Find.", input_schema={"type": "object", "properties": {}}
    )
    find = mcp_tool(definition, cast(Any, Session()))  # calls the session with anyio.from_thread.run
    fake = FakeMessagesAPI([tool_reply(tool_call("find", {"q": 1}, id="a")), text_reply("Done.")])
    runner = runner_for(fake, [find])
    await runner.until_done()
    assert results_of(runner.messages[2]) == [("a", [{"type": "text", "text": "find {'q': 1}"}], False)]


async def test_a_run_with_sdk_tools_and_toolsets_is_saved_by_name_and_resumed() -> None:
    from toolrunner import MemoryCheckpointer

    store = MemoryCheckpointer()
    script = [
        message_reply(
            [
                member("navigate", "a"),
                {"type": "tool_use", "id": "b", "name": "get_weather", "input": {"city": "Rome"}},
            ],
            stop_reason="tool_use",
        ),
        text_reply("Done."),
    ]
    fake = FakeMessagesAPI(script)
    first = runner_for(fake, [Browser(), get_weather], checkpointer=store, run_id="r")
    async for _ in first:
        break
    browser = Browser()
    again = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="r", tools=[browser, get_weather]
    )
    await again.until_done()
    assert results_of(again.messages[2]) == [("a", "navigate done", False), ("b", "Rome: sunny", False)]
    assert fake.requests[1].tools == [{"type": "browser_toolset_20260801"}, get_weather.to_dict()]


async def test_a_value_error_of_the_tools_own_is_not_taken_for_invalid_input() -> None:
    @beta_tool
    def parse(text: str) -> str:
        """Parse."""
        raise ValueError(f"cannot parse {text!r}")

    fake = FakeMessagesAPI([tool_reply(tool_call("parse", {"text": "x"}, id="a")), text_reply("Done.")])
    runner = runner_for(fake, [parse])
    await runner.until_done()
    assert results_of(runner.messages[2]) == [("a", "ValueError(\"cannot parse 'x'\")", True)]


@pytest.mark.parametrize(
    ("raw", "described"),
    [([1, 2], "an array"), ("[1]", "a string"), (7, "a number"), (True, "a boolean"), (None, "null")],
)
def test_an_input_that_is_not_an_object_is_described_to_the_model_in_plain_english(
    raw: object, described: str
) -> None:
    from toolrunner._tools.sdk import input_object
    from toolrunner._tools.tool import ToolInputError

    with pytest.raises(ToolInputError) as raised:
        input_object("lookup", raw)
    assert f"but it was {described}." in str(raised.value)

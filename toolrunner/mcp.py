"""MCP servers as tool sources: ``MCPToolset``, a ``Toolset`` over an ``mcp`` client session.

Import it from here (``from toolrunner.mcp import MCPToolset``); it needs the ``mcp`` extra, which
``import toolrunner`` never imports.

How it works (docs/mcp.md says it for users):

- Connection. Given a server (an ``MCPServer`` in this process, ``StdioServerParameters``, a URL,
  a transport) or an ``mcp.Client``, the toolset connects in ``open()`` and disconnects in
  ``close()``: it owns the connection, and the runner opens and closes it in one task (the
  ``Toolset`` contract), which the session's task group and a stdio subprocess need. Given a
  ``ClientSession``, it uses it as it is: you opened it, you close it.
- Tools. Listed in ``open()``, and kept in a tuple that ``tools()`` returns as it is until the
  server says they changed (``notifications/tools/list_changed``: sent unasked before protocol
  2026-07-28, through a ``subscriptions/listen`` stream the toolset opens from then on). A
  background task lists them again; a call that finishes meanwhile waits for the new list, so that
  the runner's next request offers it.
- Calls. The model's input goes to the server as it is, which checks it against its own schema: a
  rejected input, like any error the server reports, comes back as an ``is_error`` result the
  model reads. ``_tools.mcp_results`` maps what the server returns.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

import anyio
import anyio.abc
import anyio.lowlevel

try:
    from mcp import Client, ClientSession, MCPError, StdioServerParameters
    from mcp.client import Transport
    from mcp.client.session import IncomingMessage, MessageHandlerFnT
    from mcp.client.subscriptions import ListenNotSupportedError, listen
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer
    from mcp.types import PaginatedRequestParams, Tool as MCPTool, ToolListChangedNotification
except ImportError as error:
    raise ImportError(
        "toolrunner.mcp needs the mcp package, version 2.3 or later; install it with: pip install 'claude-toolrunner[mcp]'"
    ) from error

from ._core.errors import ToolDefinitionError, ToolError, ToolRunnerError, describe
from ._core.plan import log_handled
from ._tools.mcp_results import result_value
from ._tools.sdk import input_object
from ._tools.tool import ApprovalGate, ToolContext
from ._tools.toolsets import RunnableTool, Toolset

__all__ = ["MCPToolset"]

logger = logging.getLogger("toolrunner")

MCPServerSource: TypeAlias = (
    "MCPServer[Any] | Server[Any] | StdioServerParameters | str | Transport | Client | ClientSession"
)
"""What ``MCPToolset`` takes: a server to connect to, an ``mcp.Client``, or an open session."""

_NAME_CHARACTERS = re.compile(r"[^a-zA-Z0-9_-]")  # what the Messages API refuses in a tool name
_MAX_NAME = 128
_MAX_PAGES = 100  # of one tools/list: a server whose cursor never ends cannot hang the toolset


class MCPToolset(Toolset):
    """The tools of an MCP server, as a toolset: give it to ``tools=[...]``.

    Args:
        server: The server. An ``MCPServer`` (or low-level ``Server``) runs in this process;
            ``StdioServerParameters`` start it as a subprocess; a URL reaches it by streamable
            HTTP; any ``mcp`` transport works too. The toolset connects when it opens and
            disconnects when it closes. An ``mcp.Client`` is connected the same way, with your
            options (mode, timeouts, callbacks), but only once. An open ``ClientSession`` is used as
            it is and never closed: it is yours.
        name: What errors and saved runs call the toolset; ``prefix``, or ``"mcp"``, by default.
            Give each toolset of a runner its own.
        prefix: Offer the tools as ``<prefix>_<name>``, so that two servers' tools cannot clash.
        filter: Which of the server's tools to offer: a function of each tool's MCP definition
            (``mcp.types.Tool``: name, description, annotations); all of them by default.
        requires_approval: Whether calls wait for a person's decision (as ``@tool``'s): a bool, or
            a function of the ``ToolCall`` (sync or async).
        sequential: Run each call alone, never at the same time as other calls.
        timeout: Seconds one call may take; the runner's default when ``None``.
        start_early: Whether streaming may start a call before the reply ends.
        idempotent: Whether a call that a crash interrupted may run again on resume.

    Raises:
        ToolDefinitionError: An option is invalid.
    """

    def __init__(
        self,
        server: MCPServerSource,
        *,
        name: str | None = None,
        prefix: str | None = None,
        filter: Callable[[MCPTool], bool] | None = None,
        requires_approval: ApprovalGate = False,
        sequential: bool = False,
        timeout: float | None = None,
        start_early: bool = True,
        idempotent: bool = False,
    ) -> None:
        super().__init__(name=name if name is not None else prefix or "mcp")
        self._server = _check_server(server)
        self._prefix = _check_prefix(prefix)
        self._filter = filter
        self._options = _Options(
            sequential=sequential,
            timeout=_check_timeout(self.name, timeout),
            start_early=start_early,
            idempotent=idempotent,
            requires_approval=_check_gate(self.name, requires_approval),
        )
        self._definitions: list[MCPTool] = []  # as the server last listed them
        self._listed: tuple[_Tool, ...] = ()  # what tools() returns: a new tuple only on a change
        self._session: ClientSession | None = None
        self._client: Client | None = None
        self._stack: AsyncExitStack | None = None  # what open() entered, exited by close()
        self._opener: int | None = None  # the id of the task that opened it
        self._changes: _Changes | None = None
        self._subscribed = False  # to changes, on a subscriptions/listen stream
        self._client_used = False

    @property
    def prefix(self) -> str | None:
        """What the tools' names start with (``<prefix>_<name>``), or ``None``."""
        return self._prefix

    @property
    def session(self) -> ClientSession:
        """The open MCP session (yours, if you gave one), for the server's resources and prompts.

        Raises:
            ToolRunnerError: The toolset is closed.
        """
        if self._session is None:
            raise ToolRunnerError(
                f"The MCP toolset {self.name!r} is closed, so it has no session; open it first "
                "(`async with toolset:`), or use it inside `async with ToolRunner(...)`."
            )
        return self._session

    def tools(self) -> tuple[RunnableTool, ...]:
        """The server's tools (filtered and prefixed) as the server last listed them; none while closed.

        The same tuple while they are unchanged.
        """
        return self._listed

    def tools_changed(self) -> None:
        """Say that the server's tools changed: the toolset lists them again, in the background.

        The toolset hears the server's ``notifications/tools/list_changed`` itself, except on a
        session you opened yourself with a protocol older than 2026-07-28: call this from that
        session's ``message_handler`` then. Does nothing while the toolset is closed.
        """
        if self._changes is not None:
            self._changes.hear()

    async def open(self) -> None:
        """Connect (unless given a session), watch for changes to the tools, and list them."""
        stack = AsyncExitStack()
        opened = False
        try:
            client, session = await self._connect(stack)
            group = await stack.enter_async_context(anyio.create_task_group())
            stack.callback(group.cancel_scope.cancel)  # its tasks run until the toolset closes
            changes = self._changes = _Changes()
            stack.callback(changes.release)
            await group.start(self._watch, session)  # before the listing, to miss no change
            group.start_soon(self._keep_listed, session, changes)
            await self._list(session, changes)
            opened = True
        finally:
            if not opened:  # the error is raised as it is, not in the groups' exception groups
                self._changes = None
                await stack.aclose()
        self._session, self._client, self._stack = session, client, stack
        self._opener = anyio.get_current_task().id

    async def close(self) -> None:
        """Stop watching, and disconnect unless the session is yours; in the task that opened it.

        Raises:
            ToolRunnerError: Called from another task than ``open()``.
        """
        if self._stack is None:
            return
        self._check_closable()
        stack, self._stack = self._stack, None
        self._session = self._client = self._changes = None
        self._definitions, self._listed = [], ()
        await stack.aclose()

    def _check_closable(self) -> None:
        if self._stack is not None and anyio.get_current_task().id != self._opener:
            raise ToolRunnerError(
                f"The MCP toolset {self.name!r} was opened in one task and closed in another, but its session "
                "must be closed in the task that opened it; enter the runner with `async with ToolRunner(...)`, "
                "or open the toolset yourself with `async with toolset:`, around the whole run."
            )

    # -- the connection ---------------------------------------------------------------------------

    async def _connect(self, stack: AsyncExitStack) -> tuple[Client | None, ClientSession]:
        server = self._server
        if isinstance(server, ClientSession):
            if server.protocol_version is None:
                raise ToolRunnerError(
                    f"The ClientSession of the MCP toolset {self.name!r} is not initialized; enter it and await "
                    "session.initialize() first, or give the toolset the server and let it connect."
                )
            return None, server
        if isinstance(server, Client):
            if self._client_used:
                raise ToolRunnerError(
                    f"The mcp.Client of the MCP toolset {self.name!r} was connected already, and a Client connects "
                    "once; give the toolset the server instead (it connects anew each time it opens), or open the "
                    "toolset once yourself (`async with toolset:`) around every run that uses it."
                )
            self._client_used = True
            client = server
            client.message_handler = _chained(self._hear, client.message_handler)
        else:
            client = Client(server, message_handler=self._hear)
        await stack.enter_async_context(client)
        return client, client.session

    async def _hear(self, message: IncomingMessage) -> None:
        """The session's message handler: a change to the tools is what the toolset listens for
        (unless it subscribed to changes: the session passes their notices on here too)."""
        if isinstance(message, ToolListChangedNotification) and not self._subscribed:
            self.tools_changed()
        await anyio.lowlevel.checkpoint()

    async def _watch(
        self, session: ClientSession, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """From protocol 2026-07-28 on, a server sends changes only on a subscriptions/listen stream:
        open one when the server says it announces changes; started once it is acknowledged."""
        capabilities = session.server_capabilities
        announces = (
            capabilities is not None and capabilities.tools is not None and capabilities.tools.list_changed
        )
        started = False
        try:
            if announces:
                async with listen(session, tools_list_changed=True) as subscription:
                    task_status.started()
                    started = self._subscribed = True
                    try:
                        async for _ in subscription:
                            self.tools_changed()
                    finally:
                        self._subscribed = False
        except ListenNotSupportedError:
            pass  # an older protocol: the server sends its notifications unasked, to _hear
        except Exception as error:
            logger.warning(
                "The MCP toolset %r cannot watch its server's tools for changes (%s); it keeps the tools it has.",
                self.name,
                describe(error),
            )
        if not started:
            task_status.started()

    async def _keep_listed(self, session: ClientSession, changes: _Changes) -> None:
        """List the tools again whenever the server says they changed."""
        while True:
            heard = await changes.next_notice()
            try:
                await self._list(session, changes)
            except Exception as error:
                log_handled(
                    error,
                    "Listing the tools of the MCP toolset %r again failed (%s); it keeps the tools it has.",
                    self.name,
                    describe(error),
                )
            changes.listed_up_to(heard)

    async def _list(self, session: ClientSession, changes: _Changes) -> None:
        async with changes.listing:  # one at a time, so that an older listing never lands last
            await self._list_now(session)

    async def _list_now(self, session: ClientSession) -> None:
        definitions: list[MCPTool] = []
        cursor: str | None = None
        for _ in range(_MAX_PAGES):
            page = await session.list_tools(
                params=None if cursor is None else PaginatedRequestParams(cursor=cursor)
            )
            definitions.extend(page.tools)
            cursor = page.next_cursor
            if cursor is None:
                break
        else:
            logger.warning(
                "The MCP toolset %r read only the first %d pages of its tools.", self.name, _MAX_PAGES
            )
        if definitions != self._definitions:
            self._definitions = definitions
            self._listed = self._offered(definitions)

    def _offered(self, definitions: list[MCPTool]) -> tuple[_Tool, ...]:
        """The tools to offer: filtered, named for the API, each name once."""
        tools: dict[str, _Tool] = {}
        for definition in definitions:
            if self._filter is not None and not self._filter(definition):
                continue
            name = _NAME_CHARACTERS.sub("_", definition.name)
            if self._prefix is not None:
                name = f"{self._prefix}_{name}"
            if not 0 < len(name) <= _MAX_NAME or name in tools:
                logger.warning(
                    "The MCP toolset %r leaves out the tool %r: as %r, its name is %s.",
                    self.name,
                    definition.name,
                    name,
                    "taken by another of its tools" if name in tools else "not 1 to 128 characters long",
                )
                continue
            tools[name] = _Tool(definition, name, self._options, self._call)
        return tuple(tools.values())

    async def _call(self, tool: _Tool, arguments: dict[str, Any]) -> object:
        session, client, changes = self._session, self._client, self._changes
        if session is None or changes is None:
            raise ToolError(f"Tool {tool.name!r} cannot run now: its MCP server is not connected.")
        try:
            if client is not None:  # the Client also answers the server's input requests
                result = await client.call_tool(tool.definition.name, arguments)
            else:
                result = await session.call_tool(tool.definition.name, arguments)
        except MCPError as error:
            raise ToolError(f"The MCP server could not run tool {tool.name!r}: {error.message}") from error
        await changes.wait_listed()  # a change the server announced during the call is offered next
        return result_value(result, tool.name)


@dataclass(frozen=True, slots=True)
class _Options:
    """How the runner runs the tools of one toolset."""

    sequential: bool
    timeout: float | None
    start_early: bool
    idempotent: bool
    requires_approval: ApprovalGate


class _Tool:
    """One tool of an MCP server as the runner runs it (a ``RunnableTool``).

    Attributes:
        definition: The tool as the server lists it (``mcp.types.Tool``).
    """

    is_async = True

    def __init__(
        self,
        definition: MCPTool,
        name: str,
        options: _Options,
        call: Callable[[_Tool, dict[str, Any]], Awaitable[object]],
    ) -> None:
        self.name = name
        self.definition = definition
        self.sequential = options.sequential
        self.timeout = options.timeout
        self.start_early = options.start_early
        self.idempotent = options.idempotent
        self.requires_approval = options.requires_approval
        param: dict[str, Any] = {"name": name, "input_schema": definition.input_schema}
        if definition.description:
            param["description"] = definition.description
        self._param = param
        self._call = call
        self.function = self._run

    def to_param(self) -> Mapping[str, Any]:
        """The definition sent to the model: the name, the server's description and input schema."""
        return self._param

    def parse_input(self, raw: object) -> dict[str, Any]:
        """The model's input, an object; the server checks it against its schema."""
        return {"arguments": input_object(self.name, raw)}

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return arguments

    async def _run(self, arguments: dict[str, Any]) -> object:
        return await self._call(self, arguments)

    def __repr__(self) -> str:
        return f"<MCP tool {self.name!r}>"


class _Changes:
    """The server's notices that its tools changed, and the listings that caught up with them."""

    def __init__(self) -> None:
        self.heard = 0  # notices heard
        self.listed = 0  # notices that the tools listed since reflect
        self.listing = anyio.Lock()
        self._told = anyio.Event()  # set while a notice waits for a listing
        self._caught_up = anyio.Event()  # set (and replaced) whenever a listing ends

    def hear(self) -> None:
        self.heard += 1
        self._told.set()

    async def next_notice(self) -> int:
        """Wait for a notice; the number of notices heard so far."""
        await self._told.wait()
        self._told = anyio.Event()
        return self.heard

    def listed_up_to(self, heard: int) -> None:
        self.listed = max(self.listed, heard)
        self._caught_up.set()
        self._caught_up = anyio.Event()

    async def wait_listed(self) -> None:
        """Wait until a listing reflects every notice heard so far."""
        heard = self.heard
        while self.listed < heard:
            await self._caught_up.wait()

    def release(self) -> None:
        """The toolset closes: nothing is waited for any more."""
        self.listed_up_to(self.heard)


def _chained(mine: MessageHandlerFnT, yours: MessageHandlerFnT | None) -> MessageHandlerFnT:
    async def handler(message: IncomingMessage) -> None:
        await mine(message)
        if yours is not None:
            await yours(message)

    return handler


def _check_server(server: object) -> MCPServerSource:
    transport = callable(getattr(server, "__aenter__", None)) and callable(getattr(server, "__aexit__", None))
    if transport or isinstance(server, MCPServer | Server | StdioServerParameters | str | ClientSession):
        return cast(MCPServerSource, server)  # a transport is an async context manager (of streams)
    raise ToolDefinitionError(
        f"MCPToolset takes an MCP server, not {type(server).__name__!r}: an MCPServer, StdioServerParameters, "
        "a URL, an mcp transport, an mcp.Client or an open ClientSession."
    )


def _check_prefix(prefix: str | None) -> str | None:
    if prefix is not None and (
        not isinstance(prefix, str) or not re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", prefix)
    ):
        raise ToolDefinitionError(
            f"The tool name prefix {prefix!r} is invalid; give 1 to 64 letters, digits, '_' and '-', such as 'github'."
        )
    return prefix


def _check_timeout(name: str, timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:
        raise ToolDefinitionError(
            f"The timeout {timeout!r} of the MCP toolset {name!r} is invalid; pass a positive number of seconds, "
            "or None for the runner's default."
        )
    return float(timeout)


def _check_gate(name: str, gate: ApprovalGate) -> ApprovalGate:
    if not isinstance(gate, bool) and not callable(gate):
        raise ToolDefinitionError(
            f"requires_approval of the MCP toolset {name!r} must be a bool or a function of the ToolCall, not "
            f"{type(gate).__name__!r}."
        )
    return gate

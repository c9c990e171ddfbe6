"""Where tools come from: the one seam between the runner and the sources of its tools.

Everything the ``tools=[...]`` option holds becomes a ``RunnableTool`` (``index_tools`` in
``_params.py`` does it, the single path): ``@tool`` functions are ``Tool`` objects already; plain
functions are made into ``Tool``; the SDK's function tools, built-in tools (the memory tool) and
toolsets are adapted (``_sdk_tools.py``); a ``Toolset`` gives its tools through ``tools()``.

A ``Toolset`` is a source of tools that may hold a resource (a process, a connection, an MCP
session) and whose tools may change while a run goes on:

- ``open()`` and ``close()`` acquire and release the resource. A runner entered with
  ``async with`` opens its toolsets as it enters and closes them as it exits, both in the task
  that enters it; the runner owns the toolsets it opens and only those (see docs/tools.md,
  "Writing a toolset").
- ``tools()`` lists the tools it offers now. The runner asks before every request, so it should
  be cheap; while the tools are unchanged it should return the same sequence object, which lets the
  runner skip re-reading them.

A tool with a ``toolset_name`` attribute (a str) answers every call whose tool_use carries that
``toolset_name`` (the API's toolset families, such as ``browser``), whatever the member's name;
every other call goes to the tool of its name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, cast, runtime_checkable

from ._sdk_tools import SDK_OBJECTS, close_sdk_object
from ._tools import ApprovalGate, ToolContext

__all__ = ["RunnableTool", "Toolset"]


@runtime_checkable
class RunnableTool(Protocol):
    """What the runner needs of a tool: ``Tool`` (``@tool``) is one; so are the adapted SDK tools.

    The runner calls ``parse_input`` with the model's input (an ``is_error`` result with the
    message of a ``ToolInputError`` it raises), then ``function(**call_kwargs(arguments, context))``,
    awaited when ``is_async``, otherwise in a worker thread; the value goes through the result
    adapter. A ``ToolError`` (toolrunner's or the SDK's) raised by ``function`` becomes an
    ``is_error`` result with its content.
    """

    @property
    def name(self) -> str: ...
    @property
    def sequential(self) -> bool: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def start_early(self) -> bool: ...
    @property
    def idempotent(self) -> bool: ...
    @property
    def requires_approval(self) -> ApprovalGate: ...
    @property
    def is_async(self) -> bool: ...
    @property
    def function(self) -> Callable[..., Any]: ...
    def to_param(self) -> Mapping[str, Any]: ...
    def parse_input(self, raw: object) -> dict[str, Any]: ...
    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]: ...


class Toolset:
    """A source of tools that may need opening and whose tools may change; subclass it.

    As it is, it holds a fixed list of tools and owns the SDK tools and toolsets among them: its
    ``close()`` runs their cleanup (a toolset's ``close()``, the ``bash`` tool's shell), which a
    runner given them directly would run when it ends. Subclass it for a source of its own:
    override ``tools()``, and ``open()`` and ``close()`` when it holds a resource.
    ``async with toolset:`` opens it yourself: a toolset that is open when a runner starts is
    used as it is and left open, so several runners can share it.

    Args:
        tools: The tools it offers (``@tool`` tools, functions, SDK tools and toolsets).
        name: What errors and saved runs call the toolset; the class name by default.
    """

    def __init__(self, tools: Iterable[object] = (), *, name: str | None = None) -> None:
        self.name = name if name is not None else type(self).__name__
        self._tools = tuple(tools)
        self._holder: object | None = None  # who opened it: a runner, or _YOU; None while closed

    def tools(self) -> Sequence[object]:
        """The tools offered now: ``@tool`` tools, functions, SDK tools, or ``RunnableTool`` objects.

        Return the same sequence object while the tools are unchanged.
        """
        return self._tools

    async def open(self) -> None:
        """Acquire what the tools need; called once before they are used."""

    async def close(self) -> None:
        """Release what ``open()`` acquired; called once, in the task that called ``open()``.

        The default runs the cleanup of the SDK tools and toolsets among ``tools()``.
        """
        for item in reversed(self.tools()):
            if isinstance(item, SDK_OBJECTS):
                await close_sdk_object(cast(object, item))

    @property
    def is_open(self) -> bool:
        """Whether the toolset is open (by you or by a runner)."""
        return self._holder is not None

    async def __aenter__(self) -> Self:
        await self.acquire(_YOU)
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.release(_YOU)

    async def acquire(self, holder: object) -> bool:
        """Open the toolset for ``holder`` unless it is open already; returns whether it opened."""
        if self._holder is not None:
            return False
        await self.open()
        self._holder = holder
        return True

    async def release(self, holder: object) -> None:
        """Close the toolset if ``holder`` opened it."""
        if self._holder is holder:
            self._holder = None
            await self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {'open' if self.is_open else 'closed'}>"


_YOU = object()
"""The holder of a toolset opened with ``async with toolset:``."""

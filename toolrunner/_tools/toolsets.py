"""Where tools come from: the one seam between the runner and the sources of its tools.

Everything the ``tools=[...]`` option holds becomes a ``RunnableTool`` (``index_tools`` in
``_runner/params.py`` does it, the single path): ``@tool`` functions are ``Tool`` objects already; plain
functions are made into ``Tool``; the SDK's function tools, built-in tools (the memory tool) and
toolsets are adapted (``_tools/sdk.py``); a ``Toolset`` gives its tools through ``tools()``.

A ``Toolset`` is a source of tools that may hold a resource (a process, a connection, an MCP
session) and whose tools may change while a run goes on:

- ``open()`` and ``close()`` acquire and release the resource. A runner entered with
  ``async with`` opens its toolsets as it enters and closes them as it exits, both in the task
  that enters it; the runner owns the toolsets it opens and only those (see docs/tools.md,
  "Writing a toolset"). Whoever calls them (a runner, ``async with toolset``, or your own
  ``await toolset.open()``), the toolset knows whether it is open: ``Toolset`` wraps the
  ``open()`` and ``close()`` of each subclass (``__init_subclass__``), so that ``open()`` of an
  open toolset and ``close()`` of a closed one do nothing, and a runner never opens a second
  session beside yours.
- ``tools()`` lists the tools it offers now. The runner asks before every request, so it should
  be cheap; while the tools are unchanged it should return the same sequence object, which lets the
  runner skip re-reading them.

A tool with a ``toolset_name`` attribute (a str) answers every call whose tool_use carries that
``toolset_name`` (the API's toolset families, such as ``browser``), whatever the member's name;
every other call goes to the tool of its name.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, Protocol, Self, cast, runtime_checkable

import anyio

from .._core.types import ToolFlags
from .sdk import SDK_OBJECTS, close_sdk_object
from .tool import ApprovalGate, ToolContext

__all__ = ["RunnableTool", "Toolset"]


@runtime_checkable
class RunnableTool(ToolFlags, Protocol):
    """What the runner needs of a tool: ``Tool`` (``@tool``) is one; so are the adapted SDK tools.

    The runner calls ``parse_input`` with the model's input (an ``is_error`` result with the
    message of a ``ToolInputError`` it raises), then ``function(**call_kwargs(arguments, context))``,
    awaited when ``is_async``, otherwise in a worker thread; the value goes through the result
    adapter. A ``ToolError`` (toolrunner's or the SDK's) raised by ``function`` becomes an
    ``is_error`` result with its content. The flags that decide when its calls may run
    (``sequential``, ``start_early``, ``idempotent``, ``requires_approval``) are the core's
    ``ToolFlags``, with the gate typed.
    """

    @property
    def name(self) -> str: ...
    @property
    def timeout(self) -> float | None: ...
    @property
    def requires_approval(self) -> ApprovalGate: ...
    @property
    def is_async(self) -> bool: ...
    @property
    def function(self) -> Callable[..., Any]: ...
    def to_param(self) -> Mapping[str, Any]: ...
    def parse_input(self, raw: object) -> dict[str, Any]: ...
    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]: ...


_TRACKED = "_toolrunner_tracked"
"""The attribute that marks an ``open()`` or ``close()`` wrapped by ``Toolset``."""


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

    # Class defaults, so that a subclass whose __init__ skips Toolset's still keeps the books.
    _holder: object | None = None  # who opened it: a runner, or _YOU; None while closed
    _opening: tuple[int, anyio.Event] | None = None  # the task opening it, and when it is done
    _closing: int | None = None  # the task closing it

    def __init__(self, tools: Iterable[object] = (), *, name: str | None = None) -> None:
        self.name = name if name is not None else type(self).__name__
        self._tools = tuple(tools)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        # A subclass overrides open() and close(); wrapped, they keep the books however they are called.
        opened, closed = cls.__dict__.get("open"), cls.__dict__.get("close")
        if callable(opened) and not getattr(opened, _TRACKED, False):
            cls.open = Toolset._tracked_open(opened)  # type: ignore[method-assign]  # the subclass's own, wrapped
        if callable(closed) and not getattr(closed, _TRACKED, False):
            cls.close = Toolset._tracked_close(closed)  # type: ignore[method-assign]  # the subclass's own, wrapped

    # -- keeping the books of open() and close() --------------------------------------------------

    @staticmethod
    def _tracked_open(open_: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        """``open()`` that marks the toolset open, and does nothing when it is open already. A
        ``super().open()`` inside it (the same task) runs as it is; another task that opens it
        meanwhile waits for this opening (and opens it itself if that one failed)."""

        @functools.wraps(open_)
        async def open(self: Toolset) -> None:
            task = anyio.get_current_task().id
            while (opening := self._opening) is not None and opening[0] != task:
                await opening[1].wait()  # another task is opening it: it is open once that is done
            if opening is not None:  # super().open() of a subclass's open()
                await open_(self)
                return
            if self._holder is not None:
                return
            self._opening = (task, anyio.Event())
            try:
                await open_(self)
                self._holder = _YOU  # acquire() puts the runner in its place
            finally:
                done, self._opening = self._opening[1], None
                done.set()

        setattr(open, _TRACKED, True)
        return open

    @staticmethod
    def _tracked_close(close_: Callable[[Any], Awaitable[None]]) -> Callable[[Any], Awaitable[None]]:
        """``close()`` that marks the toolset closed first, and does nothing when it is not open; a
        ``super().close()`` inside it (the same task) runs as it is. A close that
        ``_check_closable`` refuses leaves the toolset open."""

        @functools.wraps(close_)
        async def close(self: Toolset) -> None:
            task = anyio.get_current_task().id
            if self._closing == task:  # super().close() of a subclass's close()
                await close_(self)
                return
            if self._holder is None:
                return
            self._check_closable()
            self._holder, self._closing = None, task
            try:
                await close_(self)
            finally:
                self._closing = None

        setattr(close, _TRACKED, True)
        return close

    def tools(self) -> Sequence[object]:
        """The tools offered now: ``@tool`` tools, functions, SDK tools, or ``RunnableTool`` objects.

        Return the same sequence object while the tools are unchanged.
        """
        return self._tools

    @_tracked_open
    async def open(self) -> None:
        """Acquire what the tools need; called once before they are used.

        You may call it yourself (then close it yourself): the toolset is then open, runners use
        it as it is and leave it open, and calling ``open()`` again does nothing.
        """

    @_tracked_close
    async def close(self) -> None:
        """Release what ``open()`` acquired; called once, in the task that called ``open()``.
        ``close()`` of a toolset that is not open does nothing.

        The default runs the cleanup of the SDK tools and toolsets among ``tools()``.
        """
        for item in reversed(self.tools()):
            if isinstance(item, SDK_OBJECTS):
                await close_sdk_object(cast(object, item))

    def _check_closable(self) -> None:
        """Raise if the toolset cannot be closed here and now; it then stays open (the MCP
        toolset's session, say, must be closed in the task that opened it)."""

    @property
    def is_open(self) -> bool:
        """Whether the toolset is open (by you, with ``async with`` or ``open()``, or by a runner)."""
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
        if self._holder is not _YOU:  # another task opened it meanwhile, and owns it
            return False
        self._holder = holder
        return True

    async def release(self, holder: object) -> None:
        """Close the toolset if ``holder`` opened it."""
        if self._holder is holder:
            await self.close()

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} {'open' if self.is_open else 'closed'}>"


_YOU = object()
"""The holder of a toolset opened with ``async with toolset:`` or ``await toolset.open()``."""

"""What ``ToolRunner`` does beyond the core loop, in the SDK runner's terms: its tools' lifetime,
tool changes in the middle of a run, compaction, and the SDK's method names.

``ToolRunner`` inherits ``RunnerExtensions``. What the core decides (when pending tool changes are
sent, when a compaction request is made and what it replaces) is in ``_core``; what is here is the
code it cannot hold: the tools themselves, and their lifetime:

- ``_open_tools``: entering the runner, and before each request (toolsets given since are opened);
- ``_close_tools``: leaving the runner, or, when it was not entered, when the loop ends.

Who owns what: a runner opens the ``Toolset`` objects it is given that are not open, and closes
those it opened; it runs the cleanup of the SDK tools and toolsets given to it directly. A
toolset opened by you (``async with toolset:``) is yours, and so are the tools inside it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

import anyio

from .._core.errors import ParamsError, ToolRunnerError
from .._core.tool_changes import addition, last_changes, pending_message, removal
from .._core.types import Reply, ToolCall, ToolResultMessage
from .._tools.sdk import SDK_TOOLSETS, close_sdk_object
from .._tools.toolsets import Toolset
from .params import runnable_of

if TYPE_CHECKING:
    from .._core.run import RunCore
    from .._tools.toolsets import RunnableTool
    from .options import Options
    from .params import ToolIndex

__all__ = ["RunnerExtensions"]

logger = logging.getLogger("toolrunner")


class RunnerExtensions:
    """The SDK-runner parts of ``ToolRunner`` (see the module docstring)."""

    if TYPE_CHECKING:  # what the driver provides
        _core: RunCore[RunnableTool]
        _index: ToolIndex
        _options: Options

        def _index_tools(self, tools: object) -> None: ...
        def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None: ...
        async def generate_tool_response(self) -> ToolResultMessage | None: ...

    def _init_extensions(self, *, from_sync_code: bool) -> None:
        self._tool_changes: dict[str, object] = {}
        """Tools added (the tool, or a raw definition) or removed (None) by name: ``add_tools()``. What
        is code lives here (the SDK runner's ``_tool_overrides``); the blocks that say which tools are
        available are data: in the history, and the pending ones in ``RunState.tool_changes``."""
        self._opened: list[Toolset] = []  # the toolsets this runner opened, in order
        self._entered = False  # inside `async with runner`
        self._sdk_closed: set[int] = set()  # SDK tools and toolsets whose cleanup this runner ran
        self._steps_in_new_tasks = from_sync_code
        """Driven by a ``SyncToolRunner``: each step runs in a task of its own unless entered."""
        self._streamed: list[ToolCall] = []
        """The client calls whose blocks finished streaming in the current reply, in order."""

    # -- the SDK's names ----------------------------------------------------------------------

    def append_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """The SDK runner's name for ``push_messages()``."""
        self.push_messages(*messages)

    async def generate_tool_call_response(self) -> ToolResultMessage | None:
        """The SDK runner's name for ``generate_tool_response()``."""
        return await self.generate_tool_response()

    def defer_tool_call(self, tool_use: object) -> None:
        """Hold a call of the reply streaming now, as the SDK's runner does: with
        ``run_tools_eagerly=True`` it does not start while the reply streams, and runs with the rest
        of the turn, when the loop body asks for the next reply or calls ``generate_tool_response()``
        (decide on it meanwhile, or answer it yourself with ``answer()``). The reply's other calls still
        start early. It does nothing without ``run_tools_eagerly``, for a call that started already,
        or for an id the reply does not have.

        Args:
            tool_use: The call's ``tool_use`` block (a stream event's ``content_block``), or its id.

        Raises:
            ParamsError: ``tool_use`` is neither a ``tool_use`` block nor an id.
        """
        tool_use_id = tool_use if isinstance(tool_use, str) else getattr(tool_use, "id", None)
        if not isinstance(tool_use_id, str):
            raise ParamsError(
                f"defer_tool_call() takes a tool_use block or its id, not {type(tool_use).__name__!r}."
            )
        if self._options.run_tools_eagerly:
            self._core.hold(tool_use_id)

    @property
    def deferred_tool_calls(self) -> list[ToolCall]:
        """The calls of the current reply that ``defer_tool_call()`` holds and that have not run, in
        the model's order, once their blocks finished streaming (read it when done with the stream).
        Empty without ``run_tools_eagerly``."""
        return self._core.held(self._streamed) if self._options.run_tools_eagerly else []

    # -- tool changes ---------------------------------------------------------------------------

    def add_tools(self, *tools: object) -> None:
        """Give the model more tools without changing the ``tools`` param (which would miss the
        prompt cache), as the SDK's runner does.

        The definitions go to the model in ``tool_addition`` blocks of a ``role: "system"``
        message sent with the next request (the service needs the ``inline-tools-2026-09-15``
        beta). A tool runs at once, in place of any tool of the same name, even for a call of the
        reply being handled; a raw definition (a server tool) is never run, and stops a tool of
        its name from running.

        Raises:
            ParamsError: A toolset was given: a runner's toolsets are its ``tools=[...]``.
        """
        blocks: list[dict[str, Any]] = []
        for tool in tools:
            if isinstance(tool, (Toolset, *SDK_TOOLSETS)):
                raise ParamsError(
                    f"add_tools() cannot add the toolset {tool!r}; pass toolsets in tools=[...], or change them "
                    "with set_messages_params()."
                )
            if isinstance(tool, Mapping):
                definition = dict(cast("Mapping[str, Any]", tool))
                name = definition.get("name")
                if isinstance(name, str):
                    self._tool_changes[name] = definition
            else:
                runnable = runnable_of(tool)
                definition = dict(runnable.to_param())
                self._tool_changes[runnable.name] = tool
            blocks.append(addition(definition))
        self._core.change_tools(blocks)
        self._index_tools(self._index.tools)

    def remove_tools(self, *tools: object) -> None:
        """Take tools away from the model without changing the ``tools`` param, as the SDK's runner
        does: they stop running at once (a call to one is answered like a call to an unknown
        tool), and the model is told in ``tool_removal`` blocks sent with the next request.

        Args:
            *tools: The tools, or their names.

        Raises:
            ParamsError: A name that is not a tool of this runner, or a toolset.
        """
        names: list[str] = []
        index = self._index
        for tool in tools:
            if isinstance(tool, (Toolset, *SDK_TOOLSETS)):
                raise ParamsError(
                    f"remove_tools() cannot remove the toolset {tool!r}; change toolsets with set_messages_params()."
                )
            name = tool if isinstance(tool, str) else runnable_of(tool).name
            known = (
                name in index.runnable
                or name in index.unrunnable
                or name in self._tool_changes
                or name in self._history_additions()
            )
            if not known:
                available = ", ".join(repr(n) for n in sorted({*index.runnable, *index.unrunnable})) or "none"
                raise ParamsError(
                    f"remove_tools() got {name!r}, which is not a tool of this runner (the tools are: {available}); "
                    "the service rejects a tool_removal for a tool it does not know."
                )
            names.append(name)
        for name in names:
            self._tool_changes[name] = None
        self._core.change_tools([removal(name) for name in names])
        self._index_tools(self._index.tools)

    def _history_additions(self) -> set[str]:
        """The names the history's tool_addition blocks (and the pending ones) made available."""
        state = self._core.state
        changes = last_changes((*state.messages, pending_message(state.tool_changes)))
        return {name for name, added in changes.items() if added}

    # -- compaction -----------------------------------------------------------------------------

    def compact_before_next_turn(self, compaction: Mapping[str, Any] | None = None) -> None:
        """Compact the conversation before the model's next turn, as the SDK's runner does.

        Once the current turn is finished (its tools ran), the next request is a compaction
        request (the ``compaction`` param; pass ``betas=["compact-2026-09-04"]``): the reply, with
        ``stop_reason == "compaction"``, is yielded like any other, and replaces the history it
        summarizes; then the loop goes on. After the loop's last turn, the compaction is the last
        request. Calling it again before then replaces the pending config.

        Args:
            compaction: The compaction config; ``{"type": "summarize"}`` by default.

        Raises:
            ParamsError: ``context_management`` has a compaction edit, which the service does not
                take together with a compaction block.
        """
        self._core.compact_next(compaction)

    # -- hooks ------------------------------------------------------------------------------------

    async def _open_tools(self) -> None:
        """Open the toolsets that are not open; refuse SDK tools this runner closed already."""
        for obj in self._index.sdk_objects:
            if id(obj) in self._sdk_closed or getattr(obj, "_toolset_closed", False):
                raise ToolRunnerError(
                    f"the SDK tool or toolset {obj!r} is closed (a runner runs the cleanup of the SDK tools it is given "
                    "when it ends); enter the runner (`async with runner:`, or `with SyncToolRunner(...) as runner:`) to "
                    "keep its tools open across follow-ups, or "
                    "give them in a toolrunner.Toolset that you open yourself (`async with Toolset([...]) as tools:`) "
                    "to share them."
                )
        for toolset in self._index.toolsets:
            if self._steps_in_new_tasks and not self._entered and not toolset.is_open:
                raise ToolRunnerError(
                    f"the toolset {toolset.name!r} must be opened and closed in one task, and a SyncToolRunner "
                    "runs each step in a new one unless it is entered: use `with SyncToolRunner(...) as runner:` "
                    "(the blocking `async with`), and iterate or call until_done() inside the block."
                )
            if toolset not in self._opened and await toolset.acquire(self):
                self._opened.append(toolset)
        if self._index.toolsets and self._index.stale():  # what they list now they are open
            self._index_tools(self._index.tools)

    async def _close_tools(self) -> None:
        """Close the toolsets this runner opened and run the cleanup of its SDK tools, last first.

        A toolset's ``close()`` runs in no cancel scope of the runner's, so that it can exit what its
        ``open()`` entered (a task group, an MCP session), which must be the innermost scope when it
        exits; it may run while the run is cancelled, so it shields what must finish itself.
        """
        opened, self._opened = self._opened, []
        try:
            await _release(opened, self)
        finally:
            with anyio.CancelScope(shield=True):
                for obj in reversed(self._index.sdk_objects):
                    if id(obj) not in self._sdk_closed and await close_sdk_object(obj):
                        self._sdk_closed.add(id(obj))

    async def _at_end(self) -> None:
        """The loop ended: without ``async with``, that is when the tools close."""
        if not self._entered:
            await self._close_tools()


async def _release(toolsets: list[Toolset], holder: object) -> None:
    """Close ``toolsets`` for ``holder``, last first; each one even when closing a later one failed or
    was cancelled (as an exit stack would)."""
    if not toolsets:
        return
    try:
        await toolsets[-1].release(holder)
    except Exception:
        logger.exception("Closing the toolset %r failed", toolsets[-1])
    finally:
        await _release(toolsets[:-1], holder)

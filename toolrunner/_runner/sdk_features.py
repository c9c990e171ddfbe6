"""The runner's tools (``RunnerTools``, a part of ``ToolRunner``): their index, their lifetime, and
the tool changes made in the middle of a run, in the SDK runner's terms.

What the core decides (when pending tool changes are sent, which tools a change removed, whether a
call may start early) is in ``_core``; what is here is the code it cannot hold: the tools
themselves, and their lifetime:

- ``open``: entering the runner, and before tools are needed (toolsets given since are opened);
- ``close``: leaving the runner, or, when it was not entered, when the loop ends (``at_end``).

Who owns what: a runner opens the ``Toolset`` objects it is given that are not open, and closes
those it opened; it runs the cleanup of the SDK tools and toolsets given to it directly. A
toolset opened by you (``async with toolset:``) is yours, and so are the tools inside it.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any, cast

import anyio

from .._core.errors import ParamsError, ToolRunnerError
from .._core.run import RunCore
from .._core.tool_changes import addition, last_changes, pending_message, removal
from .._core.types import ToolCall
from .._tools.execution import ExecutionOptions
from .._tools.sdk import SDK_TOOLSETS, close_sdk_object
from .._tools.toolsets import RunnableTool, Toolset
from .options import Options
from .params import ToolIndex, index_tools, runnable_of

__all__ = ["RunnerTools"]

logger = logging.getLogger("toolrunner")


class RunnerTools:
    """The runner's tools (see the module docstring): made by ``ToolRunner``, which hands the core
    their flags (``execution``, the core's ``tools``) and delegates ``add_tools()``,
    ``remove_tools()`` and ``defer_tool_call()`` here.

    Args:
        core: The run's core: it reads the tools' flags, and records the tool changes.
        options: The runner's options.
        execution: How calls run before any tool is indexed (the core's first ``tools``).
        steps_in_new_tasks: Driven by a ``SyncToolRunner``: each step runs in a task of its own
            unless the runner is entered.
    """

    def __init__(
        self,
        core: RunCore[RunnableTool],
        options: Options,
        execution: ExecutionOptions,
        *,
        steps_in_new_tasks: bool,
    ) -> None:
        self._core = core
        self._options = options
        self.index = ToolIndex(tools=[], wire=[], runnable={}, unrunnable=frozenset())
        self.execution = execution
        """How calls run: the indexed tools, their time limit, the result adapter."""
        self.limiter: anyio.CapacityLimiter | None = None
        """``max_concurrency``'s slots, once the tools are indexed."""
        self.changes: dict[str, object] = {}
        """Tools added (the tool, or a raw definition) or removed (None) by name: ``add_tools()``. What
        is code lives here (the SDK runner's ``_tool_overrides``); the blocks that say which tools are
        available are data: in the history, and the pending ones in ``RunState.tool_changes``."""
        self.entered = False
        """Inside ``async with runner``: the tools stay open until it is left."""
        self._opened: list[Toolset] = []  # the toolsets this runner opened, in order
        self._sdk_closed: set[int] = set()  # SDK tools and toolsets whose cleanup this runner ran
        self._sdk_given: dict[int, object] = {}
        """Every SDK tool and toolset the runner was given, by id, in order: also those the body took
        out of ``tools`` since (``set_messages_params``), whose cleanup runs at the end all the same."""
        self._steps_in_new_tasks = steps_in_new_tasks

    def index_tools(self, tools: object) -> None:
        """Index ``tools`` (the ``tools`` param) with the changes made since, and hand the core the
        flags of what runs now."""
        self.index = index = index_tools(tools, self.changes)
        for obj in index.sdk_objects:
            self._sdk_given.setdefault(id(obj), obj)
        limit = self._options.max_concurrency
        if limit and self.limiter is None:
            self.limiter = anyio.CapacityLimiter(limit)
        self.execution = ExecutionOptions(
            tools=index.runnable,
            adapter=self._options.result_adapter,
            timeout=self._options.tool_timeout,
            unrunnable=index.unrunnable,
            gated=any(
                tool.requires_approval is not False
                for tool in (*index.runnable.values(), *index.families.values())
            ),
            families=index.families,
            opens=bool(index.sdk_objects or index.toolsets),
        )
        self._core.tools = self.execution

    # -- the SDK's deferred calls -----------------------------------------------------------------

    def defer(self, tool_use: object) -> None:
        """``ToolRunner.defer_tool_call``."""
        tool_use_id = tool_use if isinstance(tool_use, str) else getattr(tool_use, "id", None)
        if not isinstance(tool_use_id, str):
            raise ParamsError(
                f"defer_tool_call() takes a tool_use block or its id, not {type(tool_use).__name__!r}."
            )
        if self._options.run_tools_eagerly:
            self._core.hold(tool_use_id)

    def deferred(self, streamed: list[ToolCall]) -> list[ToolCall]:
        """``ToolRunner.deferred_tool_calls``, of the calls ``streamed`` so far."""
        return self._core.held(streamed) if self._options.run_tools_eagerly else []

    # -- tool changes ---------------------------------------------------------------------------

    def add(self, *tools: object) -> None:
        """``ToolRunner.add_tools``."""
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
                    self.changes[name] = definition
            else:
                runnable = runnable_of(tool)
                definition = dict(runnable.to_param())
                self.changes[runnable.name] = tool
            blocks.append(addition(definition))
        self._core.change_tools(blocks)
        self.index_tools(self.index.tools)

    def remove(self, *tools: object) -> None:
        """``ToolRunner.remove_tools``."""
        names: list[str] = []
        index = self.index
        for tool in tools:
            if isinstance(tool, (Toolset, *SDK_TOOLSETS)):
                raise ParamsError(
                    f"remove_tools() cannot remove the toolset {tool!r}; change toolsets with set_messages_params()."
                )
            name = tool if isinstance(tool, str) else runnable_of(tool).name
            known = (
                name in index.runnable
                or name in index.unrunnable
                or name in self.changes
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
            self.changes[name] = None
        self._core.change_tools([removal(name) for name in names])
        self.index_tools(self.index.tools)

    def _history_additions(self) -> set[str]:
        """The names the history's tool_addition blocks (and the pending ones) made available."""
        state = self._core.state
        changes = last_changes((*state.messages, pending_message(state.tool_changes)))
        return {name for name, added in changes.items() if added}

    # -- lifetime -------------------------------------------------------------------------------

    async def open(self) -> None:
        """Open the toolsets that are not open; refuse SDK tools this runner closed already."""
        for obj in self.index.sdk_objects:
            if id(obj) in self._sdk_closed or getattr(obj, "_toolset_closed", False):
                raise ToolRunnerError(
                    f"the SDK tool or toolset {obj!r} is closed (a runner runs the cleanup of the SDK tools it is given "
                    "when it ends); enter the runner (`async with runner:`, or `with SyncToolRunner(...) as runner:`) to "
                    "keep its tools open across follow-ups, or "
                    "give them in a toolrunner.Toolset that you open yourself (`async with Toolset([...]) as tools:`) "
                    "to share them."
                )
        for toolset in self.index.toolsets:
            if self._steps_in_new_tasks and not self.entered and not toolset.is_open:
                raise ToolRunnerError(
                    f"the toolset {toolset.name!r} must be opened and closed in one task, and a SyncToolRunner "
                    "runs each step in a new one unless it is entered: use `with SyncToolRunner(...) as runner:` "
                    "(the blocking `async with`), and iterate or call until_done() inside the block."
                )
            if toolset not in self._opened and await toolset.acquire(self):
                self._opened.append(toolset)
        if self.index.toolsets and self.index.stale():  # what they list now they are open
            self.index_tools(self.index.tools)

    async def close(self) -> None:
        """Close the toolsets this runner opened and run the cleanup of the SDK tools it was given
        (also those no longer in ``tools``), last first.

        A toolset's ``close()`` runs in no cancel scope of the runner's, so that it can exit what its
        ``open()`` entered (a task group, an MCP session), which must be the innermost scope when it
        exits; it may run while the run is cancelled, so it shields what must finish itself.
        """
        opened, self._opened = self._opened, []
        try:
            await _release(opened, self)
        finally:
            if self._sdk_given:  # no shielded scope for a run without SDK tools (nearly every run)
                with anyio.CancelScope(shield=True):
                    for obj in reversed(tuple(self._sdk_given.values())):
                        if id(obj) not in self._sdk_closed and await close_sdk_object(obj):
                            self._sdk_closed.add(id(obj))

    async def at_end(self) -> None:
        """The loop ended: without ``async with``, that is when the tools close."""
        if not self.entered:
            await self.close()


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

"""Checking what users give the runner: request params, messages, tools, option values.

Pure functions with no I/O: each raises a ``ToolRunnerError`` whose message says what to do.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any, cast

from .._core.errors import ParamsError, ToolDefinitionError
from .._core.hook_types import HookPlan
from .._core.log import WARNING, log
from .._core.messages import message_param
from .._core.state import RunState
from .._core.tree_tools import check_sub_run_tools
from .._tools.request_params import TRANSPORT, beta_only_params, check_param_names, check_param_values
from .._tools.sdk import SDK_OBJECTS, SDK_TOOLS, SDK_TOOLSETS, SdkTool, SdkToolsetTool
from .._tools.subagents import SubAgent
from .._tools.tool import Tool, as_tool
from .._tools.toolsets import RunnableTool, Toolset
from .options import RunnerOptions

__all__ = [
    "TRANSPORT",
    "ToolIndex",
    "beta_only_params",
    "check_params",
    "index_tools",
    "resolve_tools",
    "runnable_of",
    "tool_key",
    "warn_unknown_limits",
]

REQUIRED = ("model", "max_tokens", "messages")


@dataclass(frozen=True, slots=True)
class ToolIndex:
    """The ``tools`` param (and the tool changes made since), read once per change."""

    tools: list[Any]
    """As the params keep them: tools, toolsets and raw definitions, as given (functions as ``Tool``)."""
    wire: list[Any]
    """As requests send them (each definition is computed once, by its tool)."""
    runnable: dict[str, RunnableTool]
    unrunnable: frozenset[str]
    """Names of raw definitions: never run by the runner."""
    families: dict[str, RunnableTool] = field(default_factory=dict[str, RunnableTool])
    """The tools that answer a toolset family's member calls, by ``toolset_name``."""
    saved: tuple[str | Mapping[str, Any], ...] = ()
    """As a saved run keeps them: runnable tools by name, toolsets as ``"toolset:<name>"``."""
    toolsets: tuple[Toolset, ...] = ()
    """The ``Toolset`` objects, which the runner opens, closes and asks for their tools."""
    listed: tuple[object, ...] = ()
    """What each of ``toolsets`` listed (``tools()``) when this index was made."""
    sdk_objects: tuple[object, ...] = ()
    """The SDK's tools and toolsets, whose cleanup the runner runs when it ends."""

    def stale(self) -> bool:
        """Whether a toolset lists other tools than it did (its ``tools()`` gave a new sequence)."""
        return any(
            toolset.tools() is not listed for toolset, listed in zip(self.toolsets, self.listed, strict=True)
        )


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    """Check request params and return them with ``messages`` as a new list of message params.

    Names come first (so that a typo such as ``max_token`` is named as one), then the required
    params, then the values that would fail only once the request was out (``_tools.request_params``,
    whose checks a ``SubAgent``'s params go through too).
    """
    check_param_names(
        params,
        options=_option_names(),
        advice="Pass runner options (max_iterations, ...) and request params by their documented names.",
        notes=_PARSE_ONLY,
    )
    if "thread" in params:
        raise ParamsError(
            "'thread' is not a request param of a runner: it sends the whole history with every request, as the "
            "SDK's runner does with thread=False. Leave thread out."
        )
    if "compaction" in params:
        raise ParamsError(
            "'compaction' cannot be a param of a runner: every request would be a compaction request; call "
            "runner.compact_before_next_turn() when the conversation should be compacted."
        )
    for required in REQUIRED:
        if required not in params:
            raise ParamsError(
                f"params need {required!r}; pass it to ToolRunner(...) or keep it in set_messages_params."
            )
    model = params["model"]
    if not isinstance(model, str) or not model.strip():
        raise ParamsError(f"model must be a model id such as 'claude-sonnet-4-6', not {model!r}.")
    max_tokens = params["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1:
        raise ParamsError(f"max_tokens must be a positive int, not {max_tokens!r}.")
    messages = params["messages"]
    if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
        raise ParamsError(
            f"messages must be a list of message params, not {type(messages).__name__!r}; "
            "for example [{'role': 'user', 'content': 'Hello'}]."
        )
    check_param_values(params, skip=("messages",))
    params["messages"] = [message_param(m, i) for i, m in enumerate(cast("Sequence[object]", messages))]
    return params


@cache
def _option_names() -> frozenset[str]:
    """The runner's own options, for the hint given for a misspelled one."""
    return frozenset(RunnerOptions.__annotations__)


def index_tools(entries: object, changes: Mapping[str, object] | None = None) -> ToolIndex:
    """Read the ``tools`` param: ``@tool`` tools, plain functions (made into tools), the SDK's tools
    and toolsets, ``Toolset`` objects, ``RunnableTool`` objects and raw dicts.

    ``changes`` are the tools added (a tool, or a raw definition: never run) or removed (``None``)
    by name since, without changing the ``tools`` param; they are not sent with it.
    """
    if entries is None:
        entries = []
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise ParamsError(f"tools must be a list of tools, not {type(cast(object, entries)).__name__!r}.")
    index = _Indexer()
    for entry in cast("Iterable[object]", entries):
        index.add_entry(entry)
    for name, entry in (changes or {}).items():
        index.change(name, entry)
    return ToolIndex(
        tools=index.tools,
        wire=index.wire,
        runnable=index.runnable,
        unrunnable=frozenset(index.unrunnable),
        families=index.families,
        saved=tuple(index.saved),
        toolsets=tuple(index.toolsets),
        listed=tuple(index.listed),
        sdk_objects=tuple(index.sdk_objects),
    )


def runnable_of(entry: object) -> RunnableTool:
    """One tool as the runner runs it: an SDK tool adapted, a ``RunnableTool`` as it is, any other
    callable made into a ``Tool``.

    Raises:
        ToolDefinitionError: ``entry`` cannot be made into a tool.
    """
    if isinstance(entry, SDK_TOOLS):
        return SdkTool(entry)
    if isinstance(entry, SDK_TOOLSETS):
        return SdkToolsetTool(entry)
    # The classes the package makes, before the protocol's runtime check (tens of µs a call).
    if isinstance(entry, Tool | SdkTool | SdkToolsetTool | SubAgent):
        return cast(RunnableTool, entry)
    if isinstance(entry, RunnableTool) and not inspect.isroutine(entry):
        return entry
    return as_tool(entry)


class _Indexer:
    """Builds a ``ToolIndex``, entry by entry."""

    def __init__(self) -> None:
        self.tools: list[Any] = []
        self.wire: list[Any] = []
        self.runnable: dict[str, RunnableTool] = {}
        self.unrunnable: set[str] = set()
        self.families: dict[str, RunnableTool] = {}
        self.saved: list[str | Mapping[str, Any]] = []
        self.toolsets: list[Toolset] = []
        self.listed: list[object] = []
        self.sdk_objects: list[object] = []
        self.origins: dict[str, Toolset | None] = {}  # the toolset each name came from, if any

    def add_entry(self, entry: object) -> None:
        if isinstance(entry, Mapping):
            definition = cast("Mapping[str, Any]", entry)
            name = definition.get("name")
            if isinstance(name, str):
                self._claim(name)
                self.unrunnable.add(name)
            elif not _is_toolset(definition):  # a toolset's entry (browser, mcp_toolset, ...) has no name
                raise ParamsError(f"the raw tool definition {entry!r} has no 'name'; every tool needs one.")
            self.tools.append(definition)
            self.wire.append(definition)
            self.saved.append(definition)
        elif isinstance(entry, Toolset):
            self.tools.append(entry)
            self.saved.append(f"toolset:{entry.name}")
            self.toolsets.append(entry)
            listed = entry.tools()
            self.listed.append(listed)
            for item in listed:  # the toolset owns them: their cleanup is its own (Toolset.close)
                self._add_runnable(runnable_of(item), None, toolset=entry)
        elif isinstance(entry, SDK_TOOLSETS):
            tool = SdkToolsetTool(entry)
            self.tools.append(entry)
            self.saved.append(f"toolset:{tool.toolset_name}")
            self._add_runnable(tool, entry)
        else:
            runnable = runnable_of(entry)
            self.tools.append(runnable if isinstance(runnable, Tool) else entry)
            self.saved.append(runnable.name)
            self._add_runnable(cast(RunnableTool, runnable), entry)

    def _add_runnable(self, tool: RunnableTool, source: object, *, toolset: Toolset | None = None) -> None:
        family = getattr(tool, "toolset_name", None)
        if isinstance(family, str):
            if family in self.families:
                raise ToolDefinitionError(
                    f"two toolsets are of the family {family!r}; a runner takes one toolset of each family."
                )
            self.families[family] = tool
        else:
            self._claim(tool.name, toolset)
            self.runnable[tool.name] = tool
        self.wire.append(tool.to_param())
        if isinstance(source, SDK_OBJECTS):
            self.sdk_objects.append(cast(object, source))

    def _claim(self, name: str, toolset: Toolset | None = None) -> None:
        if name in self.runnable or name in self.unrunnable:
            raise ToolDefinitionError(_clash(name, self.origins.get(name), toolset))
        self.origins[name] = toolset

    def change(self, name: str, entry: object) -> None:
        """A tool added (or replaced) under ``name``, or removed (``entry`` is None)."""
        self.runnable.pop(name, None)
        self.unrunnable.discard(name)
        if entry is None:
            return
        if isinstance(entry, Mapping):
            self.unrunnable.add(name)
            return
        self.runnable[name] = runnable_of(entry)
        if isinstance(entry, SDK_TOOLS):
            self.sdk_objects.append(cast(object, entry))


def _clash(name: str, first: Toolset | None, second: Toolset | None) -> str:
    """Why two tools cannot share ``name``, and the fix that fits where they come from: a prefix for
    a toolset that takes one (``MCPToolset(..., prefix=...)``), else ``@tool(name=...)``."""
    where = [f"one of the toolset {toolset.name!r}" for toolset in (first, second) if toolset is not None]
    sources = f" ({' and '.join(where)})" if where else ""
    prefixed = [toolset for toolset in (first, second) if toolset is not None and hasattr(toolset, "prefix")]
    if prefixed:
        fix = (
            f"Give the toolset {prefixed[-1].name!r} a prefix (MCPToolset(..., prefix='...') offers its tools as "
            f"'<prefix>_{name}')"
            + ("" if len(where) == 2 else ", or rename the other tool with @tool(name=...)")
            + "."
        )
    elif where:
        fix = "Rename the tool in its toolset, or the other one with @tool(name=...)."
    else:
        fix = "Rename one with @tool(name=...)."
    return f"two tools are named {name!r}{sources}; tool names must be unique. {fix}"


def _is_toolset(definition: Mapping[str, Any]) -> bool:
    """Whether a definition is a toolset's nameless entry (``browser_toolset_20260801``, ``mcp_toolset``)."""
    kind = definition.get("type")
    return isinstance(kind, str) and "_toolset" in kind


def tool_key(entry: object) -> str | None:
    """How a saved run names ``entry`` (see ``ToolIndex.saved``); ``None`` for a raw definition."""
    if isinstance(entry, Mapping):
        return None
    if isinstance(entry, Toolset):
        return f"toolset:{entry.name}"
    if isinstance(entry, SDK_TOOLSETS):
        return f"toolset:{entry.toolset_name}"
    return runnable_of(entry).name


def resolve_tools(
    saved: Sequence[str | Mapping[str, Any]],
    given: object,
    run_id: str,
    *,
    added: Collection[str] = (),
    tree: RunState | None = None,
) -> tuple[list[Any], dict[str, object]]:
    """A saved run's ``tools`` param with each runnable tool's (or toolset's) name replaced by the
    one given again, and the tools given for names in ``added`` (the tools the run added mid-run,
    which are not in its ``tools`` param), by name. With ``tree`` (the saved state), the sub-runs
    under way in it need their sub-agents given again with their tools (``check_sub_run_tools``).

    Raises:
        ParamsError: A tool of the saved run is not given, or a given tool is neither one of the
            run's nor one it added; or a sub-run under way would lose its sub-agent or a tool.
    """
    if given is None:
        given = []
    if isinstance(given, str | bytes | Mapping) or not isinstance(given, Iterable):
        raise ParamsError(f"tools must be a list of tools, not {type(cast(object, given)).__name__!r}.")
    keyed: dict[str, object] = {}
    for entry in cast("Iterable[object]", given):
        key = tool_key(entry)
        if key is not None:
            keyed[key] = entry
    names = {entry for entry in saved if isinstance(entry, str)}
    missing = sorted(names - set(keyed))
    if missing:
        raise ParamsError(
            f"the saved run {run_id!r} uses the tool(s) {missing!r}; pass them in tools=[...] to resume it "
            "(tools are code, so a run saves only their names)."
        )
    extra = sorted(set(keyed) - names - set(added))
    if extra:
        raise ParamsError(
            f"the tool(s) {extra!r} are not tools of the saved run {run_id!r} (neither in its tools param nor added "
            "by add_tools()); resume it with its own tools, then change the tools with add_tools() or "
            "set_messages_params()."
        )
    if tree is not None:  # before anything runs: a sub-run's tool lost would lose its decisions
        check_sub_run_tools(tree, keyed, run_id)
    tools = [keyed[entry] if isinstance(entry, str) else entry for entry in saved]
    return tools, {key: entry for key, entry in keyed.items() if key not in names}


_PARSE_ONLY = {
    "output_format": (
        " output_format is a runner option, not a request param: pass it to ToolRunner(...), SyncToolRunner(...) "
        "or resume(...); it stays the same for the whole run."
    )
}
"""What the SDK's runner takes in its params but a runner takes as an option: where it goes instead."""


def warn_unknown_limits(plan: HookPlan | None, index: ToolIndex) -> None:
    """Log a warning for each ``max_calls`` name no tool of the runner has: a misspelt name leaves its
    tool without a limit. A runner with toolsets learns their tools' names only once they are open,
    and a tool may be added later (``add_tools``), so this warns and refuses nothing."""
    if plan is None or not plan.max_calls or index.toolsets or index.sdk_objects:
        return
    known = sorted({*index.runnable, *index.unrunnable})
    for name in sorted(set(plan.max_calls) - set(known)):
        close = difflib.get_close_matches(name, known, n=1)
        log(
            WARNING,
            "max_calls names %r, which no tool of this runner has%s; a tool it misnames has no limit.",
            name,
            f" (did you mean {close[0]!r}?)" if close else "",
        )

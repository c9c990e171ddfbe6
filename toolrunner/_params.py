"""Checking what users give the runner: request params, messages, tools, option values.

Pure functions with no I/O: each raises a ``ToolRunnerError`` whose message says what to do.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, cast

from anthropic.resources.beta.messages import AsyncMessages as _BetaMessages
from anthropic.resources.messages import AsyncMessages as _Messages

from ._errors import ParamsError, ToolDefinitionError
from ._messages import message_param
from ._tools import Tool, as_tool

__all__ = ["ToolIndex", "check_params", "index_tools", "resolve_tools"]

REQUIRED = ("model", "max_tokens", "messages")


@dataclass(frozen=True, slots=True)
class ToolIndex:
    """The ``tools`` param, read once per change."""

    tools: list[Tool | Mapping[str, Any]]
    """As the params keep them: ``Tool`` objects and raw definitions."""
    wire: list[Any]
    """As requests send them (each ``Tool.to_param()`` is computed once, by the tool)."""
    runnable: dict[str, Tool]
    unrunnable: frozenset[str]
    """Names of raw definitions: never run by the runner."""


def check_params(params: dict[str, Any]) -> dict[str, Any]:
    """Check request params and return them with ``messages`` as a new list of message params.

    Names come first (so that a typo such as ``max_token`` is named as one), then the required
    params, then the values that would fail only once the request was out.
    """
    known = _known_param_names()
    for name in params:
        if name not in known and name != "tools":
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParamsError(
                f"{name!r} is not a parameter of client.messages.create.{hint} "
                "Pass runner options (max_iterations, ...) and request params by their documented names."
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
    params["messages"] = [message_param(m, i) for i, m in enumerate(cast("Sequence[object]", messages))]
    return params


def index_tools(entries: object) -> ToolIndex:
    """Read the ``tools`` param: ``@tool`` objects, plain functions (made into tools) and raw dicts."""
    if entries is None:
        entries = []
    if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
        raise ParamsError(f"tools must be a list of tools, not {type(cast(object, entries)).__name__!r}.")
    tools: list[Tool | Mapping[str, Any]] = []
    runnable: dict[str, Tool] = {}
    unrunnable: set[str] = set()
    for entry in cast("Iterable[object]", entries):
        tool: Tool | Mapping[str, Any]
        if isinstance(entry, Mapping):
            tool = cast("Mapping[str, Any]", entry)
            name = tool.get("name")
            if not isinstance(name, str):
                raise ParamsError(f"the raw tool definition {entry!r} has no 'name'; every tool needs one.")
        else:
            tool = as_tool(entry)
            name = tool.name
        if name in runnable or name in unrunnable:
            raise ToolDefinitionError(
                f"two tools are named {name!r}; tool names must be unique. Rename one with @tool(name=...)."
            )
        if isinstance(tool, Tool):
            runnable[name] = tool
        else:
            unrunnable.add(name)
        tools.append(tool)
    wire = [tool.to_param() if isinstance(tool, Tool) else tool for tool in tools]
    return ToolIndex(tools=tools, wire=wire, runnable=runnable, unrunnable=frozenset(unrunnable))


def resolve_tools(
    saved: Sequence[str | Mapping[str, Any]], given: object, run_id: str
) -> list[Tool | Mapping[str, Any]]:
    """A saved run's ``tools`` param with each runnable tool's name replaced by the tool given again.

    Raises:
        ParamsError: A tool of the saved run is not given, or a given tool is not one of the run's.
    """
    index = index_tools(given)
    names = {entry for entry in saved if isinstance(entry, str)}
    missing = sorted(names - set(index.runnable))
    if missing:
        raise ParamsError(
            f"the saved run {run_id!r} uses the tool(s) {missing!r}; pass them in tools=[...] to resume it "
            "(tools are code, so a run saves only their names)."
        )
    extra = sorted(set(index.runnable) - names)
    if extra:
        raise ParamsError(
            f"the tool(s) {extra!r} are not tools of the saved run {run_id!r}; resume it with its own tools, "
            "then change the tools with set_messages_params()."
        )
    return [index.runnable[entry] if isinstance(entry, str) else entry for entry in saved]


@cache
def _known_param_names() -> frozenset[str]:
    names: set[str] = set()
    names.update(inspect.signature(_Messages.create).parameters)
    names.update(inspect.signature(_BetaMessages.create).parameters)
    names -= {"self", "stream"}  # stream=True is a runner option
    return frozenset(names)

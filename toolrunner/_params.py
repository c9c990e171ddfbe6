"""Checking what users give the runner: request params, messages, tools, option values.

Pure functions with no I/O: each raises a ``ToolRunnerError`` whose message says what to do.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import cache
from typing import Any, cast

from anthropic.resources.beta.messages import AsyncMessages as _BetaMessages
from anthropic.resources.messages import AsyncMessages as _Messages
from anthropic.types import Message
from anthropic.types.beta import BetaMessage

from ._errors import HistoryError, ParamsError, ToolDefinitionError
from ._tools import Tool, as_tool

__all__ = [
    "ToolIndex",
    "check_params",
    "check_positive_int",
    "dollars",
    "index_tools",
    "message_param",
    "reply_param",
]

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
    """Check request params and return them with ``messages`` as a new list of message params."""
    for required in REQUIRED:
        if required not in params:
            raise ParamsError(
                f"params need {required!r}; pass it to ToolRunner(...) or keep it in set_messages_params."
            )
    known = _known_param_names()
    for name in params:
        if name not in known and name != "tools":
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParamsError(
                f"{name!r} is not a parameter of client.messages.create.{hint} "
                "Pass runner options (max_iterations, ...) and request params by their documented names."
            )
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


def reply_param(reply: Message | BetaMessage) -> dict[str, Any]:
    """A reply as the history keeps it: plain data, dumped once, the way the SDK dumps a model.

    ``Message.to_param()`` keeps the content blocks as SDK models, and the SDK dumps every model in
    the params again on every request: with a long history, most of a request's cost. The dump is
    the SDK's (JSON mode, aliases, the fields the service sent, less ``__api_exclude__``), so the
    request bytes are the same; thinking blocks keep their signatures exactly. ``warnings=False``:
    a malformed block (a tool_use input that is not an object) gets an error result, not a warning.
    """
    return {
        "role": reply.role,
        "content": [
            block.model_dump(
                mode="json",
                by_alias=True,
                exclude_unset=True,
                exclude=getattr(type(block), "__api_exclude__", None),
                warnings=False,
            )
            for block in reply.content
        ],
    }


def message_param(message: object, index: int) -> Any:
    """A message as the history keeps it: SDK messages become plain params; dicts are checked, not copied."""
    if isinstance(message, Message | BetaMessage):
        return reply_param(message)
    if not isinstance(message, Mapping):
        raise HistoryError(
            f"message {index} is a {type(message).__name__!r}; a message is a dict like "
            "{'role': 'user', 'content': '...'} or an SDK Message."
        )
    message = cast("Mapping[str, Any]", message)
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise HistoryError(
            f"message {index} has role {role!r}; the Messages API takes 'user' and 'assistant' "
            "(put system text in the system= param)."
        )
    content = message.get("content")
    if not isinstance(content, str | list | tuple):
        raise HistoryError(
            f"message {index} has content of type {type(content).__name__!r}; content is a string or a list of "
            "content blocks."
        )
    return message


def check_positive_int(name: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ParamsError(f"{name} must be a positive int or None, not {value!r}.")


def dollars(value: object) -> Decimal:
    """``max_cost`` as a positive Decimal."""
    try:
        amount = Decimal(str(value)) if isinstance(value, Decimal | int | float | str) else Decimal(-1)
    except InvalidOperation:
        amount = Decimal(-1)
    if isinstance(value, bool) or not amount.is_finite() or amount <= 0:
        raise ParamsError(f"max_cost must be a positive amount of US dollars or None, not {value!r}.")
    return amount


@cache
def _known_param_names() -> frozenset[str]:
    names: set[str] = set()
    names.update(inspect.signature(_Messages.create).parameters)
    names.update(inspect.signature(_BetaMessages.create).parameters)
    names -= {"self", "stream"}  # stream=True is a runner option
    return frozenset(names)

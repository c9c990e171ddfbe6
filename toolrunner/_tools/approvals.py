"""Decisions on tool calls, the drivers' side: the code a decision involves.

A tool with ``requires_approval`` (a bool, or a function of the call) makes its calls wait: the
journal records them ``AWAITING`` as soon as the runner has the reply, before the body sees it.
The body (or another process, after ``ToolRunner.resume``, or a store's ``decide``) decides each:
approve (perhaps with an edited input, checked like the model's), deny with a reason, or answer
with a result computed elsewhere. A runner made with ``approve=callback`` asks the callback
instead. When and in which order this happens is the core's (``RunCore``: the ``Gate`` and ``Ask``
effects, and ``decide``); the decisions themselves are pure transitions
(``_core.approval.call_decided``). What is here is code the core cannot run: a tool's gate, the
callback, a tool's input check, the result adapter.

Fail closed: a gate or a callback that raises denies the call, with a message that says why.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

from anthropic.types import ToolResultBlockParam

from .._core.effects import Gated
from .._core.errors import ApprovalError, ToolError, describe
from .._core.plan import log_handled
from .._core.results import ToolResultContent, tool_result_block
from .._core.run import failed_reason
from .._core.types import ToolCall
from .results import ToolResultAdapter
from .toolsets import RunnableTool

__all__ = [
    "ApproveCallback",
    "answer_block",
    "ask",
    "check_approved_input",
    "check_is_error",
    "evaluate_gates",
    "gate",
    "tool_definition",
]

logger = logging.getLogger("toolrunner")

ApproveCallback: TypeAlias = Callable[[ToolCall], bool | str | Awaitable[bool | str]]
"""Decides a call that waits: ``True`` approves it, ``False`` denies it, a string denies it with
that string as the reason the model reads."""


async def gate(calls: Sequence[ToolCall], find: Callable[[ToolCall], RunnableTool | None]) -> Gated:
    """``Gate``'s outcome for ``calls``: which wait (with their tools' definitions), which are denied."""
    waiting, denied = await evaluate_gates(calls, find)
    tools: dict[str, Mapping[str, Any]] = {}
    for call in waiting:
        tool = find(call)
        if tool is not None:
            tools[call.id] = tool_definition(tool)
    return Gated(waiting, denied, tools)


def tool_definition(tool: RunnableTool) -> dict[str, Any]:
    """What a person (or a process without the tools) needs of a waiting call's tool: its name,
    description and input schema, as the model saw them."""
    param = tool.to_param()
    return {key: param[key] for key in ("name", "description", "input_schema") if key in param}


async def evaluate_gates(
    calls: Sequence[ToolCall], find: Callable[[ToolCall], RunnableTool | None]
) -> tuple[list[ToolCall], list[tuple[ToolCall, str]]]:
    """Which of ``calls`` must wait for a decision, and which are denied (with the reason the model
    reads) because their tool's gate raised: fail closed. Needs no runner (the Temporal activity
    uses it too)."""
    gated: list[ToolCall] = []
    denied: list[tuple[ToolCall, str]] = []
    for call in calls:
        tool = find(call)
        if tool is None or tool.requires_approval is False:
            continue
        try:
            requires = tool.requires_approval
            needs = requires is True or (callable(requires) and bool(await ask(requires, call)))
        except Exception as error:
            log_handled(
                error, "Deciding whether tool_use %r needs approval raised: %s", call.id, describe(error)
            )
            denied.append((call, failed_reason(call, "deciding whether it needs approval", error)))
            continue
        if needs:
            gated.append(call)
    return gated, denied


async def ask(decide: Callable[[ToolCall], object], call: ToolCall) -> object:
    """What ``decide`` (a gate, or the ``approve=`` callback; sync or async) says of ``call``."""
    verdict = decide(call)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    return verdict


def check_approved_input(tool_use_id: str, tool: RunnableTool | None, input: object) -> None:
    """An edited input must be one the call can run with and the run can save: checked like the
    model's (``ToolInputError``), and JSON data (``ApprovalError``); nothing is decided otherwise."""
    try:
        json.dumps(input, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ApprovalError(
            f"approve({tool_use_id!r}, input=...) got an input JSON cannot carry ({error}); the call still waits. "
            "Give the input as JSON data: dicts, lists, str, finite numbers, bools and None."
        ) from None
    if tool is not None:
        tool.parse_input(input)


def check_is_error(tool_use_id: str, is_error: object) -> None:
    """An answer's ``is_error``, checked to be a bool (``"no"`` would be true, and mark it an error).

    Raises:
        ApprovalError: It is not; the call still waits.
    """
    if not isinstance(is_error, bool):
        raise ApprovalError(
            f"is_error= takes True or False, not {is_error!r}; the call {tool_use_id!r} was not answered."
        )


def answer_block(
    adapter: ToolResultAdapter, tool_use_id: str, result: object, *, is_error: bool = False
) -> ToolResultBlockParam:
    """An answer to a call, as the tool_result block a tool's return value (or ``ToolError``) would make.

    Raises:
        ApprovalError: The result cannot be a tool result, or ``is_error`` is not a bool; the call
            still waits.
    """
    check_is_error(tool_use_id, is_error)
    content: ToolResultContent | None
    try:
        if isinstance(result, ToolError):
            content, is_error = adapter.error_content(result), True
        else:
            content = adapter.to_content(result)
    except (TypeError, ValueError) as error:
        raise ApprovalError(
            f"answer({tool_use_id!r}, ...) got a {type(result).__name__!r}, which cannot be a tool result ({error}); "
            "the call still waits. Answer with text, JSON data, or content blocks."
        ) from None
    return tool_result_block(tool_use_id, content, is_error=is_error)

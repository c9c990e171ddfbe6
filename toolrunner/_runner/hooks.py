"""Hooks that can refuse or change a tool call, the drivers' side: the ``Hooks`` a runner is given
(``hooks=``), the per-tool limits (``max_calls=``), checked, and the code that calls a hook for the
core's ``BeforeToolCall`` and ``AfterToolCall`` effects. When a hook is asked, and what its answer
does to the run (journaled, saved, reported), is the core's (``_core.hooks``).

A hook may be sync or async; its answer is checked here, and a hook that raises or answers what it
may not is the core's to handle: fail closed (the call is denied, its result withheld).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias, cast

from anthropic.types import ToolResultBlockParam

from .._core.errors import ParamsError
from .._core.hook_types import Deny, HookPlan, RequestInfo, RunWith, ToolCallInfo
from .._core.results import ToolResultContent
from .._tools.toolsets import RunnableTool

__all__ = [
    "AfterToolCallHook",
    "BeforeRequestHook",
    "BeforeToolCallHook",
    "CheckOutputHook",
    "Hooks",
    "after_tool_call",
    "before_request",
    "before_tool_call",
    "check_output",
    "hook_plan",
]

BeforeToolCallHook: TypeAlias = Callable[
    [ToolCallInfo], "Deny | RunWith | Awaitable[Deny | RunWith | None] | None"
]
"""Sees a call about to run: ``None`` lets it run, ``Deny(reason)`` denies it (the model reads the
reason), ``RunWith(input)`` runs it with another input."""

AfterToolCallHook: TypeAlias = Callable[
    [ToolCallInfo, ToolResultBlockParam],
    "ToolResultContent | Awaitable[ToolResultContent | None] | None",
]
"""Sees a call's result block: ``None`` keeps it; a str or a list of content blocks is what the
model reads instead (its ``is_error`` kept)."""


BeforeRequestHook: TypeAlias = Callable[[RequestInfo], "Deny | Awaitable[Deny | None] | None"]
"""Sees a request about to be sent: ``None`` sends it, ``Deny(reason)`` refuses
(``RequestRefusedError``)."""


CheckOutputHook: TypeAlias = Callable[[Any], "Deny | Awaitable[Deny | None] | None"]
"""Sees the model's final answer (the reply message): ``None`` accepts it, ``Deny(reason)`` sends
the model back with the reason."""


@dataclass(frozen=True, slots=True)
class Hooks:
    """The hooks of a runner (``hooks=Hooks(...)``; see docs/hooks.md). Each is optional, sync or
    async, and runs in the runner's task.

    Attributes:
        before_tool_call: Asked once for each call, after its approval (if it needed one), before
            it runs: ``None`` runs it, ``Deny(reason)`` denies it, ``RunWith(input)`` runs it with
            another input. Its answer is journaled with the call: a resumed run never asks again.
        after_tool_call: Asked with each call's result block: ``None`` keeps it, new content (a
            str, or a list of content blocks) replaces it; what the model reads is what is saved.
        before_request: Asked before each request of the loop is sent (a guardrail tripwire),
            with a ``RequestInfo``: ``None`` sends it, ``Deny(reason)`` refuses, and the caller
            gets ``RequestRefusedError``; the run stays saved as it was, to inspect or go on with.
        check_output: Asked with the model's final answer (an output guardrail; with
            ``output_format``, an answer that fits it): ``None`` accepts it, ``Deny(reason)``
            sends the model back with the reason, within ``output_retries`` (shared with the typed
            answer's); then ``OutputValidationError``.
    """

    before_tool_call: BeforeToolCallHook | None = None
    after_tool_call: AfterToolCallHook | None = None
    before_request: BeforeRequestHook | None = None
    check_output: CheckOutputHook | None = None

    def __post_init__(self) -> None:
        for name in ("before_tool_call", "after_tool_call", "before_request", "check_output"):
            value: object = getattr(self, name)
            if value is not None and not callable(value):
                raise ParamsError(
                    f"Hooks({name}=...) takes a function or None, not {type(value).__name__!r}."
                )


def hook_plan(hooks: object, max_calls: object, *, output_retries: int = 0) -> HookPlan | None:
    """What the core needs of ``hooks=`` and ``max_calls=``, checked; ``None`` when neither is given.

    Raises:
        ParamsError: ``hooks`` is not a ``Hooks``, or ``max_calls`` not a mapping of tool names to
            positive ints.
    """
    if hooks is not None and not isinstance(hooks, Hooks):
        raise ParamsError(f"hooks must be a Hooks(...) or None, not {type(hooks).__name__!r}.")
    limits: dict[str, int] = {}
    if max_calls is not None:
        if not isinstance(max_calls, Mapping):
            raise ParamsError(
                f"max_calls must map tool names to the most calls each may make in a run, not {type(max_calls).__name__!r}."
            )
        for name, limit in cast("Mapping[object, object]", max_calls).items():
            if (
                not isinstance(name, str)
                or not isinstance(limit, int)
                or isinstance(limit, bool)
                or limit < 0
            ):
                raise ParamsError(
                    f"max_calls maps a tool's name to a whole number of calls (0 or more), not {name!r}: {limit!r}."
                )
            limits[name] = limit
    if hooks is None and not limits:
        return None
    plan = HookPlan(
        before_tool_call=hooks is not None and hooks.before_tool_call is not None,
        after_tool_call=hooks is not None and hooks.after_tool_call is not None,
        before_request=hooks is not None and hooks.before_request is not None,
        check_output=hooks is not None and hooks.check_output is not None,
        output_retries=output_retries if hooks is not None and hooks.check_output is not None else 0,
        max_calls=limits,
    )
    return plan if plan != HookPlan() else None


async def before_tool_call(
    hook: BeforeToolCallHook, info: ToolCallInfo, tool: RunnableTool | None
) -> Deny | RunWith | None:
    """The hook's answer on ``info``'s call, checked: a ``RunWith`` input must be JSON data the
    tool takes (``ToolInputError`` otherwise, which denies the call).

    Raises:
        TypeError: The hook answered something else.
    """
    answer: object = hook(info)
    if inspect.isawaitable(answer):
        answer = await cast("Awaitable[object]", answer)
    if answer is None or isinstance(answer, Deny):
        return answer
    if isinstance(answer, RunWith):
        try:
            json.dumps(answer.input, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise TypeError(f"RunWith(input=...) got an input JSON cannot carry ({error})") from None
        if tool is not None:
            tool.parse_input(answer.input)
        return answer
    raise TypeError(
        f"a before_tool_call hook answers None, Deny(reason) or RunWith(input), not {type(answer).__name__!r}"
    )


async def after_tool_call(
    hook: AfterToolCallHook, info: ToolCallInfo, block: ToolResultBlockParam
) -> ToolResultContent | None:
    """The hook's answer on a call's result: ``None``, or the content the model reads instead.

    Raises:
        TypeError: The hook answered something else.
    """
    answer: object = hook(info, cast(ToolResultBlockParam, dict(block)))  # a copy: the journal's stays
    if inspect.isawaitable(answer):
        answer = await cast("Awaitable[object]", answer)
    if isinstance(answer, str | list) and not answer and block.get("is_error"):
        raise ValueError(
            "an after_tool_call hook replaced an error result with nothing; the service refuses an empty error "
            "result: answer None to keep it, or say what went wrong"
        )
    if answer is None or isinstance(answer, str):
        return answer
    if isinstance(answer, list):
        return cast("list[Any]", answer)
    raise TypeError(
        f"an after_tool_call hook answers None, a str or a list of content blocks, not {type(answer).__name__!r}"
    )


async def before_request(hook: BeforeRequestHook, info: RequestInfo) -> str | None:
    """The hook's answer on the request ``info`` describes: ``None`` (send it), or why not.

    Raises:
        TypeError: The hook answered something else.
    """
    return await _deny_reason(hook, info, "before_request")


async def check_output(hook: CheckOutputHook, answer: object) -> str | None:
    """The hook's answer on the model's final answer: ``None`` (accepted), or why not.

    Raises:
        TypeError: The hook answered something else.
    """
    return await _deny_reason(hook, answer, "check_output")


async def _deny_reason(hook: Callable[[Any], object], value: object, name: str) -> str | None:
    """What a hook that answers ``None`` or ``Deny(reason)`` answered on ``value``: the reason, if any."""
    verdict: object = hook(value)
    if inspect.isawaitable(verdict):
        verdict = await cast("Awaitable[object]", verdict)
    if verdict is None:
        return None
    if isinstance(verdict, Deny):
        return verdict.reason
    raise TypeError(f"a {name} hook answers None or Deny(reason), not {type(verdict).__name__!r}")

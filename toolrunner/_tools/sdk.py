"""The SDK's own runnable tools and toolsets (``anthropic.lib.tools``), run as they are.

``BetaFunctionTool`` and ``BetaAsyncFunctionTool`` (``@beta_tool``, ``@beta_async_tool``, the tools
of ``anthropic.lib.tools.mcp`` and ``agent_toolset``), the built-in function tools (the memory
tool) and the runnable toolsets become ``RunnableTool`` objects: their definitions go on the wire as
the SDK sends them (``to_dict()``, read once), their ``call()`` runs them, and what they return goes
through toolrunner's result adapter. The SDK's ``ToolError`` is handled like toolrunner's (in
``_tools.execution``); the SDK's own input check, which raises a ``ValueError`` whose cause is pydantic's
``ValidationError``, becomes a ``ToolInputError`` the model can act on. The tools the SDK makes
itself run in the model's order, as in the SDK's runner (see ``SdkTool``).

Cleanup: ``close_sdk_object`` runs the cleanup hooks the SDK defines (a toolset's ``close()``, a
function tool's ``close``/``aclose`` attribute and the context manager of a tool made from one),
as the SDK's session runner does; the runner calls it when it ends (see ``_toolbox``).
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Callable, Generator, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TypeAlias

import pydantic
from anthropic.lib.tools import (
    BetaAsyncBuiltinFunctionTool,
    BetaAsyncFunctionTool,
    BetaAsyncRunnableToolset,
    BetaBuiltinFunctionTool,
    BetaFunctionTool,
    BetaRunnableToolset,
)
from anthropic.tools import BetaToolsetCallContext
from anthropic.types.beta import BetaToolUseBlock

from .._core.errors import ToolInputError
from .inputs import JSON_TYPES
from .tool import ApprovalGate, ToolContext

__all__ = [
    "SDK_OBJECTS",
    "SDK_TOOLS",
    "SDK_TOOLSETS",
    "SdkObject",
    "SdkTool",
    "SdkToolsetTool",
    "close_sdk_object",
    "input_object",
]

logger = logging.getLogger("toolrunner")

SDK_TOOLS = (BetaFunctionTool, BetaAsyncFunctionTool, BetaBuiltinFunctionTool, BetaAsyncBuiltinFunctionTool)
"""The SDK's runnable tools."""
SDK_TOOLSETS = (BetaRunnableToolset, BetaAsyncRunnableToolset)
"""The SDK's runnable toolsets (one ``tools[]`` entry for a whole family of member tools)."""
SDK_OBJECTS = (*SDK_TOOLS, *SDK_TOOLSETS)
"""The SDK's tools and toolsets: what may have cleanup hooks."""
SdkObject: TypeAlias = (
    BetaFunctionTool[Any]
    | BetaAsyncFunctionTool[Any]
    | BetaBuiltinFunctionTool
    | BetaAsyncBuiltinFunctionTool
    | BetaRunnableToolset
    | BetaAsyncRunnableToolset
)
"""The type of ``SDK_OBJECTS``' instances."""


def input_object(name: str, raw: object) -> dict[str, Any]:
    """The model's input as a dict: a mapping, or a str holding a JSON object.

    Raises:
        ToolInputError: Anything else; the message is written for the model.
    """
    if isinstance(raw, Mapping):
        return dict(raw)  # pyright: ignore[reportUnknownArgumentType]
    if isinstance(raw, str):
        try:
            decoded: object = json.loads(raw)
        except ValueError:
            decoded = None
        if isinstance(decoded, dict):
            return decoded  # pyright: ignore[reportUnknownVariableType]
    kind = JSON_TYPES.get(type(raw), type(raw).__name__)
    if raw is not None:
        kind = f"{'an' if kind[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {kind}"
    raise ToolInputError(
        f"The input for tool {name!r} must be a JSON object matching its input_schema, but it was {kind}. "
        f"Call {name} again with an object as its input."
    )


class _SdkRunnable:
    """What ``SdkTool`` and ``SdkToolsetTool`` share: the SDK object's definition, sent as the SDK
    sends it (``to_dict()``, read once), and its input, given to it as a dict it checks itself."""

    timeout: float | None = None
    idempotent = False
    requires_approval: ApprovalGate = False

    def __init__(self, name: str, sdk_object: Any, is_async: bool, function: Callable[..., Any]) -> None:
        self.name = name
        self._param: Mapping[str, Any] = sdk_object.to_dict()
        self.is_async = is_async
        self.function = function

    def to_param(self) -> Mapping[str, Any]:
        """The definition (or the toolset's ``tools[]`` entry) as the SDK sends it."""
        return self._param

    def parse_input(self, raw: object) -> dict[str, Any]:
        """``{"input": the model's input}``: the SDK object checks it itself when called."""
        return {"input": input_object(self.name, raw)}


class SdkTool(_SdkRunnable):
    """An SDK function tool or built-in tool as a ``RunnableTool``.

    The tools the SDK makes itself keep state between calls (the memory tool's files, the agent
    toolset's shell and files) or stand for a server that may (the MCP tools), and the SDK's runner
    runs a reply's calls in order, so a reply may create a file and then read it: they are
    ``sequential`` here, and never start while the reply streams. Tools made from the user's own
    functions (``@beta_tool``, ``@beta_async_tool``) run concurrently, as ``@tool`` tools do.

    Attributes:
        tool: The SDK's tool object.
    """

    def __init__(self, tool: Any) -> None:
        self.tool = tool
        is_async = isinstance(tool, BetaAsyncFunctionTool | BetaAsyncBuiltinFunctionTool)
        super().__init__(tool.name, tool, is_async, self._call_async if is_async else self._call_sync)
        self.sequential: bool = _made_by_sdk(tool)
        self.start_early: bool = not self.sequential

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return arguments

    def _call_sync(self, input: dict[str, Any]) -> object:
        with _input_errors(self.name):
            return _listed(self.tool.call(input))

    async def _call_async(self, input: dict[str, Any]) -> object:
        with _input_errors(self.name):
            return _listed(await self.tool.call(input))

    def __repr__(self) -> str:
        return f"SdkTool({self.tool!r})"


class SdkToolsetTool(_SdkRunnable):
    """An SDK runnable toolset as one ``RunnableTool`` that answers every member call of its family.

    Members run one at a time, in the model's order (``sequential``), never while the reply still
    streams; once one fails, the core answers the family's later calls of the same message with
    the SDK's "Not executed" text (``_core.plan``: ``CallPlan``, ``not_executed``), as the SDK's
    runner does.
    """

    sequential = True
    start_early = False

    def __init__(self, toolset: Any) -> None:
        self.toolset = toolset
        self.toolset_name: str = toolset.toolset_name
        is_async = isinstance(toolset, BetaAsyncRunnableToolset)
        super().__init__(
            self.toolset_name, toolset, is_async, self._call_async if is_async else self._call_sync
        )

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        call = context.call
        block = BetaToolUseBlock(
            type="tool_use",
            id=call.id,
            name=call.name,
            input=arguments["input"],
            toolset_name=call.toolset_name,
        )
        return {
            "context": BetaToolsetCallContext(tool_use=block),
            "member": call.name,
            "input": arguments["input"],
        }

    def _call_sync(self, context: BetaToolsetCallContext, member: str, input: dict[str, Any]) -> object:
        return self.toolset.call(context, member, input)

    async def _call_async(
        self, context: BetaToolsetCallContext, member: str, input: dict[str, Any]
    ) -> object:
        return await self.toolset.call(context, member, input)

    def __repr__(self) -> str:
        return f"SdkToolsetTool({self.toolset!r})"


def _made_by_sdk(tool: object) -> bool:
    """Whether the SDK itself made ``tool``: a built-in tool (the memory tool), or a function tool
    whose function the SDK defines (the tools of ``agent_toolset`` and ``mcp``; also a
    ``@beta_async_tool`` made from a context manager, which holds a resource as the bash tool
    does, since its function is the SDK's wrapper that enters it)."""
    if isinstance(tool, BetaBuiltinFunctionTool | BetaAsyncBuiltinFunctionTool):
        return True
    module = getattr(getattr(tool, "func", None), "__module__", None)
    return isinstance(module, str) and (module == "anthropic" or module.startswith("anthropic."))


def _listed(value: object) -> object:
    """An iterator of content blocks (the SDK allows any iterable) as a list the adapter takes."""
    return list(value) if isinstance(value, Iterator) else value  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]


@contextmanager
def _input_errors(name: str) -> Generator[None]:
    """An SDK tool's call, its input's validation error raised as a ``ToolInputError``."""
    try:
        yield
    except ValueError as error:
        problem = _input_error(name, error)
        if problem is None:
            raise
        raise problem from error


def _input_error(name: str, error: ValueError) -> ToolInputError | None:
    """The SDK wraps pydantic's ``ValidationError`` of the input in a bare ``ValueError`` ("Invalid
    arguments for function ..."): say what was wrong, for the model. ``None`` for any other
    ``ValueError``, which is the tool's own."""
    cause = error.__cause__
    if not isinstance(cause, pydantic.ValidationError) or not str(error).startswith(
        "Invalid arguments for function"
    ):
        return None
    problems = cause.errors(include_url=False)
    lines = [f"The input for tool {name!r} is invalid ({len(problems)} error{'s' * (len(problems) != 1)}):"]
    for problem in problems[:20]:
        where = ".".join(str(part) for part in problem["loc"]) or "(input)"
        lines.append(f"- {where}: {problem['msg']}")
    lines.append(f"Call {name} again with corrected input.")
    return ToolInputError("\n".join(lines))


async def close_sdk_object(obj: object) -> bool:
    """Run an SDK tool's or toolset's cleanup: ``close``/``aclose`` (awaited when it returns an
    awaitable), then the exit of the context manager a tool was made from; returns whether there
    was any. Failures are logged, not raised, so one tool's cleanup cannot stop another's."""
    closer = getattr(obj, "aclose", None) or getattr(obj, "close", None)
    if closer is not None:
        try:
            result = closer()
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("Closing the SDK tool %r failed", obj)
    manager = getattr(obj, "_context_manager", None)
    if manager is not None:
        try:
            aexit = getattr(manager, "__aexit__", None)
            if aexit is not None:
                await aexit(None, None, None)
            else:
                manager.__exit__(None, None, None)
        except Exception:
            logger.exception("Exiting the context manager of the SDK tool %r failed", obj)
    return closer is not None or manager is not None

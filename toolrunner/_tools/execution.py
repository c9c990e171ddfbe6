"""Running tool calls: one call's execution (input checks, timeouts, failures). The order of one
message's calls is ``_core.plan``'s (``CallPlan``, pure, which every driver follows).

Invariants:

- every call gets exactly one tool_result, whatever its siblings do;
- a call that is cancelled gives no result, so a cancelled run leaves behind the finished calls
  and nothing half-done;
- ``Exception`` from a tool becomes an ``is_error`` result; cancellation and other
  ``BaseException``s propagate. A ``CancelledError`` that a tool raises from inside itself (it
  awaited a future someone else cancelled) is an ``Exception`` in effect: the call's own task was
  not cancelled, so it becomes the call's ``is_error`` result.

``execute`` runs one call; the order of its effects around it (journal, save) is the core's
(``RunCore.call``). ``run_one`` runs a call between ``CallHooks`` for a driver that has no core
around the call (a Temporal activity).
"""

from __future__ import annotations

import asyncio
import dataclasses
import inspect
import math
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, NoReturn

import anyio
import anyio.to_thread
from anthropic.lib.tools import ToolError as SdkToolError
from anthropic.types import ToolResultBlockParam

from .._core.errors import ToolError, ToolInputError, describe
from .._core.plan import for_call, log_handled
from .._core.results import ToolResultContent, tool_result_block
from .._core.types import ToolCall
from .._tracing.trace import TracedCall, tool_failed, untraced
from .results import ResultTooLargeError, ToolResultAdapter
from .tool import Tool, ToolContext
from .toolsets import RunnableTool

__all__ = ["CallHooks", "ExecutionOptions", "ToolFinishedCancelled", "current_call", "execute", "run_one"]

ResultBlock = ToolResultBlockParam

_current_call: ContextVar[ToolCall | None] = ContextVar("toolrunner_current_call", default=None)
_held: ContextVar[BaseException | None] = ContextVar("toolrunner_held_cancellation", default=None)
"""A cancellation held back while a sync tool ran on (``_waited_for``), for ``execute`` to raise."""


def current_call() -> ToolCall | None:
    """The tool call whose tool is running in this context (task or worker thread), if any."""
    return _current_call.get()


@dataclass(frozen=True, slots=True)
class ExecutionOptions:
    """How a runner executes tool calls (fixed at construction)."""

    tools: Mapping[str, RunnableTool]
    """The runnable tools by name."""
    adapter: ToolResultAdapter
    timeout: float | None = None
    """Default per-call timeout in seconds; a tool's own ``timeout`` wins."""
    unrunnable: frozenset[str] = frozenset()
    """Names of tools sent as raw definitions: the runner never runs them."""
    families: Mapping[str, RunnableTool] = field(default_factory=dict[str, RunnableTool])
    """The tools that answer the member calls of a toolset family, by ``toolset_name``."""
    gated: bool = False
    """Whether any of the tools may need approval (if none does, no call is ever gated)."""
    opens: bool = False
    """Whether some tools must be opened before they run (toolsets, the SDK's tools): the core yields
    ``OpenTools`` only then."""
    removed: frozenset[str] = frozenset()
    """Names the history's tool changes removed (``_core.tool_changes``): a call to one is answered like a
    call to an unknown tool."""

    def find(self, call: ToolCall) -> RunnableTool | None:
        """The tool that answers ``call``: by ``toolset_name`` for a toolset member, else by name."""
        if call.toolset_name is None:
            return None if call.name in self.removed else self.tools.get(call.name)
        return self.families.get(call.toolset_name)

    def runs_alone(self, call: ToolCall) -> bool:
        """Whether ``call``'s tool is ``sequential`` (toolset members are)."""
        tool = self.find(call)
        return tool is not None and tool.sequential


@dataclass(frozen=True, slots=True)
class CallHooks:
    """What the runner does around each call."""

    context: Callable[[ToolCall], ToolContext]
    """The context a tool that asks for one gets."""
    input_of: Callable[[ToolCall], object]
    """The input the call runs with: the model's, or the one a person approved instead."""
    started: Callable[[ToolCall, bool], Awaitable[None]]
    """The call is about to run (the flag: early, while its reply still streams)."""
    finished: Callable[[ToolCall, ResultBlock, float], Awaitable[None]]
    """The call finished with this block after so many seconds (a cancelled call never does)."""
    traced: TracedCall = untraced
    """Runs the call's execution in its tracing span (``tracing=``); as it is without tracing."""


async def run_one(
    call: ToolCall, options: ExecutionOptions, hooks: CallHooks, *, early: bool = False
) -> ResultBlock:
    """Run one call between ``hooks.started`` and ``hooks.finished``; a cancelled call never finishes."""
    await hooks.started(call, early)
    started = time.perf_counter()
    block = await execute(call, hooks.input_of(call), options, hooks.context, hooks.traced)
    await hooks.finished(call, block, time.perf_counter() - started)
    return block


async def execute(
    call: ToolCall,
    input: object,
    options: ExecutionOptions,
    context: Callable[[ToolCall], ToolContext],
    traced: TracedCall = untraced,
    *,
    removed: frozenset[str] | None = None,
    keep_cancelled: bool = False,
) -> ResultBlock:
    """Run the tool of ``call`` with ``input``, in its tracing span: its tool_result block (an
    error result for a tool it does not have, a bad input, an exception, a timeout). ``removed``:
    the tools the run's tool changes removed now (``options.removed`` when ``None``).

    Raises:
        ToolFinishedCancelled: With ``keep_cancelled``, when asyncio's own cancellation came while
            a sync tool ran, and the tool finished (its result is in it); without, the
            cancellation itself, once the tool finished."""
    if removed is not None and removed != options.removed:
        options = dataclasses.replace(options, removed=removed)
    try:
        if traced is untraced:  # no tracing: no wrapper around the call
            block = await _run_one(call, input, options, context)
        else:
            block = await traced(call, _run_one(call, input, options, context))
    finally:
        cancellation = _held.get()  # asyncio's own cancellation, held while a sync tool ran (``_waited_for``)
        if cancellation is not None:  # taken, whatever ended the call: never raised by a later one
            _held.set(None)
    if call.toolset_name is not None:
        block = for_call(block, call)
    if cancellation is not None:
        if keep_cancelled:
            raise ToolFinishedCancelled(block, cancellation)
        raise cancellation
    return block


async def _run_one(
    call: ToolCall, input: object, options: ExecutionOptions, context: Callable[[ToolCall], ToolContext]
) -> ResultBlock:
    tool = options.find(call)
    if tool is None:
        return tool_result_block(call.id, _unknown_tool_message(call, options), is_error=True)
    try:
        if type(tool) is Tool:  # nearly every call: no copy, and a context only for a tool that takes one
            kwargs = tool._kwargs_for(input, call, context)  # pyright: ignore[reportPrivateUsage]
        else:
            kwargs = tool.call_kwargs(tool.parse_input(input), context(call))
    except ToolInputError as error:
        return tool_result_block(call.id, str(error), is_error=True)
    time_limit = tool.timeout if tool.timeout is not None else options.timeout
    adapter = options.adapter
    token = _current_call.set(call)  # worker threads get a copy of the context
    try:
        if time_limit is None:  # no frame for the time limit: a sync tool cannot be stopped anyway
            return await _call_and_convert(tool, call, kwargs, adapter, abandon_on_cancel=False)
        return await _invoke_timed(tool, call, kwargs, adapter, time_limit)
    except ToolError as error:
        raised = error
    except SdkToolError as error:  # the SDK's ToolError: the same, with the same kind of content
        raised = ToolError(error.content)  # pyright: ignore[reportArgumentType]
    except Exception as error:
        return _failure(call, error)
    finally:
        _current_call.reset(token)
    try:  # the ToolError's content goes through the same adapter
        return await _convert(call.id, raised, adapter, is_error=True)
    except Exception as error:
        return _failure(call, error)


def _failure(call: ToolCall, error: Exception) -> ResultBlock:
    """The is_error result for a call that raised, or whose value could not be converted."""
    if isinstance(error, ResultTooLargeError | ToolCancelledError | ToolInputError):  # written for the model
        return tool_result_block(call.id, str(error), is_error=True)  # toolrunner's own: str never fails
    tool_failed(error)
    text = describe(error)
    log_handled(
        error,
        "Tool %r raised while answering tool_use %r; the model gets it as an is_error result: %s",
        call.name,
        call.id,
        text,
    )
    return tool_result_block(call.id, text, is_error=True)


async def _invoke_timed(
    tool: RunnableTool,
    call: ToolCall,
    kwargs: dict[str, Any],
    adapter: ToolResultAdapter,
    time_limit: float,
) -> ResultBlock:
    # Without a time limit (``_run_one``), a sync tool cannot be stopped: cancellation waits for its
    # thread, and its result counts. With one, a sync tool that overruns it is abandoned in its
    # thread (Python cannot stop a thread), and what it returns later is discarded.
    with anyio.CancelScope(shield=not tool.is_async), anyio.move_on_after(time_limit) as scope:
        return await _call_and_convert(tool, call, kwargs, adapter, abandon_on_cancel=True)
    assert scope.cancelled_caught
    return tool_result_block(
        call.id,
        f"Tool {call.name!r} did not finish within its {_seconds(time_limit)} timeout and was stopped; "
        "its result is unknown. Try again with a smaller request, or answer without this tool.",
        is_error=True,
    )


async def _call_and_convert(
    tool: RunnableTool,
    call: ToolCall,
    kwargs: dict[str, Any],
    adapter: ToolResultAdapter,
    *,
    abandon_on_cancel: bool,
) -> ResultBlock:
    if tool.is_async:
        try:
            value = await tool.function(**kwargs)
        except asyncio.CancelledError as error:
            _raise_unless_cancelled_inside(call, error)
        return await _convert(call.id, value, adapter)

    # A sync tool runs, and its value is converted, in one worker-thread hop.
    def call_sync() -> ResultBlock:
        value = tool.function(**kwargs)
        if inspect.iscoroutine(value):
            value.close()  # never awaited, and never to warn so
            raise TypeError(
                f"tool {call.name!r} is a sync function that returned a coroutine; declare it `async def` "
                "so the runner awaits it, or await the coroutine inside it."
            )
        return tool_result_block(call.id, adapter.to_content(value))

    if abandon_on_cancel:
        return await anyio.to_thread.run_sync(call_sync, abandon_on_cancel=True)
    return await _waited_for(call_sync)


async def _waited_for(function: Callable[[], ResultBlock]) -> ResultBlock:
    """``function`` in a worker thread, waited for to its end: a sync tool cannot be stopped, and
    the call must never run again for a result thrown away. anyio's cancel scopes do not reach the
    wait (``abandon_on_cancel=False``); asyncio's own cancellation (``task.cancel()``,
    ``asyncio.timeout``, ``asyncio.wait_for``) does, so the first is held back until the thread
    ended: the result is returned, and ``execute`` raises the cancellation after it (for the
    runner, as ``ToolFinishedCancelled``, which carries the result to keep first). A second
    cancellation while it is held goes on at once, as does one that came before a worker thread
    took the call (the tool never began)."""
    finished = threading.Event()
    kept: list[tuple[bool, Any]] = []
    lock = threading.Lock()
    began = dropped = False

    def run() -> ResultBlock | None:
        nonlocal began
        with lock:  # a cancellation that came before the thread took the call drops it (below)
            if dropped:
                return None
            began = True
        try:
            value = function()
        except BaseException as error:
            kept.append((False, error))
            raise
        else:
            kept.append((True, value))
            return value
        finally:
            finished.set()

    try:
        block = await anyio.to_thread.run_sync(run)
        assert block is not None
        return block
    except asyncio.CancelledError as cancelled:
        if kept and kept[0][1] is cancelled:  # the tool's own (a sync function raised it)
            raise
        with lock:
            if not began:  # the tool never began, nor will: nothing to wait for
                dropped = True
                raise
        # Cancelled again meanwhile (a second Ctrl-C under ``asyncio.run``, which cancels every task as
        # it shuts down): that one goes on at once, and the tool is left to end in its thread.
        await anyio.to_thread.run_sync(finished.wait)
        _held.set(cancelled)  # ``execute`` raises it once the tool's result (or error result) is made
    ok, outcome = kept[0]
    if not ok:
        raise outcome
    value: ResultBlock = outcome
    return value


class ToolFinishedCancelled(BaseException):
    """The task was cancelled (asyncio's own cancellation) while a sync tool ran on in its thread,
    and the tool finished: its ``block``, and the ``cancellation`` to raise once it is kept. A
    ``BaseException``, so that no handler of a tool's errors takes it for one."""

    def __init__(self, block: ResultBlock, cancellation: BaseException) -> None:
        super().__init__("cancelled while a sync tool ran; it finished")
        self.block = block
        self.cancellation = cancellation


async def _convert(
    tool_use_id: str, value: object, adapter: ToolResultAdapter, *, is_error: bool = False
) -> ResultBlock:
    """Turn a tool's value (or a ToolError) into a tool_result block; file I/O runs in a thread."""

    if adapter.needs_thread(value):
        content = await anyio.to_thread.run_sync(_content, value, adapter)
    else:
        content = _content(value, adapter)
    return tool_result_block(tool_use_id, content, is_error=is_error)


def _content(value: object, adapter: ToolResultAdapter) -> ToolResultContent | None:
    """A tool's value (or a ToolError's) as a tool_result's content, through ``adapter``."""
    return adapter.error_content(value) if isinstance(value, ToolError) else adapter.to_content(value)


class ToolCancelledError(Exception):
    """A tool raised ``CancelledError`` although its task was not cancelled."""


def _raise_unless_cancelled_inside(call: ToolCall, error: asyncio.CancelledError) -> NoReturn:
    """Re-raise a cancellation of the call's task; turn one that came from inside the tool (it
    awaited a future someone else cancelled) into an exception, so the call gets a result instead
    of ending without one. On asyncio, a task that was cancelled has ``cancelling() > 0``; on trio,
    asyncio's ``CancelledError`` is never a cancellation."""
    if anyio.get_cancelled_exc_class() is asyncio.CancelledError:
        task = asyncio.current_task()
        if task is None or task.cancelling():
            raise error
    raise ToolCancelledError(
        f"Tool {call.name!r} was cancelled from inside the tool (it awaited something that was cancelled); "
        "it did not finish, and its result is unknown."
    ) from error


def _unknown_tool_message(call: ToolCall, options: ExecutionOptions) -> str:
    name = call.name
    if call.toolset_name is not None:
        available = ", ".join(repr(n) for n in sorted(options.families)) or "none"
        return (
            f"There is no toolset named {call.toolset_name!r} (member {name!r}). The available toolsets are: "
            f"{available}."
        )
    if name in options.families:
        return (
            f"{name!r} is a toolset: call its member tools (with their toolset_name), not the toolset itself."
        )
    if name in options.unrunnable and name not in options.removed:
        return f"Tool {name!r} is not run by this program; no result is available. Continue without it."
    available = ", ".join(repr(n) for n in sorted(options.tools.keys() - options.removed)) or "none"
    return f"There is no tool named {name!r}. The available tools are: {available}."


def _seconds(timeout: float) -> str:
    return f"{timeout:g} s" if math.isfinite(timeout) else "unlimited"

"""What the loop body may ask of a runner: views of the run's state, steering (and the params it
installs), the tool results, decisions, ending the loop, and its events.

``ToolRunner`` inherits ``RunnerControls``. These methods change the run only through the core
(``RunCore``: its transitions and its programs, driven by ``_runner/runner.py``), and they refuse to
steer from inside a tool or while the runner is finishing a turn, where the history would change
under it.
"""

from __future__ import annotations

import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar

import anyio

from .._core.errors import ApprovalError, AwaitingApprovalError, ParamsError, ToolRunnerError
from .._core.events import RunnerEvent
from .._core.ids import check_by, check_reason
from .._core.messages import message_param
from .._core.results import tool_result_block
from .._core.state import Phase, RunState, decided_at
from .._core.transitions import pending_calls
from .._core.types import Decision, EndReason, Reply, ToolCall, ToolResultMessage
from .._core.usage import UsageTracker
from .._tools.approvals import answer_block, check_approved_input
from .._tools.execution import ExecutionOptions, current_call
from .events import run_with_events
from .params import TRANSPORT, ToolIndex, check_params, index_tools

if TYPE_CHECKING:
    from .._core.effects import Program
    from .._core.run import RunCore
    from .._core.usage import Price
    from .._tools.toolsets import RunnableTool
    from .options import Options
    from .saver import Saver

__all__ = ["RunnerControls"]

T = TypeVar("T")


class RunnerControls:
    """The loop body's side of ``ToolRunner`` (see the module docstring)."""

    if TYPE_CHECKING:  # what the driver provides
        _core: RunCore[RunnableTool]
        _index: ToolIndex
        _execution: ExecutionOptions
        _limiter: anyio.CapacityLimiter | None
        _prices: Mapping[str, Price]
        _advancing: bool
        _saver: Saver | None
        _options: Options
        _tool_changes: dict[str, object]
        _transport: dict[str, Any]
        _deciding: threading.RLock

        def __aiter__(self) -> AsyncIterator[Any]: ...
        async def _step(self, program: Program[T]) -> T: ...
        async def _drive(self, program: Program[T]) -> T: ...
        async def _at_end(self) -> None: ...

    _usage: tuple[tuple[object, ...], UsageTracker] | None = None

    # -- public state ---------------------------------------------------------------------------

    @property
    def state(self) -> RunState:
        """The run's state: one immutable value, serialisable with ``to_json()``."""
        return self._core.state

    @property
    def params(self) -> Mapping[str, Any]:
        """The params of the next request (read-only); ``params["messages"]`` is the history.

        Change them with ``push_messages()`` and ``set_messages_params()``.
        """
        state = self._core.state
        return MappingProxyType(
            {**state.params, **self._transport, "messages": list(state.messages), "tools": self._index.tools}
        )

    @property
    def messages(self) -> Sequence[Any]:
        """The history (a copy: change it with ``push_messages()`` and ``set_messages_params()``)."""
        return list(self._core.state.messages)

    @property
    def last_message(self) -> Reply | None:
        """The latest complete reply, or ``None`` before the first."""
        return self._core.state.reply

    @property
    def requests_sent(self) -> int:
        """How many requests got a reply."""
        return self._core.state.requests_sent

    @property
    def usage(self) -> UsageTracker:
        """Token usage per request and in total, and the cost when the model has a price."""
        usage = self._core.state.usage
        if self._usage is None or self._usage[0] is not usage:
            self._usage = (usage, UsageTracker.of_requests(usage, prices=self._prices))
        return self._usage[1]

    @property
    def finished(self) -> bool:
        """Whether the loop has ended, or is paused for decisions (steering opens it again)."""
        return self._core.state.finished

    @property
    def end_reason(self) -> EndReason | None:
        """Why the loop ended (``"model"``, ``"max_iterations"``, ``"token_budget"``,
        ``"cost_budget"``, ``"closed"``), or paused (``"awaiting_approval"``); ``None`` while it
        goes on."""
        return self._core.state.end_reason

    # -- tools ------------------------------------------------------------------------------------

    async def generate_tool_response(self) -> ToolResultMessage | None:
        """The user message holding the tool_result blocks for the pending tool calls, or ``None``.

        The pending calls are those of the reply the loop body holds (unless the body changed
        the history), or else of the last message of the history. Results are computed once per
        tool_use id and shared by concurrent callers; the history is never changed. With
        ``stream=True`` it first reads the rest of the reply's stream.

        Raises:
            ApprovalError: Calls wait for a decision (the others ran); decide them first.
            ToolRunnerError: Called from a tool for the turn that runs it (it would wait for itself).
        """
        core = self._core
        if core.state.phase is Phase.STREAMING:
            await self._step(core.finish_stream())
        calls = pending_calls(core.state)
        if not calls:
            return None
        running = current_call()
        if running is not None and any(call.id == running.id for call in calls):
            raise ToolRunnerError(
                f"the tool {running.name!r} called generate_tool_response() for the turn it is a call of, so it "
                "would wait for its own result forever; read ctx.call instead, or ask for the results from the "
                "loop body."
            )
        results = await self._step(core.settle(calls))
        if results is None:
            waiting = [call.id for call in core.waiting()]
            raise ApprovalError(
                f"the tool calls {waiting!r} wait for a decision, so there is no complete tool response yet (the "
                "calls that need none ran); decide them with approve(), deny() or answer() first."
            )
        return {"role": "user", "content": results}

    # -- steering ---------------------------------------------------------------------------------

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """Append messages to the history: MessageParam dicts or SDK ``Message`` objects.

        From the loop body, this means the runner will not append the yielded reply itself. After
        the loop ended, it opens the loop again: the next iteration sends a request.
        """
        self._check_history_may_change("push_messages")
        params = [message_param(message, index) for index, message in enumerate(messages)]
        self._core.push_messages(params)

    def set_messages_params(
        self, params: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]
    ) -> None:
        """Replace the request params, or map them with ``fn(params) -> params``.

        ``fn`` gets a shallow copy of the current params. From the loop body, this means the
        runner will not append the yielded reply itself: the new history stands. After the loop
        ended, it opens the loop again.
        """
        self._check_history_may_change("set_messages_params")
        if callable(params):
            new = params(dict(self.params))
            if not isinstance(new, Mapping):
                raise ParamsError(
                    f"the function given to set_messages_params returned {type(new).__name__!r}, not a mapping; "
                    "return the new params, for example {**params, 'messages': [...]}."
                )
        elif isinstance(params, Mapping):
            new = params
        else:
            raise ParamsError(
                f"set_messages_params takes a mapping of params or a function of them, not {type(params).__name__!r}."
            )
        self._install(dict(new), steer=True)

    def _check_can_steer(self, method: str) -> None:
        """Steering belongs to the loop body: from a tool, or while the runner is between replies,
        the history would change under the turn being finished."""
        call = current_call()
        if call is not None or self._advancing:
            source = (
                f"inside the tool {call.name!r}"
                if call is not None
                else "while the runner was finishing a turn (from a callback or another task)"
            )
            raise ToolRunnerError(
                f"{method}() was called {source}; change the history from the loop body instead, between "
                "receiving a reply and asking for the next."
            )

    def _check_history_may_change(self, method: str) -> None:
        self._check_can_steer(method)
        self._core.check_history_may_change(method)

    # -- decisions --------------------------------------------------------------------------------

    @property
    def pending_approvals(self) -> list[ToolCall]:
        """The calls of the current turn that wait for a decision, in tool_use order."""
        return self._core.waiting()

    def approve(self, tool_use_id: str, *, input: object = None, by: str | None = None) -> None:
        """Approve a call that waits; with ``input`` it runs with that input (checked like the
        model's, and JSON data); ``by`` says who decided, kept with the call.

        Raises:
            ApprovalError: No call waits with that id, or it was decided already (by another thread,
                say), or ``input`` is not JSON data. ToolInputError: ``input`` does not fit the tool.
        """
        self._check_can_steer("approve")
        by = check_by(by)
        if input is not None:
            call = self._core.find(tool_use_id)
            check_approved_input(tool_use_id, None if call is None else self._core.tool_of(call), input)
        self._decide(tool_use_id, "approved", approved_input=input, by=by, at=_now())

    def deny(self, tool_use_id: str, reason: str, *, by: str | None = None) -> None:
        """Deny a call that waits (or has not started): the model reads ``reason`` as its error result."""
        self._check_can_steer("deny")
        by = check_by(by)
        reason = check_reason(tool_use_id, reason)
        self._decide(
            tool_use_id,
            "denied",
            result=tool_result_block(tool_use_id, reason, is_error=True),
            by=by,
            at=_now(),
        )

    def answer(
        self, tool_use_id: str, result: object, *, is_error: bool = False, by: str | None = None
    ) -> None:
        """Answer a call that waits (or has not started) with a result computed elsewhere, as a
        tool's return value (or a ``ToolError``) would be.

        Raises:
            ApprovalError: No call can be answered with that id, or ``result`` cannot be a tool result.
        """
        self._check_can_steer("answer")
        by = check_by(by)
        block = answer_block(self._options.result_adapter, tool_use_id, result, is_error=is_error)
        self._decide(tool_use_id, "answered", result=block, by=by, at=_now())

    def _decide(self, tool_use_id: str, decision: Decision, **details: Any) -> None:
        """One decision at a time, whichever thread takes it (a ``SyncToolRunner``'s body, or
        another thread, may decide while the runner works): of two on one call, the second is
        refused (``ApprovalError``)."""
        with self._deciding:
            self._core.decide(tool_use_id, decision, **details)

    # -- params -----------------------------------------------------------------------------------

    def _install(self, params: dict[str, Any], *, steer: bool) -> None:
        """Check ``params`` and make them current; index the tools when they changed. Transport
        params (headers, query, timeout) are kept apart: they are not part of the run's state."""
        check_params(params)
        if steer:  # before anything changes: a history that could never be sent changes nothing
            self._core.check_steered(tuple(params["messages"]))
        transport = {name: params.pop(name) for name in TRANSPORT if name in params}
        tools = params.pop("tools", None)
        if tools is not self._index.tools:
            self._index_tools(tools)
        changes: dict[str, Any] = {
            "messages": tuple(params.pop("messages")),
            "params": params,
            "tools": self._index.saved,
        }
        self._core.apply_params(changes, steer=steer)
        self._transport = transport

    def _index_tools(self, tools: object) -> None:
        self._index = index_tools(tools, self._tool_changes)
        limit = self._options.max_concurrency
        if limit and self._limiter is None:
            self._limiter = anyio.CapacityLimiter(limit)
        self._execution = ExecutionOptions(
            tools=self._index.runnable,
            adapter=self._options.result_adapter,
            timeout=self._options.tool_timeout,
            unrunnable=self._index.unrunnable,
            gated=any(
                tool.requires_approval is not False
                for tool in (*self._index.runnable.values(), *self._index.families.values())
            ),
            families=self._index.families,
        )
        self._core.tools = self._execution

    # -- ending -----------------------------------------------------------------------------------

    def close(self) -> None:
        """End the loop now. A complete reply that the body holds is appended if the body left
        the history unchanged, but its tool calls are not run. An unread stream is dropped (use
        ``async with`` or ``aclose()`` to close it at once). Idempotent.

        Called from another task while the runner is busy, it lets the step under way finish
        whole (a request's reply is appended, without running its tools; a turn's tools finish and
        their results are appended), then ends the loop.
        """
        self._core.close()

    async def aclose(self) -> None:
        """``close()``, and also close an unread stream and cancel tools started early."""
        self.close()
        with anyio.CancelScope(shield=True):
            await self._drive(self._core.abandon_stream())
            await self._drive(self._core.save())
        await self._at_end()  # not shielded: a toolset's close() must be the innermost scope (_close_tools)

    async def _leave(self, *, failed: bool) -> None:
        """Leaving ``async with`` (or ``with``): the loop ends (``aclose()``), unless the run waits
        for a decision, which may come days later, or the block is left by an exception (a crash, a
        shutdown's cancellation): then the run stays as the last step saved it, to be resumed or
        iterated again; only an unread stream is dropped."""
        if failed or self._core.state.phase is Phase.AWAITING:
            with anyio.CancelScope(shield=True):
                await self._drive(self._core.abandon_stream())
            await self._at_end()  # the tools close (in ``async with``, its exit closes them)
            return
        await self.aclose()

    async def until_done(self) -> Reply:
        """Run the loop to its end and return the final reply; resumes a loop left by ``break``.

        Raises:
            AwaitingApprovalError: The loop paused: calls wait for a decision (``error.calls``).
                Decide them, then call ``until_done()`` again.
        """
        async for _ in self:
            pass
        state = self._core.state
        if state.phase is Phase.AWAITING:
            waiting = self._core.waiting()
            raise AwaitingApprovalError(
                f"the run paused: the tool calls {[call.id for call in waiting]!r} wait for a decision, so there is "
                "no final reply yet. Decide them with approve(), deny() or answer() (runner.pending_approvals "
                "lists them), then call until_done() again.",
                waiting,
            )
        if state.reply is None:
            raise ToolRunnerError(
                "the runner ended before any request got a reply, so there is no final message."
            )
        return state.reply

    def __iter__(self) -> NoReturn:
        raise TypeError(
            "ToolRunner is an async iterator: use `async for message in runner` inside a coroutine, or "
            "SyncToolRunner with an anthropic.Anthropic client for a plain `for` loop."
        )

    # -- events ----------------------------------------------------------------------------------

    @asynccontextmanager
    async def events(self) -> AsyncGenerator[AsyncIterator[RunnerEvent]]:
        """Run the loop in the background and receive its events as they happen::

            async with runner.events() as events:
                async for event in events:
                    ...

        The iteration ends after ``LoopFinished``, or when the loop fails; the loop's error is then
        raised as the block exits. Leaving the block early cancels the loop (it can be resumed
        like after ``break``). Opened on a paused run, it first gives the decisions taken since the
        pause (``ApprovalDecided``), which the run now takes up.
        """
        backlog = self._core.decided_since_pause() if self._core.state.phase is Phase.AWAITING else []
        async with run_with_events(self._run_to_end, self._listen, backlog) as events:
            yield events

    def _run_to_end(self) -> Awaitable[object]:
        return self._drain()

    async def _drain(self) -> None:
        async for _ in self:
            pass

    def _listen(self, emit: Callable[[RunnerEvent], None] | None) -> Callable[[RunnerEvent], None] | None:
        previous, self._core.listener = self._core.listener, emit
        return previous


def _now() -> str:
    """The time of a decision, as the state keeps it (ISO 8601, UTC, to the second)."""
    return decided_at(datetime.now(UTC))

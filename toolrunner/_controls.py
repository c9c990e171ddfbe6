"""What the loop body may ask of a runner: views of the run's state, steering (and the params it
installs), decisions, ending the loop, and its events.

``ToolRunner`` inherits ``RunnerControls``. These methods change the run only through transitions
of ``_lifecycle`` and the driver's ``_set`` (see ``_runner.py``), and they refuse to steer from
inside a tool or while the runner is finishing a turn, where the history would change under it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NoReturn

import anyio

from ._availability import last_changes, pending_message, removed_by
from ._errors import ApprovalError, ParamsError, ToolRunnerError
from ._events import RunnerEvent, run_with_events
from ._execution import ExecutionOptions, current_call
from ._lifecycle import closed, pending_calls, record_of, steered
from ._messages import message_param
from ._params import ToolIndex, check_params, index_tools
from ._state import CallStatus, Phase, RunState
from ._types import EndReason, Reply, ToolCall
from ._usage import UsageTracker

if TYPE_CHECKING:
    from ._approvals import Approvals
    from ._calls import TurnCalls
    from ._checkpoint import Saver
    from ._options import Options
    from ._usage import Price

__all__ = ["RunnerControls"]


class RunnerControls:
    """The loop body's side of ``ToolRunner`` (see the module docstring)."""

    if TYPE_CHECKING:  # what the driver provides
        _state: RunState
        _index: ToolIndex
        _approvals: Approvals
        _prices: Mapping[str, Price]
        _usage: tuple[tuple[object, ...], UsageTracker] | None
        _advancing: bool
        _checked: int

        _emit: Callable[[RunnerEvent], None] | None

        _saver: Saver | None
        _calls: TurnCalls
        _options: Options
        _tool_changes: dict[str, object]
        _folded: tuple[tuple[Any, ...], tuple[Mapping[str, Any], ...], dict[str, bool]] | None

        _closing: bool

        def _set(self, state: RunState) -> None: ...
        def __aiter__(self) -> AsyncIterator[Any]: ...
        async def _abandon_stream(self) -> None: ...
        async def _save(self) -> None: ...
        async def _at_end(self) -> None: ...

    # -- public state ---------------------------------------------------------------------------

    @property
    def state(self) -> RunState:
        """The run's state: one immutable value, serialisable with ``to_json()``."""
        return self._state

    @property
    def params(self) -> Mapping[str, Any]:
        """The params of the next request (read-only); ``params["messages"]`` is the history.

        Change them with ``push_messages()`` and ``set_messages_params()``.
        """
        return MappingProxyType(
            {**self._state.params, "messages": list(self._state.messages), "tools": self._index.tools}
        )

    @property
    def messages(self) -> Sequence[Any]:
        """The history (a copy: change it with ``push_messages()`` and ``set_messages_params()``)."""
        return list(self._state.messages)

    @property
    def last_message(self) -> Reply | None:
        """The latest complete reply, or ``None`` before the first."""
        return self._state.reply

    @property
    def requests_sent(self) -> int:
        """How many requests got a reply."""
        return self._state.requests_sent

    @property
    def usage(self) -> UsageTracker:
        """Token usage per request and in total, and the cost when the model has a price."""
        if self._usage is None or self._usage[0] is not self._state.usage:
            self._usage = (
                self._state.usage,
                UsageTracker.of_requests(self._state.usage, prices=self._prices),
            )
        return self._usage[1]

    @property
    def finished(self) -> bool:
        """Whether the loop has ended (steering opens it again)."""
        return self._state.finished

    @property
    def end_reason(self) -> EndReason | None:
        """Why the loop ended (``"model"``, ``"max_iterations"``, ``"token_budget"``,
        ``"cost_budget"`` or ``"closed"``), or ``None`` while it goes on."""
        return self._state.end_reason

    # -- steering ---------------------------------------------------------------------------------

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """Append messages to the history: MessageParam dicts or SDK ``Message`` objects.

        From the loop body, this means the runner will not append the yielded reply itself. After
        the loop ended, it opens the loop again: the next iteration sends a request.
        """
        self._check_history_may_change("push_messages")
        params = [message_param(message, index) for index, message in enumerate(messages)]
        history = self._state.messages
        self._checked = min(self._checked, max(len(history) - 1, 0))
        self._set(steered(self._state, messages=(*history, *params)))

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
        self._checked = 0

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
        """A paused turn's results would be lost with its reply: the ran calls must be appended first."""
        self._check_can_steer(method)
        if self._state.phase is Phase.AWAITING:
            ran = [
                call.id
                for call in pending_calls(self._state)
                if (record := record_of(self._state, call)) is not None
                and record.status in (CallStatus.STARTED, CallStatus.FINISHED)
            ]
            if ran:
                raise ApprovalError(
                    f"{method}() was called while the run waits for decisions, and the calls {ran!r} of the "
                    "waiting reply already ran: changing the history now would drop their results. Decide the "
                    "waiting calls first (approve, deny or answer), iterate to append the results, then steer."
                )

    # -- decisions --------------------------------------------------------------------------------

    @property
    def pending_approvals(self) -> list[ToolCall]:
        """The calls of the current turn that wait for a decision, in tool_use order."""
        return self._approvals.waiting()

    def approve(self, tool_use_id: str, *, input: object = None) -> None:
        """Approve a call that waits; with ``input`` it runs with that input (checked like the model's).

        Raises:
            ApprovalError: No call waits with that id. ToolInputError: ``input`` does not fit the tool.
        """
        self._check_can_steer("approve")
        self._approvals.approve(tool_use_id, input=input)

    def deny(self, tool_use_id: str, reason: str) -> None:
        """Deny a call that waits (or has not started): the model reads ``reason`` as its error result."""
        self._check_can_steer("deny")
        self._approvals.deny(tool_use_id, reason)

    def answer(self, tool_use_id: str, result: object, *, is_error: bool = False) -> None:
        """Answer a call that waits (or has not started) with a result computed elsewhere, as a
        tool's return value (or a ``ToolError``) would be."""
        self._check_can_steer("answer")
        self._approvals.answer(tool_use_id, result, is_error=is_error)

    # -- params -----------------------------------------------------------------------------------

    def _install(self, params: dict[str, Any], *, steer: bool) -> None:
        """Check ``params`` and make them current; index the tools when they changed."""
        check_params(params)
        tools = params.pop("tools", None)
        if tools is not self._index.tools:
            self._index_tools(tools)
        changes: dict[str, Any] = {
            "messages": tuple(params.pop("messages")),
            "params": params,
            "tools": self._index.saved,
        }
        if steer and self._saver is not None:
            self._saver.history_replaced()
        self._set(steered(self._state, **changes) if steer else self._state.replace(**changes))

    def _index_tools(self, tools: object) -> None:
        self._index = index_tools(tools, self._tool_changes)
        limit = self._options.max_concurrency
        self._calls.execution = ExecutionOptions(
            tools=self._index.runnable,
            adapter=self._options.result_adapter,
            limiter=anyio.CapacityLimiter(limit) if limit else None,
            timeout=self._options.tool_timeout,
            unrunnable=self._index.unrunnable,
            gated=any(
                tool.requires_approval is not False
                for tool in (*self._index.runnable.values(), *self._index.families.values())
            ),
            families=self._index.families,
            removed=self._calls.execution.removed,
        )

    def _execution(self) -> ExecutionOptions:
        """How calls run now: the tools the history and the pending changes removed are left out
        (folded again only when either changed)."""
        state = self._state
        folded = self._folded
        if folded is None or folded[0] is not state.messages or folded[1] is not state.tool_changes:
            messages = state.messages
            if folded is not None and messages[: len(folded[0])] == folded[0]:
                # Appended to (the common case): only the new messages are folded, so a turn's
                # cost does not grow with the history.
                history = folded[2] | last_changes(messages[len(folded[0]) :])
            else:
                history = last_changes(messages)
            removed = removed_by(history | last_changes((pending_message(state.tool_changes),)))
            self._folded = (messages, state.tool_changes, history)
            if removed != self._calls.execution.removed:
                self._calls.execution = dataclasses.replace(self._calls.execution, removed=removed)
        return self._calls.execution

    # -- ending -----------------------------------------------------------------------------------

    def close(self) -> None:
        """End the loop now. A complete reply that the body holds is appended if the body left
        the history unchanged, but its tool calls are not run. An unread stream is dropped (use
        ``async with`` or ``aclose()`` to close it at once). Idempotent.

        Called from another task while the runner is busy, it lets the step under way finish
        whole (a request's reply is appended, without running its tools; a turn's tools finish and
        their results are appended), then ends the loop.
        """
        if self._advancing:
            self._closing = True
            return
        self._set(closed(self._state))

    async def aclose(self) -> None:
        """``close()``, and also close an unread stream and cancel tools started early."""
        self.close()
        with anyio.CancelScope(shield=True):
            await self._abandon_stream()
            await self._save()
        await self._at_end()  # not shielded: a toolset's close() must be the innermost scope (_close_tools)

    async def _leave(self, *, failed: bool) -> None:
        """Leaving ``async with`` (or ``with``): the loop ends (``aclose()``), unless the run waits
        for a decision, which may come days later, or the block is left by an exception (a crash, a
        shutdown's cancellation): then the run stays as the last step saved it, to be resumed or
        iterated again; only an unread stream is dropped."""
        if failed or self._state.phase is Phase.AWAITING:
            with anyio.CancelScope(shield=True):
                await self._abandon_stream()
            await self._at_end()  # the tools close (in ``async with``, its exit closes them)
            return
        await self.aclose()

    async def until_done(self) -> Reply:
        """Run the loop to its end and return the final reply; resumes a loop left by ``break``."""
        async for _ in self:
            pass
        if self._state.reply is None:
            raise ToolRunnerError(
                "the runner ended before any request got a reply, so there is no final message."
            )
        return self._state.reply

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
        like after ``break``).
        """
        async with run_with_events(self.until_done, self._listen) as events:
            yield events

    def _listen(self, emit: Callable[[RunnerEvent], None] | None) -> Callable[[RunnerEvent], None] | None:
        previous, self._emit = self._emit, emit
        return previous

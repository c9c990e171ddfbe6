"""Running the current turn's tool calls for one runner (``TurnCalls``).

A call's run is shared by every caller that asks for its result; calls may start while their reply
still streams; and the runner hears of each start, before the tool runs, and of each finish, so
its journal (``RunState.calls``) and its checkpoints follow every call. The results are data and
live in the run's state; what lives here cannot be saved: the events that wake callers waiting
for a call that another caller runs, and the cancel scopes of calls started early.

Invariants, for every tool_use id:

- while a call runs, ``running`` maps its id to an event that is set when it stops, whoever runs
  it; a call that was cancelled stops without a result, and the next caller runs it;
- a call with a result is never run again (``complete`` asks the journal first).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass

import anyio
import anyio.abc
from anthropic.types import ToolResultBlockParam

from ._errors import ToolRunnerError
from ._events import RunnerEvent, ToolCallFinished, ToolCallStarted
from ._execution import CallHooks, ExecutionOptions, run_one, run_tool_calls
from ._lifecycle import awaiting, call_finished, call_started, may_start_early, record_of
from ._state import RunState
from ._tools import ToolContext
from ._tracing import TracedCall, untraced
from ._types import ToolCall

__all__ = ["RunnerLink", "RunningCalls", "TurnCalls"]

ResultOf = Callable[[ToolCall], ToolResultBlockParam | None]
"""The journal's result for a call, if it finished."""


class RunningCalls:
    """The calls one runner is running, shared by every caller of that runner."""

    def __init__(self) -> None:
        self.running: dict[str, anyio.Event] = {}
        self._early: dict[str, anyio.CancelScope] = {}

    async def complete(
        self,
        calls: Sequence[ToolCall],
        result_of: ResultOf,
        execute: Callable[[Sequence[ToolCall]], Awaitable[None]],
    ) -> list[ToolResultBlockParam]:
        """The results of ``calls``, in order: run those missing, wait for those running elsewhere.

        Returns copies, so a caller may edit them without changing what is kept.
        """
        while missing := [call for call in calls if result_of(call) is None]:
            mine = [call for call in missing if call.id not in self.running]
            if mine:
                done = anyio.Event()
                for call in mine:
                    self.running[call.id] = done
                try:
                    await execute(mine)
                finally:
                    for call in mine:
                        del self.running[call.id]
                    done.set()
                # ``execute`` gives every call a result unless it is cancelled (then it raises): a
                # call it returned without would run again and again.
                lost = [call.id for call in mine if result_of(call) is None]
                if lost:
                    raise ToolRunnerError(
                        f"the tool calls {lost!r} ended without a result; this is a bug in toolrunner, please "
                        "report it with the tools involved."
                    )
            for call in missing:
                if (event := self.running.get(call.id)) is not None:
                    await event.wait()  # run elsewhere; if it was cancelled, the loop runs it here
        return [_copy(result_of(call)) for call in calls]

    def start_early(
        self, call: ToolCall, group: anyio.abc.TaskGroup, run: Callable[[ToolCall], Awaitable[None]]
    ) -> None:
        """Start ``call`` in ``group`` now (a reply still streams), unless it runs already."""
        if call.id in self.running:
            return
        done = self.running[call.id] = anyio.Event()
        scope = self._early[call.id] = anyio.CancelScope()

        async def run_early() -> None:
            try:
                with scope:
                    await run(call)
            finally:
                del self.running[call.id]
                done.set()

        group.start_soon(run_early)

    async def settle_early(self, call_ids: Iterable[str], *, keep: bool) -> list[str]:
        """Once a reply's stream is over: keep what its calls started early give, or cancel them
        and wait for them to stop. Returns the ids whose results must be forgotten."""
        scopes = [(call_id, self._early.pop(call_id)) for call_id in call_ids if call_id in self._early]
        if keep:
            return []
        for _, scope in scopes:
            scope.cancel()
        for call_id, _ in scopes:
            if (event := self.running.get(call_id)) is not None:
                await event.wait()
        return [call_id for call_id, _ in scopes]


def _copy(block: ToolResultBlockParam | None) -> ToolResultBlockParam:
    assert block is not None
    return ToolResultBlockParam(**block)


@dataclass(frozen=True, slots=True)
class RunnerLink:
    """How ``TurnCalls`` reaches its runner."""

    state: Callable[[], RunState]
    """The runner's current state."""
    update: Callable[[RunState], None]
    """Make a state current."""
    emit: Callable[[RunnerEvent], None]
    """Report an event to the runner's listeners."""
    listening: Callable[[], bool]
    """Whether anyone listens to events (they are made only then)."""
    saving: Callable[[], bool]
    """Whether the runner has a checkpointer (its state is saved only then)."""
    save: Callable[[], Awaitable[None]]
    """Save the current state, if the runner has a checkpointer."""
    context: Callable[[ToolCall], ToolContext]
    """The context a tool that asks for one gets."""
    trace: TracedCall = untraced
    """Runs a call's execution in its tracing span (``RunTrace.tool_call``)."""


class TurnCalls:
    """The current turn's calls for one runner: run once, shared, journaled, reported."""

    def __init__(self, link: RunnerLink, execution: ExecutionOptions) -> None:
        self.execution = execution
        """How calls run (the tools, limits, timeouts); replaced when the tools change."""
        self._link = link
        self._running = RunningCalls()
        self._hooks = CallHooks(
            context=link.context,
            input_of=self._input_of,
            started=self._started,
            finished=self._finished,
            traced=link.trace,
        )

    async def results(self, calls: Sequence[ToolCall]) -> list[ToolResultBlockParam]:
        """The results of ``calls``, in order; each call runs once, whoever asks."""
        return await self._running.complete(calls, self._result_of, self._execute)

    async def settle(self, calls: Sequence[ToolCall]) -> list[ToolResultBlockParam] | None:
        """Run every call of ``calls`` that may run (those that need no decision, and those
        approved, also while this runs), then return all the results in order, or ``None`` if
        calls still wait for a decision."""
        if not awaiting(self._link.state(), calls):  # the common case: nothing waits
            return await self.results(calls)
        while True:
            state = self._link.state()
            waiting = awaiting(state, calls)
            ready = [call for call in calls if call not in waiting and state.result_of(call) is None]
            if not ready:
                break
            await self.results(ready)
        if waiting:
            return None
        return [_copy(self._result_of(call)) for call in calls]

    def start_early(self, call: ToolCall, group: anyio.abc.TaskGroup) -> None:
        """Start a call while its reply streams, if ``may_start_early`` says it may."""
        tool = self.execution.find(call)
        if may_start_early(call, tool, self._link.state(), durable=self._link.saving()):
            self._running.start_early(call, group, self._run_early)

    async def settle_early(self, call_ids: Iterable[str], *, keep: bool) -> list[str]:
        """See ``RunningCalls.settle_early``."""
        return await self._running.settle_early(call_ids, keep=keep)

    def _result_of(self, call: ToolCall) -> ToolResultBlockParam | None:
        return self._link.state().result_of(call)

    def _input_of(self, call: ToolCall) -> object:
        record = record_of(self._link.state(), call)
        if record is not None and record.approved_input is not None:
            return record.approved_input
        return call.input

    async def _execute(self, calls: Sequence[ToolCall]) -> None:
        await run_tool_calls(calls, self.execution, self._hooks)

    async def _run_early(self, call: ToolCall) -> None:
        await run_one(call, self.execution, self._hooks, early=True)

    async def _started(self, call: ToolCall, early: bool) -> None:
        """The journal records the call, and the record is saved, before the tool runs."""
        link = self._link
        link.update(call_started(link.state(), call))
        if link.listening():
            link.emit(ToolCallStarted(call=call, early=early))
        if link.saving():
            await link.save()

    async def _finished(self, call: ToolCall, block: ToolResultBlockParam, duration: float) -> None:
        """The journal keeps the result, so the call never runs again; then it is saved."""
        link = self._link
        link.update(call_finished(link.state(), call, block))
        if link.listening():
            link.emit(ToolCallFinished(call=call, duration=duration, is_error=bool(block.get("is_error"))))
        if link.saving():
            await link.save()

"""The tool calls running now in this process: who runs which call, and the calls started early.

The results themselves are data and live in the run's state (its journal, ``RunState.calls``);
what lives here cannot be saved: the events that wake callers waiting for a call that another
caller runs, and the cancel scopes of calls started while a reply streams.

Invariants, for every tool_use id:

- while a call runs, ``running`` maps its id to an event that is set when it stops, whoever runs
  it; a call that was cancelled stops without a result, and the next caller runs it;
- a call with a result is never run again (``complete`` asks the journal first).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

import anyio
import anyio.abc
from anthropic.types import ToolResultBlockParam

from ._errors import ToolRunnerError
from ._types import ToolCall

__all__ = ["RunningCalls"]

ResultOf = Callable[[str], ToolResultBlockParam | None]
"""The journal's result for a tool_use id, if the call finished."""


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
        while missing := [call for call in calls if result_of(call.id) is None]:
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
                lost = [call.id for call in mine if result_of(call.id) is None]
                if lost:
                    raise ToolRunnerError(
                        f"the tool calls {lost!r} ended without a result; this is a bug in toolrunner, please "
                        "report it with the tools involved."
                    )
            for call in missing:
                if (event := self.running.get(call.id)) is not None:
                    await event.wait()  # run elsewhere; if it was cancelled, the loop runs it here
        return [_copy(result_of(call.id)) for call in calls]

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

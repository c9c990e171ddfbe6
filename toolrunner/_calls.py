"""The results of tool calls, kept by tool_use id, and the calls running now.

Invariants, for every tool_use id:

- once a call's result is in ``results`` it is never run again (it may be dropped: a call
  started early for a reply whose stop reason forbids tools);
- while a call runs, ``running`` maps its id to an event that is set when it stops, whoever runs
  it; a call that was cancelled stops without a result, and the next caller runs it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence

import anyio
import anyio.abc
from anthropic.types import ToolResultBlockParam

from ._lifecycle import ToolCall

__all__ = ["CallResults"]

Execute = Callable[[Sequence[ToolCall], Callable[[str, ToolResultBlockParam], None]], Awaitable[None]]
"""Runs calls, handing each finished call's result to the callback (``run_tool_calls``)."""


class CallResults:
    """Tool results by tool_use id, shared by every caller of one runner."""

    def __init__(self) -> None:
        self.results: dict[str, ToolResultBlockParam] = {}
        self.running: dict[str, anyio.Event] = {}
        self._early: dict[str, anyio.CancelScope] = {}

    async def complete(self, calls: Sequence[ToolCall], execute: Execute) -> list[ToolResultBlockParam]:
        """The results of ``calls``, in order: run those missing, wait for those running elsewhere.

        Returns copies, so a caller may edit them without changing what is kept.
        """
        while missing := [call for call in calls if call.id not in self.results]:
            mine = [call for call in missing if call.id not in self.running]
            if mine:
                done = anyio.Event()
                for call in mine:
                    self.running[call.id] = done
                try:
                    await execute(mine, self.results.__setitem__)
                finally:
                    for call in mine:
                        del self.running[call.id]
                    done.set()
            for call in missing:
                if (event := self.running.get(call.id)) is not None:
                    await event.wait()  # run elsewhere; if it was cancelled, the loop runs it here
        return [ToolResultBlockParam(**self.results[call.id]) for call in calls]

    def start_early(
        self,
        call: ToolCall,
        group: anyio.abc.TaskGroup,
        run: Callable[[ToolCall], Awaitable[ToolResultBlockParam]],
    ) -> None:
        """Start ``call`` in ``group`` now (a reply still streams), unless it ran or runs."""
        if call.id in self.results or call.id in self.running:
            return
        done = self.running[call.id] = anyio.Event()
        scope = self._early[call.id] = anyio.CancelScope()

        async def run_early() -> None:
            try:
                with scope:
                    self.results[call.id] = await run(call)
            finally:
                del self.running[call.id]
                done.set()

        group.start_soon(run_early)

    async def settle_early(self, call_ids: Iterable[str], *, keep: bool) -> None:
        """Once a reply's stream is over: keep what its calls started early give, or cancel them,
        wait for them to stop, and forget their results."""
        scopes = [(call_id, self._early.pop(call_id)) for call_id in call_ids if call_id in self._early]
        if keep:
            return
        for _, scope in scopes:
            scope.cancel()
        for call_id, _ in scopes:
            if (event := self.running.get(call_id)) is not None:
                await event.wait()
            self.results.pop(call_id, None)

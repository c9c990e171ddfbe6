"""The calls one runner is running (``RunningCalls``): shared by every caller, some started early.

The order of a call's effects (journal, save, run, journal, save) is the core's
(``RunCore.call``); what lives here is what a driver needs to run calls in tasks: which calls run
now, so that a second caller waits for the first instead of running a call twice, and the cancel
scopes of calls started while their reply streams. Invariants, for every tool_use id:

- while a call runs, ``running`` maps its id to a ``Stopped`` that is set when it stops, whoever
  runs it; a call that was cancelled stops without a result, and the next caller runs it;
- a call with a result is never run again (the core asks the journal first).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine, Iterable, Iterator, Sequence
from typing import Any, cast

import anyio
import anyio.abc
import anyio.lowlevel

from .._core.errors import ToolRunnerError
from .._core.types import ToolCall

__all__ = ["RunningCalls", "Stopped", "raise_single"]


class Stopped:
    """Set when a call stops, whoever runs it. Its ``anyio.Event`` is made only when another caller
    waits for it: nearly always nobody does, and a turn need not pay for one."""

    # Class-level defaults, not an ``__init__``: a call of every turn makes one, with no frame.
    _event: anyio.Event | None = None
    _is_set: bool = False

    def set(self) -> None:
        self._is_set = True
        if self._event is not None:
            self._event.set()

    async def wait(self) -> None:
        if self._is_set:
            await anyio.lowlevel.checkpoint()  # as waiting on a set event does
            return
        if self._event is None:
            self._event = anyio.Event()
        await self._event.wait()


class RunningCalls:
    """The calls one runner is running, shared by every caller of that runner."""

    def __init__(self) -> None:
        self.running: dict[str, Stopped] = {}
        self._early: dict[str, anyio.CancelScope] = {}

    async def run(
        self,
        calls: Sequence[ToolCall],
        finished: Callable[[ToolCall], bool],
        run: Callable[[ToolCall], Coroutine[Any, Any, None]],
    ) -> None:
        """Run those of ``calls`` that nobody runs (at once), and wait for those running elsewhere.

        Raises:
            ToolRunnerError: A call this ran ended without a result (a bug).
        """
        if len(calls) == 1:  # the common case, without the lists: one call, run here or elsewhere
            call = calls[0]
            elsewhere = self.running.get(call.id)
            if elsewhere is None and not finished(call):
                done = self.running[call.id] = Stopped()
                try:
                    await run(call)
                finally:
                    del self.running[call.id]
                    done.set()
                if not finished(call):
                    raise _lost([call.id])
            elif elsewhere is not None:
                await elsewhere.wait()  # if it was cancelled, the core runs it again
            return
        mine = [call for call in calls if call.id not in self.running and not finished(call)]
        if mine:
            done = Stopped()
            for call in mine:
                self.running[call.id] = done
            try:
                if len(mine) == 1:  # no task group needed: saves a task per turn on the common path
                    await run(mine[0])
                else:
                    await _run_all(mine, run)
            finally:
                for call in mine:
                    del self.running[call.id]
                done.set()
            # A call's program gives it a result unless it is cancelled (then it raises): a call it
            # returned without would run again and again.
            lost = [call.id for call in mine if not finished(call)]
            if lost:
                raise _lost(lost)
        for call in calls:
            if (event := self.running.get(call.id)) is not None:
                await event.wait()  # run elsewhere; if it was cancelled, the core runs it again

    def start_early(
        self, call: ToolCall, group: anyio.abc.TaskGroup, run: Callable[[ToolCall], Awaitable[None]]
    ) -> None:
        """Start ``call`` in ``group`` now (a reply still streams), unless it runs already."""
        if call.id in self.running:
            return
        done = self.running[call.id] = Stopped()
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


def _lost(ids: list[str]) -> ToolRunnerError:
    return ToolRunnerError(
        f"the tool calls {ids!r} ended without a result; this is a bug in toolrunner, please report it with "
        "the tools involved."
    )


async def _run_all(calls: Sequence[ToolCall], run: Callable[[ToolCall], Coroutine[Any, Any, None]]) -> None:
    """Run ``calls`` at once. A call whose program fails (a save refused or failing around it)
    does not stop the others: a tool that began may have acted, so it runs to its end and its
    result is journaled; the first failure is raised once all have stopped. A cancellation still
    stops them all (and the core answers each call it cut off), and so does an interrupt a tool
    raises (``KeyboardInterrupt``, ``SystemExit``), which is raised once all have stopped: taken
    out of the call's task, since on asyncio one that leaves a task also stops the event loop."""
    failures: list[Exception] = []
    interrupts: list[BaseException] = []
    cancelled = anyio.get_cancelled_exc_class()

    async def settled(call: ToolCall) -> None:
        try:
            await run(call)
        except Exception as error:
            failures.append(error)
        except cancelled:
            raise
        except BaseException as interrupt:
            interrupts.append(interrupt)
            group.cancel_scope.cancel()  # the other calls stop, as for a cancellation

    try:
        async with anyio.create_task_group() as group:
            for call in calls:
                group.start_soon(settled, call)
    except BaseExceptionGroup as error:
        raise_single(error)
    if interrupts:
        raise interrupts[0]
    if failures:
        first = failures[0]
        others = {id(error): error for error in failures[1:] if error is not first}
        if others:
            first.add_note(
                f"{len(others)} other call(s) of the same step failed too: "
                + "; ".join(f"{type(error).__name__}: {error}" for error in others.values())
            )
        raise first


def raise_single(error: BaseExceptionGroup[BaseException]) -> None:
    """A tool's exceptions are results, so only what the runner raises around a call (a refused
    checkpoint, which every call then raises again) or a ``BaseException`` (``KeyboardInterrupt``)
    gets into a group of calls: raise it as itself, as a single call would. A group from the calls
    of a sub-run (a nested group) counts as its exceptions, and beside such an exception the
    cancellations it caused in sibling tasks (trio reports them) do not count."""
    exceptions = list(_leaves(error))
    cancelled = anyio.get_cancelled_exc_class()
    distinct = {id(exception): exception for exception in exceptions if not isinstance(exception, cancelled)}
    if not distinct:
        distinct = {id(exception): exception for exception in exceptions}
    if len(distinct) == 1:
        raise next(iter(distinct.values())) from None
    raise error


def _leaves(error: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exception in error.exceptions:
        if isinstance(exception, BaseExceptionGroup):
            yield from _leaves(cast("BaseExceptionGroup[BaseException]", exception))
        else:
            yield exception

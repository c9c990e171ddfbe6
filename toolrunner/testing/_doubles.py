"""Test doubles for code that uses toolrunner: a tool's implementation swapped for a block
(`override_tool`), and a checkpointer that fails on chosen saves (`FailingCheckpointer`).

Like the rest of the kit, this module imports nothing of toolrunner: both work on what toolrunner's
objects offer (a tool's `function` and `is_async`, a store's `save` and `load`).
"""

from __future__ import annotations

import errno
import functools
import inspect
from collections.abc import Callable, Collection, Generator
from contextlib import contextmanager
from typing import Any, Protocol

__all__ = ["FailingCheckpointer", "override_tool"]


@contextmanager
def override_tool(tool: Any, function: Callable[..., Any]) -> Generator[None]:
    """Run `function` in place of a tool's own implementation while the `with` block lasts.

    The tool keeps its name, description and input schema, so the model sees the same tool and
    its input is checked as before; `function` is called with the same arguments the tool's own
    function would get, sync or async as it is itself. Leaving the block restores the tool, even
    when the block raises. Blocks nest: the innermost override is the one that runs.

        with override_tool(get_weather, lambda city: f"{city}: 21 °C"):
            runner.until_done()

    The override changes the tool object itself, for the whole process while the block lasts (the
    runner may call the tool from a worker thread, or from the thread of a `SyncToolRunner`): do
    not override one tool from tests that run at the same time.

    Args:
        tool: A tool made with toolrunner's `@tool` (or any tool whose `function` and `is_async`
            can be set). The SDK's `@beta_tool` tools cannot be overridden: give the runner a
            `@tool` of the fake instead.
        function: What runs instead: a function (sync or async) taking the tool's arguments.

    Raises:
        TypeError: `tool` is not a tool that can be overridden, or `function` is not callable.
    """
    if not callable(function):
        raise TypeError(
            f"override_tool needs a function to run in place of the tool, not {type(function).__name__!r}."
        )
    try:
        saved = (tool.function, tool.is_async)
        tool.function, tool.is_async = function, _is_async(function)
    except AttributeError:
        raise TypeError(
            f"override_tool takes a tool made with toolrunner's @tool, not {type(tool).__name__!r} (its "
            "implementation cannot be replaced); for an SDK @beta_tool, give the runner a @tool of the fake "
            "instead."
        ) from None
    try:
        yield
    finally:
        tool.function, tool.is_async = saved


def _is_async(function: Callable[..., Any]) -> bool:
    """Whether calling `function` gives a coroutine: an `async def`, a partial of one, or an object
    whose `__call__` is one."""
    while isinstance(function, functools.partial):
        function = function.func  # pyright: ignore[reportUnknownMemberType]
    if inspect.iscoroutinefunction(function):
        return True
    call = getattr(type(function), "__call__", None)  # noqa: B004  # the type's, not the instance's
    return not inspect.isfunction(function) and inspect.iscoroutinefunction(call)


class _Store(Protocol):
    async def save(self, checkpoint: Any, /) -> None: ...
    async def load(self, run_id: str, /) -> Any: ...


class FailingCheckpointer:
    """A checkpointer that fails on chosen saves, to test how your code recovers.

    It wraps another store (a `MemoryCheckpointer`, say): the saves it counts as failing raise
    `error` and save nothing; every other save, and every load, is the inner store's. Saves are
    counted from 1, over every run it stores.

        store = FailingCheckpointer(MemoryCheckpointer(), fail_on=[3])

    The default error is an `OSError` (`ENOSPC`, "No space left on device"): a transient failure,
    which the runner raises from the step that saved and saves again at the next step. Pass
    `error=CheckpointConflictError(...)` for a store that refuses the run instead (as one does
    when another runner saved it; the runner then stops saving), or a function of the save's number that makes the error.

    Args:
        inner: The store that does the saving.
        fail_on: The numbers of the saves that fail (1 is the first save).
        error: What a failing save raises: an exception, or a function of the save's number
            that returns one.

    Attributes:
        saves: How many saves were asked for so far, failed ones included.
        failed: The numbers of the saves that failed, in order.
    """

    def __init__(
        self,
        inner: _Store,
        *,
        fail_on: Collection[int],
        error: BaseException | Callable[[int], BaseException] | None = None,
    ) -> None:
        if not all(isinstance(number, int) and number >= 1 for number in fail_on):
            raise ValueError(
                f"fail_on takes the numbers of saves, from 1, not {sorted(fail_on, key=repr)!r}."
            )
        self.inner = inner
        self.fail_on = frozenset(fail_on)
        self._error = error
        self.saves = 0
        self.failed: list[int] = []

    async def save(self, checkpoint: Any) -> None:
        self.saves += 1
        if self.saves in self.fail_on:
            self.failed.append(self.saves)
            raise self._make_error(self.saves)
        await self.inner.save(checkpoint)

    async def load(self, run_id: str) -> Any:
        return await self.inner.load(run_id)

    def _make_error(self, number: int) -> BaseException:
        error = self._error
        if error is None:
            return OSError(errno.ENOSPC, f"No space left on device (FailingCheckpointer, save {number})")
        return error if isinstance(error, BaseException) else error(number)

    def __getattr__(self, name: str) -> Any:
        # The inner store's other methods (close(), ...) stay usable through the wrapper.
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return f"FailingCheckpointer({self.inner!r}, fail_on={sorted(self.fail_on)!r})"

"""The trampoline every driver runs the core's programs with (``drive``), and the one hook to watch
or fault the effects they perform (``intercepted``).

A program (``RunCore.iteration``, a call's program, ...) is a generator of effects. ``drive``
sends each effect to the driver's ``perform`` and the outcome back into the program, or throws in
what performing it raised, so the program can clean up, until the program returns. It is the same
loop for ``ToolRunner`` and the Temporal workflow, and for a test that drives ``RunCore`` itself.

An interceptor sees every effect of every program any driver runs in this process (a
``Performing``: the effect, the program that yielded it, the run's core) and chooses what
performing it means: ``await performing.perform()`` performs it as the driver would (or another
effect in its place); raising instead is a fault at that effect (a crash, a failed save, a
cancellation). The fault properties (``tests/properties/test_effect_faults.py``, and on Temporal
``tests/temporal/test_temporal_effect_faults.py``) put their faults there, with no private
attribute patched::

    async def watch(performing: Performing) -> object:
        seen.append(type(performing.effect).__name__)
        return await performing.perform()

    with intercepted(watch):
        await runner.until_done()

``drive`` imports nothing that does I/O: awaiting ``perform`` is all it does.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from .effects import Effect, Program

if TYPE_CHECKING:
    from .run import RunCore

__all__ = ["Interceptor", "Perform", "Performing", "drive", "intercepted"]

T = TypeVar("T")

Perform = Callable[[Effect], Awaitable[Any]]
"""A driver's performer: does what an effect asks, and gives its outcome."""


@dataclass(frozen=True, slots=True)
class Performing:
    """An effect about to be performed, as an interceptor sees it."""

    effect: Effect
    program: Program[Any]
    """The program that yielded it (the generator a driver drives: an iteration, a call's program)."""
    core: RunCore[Any] | None
    """The run's core, if the driver said (its state: ``core.state``)."""
    performer: Perform
    """The driver's performer."""

    async def perform(self, effect: Effect | None = None) -> Any:
        """Perform the effect as the driver would (or ``effect`` in its place); its outcome."""
        return await self.performer(self.effect if effect is None else effect)


Interceptor = Callable[[Performing], Awaitable[Any]]
"""Sees an effect before it is performed: returns its outcome (``await performing.perform()``), or raises."""

_interceptors: list[Interceptor] = []


@contextmanager
def intercepted(interceptor: Interceptor) -> Generator[None]:
    """Have ``interceptor`` see every effect performed in this process until the block ends. Blocks
    nest: the innermost interceptor sees an effect first, and its ``perform()`` hands it to the
    next one out, the outermost's to the driver."""
    _interceptors.append(interceptor)
    try:
        yield
    finally:
        _interceptors.remove(interceptor)


async def drive(program: Program[T], perform: Perform, *, core: RunCore[Any] | None = None) -> T:
    """Perform the effects ``program`` yields, sending each outcome back (or throwing in what
    performing it raised, so the program can clean up), until it returns; its value. ``core`` is
    the run's, for interceptors."""
    outcome: Any = None
    failure: BaseException | None = None
    while True:
        try:
            effect: Effect = program.send(outcome) if failure is None else program.throw(failure)
        except StopIteration as stop:
            value: T = stop.value  # (a StopIteration's value is Any: no cast call per program)
            return value
        failure = None
        try:
            if _interceptors:
                outcome = await _through(len(_interceptors) - 1, effect, program, core, perform)
            else:
                outcome = await perform(effect)
        except BaseException as error:
            outcome, failure = None, error


async def _through(
    index: int, effect: Effect, program: Program[Any], core: RunCore[Any] | None, perform: Perform
) -> Any:
    """``effect`` through the interceptors from ``index`` out, then the driver's ``perform``."""
    if index < 0:
        return await perform(effect)

    async def next_out(effect: Effect) -> Any:
        return await _through(index - 1, effect, program, core, perform)

    return await _interceptors[index](Performing(effect, program, core, next_out))

"""Where the core's log lines go, without the core doing I/O: ``log`` hands a line to a sink.

The core (``_core.run``, ``_core.transitions``, ``_core.messages``, ...) runs inside every driver,
the Temporal workflow included, where a line written with the standard ``logging`` module would be
written again each time the workflow replays. So the core never logs itself: it calls ``log``, and
the driver layer says where lines go. ``toolrunner``'s package sets the default sink, the library's
``logging`` logger (``"toolrunner"``); ``toolrunner.temporal`` adds a route that, inside a workflow,
sends lines to ``temporalio.workflow.logger``, which writes nothing on replay.
"""

from __future__ import annotations

from collections.abc import Callable

__all__ = ["DEBUG", "INFO", "WARNING", "LogSink", "add_route", "log", "set_default"]

DEBUG, INFO, WARNING = 10, 20, 30
"""The levels, as the ``logging`` module numbers them."""

LogSink = Callable[[int, str, tuple[object, ...], BaseException | None], None]
"""Writes one line: its level, its %-format and arguments, and the error it is about (if any)."""

_default: LogSink | None = None
_routes: list[Callable[[], LogSink | None]] = []


def log(level: int, message: str, *args: object, error: BaseException | None = None) -> None:
    """Hand a line to the sink of the context it is written in (a route's, else the default)."""
    for route in _routes:
        sink = route()
        if sink is not None:
            sink(level, message, args, error)
            return
    if _default is not None:
        _default(level, message, args, error)


def set_default(sink: LogSink) -> None:
    """Where lines go when no route takes them."""
    global _default
    _default = sink


def add_route(route: Callable[[], LogSink | None]) -> None:
    """Add a route: asked for each line, it gives the sink of the current context, or ``None``."""
    if route not in _routes:
        _routes.append(route)

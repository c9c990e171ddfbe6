"""The standard library's ``logging`` as the sink of the core's log lines (``_core.log``), set as the
default when ``toolrunner`` is imported: the ``"toolrunner"`` logger, which has a ``NullHandler``,
so an application that configured no logging prints nothing."""

from __future__ import annotations

import logging

__all__ = ["LOGGER", "write"]

LOGGER = logging.getLogger("toolrunner")


def write(level: int, message: str, args: tuple[object, ...], error: BaseException | None) -> None:
    """One line; a line about a failure the run handles has its traceback at ``DEBUG`` only (it is
    no error of the application, so it is never logged at ``ERROR``)."""
    LOGGER.log(level, message, *args)
    if error is not None and LOGGER.isEnabledFor(logging.DEBUG):
        LOGGER.debug("The traceback of: " + message, *args, exc_info=error)

# FROZEN as of commit 8cff606. Never edit: see ``_legacy/__init__.py``.
"""Where the frozen modules' log lines go: ``temporalio.workflow.logger``, which writes each once
(not again on replay). Written for the freeze, not copied: the live core's ``log`` hands lines to
routes that ``toolrunner.temporal`` sets, and this body runs only inside the workflow, where that
route goes to the same logger."""

from __future__ import annotations

from temporalio import workflow

__all__ = ["WARNING", "log"]

WARNING = 30
"""The level, as the ``logging`` module numbers it."""


def log(level: int, message: str, *args: object, error: BaseException | None = None) -> None:
    """Write one line to the workflow's logger."""
    workflow.logger.log(level, message, *args)

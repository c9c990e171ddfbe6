"""Inside a workflow, the core's log lines (``toolrunner._core.log``) go to ``temporalio.workflow.logger``,
which writes each once: not again when the workflow replays, and with the workflow's identity."""

from __future__ import annotations

from temporalio import workflow

from .._core.log import LogSink, add_route

__all__ = ["route_workflow_lines"]


def _write(level: int, message: str, args: tuple[object, ...], error: BaseException | None) -> None:
    workflow.logger.log(level, message, *args)


def _in_workflow() -> LogSink | None:
    return _write if workflow.in_workflow() else None


def route_workflow_lines() -> None:
    """Send the core's lines written inside a workflow to the workflow's logger (idempotent)."""
    add_route(_in_workflow)

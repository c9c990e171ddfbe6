"""Durable runs on Temporal: toolrunner's lifecycle as a workflow, requests and tool calls as activities.

    worker = create_worker(client, task_queue="agents", tools=[...], anthropic_client=..., store=...)
    run = await start_run(client, run_id="order-42", task_queue="agents", model=..., messages=[...], tools=[...])
    result = await run.result()

Needs the ``temporal`` extra (``pip install 'claude-toolrunner[temporal]'``); ``import toolrunner``
never imports Temporal. See docs/temporal.md.
"""

try:
    import temporalio as _temporalio  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as _error:
    raise ImportError(
        "toolrunner.temporal needs the temporalio package, which is not installed; install it with "
        "pip install 'claude-toolrunner[temporal]'."
    ) from _error

from ._activities import EventListener as EventListener
from ._activity_options import ActivityOptions as ActivityOptions
from ._client import RunHandle as RunHandle, get_run as get_run, start_run as start_run
from ._data import RunResult as RunResult
from ._log import route_workflow_lines as _route_workflow_lines
from ._payloads import (
    FilePayloadStore as FilePayloadStore,
    MemoryPayloadStore as MemoryPayloadStore,
    PayloadStore as PayloadStore,
)
from ._testing import find_test_server as find_test_server, start_test_environment as start_test_environment
from ._worker import create_worker as create_worker, workflow_runner as workflow_runner
from ._workflow import ToolRunnerWorkflow as ToolRunnerWorkflow

_route_workflow_lines()

__all__ = [
    "ActivityOptions",
    "EventListener",
    "FilePayloadStore",
    "MemoryPayloadStore",
    "PayloadStore",
    "RunHandle",
    "RunResult",
    "ToolRunnerWorkflow",
    "create_worker",
    "find_test_server",
    "get_run",
    "start_run",
    "start_test_environment",
    "workflow_runner",
]

"""Durable runs on Temporal: toolrunner's lifecycle as a workflow, requests and tool calls as activities.

    worker = create_worker(client, task_queue="agents", tools=[...], anthropic_client=..., store=...)
    handle = await start_run(client, run_id="order-42", task_queue="agents", model=..., messages=[...], tools=[...])
    result = await handle.result()

Needs the ``temporal`` extra (``pip install 'toolrunner[temporal]'``); ``import toolrunner`` never
imports Temporal. See docs/temporal.md.
"""

try:
    import temporalio as _temporalio  # noqa: F401  # pyright: ignore[reportUnusedImport]
except ImportError as _error:  # pragma: no cover - the message is tested in a subprocess
    raise ImportError(
        "toolrunner.temporal needs the temporalio package, which is not installed; install it with "
        "pip install 'toolrunner[temporal]'."
    ) from _error

from ._activities import EventListener as EventListener
from ._data import ActivityOptions as ActivityOptions, RunResult as RunResult
from ._payloads import (
    FilePayloadStore as FilePayloadStore,
    MemoryPayloadStore as MemoryPayloadStore,
    PayloadStore as PayloadStore,
)
from ._testing import find_test_server as find_test_server, start_test_environment as start_test_environment
from ._worker import (
    create_worker as create_worker,
    start_run as start_run,
    workflow_runner as workflow_runner,
)
from ._workflow import (
    CLOSE_SIGNAL as CLOSE_SIGNAL,
    REQUEST_ACTIVITY as REQUEST_ACTIVITY,
    STATE_QUERY as STATE_QUERY,
    TOOL_ACTIVITY as TOOL_ACTIVITY,
    WORKFLOW as WORKFLOW,
    ToolRunnerWorkflow as ToolRunnerWorkflow,
)

__all__ = [
    "CLOSE_SIGNAL",
    "REQUEST_ACTIVITY",
    "STATE_QUERY",
    "TOOL_ACTIVITY",
    "WORKFLOW",
    "ActivityOptions",
    "EventListener",
    "FilePayloadStore",
    "MemoryPayloadStore",
    "PayloadStore",
    "RunResult",
    "ToolRunnerWorkflow",
    "create_worker",
    "find_test_server",
    "start_run",
    "start_test_environment",
    "workflow_runner",
]

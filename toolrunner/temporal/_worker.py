"""The workers' side: ``create_worker``."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anthropic
from temporalio.client import Client
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from .._core.errors import ParamsError
from .._core.usage import Price
from .._runner.hooks import Hooks
from .._runner.options import ToolLike
from .._tools.results import DEFAULT_ADAPTER, ToolResultAdapter
from ._activities import Activities, EventListener
from ._hook_activity import HookActivity, worker_hooks
from ._output import WorkerOutputs
from ._payloads import PayloadStore
from ._workflow import ToolRunnerWorkflow

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["PASSTHROUGH", "create_worker", "workflow_runner"]

# Modules the workflow sandbox takes from the worker as they are instead of importing them again
# for each run: toolrunner's lifecycle is pure, and these are what it imports.
PASSTHROUGH = (
    "toolrunner",
    "anthropic",
    "pydantic",
    "pydantic_core",
    "annotated_types",
    "typing_inspection",
    "typing_extensions",
    "anyio",
    "sniffio",
    "httpx2",
    "httpcore2",
    "jiter",
    "distro",
    "opentelemetry",
)


def workflow_runner() -> SandboxedWorkflowRunner:
    """The sandbox for ``ToolRunnerWorkflow``, for a worker you build yourself."""
    return SandboxedWorkflowRunner(
        restrictions=SandboxRestrictions.default.with_passthrough_modules(*PASSTHROUGH)
    )


def create_worker(
    client: Client,
    *,
    task_queue: str,
    tools: Iterable[ToolLike],
    anthropic_client: anthropic.AsyncAnthropic,
    store: PayloadStore,
    inline_limit: int = 1024,
    stream: bool = False,
    on_event: EventListener | None = None,
    prices: Mapping[str, Price] | None = None,
    result_adapter: ToolResultAdapter = DEFAULT_ADAPTER,
    tracer_provider: TracerProvider | None = None,
    output_types: Mapping[str, type[Any]] | Iterable[type[Any]] = (),
    hooks: Mapping[str, Hooks] | None = None,
    workflows: Sequence[type] = (),
    activities: Sequence[Callable[..., Any]] = (),
    **worker_options: Any,
) -> Worker:
    """A Temporal worker that runs toolrunner runs: the workflow and its activities
    (``toolrunner.request``, ``toolrunner.tool``, ``toolrunner.decision``). ``await worker.run()``,
    or ``async with worker:``.

    Args:
        client: The Temporal client.
        task_queue: The task queue to poll; runs are started on it.
        tools: Every tool of the runs this worker serves (they run here, in activities): ``@tool``
            tools, functions, the SDK's tools, and ``Toolset`` objects (an ``MCPToolset``: one
            session per worker, opened when the worker starts and closed when it stops).
        anthropic_client: Sends the requests (its own retries are switched off: Temporal retries).
        store: Where large blocks and the histories go; every worker of the task queue must share it.
        inline_limit: Blocks whose JSON is longer than this many bytes go to ``store``, and workflow
            history holds a reference.
        stream: Stream each reply: long requests need it, and ``on_event`` then hears text as it
            arrives.
        on_event: Called on this worker with a run's id and each event: those of the requests and
            the calls it runs (``TextDelta``, ``MessageFinished``, ``ApprovalRequested``,
            ``ToolCallStarted``, ``ToolCallFinished``), and those of its runs' workflows that no
            activity witnesses (decisions, calls answered without running, ``LoopFinished``).
        prices: The price table for usage and ``max_cost``; the dated defaults when ``None``.
        result_adapter: Turns what tools return into tool_result content.
        tracer_provider: Where the ``execute_tool`` spans of traced runs (``start_run(tracing=...)``)
            go; the global provider when ``None``.
        output_types: The output types of the runs this worker serves, by the name a run gives
            (``start_run(output_format="Weather")``): types (pydantic models, TypedDicts,
            dataclasses), each named by its ``__name__``, or a mapping of names to types. Every
            worker of the task queue needs every output type of its runs, as it needs their tools.
        hooks: The hooks of the runs this worker serves, by the name a run gives
            (``start_run(hooks="guarded")``): a mapping of names to ``Hooks(...)``. They run here, in
            the ``toolrunner.hook`` activity; every worker of the task queue needs the same hooks
            under each name. See docs/temporal.md.
        workflows: More workflows for this worker (your own).
        activities: More activities for this worker (your own).
        **worker_options: More options of ``temporalio.worker.Worker`` (``max_concurrent_activities``, ...).

    Raises:
        ParamsError: An option has a value it cannot take (an output type with no JSON schema, say).
    """
    if not isinstance(inline_limit, int) or isinstance(inline_limit, bool) or inline_limit < 0:
        raise ParamsError(
            f"inline_limit must be a number of bytes (an int of 0 or more), not {inline_limit!r}."
        )
    if not isinstance(store, PayloadStore):
        raise ParamsError(
            f"store must be a PayloadStore (an object with async put(key, data) and get(key)), not "
            f"{type(store).__name__!r}; FilePayloadStore(directory) keeps payloads in files."
        )
    handlers = Activities(
        anthropic_client,
        tools=tools,
        store=store,
        inline_limit=inline_limit,
        prices=prices,
        result_adapter=result_adapter,
        stream=stream,
        on_event=on_event,
        tracer_provider=tracer_provider,
        output_types=WorkerOutputs(output_types),
    )
    hook_activity = HookActivity(worker_hooks({} if hooks is None else hooks), handlers)
    worker_options.setdefault("workflow_runner", workflow_runner())
    worker = _ToolWorker(
        client,
        task_queue=task_queue,
        workflows=[ToolRunnerWorkflow, *workflows],
        activities=[*handlers.all(), hook_activity.hook, *activities],
        **worker_options,
    )
    worker.handlers = handlers
    return worker


class _ToolWorker(Worker):
    """A worker whose ``Toolset`` objects are open while it runs: opened before it polls, closed
    after it stopped, in the task that runs it (a toolset's ``open()`` and ``close()`` share one)."""

    handlers: Activities

    async def run(self) -> None:
        if not self.handlers.toolsets:
            await super().run()
            return
        await self.handlers.open_tools()
        try:
            await super().run()
        finally:
            await self.handlers.close_tools()

"""The user's side: ``create_worker`` on the workers, ``start_run`` on a client."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal

import anthropic
from temporalio.client import Client, WorkflowHandle
from temporalio.worker import Worker
from temporalio.worker.workflow_sandbox import SandboxedWorkflowRunner, SandboxRestrictions

from .._errors import ParamsError
from .._options import ToolLike, read_options
from .._params import check_params, index_tools
from .._results import DEFAULT_ADAPTER, ToolResultAdapter
from .._state import RunState
from .._tools import Tool
from .._usage import Price
from ._activities import Activities, EventListener
from ._data import ActivityOptions, RunInput, RunResult, ToolSpec
from ._payloads import PayloadStore
from ._workflow import ToolRunnerWorkflow

__all__ = ["create_worker", "run_input", "start_run", "workflow_runner"]

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
    workflows: Sequence[type] = (),
    activities: Sequence[Callable[..., Any]] = (),
    **worker_options: Any,
) -> Worker:
    """A Temporal worker that runs toolrunner runs: the workflow, the request activity and the tool
    activity. ``await worker.run()``, or ``async with worker:``.

    Args:
        client: The Temporal client.
        task_queue: The task queue to poll; runs are started on it.
        tools: Every tool of the runs this worker serves (they run here, in activities).
        anthropic_client: Sends the requests (its own retries are switched off: Temporal retries).
        store: Where large blocks and the histories go; every worker of the task queue must share it.
        inline_limit: Blocks whose JSON is longer than this many bytes go to ``store``, and workflow
            history holds a reference.
        stream: Stream each reply: long requests need it, and ``on_event`` then hears text as it
            arrives.
        on_event: Called on this worker with a run's id and each event (``TextDelta``,
            ``MessageFinished``, ``ToolCallStarted``, ``ToolCallFinished``).
        prices: The price table for usage and ``max_cost``; the dated defaults when ``None``.
        result_adapter: Turns what tools return into tool_result content.
        workflows: More workflows for this worker (your own).
        activities: More activities for this worker (your own).
        **worker_options: More options of ``temporalio.worker.Worker`` (``max_concurrent_activities``, ...).

    Raises:
        ParamsError: An option has a value it cannot take.
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
    )
    worker_options.setdefault("workflow_runner", workflow_runner())
    return Worker(
        client,
        task_queue=task_queue,
        workflows=[ToolRunnerWorkflow, *workflows],
        activities=[*handlers.all(), *activities],
        **worker_options,
    )


_WORKER_OPTIONS = {
    "stream": "the workers stream (create_worker(stream=True)), and no loop body reads a stream",
    "run_tools_eagerly": "tools run in their own activities once the reply is complete",
    "result_adapter": "it is code: pass it to create_worker(result_adapter=...)",
    "prices": "they are the workers': pass them to create_worker(prices=...)",
    "on_event": "events happen on the workers: pass it to create_worker(on_event=...)",
    "checkpointer": "Temporal keeps the run, and the workers' store its large data",
    "run_id": "the run's name is the run_id argument of start_run",
}


def run_input(
    *,
    tools: Iterable[ToolLike | Mapping[str, Any]] = (),
    activity_options: ActivityOptions | None = None,
    **options: Any,
) -> RunInput:
    """The workflow's input for a new run: the options and request params are checked as
    ``ToolRunner(...)`` checks them.

    Raises:
        ParamsError: An option or param has a value it cannot take, or belongs on the workers.
    """
    for name, reason in _WORKER_OPTIONS.items():
        if name in options:
            raise ParamsError(f"{name}= cannot be given to a Temporal run: {reason}.")
    checked, params = read_options({**options, "tools": tools}, stream=False, is_async=True)
    params["tools"] = checked.tools
    check_params(params)
    index = index_tools(params.pop("tools"))
    messages = params.pop("messages")
    state = RunState(
        params=params,
        tools=tuple(entry.name if isinstance(entry, Tool) else entry for entry in index.tools),
        messages=tuple(messages),
    )
    limits = checked.limits
    return RunInput(
        state=state.to_dict(),
        tools=[
            ToolSpec(
                name=tool.name,
                idempotent=tool.idempotent,
                sequential=tool.sequential,
                timeout=tool.timeout,
                requires_approval=bool(getattr(tool, "requires_approval", False)),
            )
            for tool in index.runnable.values()
        ],
        limits={
            "max_iterations": limits.max_iterations,
            "max_total_tokens": limits.max_total_tokens,
            "max_cost": None if limits.max_cost is None else str(limits.max_cost),
            "on_limit": limits.on_limit,
        },
        max_concurrency=checked.max_concurrency,
        tool_timeout=checked.tool_timeout,
        activities=(activity_options or ActivityOptions()).to_data(),
    )


async def start_run(
    client: Client,
    *,
    run_id: str,
    task_queue: str,
    tools: Iterable[ToolLike | Mapping[str, Any]] = (),
    activity_options: ActivityOptions | None = None,
    id_reuse: Literal["refuse", "after_failure", "allow"] = "refuse",
    **options: Any,
) -> WorkflowHandle[ToolRunnerWorkflow, RunResult]:
    """Start a run on Temporal: the options and params of ``ToolRunner(...)``, and where to run.

    ``await handle.result()`` waits for its ``RunResult``; ``await handle.signal(ToolRunnerWorkflow.close)``
    ends it, as ``ToolRunner.close()`` does.

    Args:
        client: The Temporal client.
        run_id: The run's name: its workflow id.
        task_queue: The task queue of the workers (``create_worker``).
        tools: The run's tools, as for ``ToolRunner``; every runnable tool must be on the workers.
        activity_options: Timeouts and retry policies of the run's activities.
        id_reuse: Whether a new run may take the name of one that ended: never (``"refuse"``), after
            one that failed, or always.
        **options: Request params (``model``, ``max_tokens``, ``messages``, ...) and the runner
            options ``max_iterations``, ``max_total_tokens``, ``max_cost``, ``on_limit``,
            ``max_concurrency`` and ``tool_timeout``.

    Raises:
        ParamsError: An option or param has a value it cannot take, or belongs on the workers.
    """
    from temporalio.common import WorkflowIDReusePolicy

    if not isinstance(run_id, str) or not run_id:
        raise ParamsError(f"run_id must be a non-empty str, not {run_id!r}.")
    reuse = {
        "refuse": WorkflowIDReusePolicy.REJECT_DUPLICATE,
        "after_failure": WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
        "allow": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
    }.get(id_reuse)
    if reuse is None:
        raise ParamsError(f"id_reuse must be 'refuse', 'after_failure' or 'allow', not {id_reuse!r}.")
    return await client.start_workflow(
        ToolRunnerWorkflow.run,
        run_input(tools=tools, activity_options=activity_options, **options),
        id=run_id,
        task_queue=task_queue,
        id_reuse_policy=reuse,
    )

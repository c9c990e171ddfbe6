"""The clients' side: ``start_run`` and ``get_run``, and the ``RunHandle`` they give."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any, Literal

from temporalio.client import Client, WorkflowHandle
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError

from .._errors import CheckpointError, ParamsError
from .._options import ToolLike, read_options
from .._params import check_params, index_tools
from .._state import RunState
from .._types import ToolCall
from ._data import ActivityOptions, Answer, Approval, Denial, RunInput, RunResult, ToolSpec
from ._workflow import ToolRunnerWorkflow

__all__ = ["RunHandle", "get_run", "run_input", "start_run"]

_WORKER_OPTIONS = {
    "stream": "the workers stream (create_worker(stream=True)), and no loop body reads a stream",
    "run_tools_eagerly": "tools run in their own activities once the reply is complete",
    "result_adapter": "it is code: pass it to create_worker(result_adapter=...)",
    "prices": "they are the workers': pass them to create_worker(prices=...)",
    "on_event": "events happen on the workers: pass it to create_worker(on_event=...)",
    "checkpointer": "Temporal keeps the run, and the workers' store its large data",
    "run_id": "the run's name is the run_id argument of start_run",
    "approve": "decisions come from clients: handle.approve(), deny() or answer()",
    "compaction_control": "client-side compaction replaces the history between requests, which a Temporal run "
    "does not do yet",
    "tracing": "trace the workers and clients with Temporal's OpenTelemetry interceptor "
    "(temporalio.contrib.opentelemetry)",
}

_REUSE = {
    "refuse": WorkflowIDReusePolicy.REJECT_DUPLICATE,
    "after_failure": WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    "allow": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
}


class RunHandle:
    """A run on Temporal, seen from a client: its result, its state, the decisions it waits for.

    Get one from ``start_run`` or ``get_run``; any process with a client can hold one.

    Attributes:
        run_id: The run's name (its workflow id).
        workflow: Temporal's handle of the workflow, for everything else (cancel, describe, ...).
    """

    def __init__(self, workflow: WorkflowHandle[ToolRunnerWorkflow, RunResult]) -> None:
        self.workflow = workflow
        self.run_id = workflow.id

    def __repr__(self) -> str:
        return f"RunHandle({self.run_id!r})"

    async def result(self) -> RunResult:
        """Wait for the run to end; how it ended."""
        return await self.workflow.result()

    async def state(self) -> RunState:
        """The run's state now (large blocks as stubs)."""
        return RunState.from_dict(await self.workflow.query(ToolRunnerWorkflow.state))

    async def pending_approvals(self) -> list[ToolCall]:
        """The calls that wait for a decision, in tool_use order."""
        calls = await self.workflow.query(ToolRunnerWorkflow.pending_approvals)
        return [
            ToolCall(
                id=call["id"], name=call["name"], input=call["input"], toolset_name=call.get("toolset_name")
            )
            for call in calls
        ]

    async def approve(self, tool_use_id: str, *, input: object = None) -> None:
        """Approve a call that waits; with ``input`` it runs with that input (checked like the model's).

        Raises:
            temporalio.client.WorkflowUpdateFailedError: No call waits with that id, or ``input``
                does not fit the tool; its cause says why.
        """
        await self._update(ToolRunnerWorkflow.approve, Approval(tool_use_id, input))

    async def deny(self, tool_use_id: str, reason: str) -> None:
        """Deny a call that waits (or has not started): the model reads ``reason`` as its error result."""
        await self._update(ToolRunnerWorkflow.deny, Denial(tool_use_id, reason))

    async def answer(self, tool_use_id: str, result: object, *, is_error: bool = False) -> None:
        """Answer a call that waits (or has not started) with a result computed elsewhere (text or
        JSON data, converted on a worker as a tool's return value is)."""
        await self._update(ToolRunnerWorkflow.answer, Answer(tool_use_id, result, is_error))

    async def _update(self, update: Any, argument: object) -> None:
        # temporalio's overloads of execute_update leave one form's ``args`` untyped, so pyright
        # strict finds the method partially unknown whichever form is called.
        await self.workflow.execute_update(update, argument)  # pyright: ignore[reportUnknownMemberType]

    async def close(self) -> None:
        """End the run as ``ToolRunner.close()`` does (the step under way finishes whole)."""
        await self.workflow.signal(ToolRunnerWorkflow.close)


def run_input(
    *,
    tools: Iterable[ToolLike | Mapping[str, Any]] = (),
    activity_options: ActivityOptions | None = None,
    approval_timeout: timedelta | None = None,
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
    if approval_timeout is not None and (
        not isinstance(approval_timeout, timedelta) or approval_timeout <= timedelta(0)
    ):
        raise ParamsError(f"approval_timeout must be a positive timedelta or None, not {approval_timeout!r}.")
    checked, params = read_options({**options, "tools": tools}, stream=False, is_async=True)
    params["tools"] = checked.tools
    check_params(params)
    index = index_tools(params.pop("tools"))
    if index.toolsets:
        raise ParamsError(
            f"Toolset objects ({', '.join(repr(toolset.name) for toolset in index.toolsets)}) cannot be tools of a "
            "Temporal run yet (they must be opened around each call); give their tools instead."
        )
    messages = params.pop("messages")
    state = RunState(params=params, tools=index.saved, messages=tuple(messages))
    limits = checked.limits
    return RunInput(
        state=state.to_dict(),
        tools=[
            ToolSpec(name=name, idempotent=tool.idempotent, sequential=tool.sequential, timeout=tool.timeout)
            for name, tool in (*index.runnable.items(), *index.families.items())
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
        approval_timeout=None if approval_timeout is None else approval_timeout.total_seconds(),
        cache=None if checked.cache is None else dataclasses.asdict(checked.cache.policy),
    )


async def start_run(
    client: Client,
    *,
    run_id: str,
    task_queue: str,
    tools: Iterable[ToolLike | Mapping[str, Any]] = (),
    activity_options: ActivityOptions | None = None,
    approval_timeout: timedelta | None = None,
    id_reuse: Literal["refuse", "after_failure", "allow"] = "refuse",
    **options: Any,
) -> RunHandle:
    """Start a run on Temporal: the options and params of ``ToolRunner(...)``, and where to run.

    Args:
        client: The Temporal client.
        run_id: The run's name: its workflow id.
        task_queue: The task queue of the workers (``create_worker``).
        tools: The run's tools, as for ``ToolRunner``; every runnable tool must be on the workers.
        activity_options: Timeouts and retry policies of the run's activities.
        approval_timeout: How long a call may wait for a decision before it is denied; ``None``
            (the default): as long as it takes.
        id_reuse: Whether a new run may take the name of one that ended: never (``"refuse"``), after
            one that failed, or always.
        **options: Request params (``model``, ``max_tokens``, ``messages``, ...) and the runner
            options ``max_iterations``, ``max_total_tokens``, ``max_cost``, ``on_limit``,
            ``max_concurrency``, ``tool_timeout`` and ``cache``.

    Raises:
        ParamsError: An option or param has a value it cannot take, or belongs on the workers.
        CheckpointError: A run of that name exists (see ``id_reuse``).
    """
    if not isinstance(run_id, str) or not run_id:
        raise ParamsError(f"run_id must be a non-empty str, not {run_id!r}.")
    reuse = _REUSE.get(id_reuse)
    if reuse is None:
        raise ParamsError(f"id_reuse must be 'refuse', 'after_failure' or 'allow', not {id_reuse!r}.")
    run = run_input(
        tools=tools, activity_options=activity_options, approval_timeout=approval_timeout, **options
    )
    try:
        handle = await client.start_workflow(
            ToolRunnerWorkflow.run, run, id=run_id, task_queue=task_queue, id_reuse_policy=reuse
        )
    except WorkflowAlreadyStartedError:
        raise CheckpointError(
            f"a run named {run_id!r} exists already (or ended, and id_reuse={id_reuse!r} keeps its name); get it "
            f"with get_run(client, {run_id!r}), or start the new run under another run_id."
        ) from None
    return RunHandle(handle)


def get_run(client: Client, run_id: str) -> RunHandle:
    """The handle of a run started earlier (from any process), by its name."""
    return RunHandle(client.get_workflow_handle_for(ToolRunnerWorkflow.run, run_id))

"""The clients' side: ``start_run`` and ``get_run``, and the ``RunHandle`` they give."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from typing import Any, Literal, TypeVar, cast

from temporalio.client import (
    Client,
    WorkflowExecutionStatus,
    WorkflowFailureError,
    WorkflowHandle,
    WorkflowUpdateFailedError,
)
from temporalio.common import WorkflowIDReusePolicy
from temporalio.exceptions import ApplicationError, WorkflowAlreadyStartedError
from temporalio.service import RPCError, RPCStatusCode

from .._core.errors import CheckpointError, ParamsError, RunEndedError
from .._core.ids import check_by, check_reason
from .._core.messages import message_param
from .._core.state import RunState, message_data, plain_data
from .._core.types import Reply, ToolCall
from .._runner.options import ToolLike
from ._activity_options import ActivityOptions
from ._controls import check_settable
from ._data import Answer, Approval, CompactInput, Denial, MessagesInput, ParamsInput, RunResult
from ._event_data import read_call
from ._hook_data import refused_error
from ._names import RUN_ENDED
from ._output import output_error
from ._run_input import run_input
from ._workflow import ToolRunnerWorkflow

__all__ = ["RunHandle", "get_run", "run_input", "start_run"]

T = TypeVar("T")

_REUSE = {
    "refuse": WorkflowIDReusePolicy.REJECT_DUPLICATE,
    "after_failure": WorkflowIDReusePolicy.ALLOW_DUPLICATE_FAILED_ONLY,
    "allow": WorkflowIDReusePolicy.ALLOW_DUPLICATE,
}


class RunHandle:
    """A run on Temporal, seen from a client: its result, its state, the decisions it waits for.

    Get one from ``start_run`` or ``get_run``; any process with a client can hold one. It names the
    run, not one segment of it: after the run continued as new, every call reaches the segment
    that runs now.

    On a run that ended (its loop ended, or it was closed, failed or terminated), decisions and
    steering raise ``RunEndedError``; ``close()`` does nothing; ``result()``, ``state()`` and
    ``pending_approvals()`` answer as for the run's end. Any call on a name that no run has raises
    ``CheckpointError``.

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
        """Wait for the run to end; how it ended.

        Raises:
            OutputValidationError: The run's final answer never fit its ``output_format`` (the
                run failed with it; ``error.answer`` is the last reply, large blocks as stubs).
            RequestRefusedError: The run's ``before_request`` hook (``start_run(hooks=...)``)
                refused a request, or failed (the run failed with it).
            CheckpointError: No run has that name.
        """
        try:
            return await self._call("result", self.workflow.result)
        except WorkflowFailureError as error:
            rejected = output_error(error) or refused_error(error)
            if rejected is None:
                raise
            raise rejected from error

    async def state(self) -> RunState:
        """The run's state now (large blocks as stubs); after it ended, as it ended.

        Raises:
            CheckpointError: No run has that name.
        """
        return RunState.from_dict(
            await self._call("state", lambda: _query(self.workflow, ToolRunnerWorkflow.state))
        )

    async def pending_approvals(self) -> list[ToolCall]:
        """The calls that wait for a decision, in tool_use order.

        Raises:
            CheckpointError: No run has that name.
        """
        calls = await self._call(
            "pending_approvals", lambda: _query(self.workflow, ToolRunnerWorkflow.pending_approvals)
        )
        return [read_call(call) for call in calls]

    async def approve(self, tool_use_id: str, *, input: object = None, by: str | None = None) -> None:
        """Approve a call that waits; with ``input`` it runs with that input (checked like the
        model's); ``by`` says who decided, kept with the call (with the time, the workflow's).

        Raises:
            ApprovalError: ``by`` is not who decided as a store keeps it (see ``check_by``), before
                anything is sent.
            temporalio.client.WorkflowUpdateFailedError: No call waits with that id, or ``input``
                does not fit the tool; its cause says why.
            RunEndedError: The run ended. CheckpointError: No run has that name.
        """
        by = check_by(by)
        await self._update("approve", ToolRunnerWorkflow.approve, Approval(tool_use_id, input, by))

    async def deny(self, tool_use_id: str, reason: str, *, by: str | None = None) -> None:
        """Deny a call that waits (or has not started): the model reads ``reason`` as its error result.

        Raises:
            ApprovalError: ``reason`` holds nothing the model can read, or ``by`` is not who
                decided as a store keeps it, before anything is sent.
            temporalio.client.WorkflowUpdateFailedError: No call can be denied with that id; its
                cause says why.
            RunEndedError: The run ended. CheckpointError: No run has that name.
        """
        reason = check_reason(tool_use_id, reason)
        by = check_by(by)
        await self._update("deny", ToolRunnerWorkflow.deny, Denial(tool_use_id, reason, by))

    async def answer(
        self, tool_use_id: str, result: object, *, is_error: bool = False, by: str | None = None
    ) -> None:
        """Answer a call that waits (or has not started) with a result computed elsewhere (text or
        JSON data, converted on a worker as a tool's return value is).

        Raises:
            ApprovalError: ``by`` is not who decided as a store keeps it, before anything is sent.
            temporalio.client.WorkflowUpdateFailedError: No call can be answered with that id, or
                ``result`` cannot be a tool result; its cause says why.
            RunEndedError: The run ended. CheckpointError: No run has that name.
        """
        by = check_by(by)
        await self._update("answer", ToolRunnerWorkflow.answer, Answer(tool_use_id, result, is_error, by))

    async def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """Append messages to the history, as a loop body's ``runner.push_messages()``: the run
        applies them at the next point where a loop body could steer, that is once the reply being
        worked on is handed over (the run then does not append that reply, nor run its calls), or
        at once if the run is paused for decisions. Returns once they are applied.

        Raises:
            temporalio.client.WorkflowUpdateFailedError: The history would be one the service
                rejects, or lose results of calls that ran; its cause says why, and nothing changed.
            RunEndedError: The run ended (also: before the next point where it could be steered).
            CheckpointError: No run has that name.
        """
        await self._update(
            "push_messages", ToolRunnerWorkflow.push_messages, MessagesInput(_messages(messages))
        )

    async def set_messages(self, messages: Sequence[Mapping[str, Any] | Reply]) -> None:
        """Replace the history, as a loop body's ``runner.set_messages_params()`` with new
        ``messages``, at the same point as ``push_messages()``.

        Raises:
            temporalio.client.WorkflowUpdateFailedError, RunEndedError, CheckpointError: As
                ``push_messages()`` raises them.
        """
        await self._update(
            "set_messages", ToolRunnerWorkflow.set_messages, MessagesInput(_messages(messages))
        )

    async def set_params(self, params: Mapping[str, Any]) -> None:
        """Change the run's request params (``system``, ``max_tokens``, ``tool_choice``,
        ``thinking``, ...), as a loop body's ``runner.set_messages_params(lambda current: {**current,
        **params})`` would: the params given replace those of the same name, one given as ``None``
        is removed, the others stay; with ``messages``, the history is replaced too. Applied at the
        same point as ``push_messages()``, with a loop body's semantics: the reply it applies after is
        not appended, nor are its calls run (the history stands as it was, and the next request asks
        again, with the new params); on a paused run, at once. Returns once they are applied.

        Only a mapping can be sent to a run on Temporal: the function form of
        ``set_messages_params`` is code, and cannot cross the network to the workflow (read the
        current params with ``(await run.state()).params`` if the new ones depend on them).
        ``tools`` cannot be set (a run's tools are code on its workers, fixed by ``start_run``), nor
        can the transport params (``extra_headers``, ``extra_query``, ``timeout``: workflow history
        would keep them; they belong on the workers' client).

        Raises:
            ParamsError: ``params`` is not a mapping, or names ``tools`` or a transport param.
            StateError: A value JSON cannot carry (the params go into workflow history).
            temporalio.client.WorkflowUpdateFailedError: The run refused the params as
                ``ToolRunner`` refuses them (an unknown name, a value that cannot be sent), or a
                history the service would reject, or steering that would lose results of calls
                that ran; its cause says why, and nothing changed.
            RunEndedError: The run ended (also: before the next point where it could be steered).
            CheckpointError: No run has that name.
        """
        if callable(params):
            raise ParamsError(
                "set_params() takes a mapping of the params to change, not a function: code cannot be sent to a run "
                "on Temporal; read the current params with (await run.state()).params, and pass the new ones."
            )
        if not isinstance(params, Mapping):
            raise ParamsError(
                f"set_params() takes a mapping of the params to change, not {type(params).__name__!r}."
            )
        check_settable(params)
        data: dict[str, Any] = {}
        for name, value in params.items():
            if name != "messages":
                data[name] = plain_data(value, f"params[{name!r}]")
            elif isinstance(value, str | bytes) or not isinstance(value, Sequence):
                raise ParamsError(
                    f"set_params() takes messages as a list of messages, not {type(value).__name__!r}."
                )
            else:
                data[name] = _messages(cast("Sequence[object]", value))
        await self._update("set_params", ToolRunnerWorkflow.set_params, ParamsInput(data))

    async def compact_before_next_turn(self, compaction: Mapping[str, Any] | None = None) -> None:
        """Make the next request a compaction request, as a loop body's
        ``runner.compact_before_next_turn()``: once the turn under way is finished, the service
        summarizes the history into a ``compaction`` block, which replaces it. Applied at the same
        point as ``push_messages()``.

        Raises:
            temporalio.client.WorkflowUpdateFailedError: Its ``context_management`` has a
                compaction edit.
            RunEndedError: The run ended (also: before the next point where it could be steered).
            CheckpointError: No run has that name.
        """
        await self._update(
            "compact_before_next_turn",
            ToolRunnerWorkflow.compact_before_next_turn,
            CompactInput(None if compaction is None else dict(compaction)),
        )

    async def close(self) -> None:
        """End the run as ``ToolRunner.close()`` does (the step under way finishes whole); on a run
        that ended, nothing.

        Raises:
            CheckpointError: No run has that name.
        """
        with contextlib.suppress(RunEndedError):  # nothing to end: idempotent, as ToolRunner.close() is
            await self._call("close", lambda: self.workflow.signal(ToolRunnerWorkflow.close))

    async def _update(self, method: str, update: Any, argument: object) -> None:
        # temporalio's overloads of execute_update leave one form's ``args`` untyped, so pyright
        # strict finds the method partially unknown whichever form is called.
        await self._call(
            method,
            lambda: self.workflow.execute_update(update, argument),  # pyright: ignore[reportUnknownMemberType, reportUnknownLambdaType]
        )

    async def _call(self, method: str, call: Callable[[], Awaitable[T]]) -> T:
        """Make one call to the run. What Temporal answers when no run goes on under this name (an
        update or a signal to a closed workflow, anything to a name it does not know, an update the
        workflow refused as its loop had ended) is mapped here, and only here: ``RunEndedError``
        for a run that ended, ``CheckpointError`` for a name no run has."""
        try:
            return await call()
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == RUN_ENDED:
                raise RunEndedError(cause.message) from None
            raise
        except RPCError as error:
            if error.status != RPCStatusCode.NOT_FOUND:
                raise
            how = await self._how_it_ended()
            if how is None:
                raise CheckpointError(
                    f"{method}() found no run named {self.run_id!r}; check the name (the run_id given to start_run), "
                    "or start the run with start_run()."
                ) from None
            if how == "running":
                raise
            raise RunEndedError(
                f"{method}() came after the run {self.run_id!r} ended ({how}); start a new run to go on."
            ) from None

    async def _how_it_ended(self) -> str | None:
        """How the run ended: its end reason, or Temporal's status (``"running"`` if it did not);
        ``None`` if no run has this name."""
        try:
            description = await self.workflow.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                return None
            raise
        status = description.status
        if status is None or status == WorkflowExecutionStatus.RUNNING:
            return "running"
        if status == WorkflowExecutionStatus.COMPLETED:
            return (await self.workflow.result()).end_reason
        return status.name.lower()


def _messages(messages: Sequence[object]) -> list[Any]:
    """Messages as the steering updates carry them: message params, as JSON data."""
    return [message_data(message_param(message, index), index) for index, message in enumerate(messages)]


async def start_run(
    client: Client,
    *,
    run_id: str,
    task_queue: str,
    tools: Iterable[ToolLike | Mapping[str, Any]] = (),
    activity_options: ActivityOptions | None = None,
    approval_timeout: timedelta | None = None,
    id_reuse: Literal["refuse", "after_failure", "allow"] = "refuse",
    continue_as_new_events: int = 10_000,
    output_format: str | type[Any] | None = None,
    output_retries: int | None = None,
    hooks: str | None = None,
    max_calls: Mapping[str, int] | None = None,
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
        continue_as_new_events: The run continues as new (a new segment of its workflow, with a
            window of the latest messages) once a segment's history holds this many events.
        output_format: The type of the final answer, by reference: the name it is registered
            under on the workers (``create_worker(output_types=...)``), or the type itself (sent
            by its ``__name__``, and its schema checked against the workers'). The requests send
            its schema as ``ToolRunner(output_format=...)`` sends it, and the result carries the
            validated answer (``RunResult.output``). See docs/temporal.md.
        output_retries: How many times an answer that does not fit is sent back to the model
            (default 1), as ``ToolRunner``'s; with ``hooks``, a ``check_output`` hook's refusals
            share it.
        hooks: The name of the run's hooks on the workers (``create_worker(hooks={"guarded":
            Hooks(...)})``): they are asked as ``ToolRunner(hooks=...)`` asks them, in the
            ``toolrunner.hook`` activity, and their decisions are recorded in the run.
        max_calls: The most calls each tool may make in the run, as ``ToolRunner(max_calls=...)``.
        **options: Request params (``model``, ``max_tokens``, ``messages``, ...) and the runner
            options ``max_iterations``, ``max_total_tokens``, ``max_cost``, ``on_limit``,
            ``max_concurrency``, ``tool_timeout``, ``cache``, ``compaction_control`` and
            ``tracing`` (its ``content`` and ``agent_name``).

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
        tools=tools,
        activity_options=activity_options,
        approval_timeout=approval_timeout,
        continue_as_new_events=continue_as_new_events,
        output_format=output_format,
        output_retries=output_retries,
        hooks=hooks,
        max_calls=max_calls,
        **options,
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


QUERY_ATTEMPTS = 3
"""How many times a query that timed out is sent (``_query``)."""


async def _query(
    workflow: WorkflowHandle[ToolRunnerWorkflow, RunResult], query: Callable[[ToolRunnerWorkflow], T]
) -> T:
    """``workflow.query(query)``, sent again when it timed out (``DEADLINE_EXCEEDED``): a query only
    reads, and one can time out while no worker has taken the run's task yet (just after a worker
    restarted, on a loaded machine) although the next one is answered at once."""
    for attempt in range(1, QUERY_ATTEMPTS + 1):
        try:
            return await workflow.query(query)
        except RPCError as error:
            if error.status != RPCStatusCode.DEADLINE_EXCEEDED or attempt == QUERY_ATTEMPTS:
                raise
    raise AssertionError("unreachable")

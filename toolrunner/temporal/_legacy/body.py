# FROZEN as of commit 8cff606: toolrunner/temporal/_legacy.py, its imports pointed at the frozen copies.
# Never edit: see ``_legacy/__init__.py``.
"""The workflow's body for runs started by toolrunner 0.1.0, before the run's orchestration was a
core (``workflow.patched("effects-core")`` is false for them): they replay as they ran.

``LegacyRun`` is the workflow as it was, a driver of the pure lifecycle in ``transitions`` that
orders the effects itself: it keeps the run's ``RunState`` and does the I/O the transitions ask
for, each piece of it an activity. One iteration:

1. ``ready_to_send``: stop at a limit (or send one last request that may not call tools);
2. the ``toolrunner.request`` activity sends the request and says which of the reply's calls need
   a decision; ``reply_received`` and ``calls_gated`` take the reply;
3. the calls that may run are journaled (``call_started``) and each runs in a ``toolrunner.tool``
   activity (``call_finished``); calls Temporal gave up on are answered by ``resumed``:
   "interrupted", as after a crash of a ``ToolRunner``;
4. while calls wait for a decision the turn pauses (``turn_paused``) in ``workflow.wait_condition``;
   the decisions come as updates (``call_decided``);
5. ``turn_finished`` appends the reply and the results, and decides whether the loop goes on.

Everything it imports of toolrunner is a frozen copy in this package; it takes its input and the
updates' arguments as the wire carries them (``data``), from ``ToolRunnerWorkflow``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Mapping, Sequence
from datetime import timedelta
from decimal import Decimal
from typing import Any, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from anthropic.types import Message, ToolResultBlockParam
    from anthropic.types.beta import BetaMessage

    from .data import (
        ActivityOptions,
        Answer,
        Approval,
        DecisionInput,
        Denial,
        RequestInput,
        RequestOutput,
        RunInput,
        RunResult,
        ToolInput,
        ToolSpec,
    )
    from .errors import ToolRunnerError
    from .messages import check_history
    from .names import DECISION_ACTIVITY, REQUEST_ACTIVITY, TOOL_ACTIVITY, TOOL_NOT_REGISTERED
    from .plan import CallPlan, not_executed
    from .results import tool_result_block
    from .state import Phase, RunState, read_request_usage, usage_data
    from .transitions import (
        Limits,
        awaiting,
        call_decided,
        call_finished,
        call_started,
        calls_gated,
        closed,
        delivered,
        pending_calls,
        ready_to_send,
        reply_received,
        resumed,
        turn_finished,
        turn_paused,
        turn_resumed,
    )
    from .types import ToolCall, ToolResultMessage

__all__ = ["LegacyRun"]

_MARGIN = timedelta(minutes=1)  # a tool's own timeout answers before its activity's
FAMILIES_IN_ORDER = "toolset-families-in-order"
"""The patch under which a toolset family's members run in order, halting after a failure (as
``ToolRunner`` runs them); runs that started before it ran them as ordinary calls, and still do."""
TIMED_OUT = "No decision on this call to {name!r} came within {timeout}; it did not run."
"""The reason the model reads for a call whose decision did not come within ``approval_timeout``."""


class LegacyRun:
    """A run started before ``effects-core``: each request and each tool call is an activity; the
    state lives here. ``ToolRunnerWorkflow`` hands it its signal, queries and updates."""

    def __init__(self, run: RunInput) -> None:
        self._state = RunState.from_dict(run.state).replace(run_id=workflow.info().workflow_id)
        self._specs = {spec.name: spec for spec in run.tools}
        self._options = ActivityOptions.from_data(run.activities)
        max_cost = run.limits.get("max_cost")
        self._limits = Limits(
            max_iterations=run.limits.get("max_iterations"),
            max_total_tokens=run.limits.get("max_total_tokens"),
            max_cost=None if max_cost is None else Decimal(max_cost),
            on_limit=run.limits.get("on_limit", "stop"),
        )
        self._tool_timeout = run.tool_timeout
        self._cache = run.cache
        self._approval_timeout = (
            None if run.approval_timeout is None else timedelta(seconds=run.approval_timeout)
        )
        self._limiter = asyncio.Semaphore(run.max_concurrency) if run.max_concurrency else None
        self._closing = False
        # What the store holds: the history node of the last request, and what it was sent with.
        self._node: str | None = None
        self._sent = 0  # messages in that node
        self._sent_params: Mapping[str, Any] | None = None
        self._sent_tools: tuple[Any, ...] | None = None
        self._checked = 0  # the history is known to be valid before this index (see check_history)

    async def run(self) -> RunResult:
        """Drive the loop to its end."""
        while True:
            if self._state.phase is Phase.WITH_BODY:
                await self._finish_turn()
            if self._state.phase is Phase.READY:
                self._state = ready_to_send(self._state, self._limits)
            if self._closing:
                self._state = closed(self._state)
            if self._state.phase is Phase.DONE:
                await workflow.wait_condition(workflow.all_handlers_finished)
                return self._result()
            await self._send()
            if self._closing:  # closed while the request was out: keep the reply, run nothing
                self._state = closed(self._state)

    # -- from clients ---------------------------------------------------------------------------

    def close(self) -> None:
        """End the loop as ``ToolRunner.close()`` does: the step under way finishes whole (a
        reply is kept without running its tools; running tools finish and their results are kept;
        calls that wait for a decision never run)."""
        self._closing = True

    def state(self) -> dict[str, Any]:
        """The run's ``RunState`` as ``to_dict()`` gives it (large blocks as stubs)."""
        return self._state.to_dict()

    def pending_approvals(self) -> list[dict[str, Any]]:
        """The calls that wait for a decision, in tool_use order: ``{"id", "name", "input"}``, and
        ``"toolset_name"`` for a toolset member."""
        calls = awaiting(self._state, pending_calls(self._state))
        return [
            {"id": call.id, "name": call.name, "input": call.input}
            | ({} if call.toolset_name is None else {"toolset_name": call.toolset_name})
            for call in calls
        ]

    async def approve(self, approval: Approval) -> None:
        """Approve a call that waits; with ``input`` it runs with that input, checked on a worker
        as the model's would be (a bad one is refused, and nothing changes)."""
        if approval.input is not None:
            await self._decision_activity(approval.id, "approve", approval.input)
        self._decide(approval.id, "approved", approved_input=approval.input)

    def deny(self, denial: Denial) -> None:
        """Deny a call that waits (or has not started): the model reads the reason as its error result."""
        self._decide(denial.id, "denied", result=tool_result_block(denial.id, denial.reason, is_error=True))

    async def answer(self, answer: Answer) -> None:
        """Answer a call that waits (or has not started) with a result computed elsewhere; a worker
        converts it as it converts what tools return."""
        block = await self._decision_activity(answer.id, "answer", answer.result, answer.is_error)
        self._decide(answer.id, "answered", result=cast(ToolResultBlockParam, block))

    def check_approve(self, approval: Approval) -> None:
        self._check_decision(approval.id, "approved")

    def check_deny(self, denial: Denial) -> None:
        if not isinstance(denial.reason, str) or not denial.reason.strip():
            raise ApplicationError(
                f"deny({denial.id!r}, ...) needs a reason the model can read, not {denial.reason!r}.",
                type="ApprovalError",
            )
        self._check_decision(denial.id, "denied")

    def check_answer(self, answer: Answer) -> None:
        self._check_decision(answer.id, "answered")

    def _check_decision(self, tool_use_id: str, decision: Any) -> None:
        """Refuse (before anything is recorded) a decision the lifecycle would refuse."""
        placeholder = tool_result_block(tool_use_id, "", is_error=True)
        try:
            call_decided(self._state, tool_use_id, decision, result=placeholder)
        except ToolRunnerError as error:
            raise ApplicationError(str(error), type=type(error).__name__) from None

    def _decide(self, tool_use_id: str, decision: Any, **details: Any) -> None:
        try:
            self._state = call_decided(self._state, tool_use_id, decision, **details)
        except ToolRunnerError as error:  # decided meanwhile (while a worker checked the input)
            raise ApplicationError(str(error), type=type(error).__name__) from None

    async def _decision_activity(
        self, tool_use_id: str, kind: str, value: Any, is_error: bool = False
    ) -> dict[str, Any]:
        """Check an approved input, or convert an answer, on a worker: the tools and the result
        adapter are code. What the worker refuses is refused to the client, and nothing changes."""
        call = next(
            call for call in pending_calls(self._state) if call.id == tool_use_id
        )  # the validator checked
        try:
            decided: dict[str, Any] = await workflow.execute_activity(
                DECISION_ACTIVITY,
                DecisionInput(
                    workflow.info().workflow_id, call.id, call.name, kind, value, is_error, call.toolset_name
                ),
                result_type=dict,
                start_to_close_timeout=self._options.tool_start_to_close,
                retry_policy=self._options.tool_retry,
                task_queue=self._options.task_queue,
                summary=f"{kind} {call.name}",
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError):
                raise ApplicationError(cause.message, type=cause.type) from None
            raise
        return decided

    # -- requests -------------------------------------------------------------------------------

    async def _send(self) -> None:
        state = self._state
        try:
            check_history(state.messages, self._checked)
        except ToolRunnerError as error:
            raise ApplicationError(str(error), type=type(error).__name__, non_retryable=True) from None
        self._checked = max(len(state.messages) - 1, 0)
        params, tools = dict(state.params), state.tools
        base, sent = self._node, self._sent
        if len(state.messages) < sent:  # the history was replaced: start a new chain
            base, sent = None, 0
        output: RequestOutput = await workflow.execute_activity(
            REQUEST_ACTIVITY,
            RequestInput(
                run_id=workflow.info().workflow_id,
                base=base,
                params=params if base is None or params != self._sent_params else None,
                tools=list(tools) if base is None or tools != self._sent_tools else None,
                messages=list(state.messages[sent:]),
                final_answer=state.final_answer,
                cache=self._cache,
            ),
            result_type=RequestOutput,
            start_to_close_timeout=self._options.request_start_to_close,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=self._options.request_retry,
            task_queue=self._options.task_queue,
            summary=str(params.get("model", "")),
        )
        self._node, self._sent = output.history, len(state.messages)
        self._sent_params, self._sent_tools = params, tools
        reply = (BetaMessage if output.beta else Message).model_validate(output.reply)
        state = reply_received(self._state, reply, read_request_usage(output.usage))
        calls = {call.id: call for call in pending_calls(state)}
        self._state = delivered(
            calls_gated(
                state,
                [calls[tool_use_id] for tool_use_id in output.gated],
                [(calls[tool_use_id], reason) for tool_use_id, reason in output.denied.items()],
            )
        )

    # -- tools ----------------------------------------------------------------------------------

    async def _finish_turn(self) -> None:
        """Run the turn's calls, waiting for decisions as long as calls need them; then end the turn."""
        calls = pending_calls(self._state)
        await self._run_ready(calls)
        while awaiting(self._state, calls):
            self._state = turn_paused(self._state)
            decided = await self._wait_for_decisions(calls)
            if self._closing:
                return  # the waiting calls never run; ``closed`` ends the paused loop
            if not decided:
                self._deny_undecided(calls)
            self._state = turn_resumed(self._state)
            await self._run_ready(calls)
        results: ToolResultMessage | None = None
        if calls:
            results = {"role": "user", "content": [_copy(self._state.result_of(call)) for call in calls]}
        self._state = turn_finished(self._state, results)

    async def _wait_for_decisions(self, calls: Sequence[ToolCall]) -> bool:
        """Until no call waits (or the run is closed): False if ``approval_timeout`` passed first."""
        try:
            await workflow.wait_condition(
                lambda: not awaiting(self._state, calls) or self._closing, timeout=self._approval_timeout
            )
        except TimeoutError:
            return False
        return True

    def _deny_undecided(self, calls: Sequence[ToolCall]) -> None:
        assert self._approval_timeout is not None
        for call in awaiting(self._state, calls):
            reason = TIMED_OUT.format(name=call.name, timeout=duration(self._approval_timeout))
            self._state = call_decided(
                self._state, call.id, "denied", result=tool_result_block(call.id, reason, is_error=True)
            )

    async def _run_ready(self, calls: Sequence[ToolCall]) -> None:
        """Run the calls that may run (no decision needed, or approved), each in its own activity,
        in the order ``CallPlan`` gives, as ``ToolRunner`` does: consecutive calls to ordinary tools
        at once, a ``sequential`` tool's call alone, a toolset family's members in order until one
        fails (the family's later calls are answered "Not executed", without running)."""
        waiting = awaiting(self._state, calls)
        todo = [call for call in calls if call not in waiting and self._state.result_of(call) is None]
        # Only where the order changed (toolset members among several calls) is the patch asked
        # for; a run started before it runs them as it did then.
        if (
            len(todo) > 1
            and any(call.toolset_name is not None for call in todo)
            and not workflow.patched(FAMILIES_IN_ORDER)
        ):
            for batch in _old_batches(todo, self._specs):
                await asyncio.gather(*(self._call(call) for call in batch))
            self._state = resumed(self._state, may_run_again=lambda call: False)
            return
        plan = CallPlan(todo, self._runs_alone)
        while (step := plan.next_step()) is not None:
            if step.skip:
                call = step.calls[0]
                self._state = call_finished(call_started(self._state, call), call, not_executed(call))
                continue
            await asyncio.gather(*(self._call(call) for call in step.calls))
            # Calls whose activity Temporal gave up on are still STARTED: answer them "interrupted"
            # (a failure, so a lost toolset member halts its family too).
            self._state = resumed(self._state, may_run_again=lambda call: False)
            for call in step.calls:
                block = self._state.result_of(call)
                if block is not None:
                    plan.ran(call, block)

    def _runs_alone(self, call: ToolCall) -> bool:
        spec = self._specs.get(call.toolset_name or call.name)
        return spec is not None and spec.sequential

    async def _call(self, call: ToolCall) -> None:
        if self._limiter is None:
            await self._run_call(call)
            return
        async with self._limiter:
            await self._run_call(call)

    async def _run_call(self, call: ToolCall) -> None:
        spec = self._specs.get(call.toolset_name or call.name)
        raw = [tool["name"] for tool in self._state.tools if isinstance(tool, Mapping)]
        timeout = self._tool_timeout if spec is None or spec.timeout is None else spec.timeout
        options = self._options
        record = self._state.calls.get(call.id)
        approved_input = None if record is None else record.approved_input
        self._state = call_started(self._state, call)
        try:
            block: dict[str, Any] = await workflow.execute_activity(
                TOOL_ACTIVITY,
                ToolInput(
                    run_id=workflow.info().workflow_id,
                    id=call.id,
                    name=call.name,
                    input=call.input,
                    toolset_name=call.toolset_name,
                    timeout=self._tool_timeout,
                    available=None if spec is not None else sorted(self._specs),
                    unrunnable=[] if spec is not None else cast("list[str]", raw),
                    approved_input=approved_input,
                ),
                result_type=dict,
                start_to_close_timeout=options.tool_start_to_close
                if timeout is None
                else max(options.tool_start_to_close, timedelta(seconds=timeout) + _MARGIN),
                heartbeat_timeout=options.heartbeat_timeout,
                # A call that may have acted runs again only if its tool says that does no harm.
                retry_policy=options.tool_retry
                if spec is None or spec.idempotent
                else RetryPolicy(maximum_attempts=1),
                task_queue=options.task_queue,
                summary=call.name,
            )
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == TOOL_NOT_REGISTERED:
                raise ApplicationError(cause.message, type=TOOL_NOT_REGISTERED, non_retryable=True) from None
            workflow.logger.warning("Tool call %r (%s) was lost: %s", call.id, call.name, cause or error)
            return  # still STARTED: ``resumed`` answers it
        self._state = call_finished(self._state, call, cast(ToolResultBlockParam, block))

    # -- the end --------------------------------------------------------------------------------

    def _result(self) -> RunResult:
        state = self._state
        assert state.end_reason is not None
        reply = state.reply
        return RunResult(
            run_id=workflow.info().workflow_id,
            end_reason=state.end_reason,
            reply=None
            if reply is None
            else reply.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False),
            beta=isinstance(reply, BetaMessage),
            history=self._node,
            appended=list(state.messages[self._sent :]),
            requests=state.requests_sent,
            usage=usage_data(state.total),
            cost=None if state.cost is None else str(state.cost),
        )


def duration(span: timedelta) -> str:
    """A span as a person says it: "3 days", "8 hours", "90 seconds"."""
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


def _old_batches(calls: Sequence[ToolCall], specs: Mapping[str, ToolSpec]) -> Iterator[list[ToolCall]]:
    """How runs started before ``FAMILIES_IN_ORDER`` ran a reply's calls: as ``CallPlan`` does, but
    with toolset members looked up by their own name (so run at once, never halted)."""
    batch: list[ToolCall] = []
    for call in calls:
        spec = specs.get(call.name)
        if spec is not None and spec.sequential:
            if batch:
                yield batch
            yield [call]
            batch = []
        else:
            batch.append(call)
    if batch:
        yield batch


def _copy(block: ToolResultBlockParam | None) -> ToolResultBlockParam:
    assert block is not None
    return ToolResultBlockParam(**block)

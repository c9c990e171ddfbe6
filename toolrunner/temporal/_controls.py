"""What clients ask of a run on Temporal, the workflow's side (``ClientControls``, a part of
``WorkflowDriver``, as ``LoopBody`` is of a ``ToolRunner``): steering, decisions, ``close``, the
queries, and the pause that waits for them. Everything here changes the run through its core
(``RunCore``): steering with ``push_messages`` and ``apply_params`` at the loop body's point,
decisions with ``decide``, checked first by the lifecycle's own rules so that a refused update
changes nothing.

Steering (``push_messages``, ``set_messages``, ``set_params``) has ``ToolRunner``'s loop-body
semantics: it is queued, and applied at the next point where a loop body could steer, once the
next reply is handed over (that reply is then not appended by the run, and its calls do not run:
the history is the one steered), or at once while the run is paused for decisions. The update returns once it is
applied, or fails if the run ended first or the history it makes would be refused by the service.

The calls that wait are the tree's (``_core.nested``): the run's own, then those inside its
sub-agents' paused sub-runs, each with its path; a decision takes the call's id, wherever in the
tree it is, as a ``ToolRunner``'s does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from datetime import timedelta
from typing import Any, NoReturn, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from anthropic.types import ToolResultBlockParam

    from .._core.effects import Decisions
    from .._core.errors import ParamsError, ToolRunnerError
    from .._core.ids import check_by, check_reason
    from .._core.messages import message_param
    from .._core.nested import decided_in_tree
    from .._core.results import tool_result_block
    from .._core.run import RunCore
    from .._core.state import CallStatus, Phase, RunState, decided_at
    from .._core.transitions import pending_calls, record_of
    from .._core.types import Decision, ToolCall
    from .._runner.params import TRANSPORT, check_params
    from .._tools.toolsets import RunnableTool
    from ._activity_options import ActivityOptions
    from ._data import Answer, Approval, DecisionInput, Denial
    from ._event_data import call_data
    from ._forwarding import EventForwarder
    from ._names import DECISION_ACTIVITY, RUN_ENDED

__all__ = ["ClientControls", "Steering", "check_settable", "spoken_duration"]


@dataclasses.dataclass(eq=False)
class Steering:
    """A steering update waiting for the point where the loop body could steer."""

    method: str
    messages: list[Any]
    compaction: dict[str, Any] | None = None
    """``compact_before_next_turn``'s config."""
    params: dict[str, Any] | None = None
    """``set_params``'s changes."""
    done: bool = False
    error: ApplicationError | None = None


class ClientControls:
    """The clients' side of a ``WorkflowDriver`` (see the module docstring), whose signal, queries
    and updates delegate here.

    Args:
        core: The run's core.
        run_id: The run's id.
        options: How the run's activities are started (a decision's activity).
        events: Where the events of a decision go (the workers' ``on_event``).
        approval_timeout: How long a pause waits for decisions at most (``None``: for ever).
    """

    def __init__(
        self,
        core: RunCore[RunnableTool],
        run_id: str,
        options: ActivityOptions,
        events: EventForwarder,
        approval_timeout: timedelta | None,
    ) -> None:
        self._core = core
        self._approval_timeout = approval_timeout
        self._run_id = run_id
        self._options = options
        self._events = events
        self._steering: list[Steering] = []
        self._paused = False  # the run waits for decisions

    @property
    def steering(self) -> bool:
        """Whether steering is queued (for the next point where the loop body could steer)."""
        return bool(self._steering)

    # -- steering ---------------------------------------------------------------------------------

    def check_steering(self, method: str, messages: object) -> None:
        """Refuse (before anything is recorded) steering that could never apply."""
        self._check_going_on(method)
        if method == "compact_before_next_turn":
            try:
                self._core.check_compaction(messages)
            except ToolRunnerError as error:
                _refuse(str(error), type(error).__name__)
            return
        if method == "set_params":
            try:
                self._new_params(messages)
            except ToolRunnerError as error:
                _refuse(str(error), type(error).__name__)
            return
        if not isinstance(messages, list) or not messages:
            _refuse(f"{method}() takes a non-empty list of messages, not {messages!r}.", "ParamsError")
        try:
            for index, message in enumerate(cast("list[Any]", messages)):
                message_param(message, index)
        except ToolRunnerError as error:
            _refuse(str(error), type(error).__name__)

    async def steer(
        self,
        method: str,
        messages: list[Any],
        compaction: dict[str, Any] | None = None,
        *,
        params: dict[str, Any] | None = None,
    ) -> None:
        """Queue steering for the next point where the loop body could steer (after a reply is
        handed over), or apply it at once on a paused run; return once it is applied."""
        request = Steering(method, messages, compaction, params)
        self._steering.append(request)
        if self._paused:
            self.apply_steering()
        await workflow.wait_condition(lambda: request.done)
        if request.error is not None:
            raise request.error

    def apply_steering(self) -> None:
        """The loop body's point: apply the queued steering, in order."""
        queued, self._steering = self._steering, []
        for request in queued:
            try:
                self._steer_now(request)
            except ToolRunnerError as error:
                request.error = ApplicationError(str(error), type=type(error).__name__, non_retryable=True)
            request.done = True

    def _steer_now(self, request: Steering) -> None:
        core = self._core
        if request.method == "compact_before_next_turn":
            core.compact_next(request.compaction)
            return
        core.check_history_may_change(request.method)
        if request.method == "set_params":
            self._set_params(cast("dict[str, Any]", request.params))
            return
        params = [message_param(message, index) for index, message in enumerate(request.messages)]
        if request.method == "push_messages":
            core.push_messages(params)  # checks the history it makes, as a ToolRunner's push_messages does
        else:
            core.check_steered(params)
            core.apply_params({"messages": tuple(params)}, steer=True)

    def _set_params(self, changes: dict[str, Any]) -> None:
        """``set_params``: what a loop body's ``set_messages_params()`` does with the current params
        changed. The body steered, so the reply handed over is not appended; the history stands as it
        is unless ``messages`` replace it."""
        core = self._core
        params = self._new_params(changes)
        given = changes.get("messages")
        if given is None:
            core.apply_params({"params": params}, steer=False)
            core.push_messages(())  # steered: the history stands, without the reply the body held
            return
        history = [message_param(message, index) for index, message in enumerate(cast("list[Any]", given))]
        core.check_steered(history)
        core.apply_params({"messages": tuple(history), "params": params}, steer=True)

    def _new_params(self, changes: object) -> dict[str, Any]:
        """The run's params with ``changes`` made (``None`` removes a param), checked as ``ToolRunner``
        checks the params a loop body sets (``check_params``); without ``messages`` and ``tools``.

        Raises:
            ParamsError: The changes, or the params they make, could not be sent.
        """
        if not isinstance(changes, dict):
            raise ParamsError(f"set_params() takes a mapping of the params to change, not {changes!r}.")
        changes = cast("dict[str, Any]", changes)
        check_settable(changes)
        params = {**self._core.state.params, **changes}
        for name, value in changes.items():
            if value is None:
                params.pop(name, None)
        messages = params.pop("messages", [])  # only a client's new history: the run keeps its own apart
        if not isinstance(messages, list):
            raise ParamsError(f"set_params() takes messages as a list of messages, not {messages!r}.")
        checked = check_params({**params, "messages": messages})
        del checked["messages"]
        return checked

    def drop_steering(self) -> None:
        """The run ended: steering still queued can never apply."""
        queued, self._steering = self._steering, []
        for request in queued:
            request.error = ApplicationError(
                f"{request.method}() could not apply: the run {self._run_id!r} ended "
                f"({self._core.state.end_reason}) before the next point where it could be steered; start a new "
                "run to go on.",
                type=RUN_ENDED,
                non_retryable=True,
            )
            request.done = True

    def _check_going_on(self, method: str) -> None:
        """Refuse what would need the loop to go on once it ended (the workflow is finishing)."""
        state = self._core.state
        if state.phase is Phase.DONE:
            _refuse(
                f"{method}() came after the run {self._run_id!r} ended ({state.end_reason}); start a new run to "
                "go on.",
                RUN_ENDED,
            )

    async def pause(self) -> Decisions:
        """``AwaitDecisions``: the run is paused: clients decide, steer or close it (steering queued
        while the turn ran applies now). Wait, holding no worker, until no call waits (decided, or
        steered away) or the run is closed: ``PAUSED``, and the driver iterates again, as a
        ``ToolRunner``'s caller would; or until ``approval_timeout`` passes: ``TIMED_OUT``, and the
        core denies the calls still waiting."""
        core = self._core
        self._paused = True
        try:
            self.apply_steering()
            await workflow.wait_condition(
                lambda: core.closing or not core.waiting_in_tree(), timeout=self._approval_timeout
            )
        except TimeoutError:
            return Decisions.TIMED_OUT
        finally:
            self._paused = False
        return Decisions.PAUSED

    # -- decisions, close, queries ------------------------------------------------------------------

    def check_approve(self, approval: Approval) -> None:
        _check_by(approval.by)
        self._check_decision(approval.id, "approved")

    def check_deny(self, denial: Denial) -> None:
        try:
            check_reason(denial.id, denial.reason)
        except ToolRunnerError as error:
            _refuse(str(error), "ApprovalError")
        _check_by(denial.by)
        self._check_decision(denial.id, "denied")

    def check_answer(self, answer: Answer) -> None:
        _check_by(answer.by)
        self._check_decision(answer.id, "answered")

    def _check_decision(self, tool_use_id: str, decision: Decision) -> None:
        """Refuse (before anything is recorded) a decision the lifecycle would refuse (on a call
        anywhere in the tree, as ``RunCore.decide`` takes it)."""
        self._check_going_on(_DECIDING[decision])
        placeholder = tool_result_block(tool_use_id, "", is_error=True)
        try:
            decided_in_tree(self._core.state, tool_use_id, decision, result=placeholder)
        except ToolRunnerError as error:
            raise ApplicationError(str(error), type=type(error).__name__) from None

    async def approve(self, approval: Approval) -> None:
        if approval.input is not None:
            await self._decision_activity(approval.id, "approve", approval.input)
        await self._decide(approval.id, "approved", approved_input=approval.input, by=approval.by)

    async def deny(self, denial: Denial) -> None:
        block = tool_result_block(denial.id, denial.reason, is_error=True)
        await self._decide(denial.id, "denied", result=block, by=denial.by)

    async def answer(self, answer: Answer) -> None:
        block = await self._decision_activity(answer.id, "answer", answer.result, answer.is_error)
        await self._decide(answer.id, "answered", result=cast(ToolResultBlockParam, block), by=answer.by)

    async def _decide(self, tool_use_id: str, decision: Decision, **details: Any) -> None:
        try:
            self._core.decide(tool_use_id, decision, at=decided_at(workflow.now()), **details)
        except ToolRunnerError as error:  # decided meanwhile (while a worker checked the input)
            raise ApplicationError(str(error), type=type(error).__name__) from None
        self._events.sort(gated=False)
        await self._events.forward()

    async def _decision_activity(
        self, tool_use_id: str, kind: str, value: Any, is_error: bool = False
    ) -> dict[str, Any]:
        """Check an approved input, or convert an answer, on a worker: the tools and the result
        adapter are code. What the worker refuses is refused to the client, and nothing changes."""
        call = self._find(tool_use_id)
        try:
            decided: dict[str, Any] = await workflow.execute_activity(
                DECISION_ACTIVITY,
                DecisionInput(
                    self._run_id,
                    call.id,
                    call.name,
                    kind,
                    value,
                    is_error,
                    call.toolset_name,
                    path=list(call.path) if call.path else None,
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

    def _find(self, tool_use_id: str) -> ToolCall:
        """The call a decision is on: of the run's turn, or one inside a sub-run (with its path,
        whose sub-agent's tool checks an approved input)."""
        call = self._core.find(tool_use_id) or _nested(self._core.state, tool_use_id)
        assert call is not None  # the validator checked
        return call

    def close(self) -> None:
        """``ToolRunner.close()``: while a step is under way it finishes whole, then the loop ends."""
        self._core.close()

    def state(self) -> dict[str, Any]:
        return self._core.state.to_dict()

    def pending_approvals(self) -> list[dict[str, Any]]:
        """The calls of the tree that wait, each with its path (``call_data``)."""
        return [call_data(call) for call in self._core.waiting_in_tree()]


_DECIDING: dict[Decision, str] = {"approved": "approve", "denied": "deny", "answered": "answer"}


def _nested(state: RunState, tool_use_id: str, path: tuple[str, ...] = ()) -> ToolCall | None:
    """The call ``tool_use_id`` of the current turn of a sub-run of ``state``'s tree, with its path."""
    for call in pending_calls(state):
        if path and call.id == tool_use_id:
            return dataclasses.replace(call, path=path)
        record = record_of(state, call)
        if record is not None and record.status is CallStatus.STARTED and record.sub_run is not None:
            below = (*path, call.id, record.sub_run.agent)
            if (found := _nested(record.sub_run.state, tool_use_id, below)) is not None:
                return found
    return None


def check_settable(changes: Mapping[str, Any]) -> None:
    """Refuse the params ``set_params`` can never set on a run on Temporal (the client checks first,
    the workflow again): ``tools`` (code on the workers) and the transport params (workflow history
    would keep them), and the removal of a param every request needs.

    Raises:
        ParamsError: Such a param is among ``changes``.
    """
    if "tools" in changes:
        raise ParamsError(
            "set_params() cannot set 'tools': a run's tools are code on its workers, fixed when it starts "
            "(start_run(tools=...)); steer which ones the model uses with 'tool_choice', or push a message with "
            "tool_removal blocks to take one away."
        )
    for name in TRANSPORT:
        if name in changes:
            raise ParamsError(
                f"set_params() cannot set {name!r}: it would be written into the run's workflow history (headers "
                "may hold secrets); set it on the workers' client instead, for example "
                "anthropic.AsyncAnthropic(default_headers={...}, timeout=...) given to create_worker()."
            )
    for name in ("model", "max_tokens", "messages"):
        if name in changes and changes[name] is None:
            raise ParamsError(f"set_params() cannot remove {name!r}; give it a new value, or leave it out.")


def _refuse(message: str, kind: str) -> NoReturn:
    raise ApplicationError(message, type=kind, non_retryable=True)


def _check_by(by: object) -> None:
    """Who decided, by the rule every way in keeps (``_core.ids.check_by``); the client checks it
    before it sends, and this, for a client that is not ours, before anything is recorded."""
    try:
        check_by(by)
    except ToolRunnerError as error:
        _refuse(str(error), "ApprovalError")


def spoken_duration(span: timedelta) -> str:
    """A span as a person says it, for the reason the model reads: "3 days", "8 hours", "90 seconds"."""
    seconds = int(span.total_seconds())
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"

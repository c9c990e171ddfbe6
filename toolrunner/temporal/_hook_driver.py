"""Hooks on Temporal, the workflow's side (``RunHooks``, a part of its driver): the performers of
the core's hook effects, each the ``toolrunner.hook`` activity on a worker that has the run's hooks
(``_hook_activity``), whose answer Temporal records, so that a replay decides as the run did.

What a hook decided is the core's to journal, as in a ``ToolRunner`` (``_core.hooks``): the
workflow's state holds it, and continue-as-new carries it. Which hooks a run's name stands for is
asked once (``start``), and the answer goes with the run's input from then on.
"""

from __future__ import annotations

import dataclasses
from typing import Any, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from anthropic.types.beta import BetaMessage

    from .._core.effects import AfterToolCall, BeforeRequest, BeforeToolCall, CheckOutput
    from .._core.hook_types import Deny, RunWith, ToolCallInfo
    from .._core.results import ToolResultContent
    from .._core.run import RunCore
    from .._tools.toolsets import RunnableTool
    from ._activity_options import ActivityOptions
    from ._data import RunInput
    from ._event_data import call_data
    from ._hook_data import HookInput, plan_of
    from ._names import HOOK_ACTIVITY, HOOKS_NOT_REGISTERED
    from ._output import RemoteOutput
    from ._requests import RunRequests

__all__ = ["RunHooks"]


class RunHooks:
    """The performers of ``BeforeToolCall``, ``AfterToolCall``, ``BeforeRequest`` and
    ``CheckOutput`` on Temporal (see the module docstring).

    Args:
        core: The run's core, whose ``hooks`` this sets (``start``).
        run: The segment's input.
        run_id: The run's id.
        options: How the activities are started (a hook's: as a tool call's).
        requests: The run's requests, whose history nodes a ``before_request`` hook reads.
        output: The run's output type, if it has one (``check_output`` sees the answer parsed).
    """

    def __init__(
        self,
        core: RunCore[RunnableTool],
        run: RunInput,
        run_id: str,
        options: ActivityOptions,
        requests: RunRequests,
        output: RemoteOutput | None,
    ) -> None:
        self._core = core
        self.data = run.hooks
        self._run_id = run_id
        self._options = options
        self._requests = requests
        self._output = output
        if run.hooks is not None and run.hooks["plan"] is not None:
            core.hooks = plan_of(run.hooks)

    async def start(self) -> None:
        """Learn which hooks the run's name stands for, once (the run's first segment)."""
        data = self.data
        if data is None or data["plan"] is not None:
            return
        try:
            found = await self._ask(HookInput(run_id=self._run_id, hooks=data["name"], kind="plan"))
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == HOOKS_NOT_REGISTERED:
                raise ApplicationError(cause.message, type=HOOKS_NOT_REGISTERED, non_retryable=True) from None
            raise
        self.data = {**data, "plan": found["plan"]}
        self._core.hooks = plan_of(self.data)

    def carried(self, run: RunInput) -> RunInput:
        """``run`` with the hooks as this segment knows them, for the next segment."""
        return dataclasses.replace(run, hooks=self.data)

    # -- the effects ------------------------------------------------------------------------------

    async def before_tool_call(self, effect: BeforeToolCall) -> Deny | RunWith | None:
        answer = await self._about_call("before_tool_call", effect.info)
        if answer is None:
            return None
        if "deny" in answer:
            return Deny(answer["deny"])
        return RunWith(answer["input"])

    async def after_tool_call(self, effect: AfterToolCall) -> ToolResultContent | None:
        answer = await self._about_call("after_tool_call", effect.info, block=dict(effect.block))
        return cast("ToolResultContent | None", answer)

    async def _about_call(self, kind: str, info: ToolCallInfo, **fields: Any) -> Any:
        """A tool call hook's answer on the call ``info`` describes."""
        return await self._answer(
            kind,
            call=call_data(info.call),
            input=info.input,
            approved=info.approved,
            approved_by=info.approved_by,
            summary=f"{kind} {info.name}",
            **fields,
        )

    async def before_request(self, effect: BeforeRequest) -> str | None:
        info = effect.info
        base, sent = self._requests.delta(self._core.state)
        answer: str | None = await self._answer(
            "before_request",
            base=base,
            messages=list(info.messages[sent:]),
            params=dict(info.params),
            tools=list(info.tools),
            requests_sent=info.requests_sent,
            summary="before_request",
        )
        return answer

    async def check_output(self, effect: CheckOutput) -> str | None:
        reply = effect.reply
        try:
            answer: str | None = await self._answer(
                "check_output",
                reply=reply.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False),
                beta=isinstance(reply, BetaMessage),
                output=None if self._output is None else self._output.data(),
                summary="check_output",
            )
        except _HookFailed as error:  # as a ToolRunner's step stops with it: the run fails
            raise ApplicationError(
                f"the check_output hook raised {error.kind}: {error}", type=error.kind, non_retryable=True
            ) from None
        return answer

    async def _answer(self, kind: str, *, summary: str, **fields: Any) -> Any:
        """The hook's answer; a hook that failed on its worker raises its error here, as a
        ``ToolRunner``'s hook raises it into the core (which fails closed)."""
        data = self.data
        assert data is not None
        try:
            found = await self._ask(
                HookInput(run_id=self._run_id, hooks=data["name"], kind=kind, **fields), summary=summary
            )
        except ActivityError as error:  # no worker that took it had the hooks: say so, not "task failed"
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type == HOOKS_NOT_REGISTERED:
                raise _failure(HOOKS_NOT_REGISTERED, cause.message) from None
            raise
        if "error" in found:
            raise _failure(found["type"], found["error"])
        return found["answer"]

    async def _ask(self, input: HookInput, *, summary: str = "hooks") -> dict[str, Any]:
        options = self._options
        found: dict[str, Any] = await workflow.execute_activity(
            HOOK_ACTIVITY,
            input,
            result_type=dict,
            start_to_close_timeout=options.tool_start_to_close,
            heartbeat_timeout=options.heartbeat_timeout,
            retry_policy=options.tool_retry,
            task_queue=options.task_queue,
            summary=summary,
        )
        return found


class _HookFailed(Exception):
    """A hook raised on its worker; its subclasses take the name of its exception's type."""

    kind = "Exception"


_FAILURES: dict[str, type[_HookFailed]] = {}


def _failure(kind: str, message: str) -> _HookFailed:
    """The error a hook raised on its worker, as an exception of a type with its type's name (the
    reason the model reads names it, as a ``ToolRunner``'s does)."""
    made = _FAILURES.get(kind)
    if made is None:
        made = _FAILURES[kind] = type(kind, (_HookFailed,), {"kind": kind})
    return made(message)

"""Hooks that can refuse or change a tool call, and per-tool call limits (``HooksCore``), with no
I/O: which calls a limit stops, what a ``before_tool_call`` hook decided (run, deny, run with
another input), what an ``after_tool_call`` hook put in place of a result, all journaled in the
call's record (``CallRecord.hook``, ``hook_input``) as a decision on approval is.

The order for one call, after the turn's gates and approvals (``_core.decisions``)::

    gate -> approve= / a person -> max_calls -> before_tool_call -> run -> after_tool_call

The hooks themselves are the driver's code (``_runner.hooks``): the core yields ``BeforeToolCall``
and ``AfterToolCall`` effects, and takes the outcome. A call whose record holds a hook's decision
(``hook`` is set) is never asked about again: not after a cancellation, nor after a crash and a
resume (an idempotent tool's call then runs again with the input the hook gave).

A link of ``RunCore``'s chain (``_core.base``); with no hooks and no limits (``hooks is None``)
nothing here runs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from anthropic.types import ToolResultBlockParam

from .base import ToolT
from .decisions import DecisionsCore
from .effects import AfterToolCall, BeforeRequest, BeforeToolCall, CheckOutput, Program
from .errors import OutputValidationError, RequestRefusedError, describe
from .events import HookDecided
from .hook_types import LIMITED, Deny, RequestInfo, RunWith, ToolCallInfo
from .output import sent_back
from .plan import log_handled
from .reasons import failed_reason
from .results import ToolResultContent, tool_result_block
from .state import CallRecord, CallStatus, OutputRecord, Phase, RunState
from .transitions import call_started, record_of
from .types import HookVerdict, ToolCall

__all__ = ["CHECK_INTRO", "CHECK_OUTRO", "HooksCore", "call_hooked"]

CHECK_INTRO = "Your answer was not accepted:"
CHECK_OUTRO = "Answer again."
"""The user message that sends an answer ``check_output`` refused back to the model, around its reason."""


def call_hooked(
    state: RunState,
    call: ToolCall,
    verdict: HookVerdict,
    *,
    input: object = None,
    result: ToolResultBlockParam | None = None,
) -> RunState:
    """The hooks decided on a call that has not started: it starts (``"run"``, ``"rewritten"``
    with ``input``), or it is answered with ``result`` and never runs (``"denied"``,
    ``"limited"``). A call that starts counts toward its tool's limit (``RunState.call_counts``)."""
    record = record_of(state, call)
    base = CallRecord(call, CallStatus.STARTED) if record is None else record
    if verdict in ("denied", "limited"):
        assert result is not None
        new = _hooked(base, CallStatus.FINISHED, result, verdict, None)
        return state.replace(calls={**state.calls, call.id: new})
    new = _hooked(base, CallStatus.STARTED, None, verdict, input)
    counts = {**state.call_counts, call.name: state.call_counts.get(call.name, 0) + 1}
    return state.replace(calls={**state.calls, call.id: new}, call_counts=counts)


def _hooked(
    record: CallRecord,
    status: CallStatus,
    result: ToolResultBlockParam | None,
    verdict: HookVerdict,
    input: object,
) -> CallRecord:
    """``record`` with its status and result, and the hooks' verdict (and input) on it; only runs
    with hooks come here, so ``dataclasses.replace``'s generic work is no cost."""
    return dataclasses.replace(record, status=status, result=result, hook=verdict, hook_input=input)


class HooksCore(DecisionsCore[ToolT]):
    """Limits and tool call hooks (see the module docstring)."""

    def _start_hooked(self, call: ToolCall, previous: CallRecord | None) -> Program[bool]:
        """Start ``call`` through the run's limits and its ``before_tool_call`` hook: ``True`` if
        it starts (journaled as started), ``False`` if it was answered without running (over its
        limit, or denied: journaled and saved). A call the hooks decided before starts as decided."""
        plan = self.hooks
        assert plan is not None
        if (
            previous is not None and previous.hook is not None
        ):  # decided (and counted) already: never asked again
            self.make_current(call_started(self.state, call))  # the record keeps the decision
            return True
        limit = plan.max_calls.get(call.name)
        if limit is not None and self.state.call_counts.get(call.name, 0) >= limit:
            reason = LIMITED.format(name=call.name, limit=limit)
            yield from self._answer_hooked(call, "limited", reason)
            return False
        verdict: HookVerdict = "run"
        given: object = None
        if plan.before_tool_call:
            info = self.call_info(call)
            try:
                answer = yield BeforeToolCall(info)
            except Exception as error:  # fail closed, as a gate or approve= that raises
                log_handled(
                    error, "The before_tool_call hook raised for tool_use %r: %s", call.id, describe(error)
                )
                answer = Deny(failed_reason(call, "the before_tool_call hook", error))
            if isinstance(answer, Deny):
                yield from self._answer_hooked(call, "denied", answer.reason)
                return False
            if isinstance(answer, RunWith):
                verdict, given = "rewritten", answer.input
            if limit is not None and self.state.call_counts.get(call.name, 0) >= limit:
                # calls of the tool that ran at once took the last places while the hook was asked
                yield from self._answer_hooked(call, "limited", LIMITED.format(name=call.name, limit=limit))
                return False
            if self.listening:
                self.emit(HookDecided(hook="before_tool_call", call=call, decision=verdict, input=given))
        self.make_current(call_hooked(self.state, call, verdict, input=given))
        return True

    def _limit_in_order(self, calls: Sequence[ToolCall]) -> Program[None]:
        """Give a limited tool's places to the turn's calls in the model's order, before any runs:
        those past the limit are answered now. Calls run at once start in whatever order their tasks
        are scheduled (trio's varies from run to run), so the start of each could not say which of
        them the limit stops; the check as each call starts still holds for calls started early."""
        plan = self.hooks
        assert plan is not None
        counts = dict(self.state.call_counts)
        for call in calls:
            limit = plan.max_calls.get(call.name)
            if limit is None:
                continue
            record = record_of(self.state, call)
            if record is not None and (
                record.hook is not None or record.status in (CallStatus.STARTED, CallStatus.FINISHED)
            ):
                continue  # counted when it started, or answered
            if counts.get(call.name, 0) >= limit:
                yield from self._answer_hooked(call, "limited", LIMITED.format(name=call.name, limit=limit))
            else:
                counts[call.name] = counts.get(call.name, 0) + 1  # its place, held

    def _answer_hooked(self, call: ToolCall, verdict: HookVerdict, reason: str) -> Program[None]:
        """Answer a call the hooks stopped with ``reason``, journaled and saved like a call that ran."""
        block = tool_result_block(call.id, reason, is_error=True)
        self.make_current(call_hooked(self.state, call, verdict, result=block))
        if self.listening:
            if verdict == "limited":
                self.emit(HookDecided(hook="max_calls", call=call, decision=verdict, reason=reason))
            else:
                self.emit(HookDecided(hook="before_tool_call", call=call, decision=verdict, reason=reason))
        yield from self._save()

    def _after_call(self, call: ToolCall, block: ToolResultBlockParam) -> Program[ToolResultBlockParam]:
        """The result the model reads: ``block``, or what the ``after_tool_call`` hook put in its
        place (a hook that raises leaves an error result: fail closed)."""
        try:
            content: ToolResultContent | None = yield AfterToolCall(self.call_info(call), block)
        except Exception as error:
            log_handled(
                error, "The after_tool_call hook raised for tool_use %r: %s", call.id, describe(error)
            )
            reason = (
                f"The result of this call to {call.name!r} was withheld because the after_tool_call hook failed "
                f"({type(error).__name__})."
            )
            if self.listening:
                self.emit(HookDecided(hook="after_tool_call", call=call, decision="replaced", reason=reason))
            return tool_result_block(call.id, reason, is_error=True)
        if content is None:
            return block
        replaced = tool_result_block(call.id, content, is_error=bool(block.get("is_error")))
        if self.listening:
            self.emit(HookDecided(hook="after_tool_call", call=call, decision="replaced"))
        return replaced

    def _before_request(self) -> Program[None]:
        """Ask the ``before_request`` hook whether the request about to be sent may go (the state
        is saved: nothing is lost). A refusal, or a hook that fails, raises ``RequestRefusedError``."""
        state = self.state
        info = RequestInfo(
            messages=state.messages,
            params=state.params,
            tools=state.tools,
            run_id=state.run_id,
            requests_sent=self.elided.requests + len(state.usage),
        )
        try:
            reason: str | None = yield BeforeRequest(info)
        except Exception as error:  # fail closed: a guardrail that cannot say does not let it through
            reason = f"the before_request hook failed ({describe(error)})"
            if self.listening:
                self.emit(HookDecided(hook="before_request", call=None, decision="refused", reason=reason))
            raise RequestRefusedError(f"the request was not sent: {reason}.", reason) from error
        if reason is None:
            return
        if self.listening:
            self.emit(HookDecided(hook="before_request", call=None, decision="refused", reason=reason))
        raise RequestRefusedError(
            f"the before_request hook refused to send the request: {reason}. The run is saved as it "
            "was before it; iterate it again (or resume it) to ask the hook again.",
            reason,
        )

    def _check_output(
        self, finished: RunState, before: RunState
    ) -> Program[tuple[RunState, OutputValidationError | None]]:
        """The state ``turn_finished`` made (and ``answer_judged``, for a typed answer), once the
        ``check_output`` hook judged the model's final answer: accepted, it is as it was; refused,
        the answer is sent back with the reason while the retries (``output_retries``, shared with
        the typed answer's: ``before`` holds those used) last, and otherwise the run ends with the
        error to raise."""
        reply = finished.reply
        if (
            finished.phase is not Phase.DONE
            or finished.end_reason != "model"
            or reply is None
            or reply.stop_reason == "refusal"
        ):
            return finished, None
        reason: str | None = yield CheckOutput(reply)
        record = finished.output or OutputRecord("")
        if reason is None:
            if record.retries:
                finished = finished.replace(output=OutputRecord(record.schema))
            return finished, None
        if self.listening:
            self.emit(HookDecided(hook="check_output", call=None, decision="refused", reason=reason))
        used = before.output.retries if before.output is not None else 0
        plan = self.hooks
        assert plan is not None
        budget = self.output.retries if self.output is not None else plan.output_retries
        if used < budget:
            retry = {"role": "user", "content": f"{CHECK_INTRO} {reason}\n{CHECK_OUTRO}"}
            return finished.replace(
                messages=sent_back(finished.messages, retry, reply.stop_reason),
                phase=Phase.READY,
                end_reason=None,
                output=OutputRecord(record.schema, used + 1),
            ), None
        tries = used + 1
        error = OutputValidationError(
            f"the check_output hook refused the model's answer after {tries} tr{'y' if tries == 1 else 'ies'} "
            f"(output_retries={budget}): {reason[:1000]}. The run ended with that answer (error.answer); raise "
            "output_retries=..., or change the prompt.",
            reply,
            [reason],
        )
        return finished.replace(
            output=OutputRecord(record.schema) if finished.output is not None else None
        ), error

    def call_info(self, call: ToolCall) -> ToolCallInfo:
        """What a hook sees of ``call``."""
        record = record_of(self.state, call)
        approved = record is not None and record.decision == "approved"
        given = (
            record.approved_input if record is not None and record.approved_input is not None else call.input
        )
        if record is not None and record.hook == "rewritten":
            given = record.hook_input
        return ToolCallInfo(
            id=call.id,
            name=call.name,
            input=given,
            call=call,
            run_id=self.state.run_id,
            approved=approved,
            approved_by=record.decided_by if approved and record is not None else None,
        )

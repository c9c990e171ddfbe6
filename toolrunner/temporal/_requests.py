"""The run's requests on Temporal (``RunRequests``, a part of the workflow's driver): the request,
summary and gate activities, and what the payload store holds of the history they sent.

Each request activity builds on the history node of the last one (``delta``): it carries only the
messages appended since, and the params and tools only when they changed. The request activity
also evaluates the gates of the reply's calls, whose verdicts ``gate`` hands the core without
another activity; the usage of a reply is computed on the worker, at its prices (``usage_of``).

A sub-run's requests (``Request.agent_path``, ``_core.subruns``) name its path, by which the
worker finds its sub-agent's tools; each sub-run has a chain of history nodes of its own (kept
for the parent's turn: no sub-run outlives it), and its replies' verdicts are kept apart from the
run's own, by call, as its sub-runs may run side by side.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from temporalio import workflow
from temporalio.exceptions import ActivityError, ApplicationError

with workflow.unsafe.imports_passed_through():
    from anthropic.types import Message
    from anthropic.types.beta import BetaMessage

    from .._core.effects import Gate, Gated, Send, Summarize
    from .._core.messages import client_tool_calls
    from .._core.run import RunCore
    from .._core.state import RunState, read_request_usage
    from .._core.types import Reply, ToolCall
    from .._core.usage import RequestUsage
    from .._tools.toolsets import RunnableTool
    from ._activity_options import ActivityOptions
    from ._data import (
        GateInput,
        GateOutput,
        RequestInput,
        RequestOutput,
        RunInput,
        SummaryInput,
        SummaryOutput,
        ToolSpec,
    )
    from ._event_data import call_data
    from ._names import (
        GATE_ACTIVITY,
        OUTPUT_NOT_REGISTERED,
        REQUEST_ACTIVITY,
        SUMMARY_ACTIVITY,
        TOOL_NOT_REGISTERED,
    )
    from ._output import RemoteOutput
    from ._spec_tools import SpecTools, specs_at
    from ._tracing import RunSpans

__all__ = ["RunRequests", "read_reply"]

_Verdict = tuple[ToolCall, str, str | None]
_EARLIER_WORKER = (
    "the request activity did not parse the reply with the run's output type: a worker of an earlier "
    "toolrunner took it; deploy this toolrunner to every worker of the task queue."
)
"""A call's gate, as a request activity found it: ``"wait"``, ``"deny"`` (and why) or ``"clear"``."""


@dataclass(frozen=True, slots=True)
class _Chain:
    """The history node a sub-run's last request stored, and what that request was sent with."""

    node: str
    messages: tuple[Any, ...]
    params: Mapping[str, Any]
    tools: tuple[Any, ...]


class RunRequests:
    """The performers of ``Send``, ``Summarize`` and ``Gate`` on Temporal (see the module docstring).

    Args:
        core: The run's core.
        run: The segment's input (a run that continued as new starts from its history node).
        run_id: The run's id.
        options: How the activities are started.
        specs: The tools' flags by name, which a request's reply adds to (a toolset's new tools).
        spans: The run's tracing.
        output: The run's output type (``_output``), if it has one: each request names it, and
            its reply's answer, judged on the worker, is handed to it.
    """

    def __init__(
        self,
        core: RunCore[RunnableTool],
        run: RunInput,
        run_id: str,
        options: ActivityOptions,
        specs: dict[str, ToolSpec],
        spans: RunSpans,
        output: RemoteOutput | None = None,
    ) -> None:
        self._core = core
        self._input = run
        self._run_id = run_id
        self._options = options
        self._specs = specs
        self._spans = spans
        self._output = output
        # What the store holds: the history node of the last request, how many of the state's
        # messages it holds, and what that request was sent with (for the next one's delta).
        self._node: str | None = None
        self._sent = 0
        self._epoch = 0  # the core's history_epoch when that node was written
        self._sent_params: Mapping[str, Any] | None = None
        self._sent_tools: tuple[Any, ...] | None = None
        self._sent_messages: tuple[Any, ...] = ()
        segment = run.segment
        if segment is not None:
            self._node, self._sent = segment.history, segment.sent
            self._sent_messages = core.state.messages  # the node holds the first ``sent`` of them
        self._reply_usage: tuple[Reply, RequestUsage] | None = None
        self._verdicts: dict[str, _Verdict] = {}  # the last reply's gates
        self._definitions: dict[str, dict[str, Any]] = {}
        # The sub-runs' (of the current turn): their chains by path, their calls' gates until read.
        self._chains: dict[tuple[str, ...], _Chain] = {}
        self._sub_verdicts: dict[str, _Verdict] = {}
        self._sub_definitions: dict[str, dict[str, Any]] = {}

    def delta(self, state: RunState) -> tuple[str | None, int]:
        """The history node to build on, and how many of ``state``'s messages it holds: the last
        request's, unless the history changed since in more than what was appended (a history
        that replaced it, a summary: a new chain of nodes)."""
        core = self._core
        sent, messages = self._sent, state.messages
        appended = core.history_epoch == self._epoch or (
            len(messages) >= sent and messages[:sent] == self._sent_messages[:sent]
        )
        if self._node is None or not appended:
            if core.elided.messages:  # a history that replaced the whole one elides nothing
                raise ApplicationError(
                    "the run's history was replaced in part; this is a bug.", non_retryable=True
                )
            return None, 0
        return self._node, self._sent

    async def send(self, effect: Send, path: Sequence[str] = ()) -> Reply:
        """The request activity for ``effect``; ``path``: the sub-run's it is (``send_sub``)."""
        if path:
            return await self._send_sub(effect, tuple(path))
        self._chains.clear()  # a request of the run's own: the turn of its sub-runs is over
        self._sub_verdicts.clear()
        self._sub_definitions.clear()
        request = effect.request
        state = request.state
        base, sent = self.delta(state)
        params = dict(state.params) if base is None or state.params != self._sent_params else None
        tools = list(state.tools) if base is None or state.tools != self._sent_tools else None
        removed = self._core.removed()
        output: RequestOutput = await self._request(
            REQUEST_ACTIVITY,
            RequestInput(
                run_id=self._run_id,
                base=base,
                params=params,
                tools=tools,
                messages=list(state.messages[sent:]),
                final_answer=state.final_answer,
                cache=self._input.cache,
                compaction=None if request.compaction is None else dict(request.compaction),
                removed=sorted(removed) if removed else None,
                output=None if self._output is None else self._output.data(),
            ),
            result_type=RequestOutput,
            start_to_close_timeout=self._options.request_start_to_close,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=self._options.request_retry,
            task_queue=self._options.task_queue,
            summary=str(state.params.get("model", "")),
        )
        self._node, self._sent, self._epoch = output.history, len(state.messages), self._core.history_epoch
        self._sent_messages = state.messages
        self._sent_params, self._sent_tools = state.params, state.tools
        self._spans.sent(state)
        reply = read_reply(output.reply, beta=output.beta)
        self._reply_usage = (reply, read_request_usage(output.usage))
        if self._output is not None:
            if output.output is None:
                raise ApplicationError(_EARLIER_WORKER, non_retryable=True)
            self._output.took(reply, output.output)
        self._verdicts = _verdicts(reply, output)
        self._definitions = output.definitions
        for spec in output.specs:
            self._specs[spec.name] = spec
        return reply

    async def _send_sub(self, effect: Send, path: tuple[str, ...]) -> Reply:
        """A sub-run's request: on the chain of the sub-run's last request, if this one builds on it."""
        state = effect.request.state
        chain = self._chains.get(path)
        sent = 0 if chain is None else len(chain.messages)
        agents = path[1::2]
        agent = specs_at(self._specs, agents[:-1])[agents[-1]].agent
        typed = None if agent is None else agent.get("output")  # its typed answer (SubAgent.definition())
        if chain is not None and state.messages[:sent] != chain.messages:
            chain, sent = None, 0
        output: RequestOutput = await self._request(
            REQUEST_ACTIVITY,
            RequestInput(
                run_id=self._run_id,
                base=None if chain is None else chain.node,
                params=dict(state.params) if chain is None or state.params != chain.params else None,
                tools=list(state.tools) if chain is None or state.tools != chain.tools else None,
                messages=list(state.messages[sent:]),
                final_answer=state.final_answer,
                path=list(path),
                output=typed,
            ),
            result_type=RequestOutput,
            start_to_close_timeout=self._options.request_start_to_close,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=self._options.request_retry,
            task_queue=self._options.task_queue,
            summary=f"{state.params.get('model', '')} ({path[-1]})",
        )
        self._chains[path] = _Chain(output.history, state.messages, state.params, state.tools)
        reply = read_reply(output.reply, beta=output.beta)
        self._reply_usage = (reply, read_request_usage(output.usage))
        if typed is not None:  # the sub-run's core judges its answer with what the activity found
            if output.output is None:
                raise ApplicationError(_EARLIER_WORKER, non_retryable=True)
            cast("SpecTools", self._core.tools).answers.took(reply, output.output)
        self._sub_verdicts.update(_verdicts(reply, output))
        self._sub_definitions.update(output.definitions)
        return reply

    async def _request(self, activity: str, input: RequestInput, **options: Any) -> RequestOutput:
        """The request activity; a run whose output type its worker does not have fails, with that
        worker's error (as a run whose tool, or sub-agent, is not on the workers does)."""
        try:
            output: RequestOutput = await workflow.execute_activity(activity, input, **options)
            return output
        except ActivityError as error:
            cause = error.cause
            if isinstance(cause, ApplicationError) and cause.type in (
                OUTPUT_NOT_REGISTERED,
                TOOL_NOT_REGISTERED,
            ):
                raise ApplicationError(cause.message, type=cause.type, non_retryable=True) from None
            raise

    def usage_of(self, reply: Reply) -> RequestUsage:
        """The usage of the reply an activity just gave (computed there, at the workers' prices)."""
        given = self._reply_usage
        assert given is not None, "the usage of a reply no activity gave"
        assert given[0] is reply, "the usage of a reply no activity gave"
        return given[1]

    async def summarize(self, effect: Summarize) -> Reply:
        state = effect.state
        base, sent = self.delta(state)
        output: SummaryOutput = await workflow.execute_activity(
            SUMMARY_ACTIVITY,
            SummaryInput(
                run_id=self._run_id,
                base=base,
                params=dict(state.params),
                messages=list(state.messages[sent:]),
                point=(0 if base is None else self._core.elided.messages) + effect.point,
                control=dict(effect.control),
            ),
            result_type=SummaryOutput,
            start_to_close_timeout=self._options.request_start_to_close,
            heartbeat_timeout=self._options.heartbeat_timeout,
            retry_policy=self._options.request_retry,
            task_queue=self._options.task_queue,
            summary=f"summary {effect.control.get('model', state.params.get('model', ''))}",
        )
        reply = read_reply(output.reply, beta=output.beta)
        self._reply_usage = (reply, read_request_usage(output.usage))
        return reply

    async def gate(self, effect: Gate, path: Sequence[str] = ()) -> Gated:
        """The verdicts the request activity found for ``effect.calls``; else the gate activity's.
        ``path``: the sub-run's whose calls they are (their gates are its sub-agent's tools')."""
        calls = effect.calls
        verdicts, definitions = (
            (self._sub_verdicts, self._sub_definitions) if path else (self._verdicts, self._definitions)
        )
        if all((verdict := verdicts.get(call.id)) is not None and verdict[0] == call for call in calls):
            gated = Gated(
                waiting=[call for call in calls if verdicts[call.id][1] == "wait"],
                denied=[
                    (call, cast(str, verdicts[call.id][2]))
                    for call in calls
                    if verdicts[call.id][1] == "deny"
                ],
                tools={call.id: definitions[call.id] for call in calls if call.id in definitions},
            )
            if path:  # read once: a sub-run's calls are gated once
                for call in calls:
                    del verdicts[call.id]
                    definitions.pop(call.id, None)
            return gated
        removed = () if path else self._core.removed()
        output: GateOutput = await workflow.execute_activity(
            GATE_ACTIVITY,
            GateInput(
                run_id=self._run_id,
                calls=[call_data(call) for call in calls],
                removed=sorted(removed),
                path=list(path) if path else None,
            ),
            result_type=GateOutput,
            start_to_close_timeout=self._options.tool_start_to_close,
            retry_policy=self._options.tool_retry,
            task_queue=self._options.task_queue,
            summary=f"gate {len(calls)} call(s)",
        )
        return Gated(
            waiting=[call for call in calls if call.id in output.gated],
            denied=[(call, output.denied[call.id]) for call in calls if call.id in output.denied],
            tools=output.definitions,
        )


def _verdicts(reply: Reply, output: RequestOutput) -> dict[str, _Verdict]:
    """The gates of ``reply``'s calls, as its request activity found them (``output``)."""
    verdicts: dict[str, _Verdict] = {}
    for call in client_tool_calls(reply):
        if call.id in output.gated:
            verdicts[call.id] = (call, "wait", None)
        elif call.id in output.denied:
            verdicts[call.id] = (call, "deny", output.denied[call.id])
        else:
            verdicts[call.id] = (call, "clear", None)
    return verdicts


def read_reply(data: dict[str, Any], *, beta: bool) -> Reply:
    """A reply as an activity gave it."""
    return (BetaMessage if beta else Message).model_validate(data)

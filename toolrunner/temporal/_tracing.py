"""Tracing a Temporal run: the spans of ``ToolRunner``'s tracing, in one trace with Temporal's.

Temporal's ``TracingInterceptor`` (``temporalio.contrib.opentelemetry``) carries the trace from the
client that starts a run to its workflow and its activities. toolrunner adds its own spans to it,
with the names and attributes of ``ToolRunner``'s (``_tracing/otel.py``):

- ``invoke_agent [agent_name]``: made by the workflow when the loop ends or pauses
  (``workflow.completed_span``: workflow code cannot hold a span open across its tasks, so it has
  no duration), with the usage of the requests since the last one;
- ``execute_tool {name}``: made in the ``toolrunner.tool`` activity around the tool, a child of
  the activity's span; for a call the run's hooks stopped (denied, or over its ``max_calls``), no
  activity runs, and the workflow makes the span (``stopped``, with no duration), as it makes
  ``invoke_agent``;
- the SDK's span of each request, when the workers' client traces, is a child of the
  ``toolrunner.request`` activity's span;
- for a sub-agent's call, which no activity runs (its sub-run runs in the workflow), the workflow
  makes its ``execute_tool {name}`` span and its sub-run's ``invoke_agent {name}`` when the call's
  program ends with its answer (``sub_run_ended``), with the attributes ``ToolRunner``'s have; the
  spans of the sub-run's requests and tool calls are its activities', as the run's own are.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from anthropic.types import ToolResultBlockParam

    from .._core.events import HookDecided
    from .._core.state import RunState
    from .._core.types import ToolCall
    from .._core.usage import Usage

__all__ = ["RunSpans", "invoke_agent_span"]


class RunSpans:
    """The workflow's tracing of one run (``RunInput.tracing``, ``None`` when it is not traced):
    an ``invoke_agent`` span each time the loop ends or pauses, with the usage since the last."""

    def __init__(self, tracing: Mapping[str, Any] | None) -> None:
        self.tracing = tracing
        self.traced = Usage()
        """The usage when the open span opened (after the last one, or when the run started)."""
        self._input: list[Any] | None = None  # the messages the open span's first request carried

    def sent(self, state: RunState) -> None:
        """A request was sent with ``state``: the first one of a span gives its input (with content)."""
        if self.tracing is not None and self._input is None and self.tracing.get("content"):
            self._input = list(state.messages)

    def stopped(self, event: HookDecided, input: object) -> None:
        """The hooks stopped a call (``event``: denied, or limited) that would run with ``input``:
        its ``execute_tool`` span, as a ``ToolRunner``'s, made now."""
        tracing = self.tracing
        if tracing is None or event.call is None or _untraced():
            return
        with workflow.unsafe.imports_passed_through():
            from temporalio.contrib.opentelemetry import workflow as traced

            from .._tracing.attributes import json_attribute, stopped_attributes

        attributes = stopped_attributes(event.call, event.decision, event.reason)
        if tracing.get("content"):
            attributes["gen_ai.tool.call.arguments"] = json_attribute(input)
        traced.completed_span(f"execute_tool {event.call.name}", attributes=attributes)

    def sub_run_ended(
        self, call: ToolCall, agent: str, state: RunState, block: ToolResultBlockParam | None
    ) -> None:
        """The program of ``call``, to the sub-agent ``agent``, ended with ``block``, its sub-run at
        ``state``: the call's ``execute_tool`` span and the sub-run's ``invoke_agent``, made now."""
        tracing = self.tracing
        if tracing is None or _untraced():
            return
        with workflow.unsafe.imports_passed_through():
            from temporalio.contrib.opentelemetry import workflow as traced

            from .._tracing.attributes import ended_attributes, json_attribute, tool_attributes
            from .._tracing.content import result_content
            from .._tracing.otel import PROVIDER

        content = bool(tracing.get("content"))
        attributes = tool_attributes(call)
        if content:
            attributes["gen_ai.tool.call.arguments"] = json_attribute(call.input)
        if block is not None and block.get("is_error"):
            attributes["error.type"] = "tool_error"
        elif block is not None and content:
            attributes["gen_ai.tool.call.result"] = result_content(block.get("content"))
        traced.completed_span(f"execute_tool {call.name}", attributes=attributes)
        agent_attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.agent.name": agent,
            **ended_attributes(state, state.total),
        }
        traced.completed_span(f"invoke_agent {agent}", attributes=agent_attributes)

    def ended(self, state: RunState) -> None:
        """The loop ended or paused in ``state``: the span of the requests since the last one."""
        tracing = self.tracing
        if tracing is None:
            return
        total, before = state.total, self.traced
        self.traced = total
        span_input, self._input = self._input, None
        invoke_agent_span(
            state,
            agent_name=tracing.get("agent_name"),
            content=bool(tracing.get("content")),
            usage=Usage(
                input_tokens=total.input_tokens - before.input_tokens,
                output_tokens=total.output_tokens - before.output_tokens,
                cache_read_input_tokens=total.cache_read_input_tokens - before.cache_read_input_tokens,
                cache_creation_input_tokens=total.cache_creation_input_tokens
                - before.cache_creation_input_tokens,
            ),
            input_messages=span_input,
        )


def invoke_agent_span(
    state: RunState,
    *,
    agent_name: str | None,
    content: bool,
    usage: Usage,
    input_messages: Sequence[object] | None,
) -> None:
    """The run's ``invoke_agent`` span, made (and ended) now, from workflow code: the loop ended or
    paused in ``state``. Not made while the workflow replays, nor without Temporal's
    ``TracingInterceptor`` on the worker (and a traced client that started the run)."""
    if _untraced():
        return
    with workflow.unsafe.imports_passed_through():
        from temporalio.contrib.opentelemetry import workflow as traced

        from .._tracing.otel import run_attributes

    traced.completed_span(
        f"invoke_agent {agent_name}" if agent_name else "invoke_agent",
        attributes=run_attributes(
            state, agent_name=agent_name, usage=usage, content=content, input_messages=input_messages
        ),
    )


def _untraced() -> bool:
    """Whether no span is to be made now: the workflow replays, or its worker has no Temporal
    ``TracingInterceptor``. Without it, ``completed_span`` would make the span with the global
    tracer instead, warning, and again at each replay: the span is the interceptor's, or nobody's."""
    if workflow.unsafe.is_replaying():
        return True
    with workflow.unsafe.imports_passed_through():
        from temporalio.contrib.opentelemetry import TracingWorkflowInboundInterceptor

    return TracingWorkflowInboundInterceptor._from_context() is None  # pyright: ignore[reportPrivateUsage]

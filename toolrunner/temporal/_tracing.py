"""Tracing a Temporal run: the spans of ``ToolRunner``'s tracing, in one trace with Temporal's.

Temporal's ``TracingInterceptor`` (``temporalio.contrib.opentelemetry``) carries the trace from the
client that starts a run to its workflow and its activities. toolrunner adds its own spans to it,
with the names and attributes of ``ToolRunner``'s (``_otel``):

- ``invoke_agent [agent_name]``: made by the workflow when the loop ends or pauses
  (``workflow.completed_span``: workflow code cannot hold a span open across its tasks, so it has
  no duration), with the usage of the requests since the last one;
- ``execute_tool {name}``: made in the ``toolrunner.tool`` activity around the tool, a child of
  the activity's span;
- the SDK's span of each request, when the workers' client traces, is a child of the
  ``toolrunner.request`` activity's span.
"""

from __future__ import annotations

from collections.abc import Sequence

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from .._state import RunState
    from .._usage import Usage

__all__ = ["invoke_agent_span"]


def invoke_agent_span(
    state: RunState,
    *,
    agent_name: str | None,
    content: bool,
    usage: Usage,
    input_messages: Sequence[object] | None,
) -> None:
    """The run's ``invoke_agent`` span, made (and ended) now, from workflow code: the loop ended or
    paused in ``state``. Not made while the workflow replays, nor without a traced client."""
    with workflow.unsafe.imports_passed_through():
        from temporalio.contrib.opentelemetry import workflow as traced

        from .._otel import run_attributes

    traced.completed_span(
        f"invoke_agent {agent_name}" if agent_name else "invoke_agent",
        attributes=run_attributes(
            state, agent_name=agent_name, usage=usage, content=content, input_messages=input_messages
        ),
    )

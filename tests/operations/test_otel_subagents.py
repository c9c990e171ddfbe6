"""tracing=Tracing(...) over sub-agents (issue 30): a sub-run's spans nest under the parent's
``execute_tool`` span of its call, as ``invoke_agent {name}``; its requests' spans (the SDK's ``anthropic.messages.create``, a ``chat``) and its
tool calls' spans nest under that, two levels down too."""

from __future__ import annotations

import pytest
from opentelemetry.trace import StatusCode

from tests.operations.test_otel import Traces, attributes, client, parent_id, span_id, traces
from tests.support.subagents import by_model, lookup, researcher, searcher
from toolrunner import MemoryCheckpointer, ToolRunner, Tracing, text_of
from toolrunner.testing import (
    FakeMessagesAPI,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

__all__ = ["traces"]  # the fixture, used by name


def two_levels() -> FakeMessagesAPI:
    usage = {"input_tokens": 10, "output_tokens": 5}
    return FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(
                        tool_call("researcher", {"task": "Research Paris."}, id="toolu_p1"),
                        tool_call("lookup", {"city": "Rome"}, id="toolu_p2"),
                    ),
                    text_reply("Done: Paris is warm."),
                ],
                "claude-mid": [
                    tool_reply(
                        tool_call("searcher", {"task": "Weather in Paris?"}, id="toolu_m1"), usage=usage
                    ),
                    text_reply("Research: Paris is warm.", usage=usage),
                ],
                "claude-sub": [
                    tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1"), usage=usage),
                    text_reply("Paris: 20 C.", usage=usage),
                ],
            }
        )
    )


@pytest.mark.parametrize("store", [False, True], ids=["memory", "store"])
async def test_sub_run_spans_nest_under_their_call_two_levels_down(traces: Traces, store: bool) -> None:
    fake = two_levels()
    runner = ToolRunner(
        client(fake, traces, client_traces=True),
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=[researcher(), lookup],
        tracing=Tracing(tracer_provider=traces.provider, agent_name="coordinator"),
        checkpointer=MemoryCheckpointer() if store else None,
    )
    assert text_of(await runner.until_done()) == "Done: Paris is warm."
    assert traces.outline() == [
        "invoke_agent coordinator",
        "  anthropic.messages.create",
        "  anthropic.messages.create",
        "  execute_tool lookup",
        "  execute_tool researcher",
        "    invoke_agent researcher",
        "      anthropic.messages.create",
        "      anthropic.messages.create",
        "      execute_tool searcher",
        "        invoke_agent searcher",
        "          anthropic.messages.create",
        "          anthropic.messages.create",
        "          execute_tool lookup",
    ]
    mid = traces.named("invoke_agent researcher")
    assert (
        attributes(mid).items()
        >= {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": "researcher",
            "gen_ai.request.model": "claude-mid",
            "gen_ai.usage.input_tokens": 20,
            "gen_ai.usage.output_tokens": 10,
            "toolrunner.end_reason": "model",
        }.items()
    )
    (deepest,) = [
        span
        for span in traces.operation("execute_tool")
        if attributes(span)["gen_ai.tool.call.id"] == "toolu_c1"
    ]
    assert parent_id(deepest) == span_id(traces.named("invoke_agent searcher"))
    call = traces.tool_span("toolu_p1")
    assert attributes(call)["gen_ai.tool.name"] == "researcher"
    assert call.status.status_code is StatusCode.UNSET
    assert all(span.end_time is not None for span in traces.spans())


async def test_a_sub_run_that_stops_at_its_limit_marks_its_call_span(traces: Traces) -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Weather?"}, id="toolu_p1")),
                    text_reply("It could not tell."),
                ],
                "claude-sub": [tool_reply(tool_call("lookup", {"city": "Oslo"}))],
            }
        )
    )
    runner = ToolRunner(
        client(fake, traces, client_traces=False),
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=[searcher(max_iterations=1)],
        tracing=Tracing(tracer_provider=traces.provider),
    )
    await runner.until_done()
    call = traces.tool_span("toolu_p1")
    assert call.status.status_code is StatusCode.ERROR
    assert attributes(traces.named("invoke_agent searcher"))["toolrunner.end_reason"] == "max_iterations"
    assert traces.outline() == [
        "invoke_agent",
        "  execute_tool searcher",
        "    invoke_agent searcher",
        "      execute_tool lookup",
    ]

"""tracing=Tracing(...): the spans of a run, after the OpenTelemetry GenAI semantic conventions.

Every test reads the spans from the OpenTelemetry SDK's ``InMemorySpanExporter``, with a tracer
provider of its own (never the global one, which the other tests' clients would then use). The
client traces (``open_telemetry={"tracer_provider": ...}``: the SDK's own ``chat`` span per
request) or not (``open_telemetry=False``); concurrency is shown with events, never with timings.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import anthropic
import anyio
import anyio.lowlevel
import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF
from opentelemetry.trace import StatusCode
from opentelemetry.util.types import AttributeValue

from tests.support.helpers import MODEL, USER
from toolrunner import (
    CompactionControl,
    MemoryCheckpointer,
    ParamsError,
    SyncToolRunner,
    ToolError,
    ToolRunner,
    Tracing,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, fault, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

GUARD = 10  # seconds before a test that would hang fails instead (not a timing)

CONTENT = {
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.system_instructions",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
}
"""The attributes that hold content (opt-in in the conventions)."""


@dataclass
class Traces:
    """A tracer provider whose finished spans are kept in memory."""

    provider: TracerProvider
    exporter: InMemorySpanExporter

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def operation(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if attributes(span).get("gen_ai.operation.name") == name]

    def run(self) -> ReadableSpan:
        (run,) = self.operation("invoke_agent")
        return run

    def tool_span(self, call_id: str) -> ReadableSpan:
        (span,) = [
            s for s in self.operation("execute_tool") if attributes(s).get("gen_ai.tool.call.id") == call_id
        ]
        return span

    def named(self, name: str) -> ReadableSpan:
        (span,) = [span for span in self.spans() if span.name == name]
        return span

    def outline(self) -> list[str]:
        """The span tree, one line per span indented by depth; siblings sorted by name and call id."""
        spans = self.spans()
        ids = {span_id(span) for span in spans}
        lines: list[str] = []

        def visit(parent: int | None, depth: int) -> None:
            children = [span for span in spans if parent_id(span, ids) == parent]
            for child in sorted(
                children, key=lambda s: (s.name, str(attributes(s).get("gen_ai.tool.call.id")))
            ):
                lines.append("  " * depth + child.name)
                visit(span_id(child), depth + 1)

        visit(None, 0)
        return lines


def attributes(span: ReadableSpan) -> dict[str, AttributeValue]:
    return dict(span.attributes or {})


def span_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.span_id


def trace_id(span: ReadableSpan) -> int:
    assert span.context is not None
    return span.context.trace_id


def parent_id(span: ReadableSpan, ids: set[int] | None = None) -> int | None:
    """The span's parent among ``ids`` (a parent outside them counts as none: a root here)."""
    if span.parent is None or (ids is not None and span.parent.span_id not in ids):
        return None
    return span.parent.span_id


@pytest.fixture
def traces() -> Iterator[Traces]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    yield Traces(provider, exporter)
    provider.shutdown()


def client(fake: FakeMessagesAPI, traces: Traces, *, client_traces: bool) -> anthropic.AsyncAnthropic:
    """A client of the fake that emits the SDK's spans to ``traces``, or none."""
    return fake.async_client(open_telemetry={"tracer_provider": traces.provider} if client_traces else False)


@tool
async def get_weather(city: str) -> str:
    """Get the weather.

    Args:
        city: The city.
    """
    return f"{city}: sunny"


def two_cities() -> list[Any]:
    return [
        tool_reply(
            tool_call("get_weather", {"city": "Paris"}, id="toolu_paris"),
            tool_call("get_weather", {"city": "Berlin"}, id="toolu_berlin"),
            usage={
                "input_tokens": 10,
                "output_tokens": 5,
                "cache_read_input_tokens": 100,
                "cache_creation_input_tokens": 20,
            },
        ),
        text_reply(
            "Sunny in both.",
            usage={
                "input_tokens": 7,
                "output_tokens": 3,
                "cache_read_input_tokens": 120,
                "cache_creation_input_tokens": 0,
            },
        ),
    ]


def build(
    fake: FakeMessagesAPI, traces: Traces, *, client_traces: bool = True, **options: Any
) -> ToolRunner[Any]:
    settings: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [USER], "tools": [get_weather]}
    settings.update(options)
    settings.setdefault("tracing", Tracing(tracer_provider=traces.provider))
    return ToolRunner(client(fake, traces, client_traces=client_traces), **settings)


# -- the tree ----------------------------------------------------------------------------------------------


async def test_a_run_is_one_invoke_agent_span_with_the_sdks_chat_spans_and_the_tool_spans_as_children(
    traces: Traces,
) -> None:
    fake = FakeMessagesAPI(two_cities())
    await build(fake, traces).until_done()
    assert traces.outline() == [
        "invoke_agent",
        "  anthropic.messages.create",
        "  anthropic.messages.create",
        "  execute_tool get_weather",
        "  execute_tool get_weather",
    ]
    run = traces.run()
    assert {trace_id(span) for span in traces.spans()} == {trace_id(run)}
    assert [parent_id(span) for span in traces.operation("chat")] == [span_id(run)] * 2
    assert attributes(run) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": "anthropic",
        "gen_ai.request.model": MODEL,
        # every input token, cached ones too; the cache counts are parts of it
        "gen_ai.usage.input_tokens": (10 + 100 + 20) + (7 + 120 + 0),
        "gen_ai.usage.output_tokens": 5 + 3,
        "gen_ai.usage.cache_read.input_tokens": 100 + 120,
        "gen_ai.usage.cache_write.input_tokens": 20 + 0,
        "gen_ai.response.finish_reasons": ("end_turn",),
        "toolrunner.end_reason": "model",
    }
    assert run.status.status_code is StatusCode.UNSET
    paris = traces.tool_span("toolu_paris")
    assert attributes(paris) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "get_weather",
        "gen_ai.tool.call.id": "toolu_paris",
        "gen_ai.tool.type": "function",
    }
    assert paris.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("client_traces", [True, False], ids=["client traces", "client does not trace"])
async def test_each_request_has_one_chat_span_the_sdks_and_none_when_the_client_does_not_trace(
    traces: Traces, client_traces: bool
) -> None:
    fake = FakeMessagesAPI(two_cities())
    await build(fake, traces, client_traces=client_traces).until_done()
    chats = traces.operation("chat")
    assert len(chats) == (len(fake.requests) if client_traces else 0) == (2 if client_traces else 0)
    assert {span.instrumentation_scope.name for span in chats if span.instrumentation_scope} <= {
        "com.anthropic.sdk.python"
    }
    # The rest of the tree is the same either way.
    assert len(traces.operation("invoke_agent")) == 1
    assert len(traces.operation("execute_tool")) == 2


async def test_a_streamed_run_has_the_same_tree_and_eager_calls_are_children_of_the_run(
    traces: Traces,
) -> None:
    fake = FakeMessagesAPI(two_cities())
    async with ToolRunner(
        client(fake, traces, client_traces=True),
        stream=True,
        run_tools_eagerly=True,
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[get_weather],
        tracing=Tracing(tracer_provider=traces.provider),
    ) as runner:
        async for stream in runner:
            await stream.get_final_message()
    run = traces.run()
    assert traces.outline() == [
        "invoke_agent",
        "  anthropic.messages.create",
        "  anthropic.messages.create",
        "  execute_tool get_weather",
        "  execute_tool get_weather",
    ]
    assert attributes(traces.operation("chat")[0])["gen_ai.request.stream"] is True
    assert attributes(run)["gen_ai.usage.output_tokens"] == 8


async def test_concurrent_calls_are_siblings_and_each_is_current_inside_its_tool(traces: Traces) -> None:
    inner = traces.provider.get_tracer("the tool's own")
    arrived = {"a": anyio.Event(), "b": anyio.Event()}

    @tool
    async def meet(name: str) -> str:
        """Wait for the other call: both must be running at once.

        Args:
            name: This call's name.
        """
        arrived[name].set()
        await arrived["b" if name == "a" else "a"].wait()
        with inner.start_as_current_span(f"inside {name}"):
            await anyio.lowlevel.checkpoint()
        return "met"

    both = tool_reply(
        tool_call("meet", {"name": "a"}, id="call_a"), tool_call("meet", {"name": "b"}, id="call_b")
    )
    fake = FakeMessagesAPI([both, text_reply("Done.")])
    with anyio.fail_after(GUARD):
        await build(fake, traces, client_traces=False, tools=[meet]).until_done()
    run, a, b = traces.run(), traces.tool_span("call_a"), traces.tool_span("call_b")
    assert parent_id(a) == parent_id(b) == span_id(run)
    assert parent_id(traces.named("inside a")) == span_id(a)
    assert parent_id(traces.named("inside b")) == span_id(b)


async def test_a_sync_tool_runs_in_its_span_in_its_worker_thread(traces: Traces) -> None:
    inner = traces.provider.get_tracer("the tool's own")

    @tool
    def look_up(city: str) -> str:
        """Look a city up, blocking.

        Args:
            city: The city.
        """
        with inner.start_as_current_span("blocking lookup"):
            return city

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("look_up", {"city": "Oslo"}, id="call_oslo")), text_reply("Ok.")]
    )
    await build(fake, traces, tools=[look_up]).until_done()
    assert parent_id(traces.named("blocking lookup")) == span_id(traces.tool_span("call_oslo"))


async def test_the_run_span_is_a_child_of_the_span_current_where_the_loop_runs(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    runner = build(fake, traces)
    with traces.provider.get_tracer("app").start_as_current_span("handle request"):
        await runner.until_done()
    assert traces.outline()[:2] == ["handle request", "  invoke_agent"]


async def test_the_summary_request_of_client_side_compaction_is_a_request_of_the_run(traces: Traces) -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("get_weather", {"city": "Paris"}), usage={"input_tokens": 900, "output_tokens": 200}
            ),
            text_reply("<summary>Paris is sunny.</summary>"),  # the summary
            text_reply("Sunny."),
        ]
    )
    control: CompactionControl = {"enabled": True, "context_token_threshold": 1000}
    await build(fake, traces, compaction_control=control).until_done()
    run = traces.run()
    assert len(fake.requests) == 3
    assert [parent_id(span) for span in traces.operation("chat")] == [span_id(run)] * 3
    assert attributes(run)["gen_ai.usage.output_tokens"] == 200 + 5 + 5  # the summary's tokens count


def test_a_sync_runner_traces_the_same_tree_under_the_callers_span(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    runner = SyncToolRunner(
        fake.client(open_telemetry={"tracer_provider": traces.provider}),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[get_weather],
        tracing=Tracing(tracer_provider=traces.provider),
    )
    with traces.provider.get_tracer("app").start_as_current_span("handle request"):
        runner.until_done()
    assert traces.outline() == [
        "handle request",
        "  invoke_agent",
        "    anthropic.messages.create",
        "    anthropic.messages.create",
        "    execute_tool get_weather",
        "    execute_tool get_weather",
    ]


# -- errors ------------------------------------------------------------------------------------------------


async def test_a_call_whose_result_is_an_error_fails_its_span_and_a_tool_that_raised_records_the_exception(
    traces: Traces,
) -> None:
    @tool
    async def broken(city: str) -> str:
        """Always fails.

        Args:
            city: The city.
        """
        raise LookupError(f"no station in {city}")

    @tool
    async def refuses(city: str) -> str:
        """Refuses, for the model to read.

        Args:
            city: The city.
        """
        raise ToolError(f"{city} is not covered; try a capital.")

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("broken", {"city": "Oslo"}, id="call_broken"),
                tool_call("refuses", {"city": "Bergen"}, id="call_refuses"),
                tool_call("get_weather", {"town": "Paris"}, id="call_bad_input"),
                tool_call("get_weather", {"city": "Paris"}, id="call_fine"),
            ),
            text_reply("Only Paris."),
        ]
    )
    await build(fake, traces, tools=[get_weather, broken, refuses]).until_done()

    raised = traces.tool_span("call_broken")
    assert raised.status.status_code is StatusCode.ERROR
    assert attributes(raised)["error.type"] == "LookupError"
    (event,) = raised.events
    assert event.name == "exception"
    assert dict(event.attributes or {})["exception.type"] == "LookupError"
    assert "no station in Oslo" in str(dict(event.attributes or {})["exception.message"])

    for call_id in ("call_refuses", "call_bad_input"):  # error results that no exception caused
        span = traces.tool_span(call_id)
        assert span.status.status_code is StatusCode.ERROR
        assert attributes(span)["error.type"] == "tool_error"
        assert span.events == ()

    fine = traces.tool_span("call_fine")
    assert fine.status.status_code is StatusCode.UNSET
    assert "error.type" not in attributes(fine)
    assert traces.run().status.status_code is StatusCode.UNSET  # error results are the model's to handle


async def test_a_tool_exception_that_cannot_be_shown_is_recorded_with_its_type(traces: Traces) -> None:
    class Unshowable(Exception):
        def __repr__(self) -> str:
            raise AttributeError("no repr")

        def __str__(self) -> str:
            raise AttributeError("no str")

    @tool
    async def broken(city: str) -> str:
        """Always fails.

        Args:
            city: The city.
        """
        raise Unshowable

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("broken", {"city": "Oslo"}, id="call_broken")), text_reply("Sorry.")]
    )
    await build(fake, traces, tools=[broken]).until_done()
    span = traces.tool_span("call_broken")
    assert str(attributes(span)["error.type"]).endswith("Unshowable")
    (event,) = span.events
    assert dict(event.attributes or {})["exception.message"] == (
        "Unshowable('<its message cannot be shown: formatting it raised>')"
    )


async def test_a_failed_request_is_recorded_on_the_run_which_fails_if_it_ends_without_another_try(
    traces: Traces,
) -> None:
    fake = FakeMessagesAPI([fault(500), text_reply("Hi."), fault(500)])
    runner = build(fake, traces)
    with pytest.raises(anthropic.InternalServerError):
        await runner.until_done()
    assert traces.operation("invoke_agent") == []  # the run goes on: iterating again sends again
    assert await runner.until_done()  # the retry succeeds...
    run = traces.run()
    assert run.status.status_code is StatusCode.UNSET  # ...so the run did not fail
    assert [event.name for event in run.events] == ["exception"]
    assert [span.status.status_code for span in traces.operation("chat")] == [StatusCode.ERROR, StatusCode.OK]

    traces.exporter.clear()
    runner.push_messages({"role": "user", "content": "Again?"})
    with pytest.raises(anthropic.InternalServerError):
        await runner.until_done()
    await runner.aclose()  # given up after the failure: the run failed
    run = traces.run()
    assert run.status.status_code is StatusCode.ERROR
    assert attributes(run)["error.type"] == "InternalServerError"
    assert attributes(run)["toolrunner.end_reason"] == "closed"


async def test_a_cancelled_call_ends_its_span_without_a_status_and_runs_again_in_the_same_run(
    traces: Traces,
) -> None:
    started = anyio.Event()
    attempts: list[int] = []

    @tool
    async def slow(city: str) -> str:
        """Hangs on its first call.

        Args:
            city: The city.
        """
        attempts.append(1)
        if len(attempts) == 1:
            started.set()
            await anyio.sleep_forever()
        return f"{city}: ok"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("slow", {"city": "Rome"}, id="call_rome")), text_reply("Ok.")]
    )
    runner = build(fake, traces, tools=[slow])
    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(runner.until_done)
            await started.wait()
            group.cancel_scope.cancel()
        await runner.until_done()
    first, second = sorted(traces.operation("execute_tool"), key=lambda span: span.start_time or 0)
    assert first.status.status_code is StatusCode.UNSET
    assert "error.type" not in attributes(first)
    assert parent_id(first) == parent_id(second) == span_id(traces.run())


# -- what a run is -------------------------------------------------------------------------------------------


async def test_a_loop_left_by_break_and_resumed_is_one_run(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    runner = build(fake, traces)
    async for _ in runner:
        break
    assert traces.operation("invoke_agent") == []  # still open
    await runner.until_done()
    run = traces.run()
    assert attributes(run)["gen_ai.usage.output_tokens"] == 8  # both requests
    assert len(traces.operation("execute_tool")) == 2


async def test_a_runner_dropped_while_its_run_is_open_ends_the_span_as_abandoned(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    runner = build(fake, traces)
    async for _ in runner:
        break
    del runner
    gc.collect()
    run = traces.run()
    assert attributes(run)["toolrunner.end_reason"] == "abandoned"
    assert parent_id(traces.operation("chat")[0]) == span_id(run)


async def test_closing_ends_the_run(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    async with build(fake, traces) as runner:
        async for _ in runner:
            break
    assert attributes(traces.run())["toolrunner.end_reason"] == "closed"


async def test_a_follow_up_after_the_end_is_a_new_run_that_links_to_the_one_before(traces: Traces) -> None:
    fake = FakeMessagesAPI([*two_cities(), text_reply("You are welcome.", usage={"output_tokens": 4})])
    runner = build(fake, traces)
    await runner.until_done()
    runner.push_messages({"role": "user", "content": "Thanks!"})
    await runner.until_done()
    first, second = sorted(traces.operation("invoke_agent"), key=lambda span: span.start_time or 0)
    assert [link.context for link in second.links] == [first.context]
    assert attributes(first)["gen_ai.usage.output_tokens"] == 8
    assert attributes(second)["gen_ai.usage.output_tokens"] == 4  # its own requests only
    assert parent_id(traces.operation("chat")[-1]) == span_id(second)


async def test_a_pause_for_approval_ends_the_run_and_the_decided_calls_belong_to_the_next(
    traces: Traces,
) -> None:
    @tool(requires_approval=True)
    async def pay(amount: int) -> str:
        """Pay an amount.

        Args:
            amount: How much.
        """
        return f"paid {amount}"

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("get_weather", {"city": "Paris"}, id="call_weather"),
                tool_call("pay", {"amount": 5}, id="call_pay"),
            ),
            text_reply("Paid."),
        ]
    )
    store = MemoryCheckpointer()
    runner = build(fake, traces, tools=[get_weather, pay], checkpointer=store, run_id="order-7")
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    paused = traces.run()
    assert attributes(paused)["toolrunner.end_reason"] == "awaiting_approval"
    assert attributes(paused)["gen_ai.conversation.id"] == "order-7"
    assert parent_id(traces.tool_span("call_weather")) == span_id(paused)

    # Later, in another process: load the run, decide, go on. A new run, in a trace of its own.
    traces.exporter.clear()
    again = await ToolRunner.resume(
        client(fake, traces, client_traces=True),
        checkpointer=store,
        run_id="order-7",
        tools=[get_weather, pay],
        tracing=Tracing(tracer_provider=traces.provider, content=True),
    )
    again.approve("call_pay", input={"amount": 4})
    await again.until_done()
    resumed = traces.run()
    assert attributes(resumed)["gen_ai.conversation.id"] == "order-7"
    assert attributes(resumed)["toolrunner.end_reason"] == "model"
    pay_span = traces.tool_span("call_pay")
    assert parent_id(pay_span) == span_id(resumed)
    assert json.loads(str(attributes(pay_span)["gen_ai.tool.call.arguments"])) == {"amount": 4}  # as approved


# -- content --------------------------------------------------------------------------------------------------


async def test_no_span_holds_content_by_default(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    await build(fake, traces, system="Be brief.").until_done()
    assert len(traces.spans()) == 5
    assert [(span.name, sorted(CONTENT & set(attributes(span)))) for span in traces.spans()] == [
        (span.name, []) for span in traces.spans()
    ]


async def test_content_is_recorded_when_asked_for(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    tracing = Tracing(tracer_provider=traces.provider, content=True, agent_name="weather-bot")
    await build(fake, traces, system="Be brief.", tracing=tracing).until_done()
    run = traces.named("invoke_agent weather-bot")
    assert attributes(run)["gen_ai.agent.name"] == "weather-bot"
    assert json.loads(str(attributes(run)["gen_ai.input.messages"])) == [
        {"role": "user", "parts": [{"type": "text", "content": USER["content"]}]}
    ]
    assert json.loads(str(attributes(run)["gen_ai.system_instructions"])) == [
        {"type": "text", "content": "Be brief."}
    ]
    assert json.loads(str(attributes(run)["gen_ai.output.messages"])) == [
        {
            "role": "assistant",
            "parts": [{"type": "text", "content": "Sunny in both."}],
            "finish_reason": "end_turn",
        }
    ]
    paris = attributes(traces.tool_span("toolu_paris"))
    assert json.loads(str(paris["gen_ai.tool.call.arguments"])) == {"city": "Paris"}
    assert paris["gen_ai.tool.call.result"] == "Paris: sunny"


async def test_the_history_is_recorded_in_the_conventions_message_parts(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    runner = build(fake, traces, tracing=Tracing(tracer_provider=traces.provider, content=True))
    await runner.until_done()
    traces.exporter.clear()
    fake.add(text_reply("Bye."))
    runner.push_messages({"role": "user", "content": [{"type": "text", "text": "Thanks."}]})
    await runner.until_done()
    history = json.loads(str(attributes(traces.run())["gen_ai.input.messages"]))
    assert [message["role"] for message in history] == ["user", "assistant", "user", "assistant", "user"]
    assert history[1]["parts"] == [
        {"type": "tool_call", "id": "toolu_paris", "name": "get_weather", "arguments": {"city": "Paris"}},
        {"type": "tool_call", "id": "toolu_berlin", "name": "get_weather", "arguments": {"city": "Berlin"}},
    ]
    assert history[2]["parts"] == [
        {"type": "tool_call_response", "id": "toolu_paris", "response": "Paris: sunny"},
        {"type": "tool_call_response", "id": "toolu_berlin", "response": "Berlin: sunny"},
    ]


# -- configuration ------------------------------------------------------------------------------------------


async def test_without_a_tracer_provider_the_runner_traces_where_the_client_does(traces: Traces) -> None:
    fake = FakeMessagesAPI(two_cities())
    traced_client = fake.async_client(
        open_telemetry={"tracer_provider": traces.provider, "conversation_id": "conv_1"}
    )
    runner = ToolRunner(
        traced_client, model=MODEL, max_tokens=64, messages=[USER], tools=[get_weather], tracing=Tracing()
    )
    await runner.until_done()
    assert attributes(traces.run())["gen_ai.conversation.id"] == "conv_1"
    assert len(traces.spans()) == 5


async def test_a_run_that_is_not_sampled_records_nothing_and_runs_the_same() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider(sampler=ALWAYS_OFF)
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fake = FakeMessagesAPI(two_cities())
    runner = ToolRunner(
        fake.async_client(open_telemetry={"tracer_provider": provider}),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[get_weather],
        tracing=Tracing(tracer_provider=provider, content=True),
    )
    final = await runner.until_done()
    assert final.stop_reason == "end_turn"
    assert exporter.get_finished_spans() == ()


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"content": "yes"}, r"Tracing\(content=...\) takes True or False, not 'yes'"),
        ({"agent_name": ""}, r"Tracing\(agent_name=...\) takes a non-empty str or None, not ''"),
        ({"tracer_provider": object()}, r"takes an OpenTelemetry TracerProvider or None, not 'object'"),
    ],
)
def test_tracing_refuses_what_it_cannot_use(given: dict[str, Any], message: str) -> None:
    with pytest.raises(ParamsError, match=message):
        Tracing(**given)


def test_the_option_takes_a_tracing_or_none() -> None:
    fake = FakeMessagesAPI([])
    options: dict[str, Any] = {"tracing": True}
    with pytest.raises(ParamsError, match=r"tracing must be a Tracing\(...\) or None, not 'bool'"):
        ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], **options)


def test_without_the_opentelemetry_api_asking_for_tracing_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "toolrunner._tracing.otel", raising=False)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    fake = FakeMessagesAPI([])
    with pytest.raises(ParamsError, match=r"pip install 'claude-toolrunner\[otel\]'"):
        ToolRunner(
            fake.async_client(open_telemetry=False),
            model=MODEL,
            max_tokens=64,
            messages=[USER],
            tracing=Tracing(),
        )


# -- nothing paid without tracing ------------------------------------------------------------------------


_IMPORTS = """
import sys
import anthropic
import anyio
before = {name for name in sys.modules if name.startswith("opentelemetry")}
import toolrunner
from toolrunner.testing import FakeMessagesAPI, text_reply

async def main():
    fake = FakeMessagesAPI([text_reply("Hi.")])
    async with fake.async_client(open_telemetry=False) as client:
        options = {"tracing": toolrunner.Tracing()} if sys.argv[1] == "traced" else {}
        runner = toolrunner.ToolRunner(
            client, model="claude-sonnet-4-6", max_tokens=16, messages=[{"role": "user", "content": "Hi"}], **options
        )
        await runner.until_done()

anyio.run(main)
after = {name for name in sys.modules if name.startswith("opentelemetry")}
print("toolrunner._tracing.otel" in sys.modules, sorted(after - before))
"""


@pytest.mark.parametrize("mode", ["plain", "traced"])
def test_toolrunner_imports_nothing_of_opentelemetry_unless_tracing_is_asked_for(mode: str) -> None:
    # anthropic 2.12 imports the OpenTelemetry API itself; toolrunner must add nothing to it.
    result = subprocess.run(
        [sys.executable, "-W", "error", "-c", _IMPORTS, mode], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stderr
    imported_otel, new_modules = result.stdout.split(" ", 1)
    assert imported_otel == ("True" if mode == "traced" else "False")
    if mode == "plain":
        assert new_modules.strip() == "[]"

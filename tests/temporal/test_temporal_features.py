"""What a ``ToolRunner`` does, a run on Temporal does, because both drive the same core: each test
plays one script on both and compares what the service was sent, what ran, and what was heard.

Toolsets (an MCP server's among them: one session per worker), client-side compaction, tool
changes in the history, the events of calls that never reach an activity, and tracing (one trace
across the client, the workflow and the activities, with ``ToolRunner``'s span names and
attributes).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import Tool as MCPTool
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.testing import WorkflowEnvironment

from tests.support.helpers import plain
from tests.temporal.temporal_helpers import MODEL, Browser, member, run_plainly, start, worker
from toolrunner import (
    CompactionControl,
    LoopFinished,
    RunnerEvent,
    ToolCallFinished,
    ToolCallStarted,
    ToolRunner,
    Toolset,
    Tracing,
    tool,
)
from toolrunner.mcp import MCPToolset
from toolrunner.temporal import MemoryPayloadStore
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


def bodies(fake: FakeMessagesAPI) -> list[dict[str, Any]]:
    return [request.body for request in fake.requests]


# -- Toolset objects ---------------------------------------------------------------------------------


class Shelf(Toolset):
    """A toolset that counts its openings and closings; its one tool reads a shelf."""

    def __init__(self) -> None:
        self.opened = 0
        self.closed = 0

        @tool(idempotent=True)
        def read_shelf(shelf: int) -> str:
            """Read what is on a shelf."""
            return f"shelf {shelf}: books"

        super().__init__([read_shelf], name="shelf")

    async def open(self) -> None:
        self.opened += 1

    async def close(self) -> None:
        self.closed += 1


def shelf_script() -> list[ScriptEntry]:
    return [
        tool_reply(tool_call("read_shelf", {"shelf": 1}), tool_call("read_shelf", {"shelf": 2})),
        tool_reply(tool_call("read_shelf", {"shelf": 3})),
        text_reply("Books everywhere."),
    ]


async def test_a_toolset_is_opened_once_per_worker_and_its_calls_are_activities(
    temporal_env: WorkflowEnvironment,
) -> None:
    plain_fake = FakeMessagesAPI(shelf_script())
    async with ToolRunner(plain_fake.async_client(), **PARAMS, tools=[Shelf()]) as runner:
        await runner.until_done()

    shelf, fake = Shelf(), FakeMessagesAPI(shelf_script() * 2)
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[shelf]) as queue:
        # The client names the toolset (its tools are the workers'); two runs share its opening.
        for run_id in ("shelf-1", "shelf-2"):
            run = await start(temporal_env.client, queue, run_id=run_id, tools=[Shelf()])
            await run.result()
        assert (shelf.opened, shelf.closed) == (1, 0)
    assert (shelf.opened, shelf.closed) == (1, 1)  # closed when the worker stopped

    assert bodies(fake)[:3] == bodies(plain_fake)  # the second run's are the same but for the tool_use ids
    assert len(fake.requests) == 6
    assert [definition["name"] for definition in fake.requests[0].tools] == ["read_shelf"]


PARAMS: dict[str, Any] = {
    "model": MODEL,
    "max_tokens": 1024,
    "messages": [{"role": "user", "content": "Go."}],
}


class Counter_(MCPServer[Any]):
    """An MCP server that counts its sessions (each lists the tools once)."""

    def __init__(self) -> None:
        super().__init__("counter", log_level="WARNING")
        self.listings = 0

        @self.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            return a + b

    async def list_tools(self) -> list[MCPTool]:
        self.listings += 1
        return await super().list_tools()


def mcp_script() -> list[ScriptEntry]:
    return [tool_reply(tool_call("add", {"a": 2, "b": 3})), text_reply("5.")]


async def test_an_mcp_toolset_holds_one_session_per_worker(temporal_env: WorkflowEnvironment) -> None:
    plain_fake = FakeMessagesAPI(mcp_script())
    async with ToolRunner(
        plain_fake.async_client(), **PARAMS, tools=[MCPToolset(Counter_(), name="calc")]
    ) as runner:
        await runner.until_done()

    server, fake = Counter_(), FakeMessagesAPI(mcp_script() * 3)
    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=[MCPToolset(server, name="calc")]
    ) as queue:
        for number in range(3):
            run = await start(
                temporal_env.client, queue, run_id=f"mcp-{number}", tools=[MCPToolset(server, name="calc")]
            )
            await run.result()

    assert server.listings == 1  # one session for the three runs' calls
    assert bodies(fake)[:2] == bodies(plain_fake)
    assert len(fake.requests) == 6
    assert (
        fake.requests[1].body["messages"][-1]["content"][0]["content"]
        == plain_fake.requests[1].body["messages"][-1]["content"][0]["content"]
    )


# -- client-side compaction ---------------------------------------------------------------------------

BIG = {"input_tokens": 900, "output_tokens": 200}


@tool
def lookup(q: str) -> str:
    """Look it up."""
    return f"found {q}"


def compaction_script() -> list[ScriptEntry]:
    return [
        tool_reply(tool_call("lookup", {"q": "a"}, id="a")),
        tool_reply(tool_call("lookup", {"q": "b"}, id="b"), usage=BIG),  # over the threshold
        text_reply("<summary>Looked up a and b. " + "Details. " * 200 + "</summary>"),  # a large summary
        tool_reply(tool_call("lookup", {"q": "c"}, id="c"), usage=BIG),  # over it again
        text_reply("<summary>a, b and c.</summary>"),
        text_reply("Done."),
    ]


async def test_client_side_compaction_sends_what_a_tool_runner_sends(
    temporal_env: WorkflowEnvironment,
) -> None:
    control: CompactionControl = {
        "enabled": True,
        "context_token_threshold": 1000,
        "summary_prompt": "Sum up.",
    }
    options: dict[str, Any] = {"system": "Be useful.", "compaction_control": control, "max_iterations": 10}
    plain_fake = FakeMessagesAPI(compaction_script())
    runner = await run_plainly(plain_fake, tools=[lookup], **options)

    fake, store = FakeMessagesAPI(compaction_script()), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[lookup]) as queue:
        run = await start(temporal_env.client, queue, run_id="compacted", tools=[lookup], **options)
        result = await run.result()

    assert bodies(fake) == bodies(plain_fake)
    assert fake.requests[2].tools == []  # the summary request
    assert fake.requests[2].messages[-1] == {"role": "user", "content": "Sum up."}
    assert await result.messages(store) == plain(runner.messages)
    assert (result.requests, result.total) == (runner.requests_sent, runner.usage.total)


# -- tool changes -----------------------------------------------------------------------------------------


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


REMOVAL = {
    "role": "system",
    "content": [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": "weather"}}],
}


def removal_script() -> list[ScriptEntry]:
    return [
        tool_reply(
            tool_call("weather", {"city": "Oslo"}, id="w"), tool_call("lookup", {"q": "Oslo"}, id="l")
        ),
        text_reply("Only the lookup ran."),
    ]


async def test_a_tool_the_history_removed_is_not_run(temporal_env: WorkflowEnvironment) -> None:
    messages = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Weather in Oslo?"},
        REMOVAL,
    ]
    plain_fake = FakeMessagesAPI(removal_script())
    await run_plainly(plain_fake, tools=[weather, lookup], messages=messages)

    fake = FakeMessagesAPI(removal_script())
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[weather, lookup]) as queue:
        run = await start(
            temporal_env.client, queue, run_id="removed", tools=[weather, lookup], messages=messages
        )
        await run.result()

    assert bodies(fake) == bodies(plain_fake)
    results = {block["tool_use_id"]: block for block in fake.requests[1].body["messages"][-1]["content"]}
    assert results["w"]["is_error"] is True
    assert "There is no tool named 'weather'" in results["w"]["content"]
    assert results["l"]["content"] == "found Oslo"


# -- events no activity witnesses -----------------------------------------------------------------------


def family_script() -> list[ScriptEntry]:
    return [
        message_reply(
            [member("navigate", "a"), member("fail", "b"), member("click", "c"), member("type", "d")],
            stop_reason="tool_use",
        ),
        text_reply("The page is gone."),
    ]


def heard(events: Sequence[RunnerEvent]) -> Counter[tuple[str, str | None]]:
    """What the events say, whatever their order (calls run at once report in any order)."""
    return Counter(
        (
            type(event).__name__,
            event.call.id
            if isinstance(event, ToolCallStarted | ToolCallFinished)
            else (event.reason if isinstance(event, LoopFinished) else None),
        )
        for event in events
    )


async def test_the_worker_hears_every_event_a_tool_runner_reports(temporal_env: WorkflowEnvironment) -> None:
    # Calls a failed family member halts are answered "Not executed" in the workflow: no activity
    # runs them, so the workflow forwards their events (and the loop's end) to on_event.
    plain_events: list[RunnerEvent] = []
    await run_plainly(FakeMessagesAPI(family_script()), tools=[Browser()], on_event=plain_events.append)

    events: list[RunnerEvent] = []
    fake = FakeMessagesAPI(family_script())
    async with worker(
        temporal_env,
        fake,
        MemoryPayloadStore(),
        tools=[Browser()],
        on_event=lambda _run_id, event: events.append(event),  # pyright: ignore[reportUnknownLambdaType, reportUnknownArgumentType]
    ) as queue:
        run = await start(temporal_env.client, queue, run_id="family-events", tools=[Browser()])
        await run.result()

    assert heard(events) == heard(plain_events)
    assert heard(events)[("ToolCallStarted", "c")] == 1  # halted: no activity ran it
    assert heard(events)[("LoopFinished", "model")] == 1
    assert isinstance(events[-1], LoopFinished)


# -- tracing ----------------------------------------------------------------------------------------


class Spans:
    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def all(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def ours(self) -> list[ReadableSpan]:
        """toolrunner's spans and the SDK's (``gen_ai.operation.name``), not Temporal's."""
        return [span for span in self.all() if span.attributes and "gen_ai.operation.name" in span.attributes]


def two_cities() -> list[ScriptEntry]:
    return [
        tool_reply(tool_call("weather", {"city": "Paris"}), tool_call("weather", {"city": "Rome"})),
        text_reply("Sunny in both."),
    ]


def shape(span: ReadableSpan) -> tuple[str, dict[str, Any]]:
    """A span's name and attributes, less those that name one run (its id, the tool_use ids)."""
    attributes = dict(span.attributes or {})
    # Temporal's interceptor adds the workflow's ids to the spans a workflow makes.
    for name in (
        "gen_ai.conversation.id",
        "gen_ai.tool.call.id",
        "gen_ai.response.id",
        "temporalWorkflowID",
        "temporalRunID",
    ):
        attributes.pop(name, None)
    return span.name, {
        key: value for key, value in attributes.items() if not key.startswith(("http.", "server.", "url."))
    }


@pytest.fixture
def spans() -> Iterator[Spans]:
    spans = Spans()
    yield spans
    spans.provider.shutdown()


async def test_one_trace_across_client_workflow_and_activities_with_a_tool_runners_spans(
    temporal_env: WorkflowEnvironment, spans: Spans
) -> None:
    tracing = Tracing(agent_name="weather-bot", content=True)
    plain_spans = Spans()
    plain_fake = FakeMessagesAPI(two_cities())
    runner = ToolRunner(
        plain_fake.async_client(open_telemetry={"tracer_provider": plain_spans.provider}),
        **PARAMS,
        tools=[weather],
        tracing=Tracing(agent_name="weather-bot", content=True, tracer_provider=plain_spans.provider),
    )
    await runner.until_done()

    config = temporal_env.client.config()
    config["interceptors"] = [TracingInterceptor(spans.provider.get_tracer("temporal"))]
    client = Client(**config)
    fake = FakeMessagesAPI(two_cities())
    async with worker(
        temporal_env,
        fake,
        MemoryPayloadStore(),
        tools=[weather],
        anthropic_client=fake.async_client(open_telemetry={"tracer_provider": spans.provider}),
        tracer_provider=spans.provider,
        client=client,
    ) as queue:
        run = await start(client, queue, run_id="traced", tools=[weather], tracing=tracing)
        await run.result()

    # toolrunner's spans, and the SDK's, with a ToolRunner's names and attributes.
    assert sorted(map(shape, spans.ours()), key=repr) == sorted(map(shape, plain_spans.ours()), key=repr)
    [agent] = [span for span in spans.ours() if span.name == "invoke_agent weather-bot"]
    assert agent.attributes is not None
    assert agent.attributes["gen_ai.conversation.id"] == "traced"
    # One trace, from the client's StartWorkflow span to the tools' spans.
    everything = spans.all()
    assert len({span.context.trace_id for span in everything if span.context is not None}) == 1
    by_id = {span.context.span_id: span for span in everything if span.context is not None}

    def parent(span: ReadableSpan) -> str:
        assert span.parent is not None
        return by_id[span.parent.span_id].name

    assert {parent(span) for span in spans.ours() if span.name.startswith("execute_tool")} == {
        "RunActivity:toolrunner.tool"
    }
    assert {parent(span) for span in spans.ours() if span.name.startswith("anthropic")} == {
        "RunActivity:toolrunner.request"
    }
    assert parent(agent) == "StartWorkflow:toolrunner.run"


async def test_without_temporals_interceptor_a_traced_run_still_traces_its_tools(
    temporal_env: WorkflowEnvironment, spans: Spans
) -> None:
    # The workflow's span is the interceptor's to make; without it, there is none (and no warning,
    # no span made again at each replay), and the tools' spans have no parent.
    fake = FakeMessagesAPI(two_cities())
    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=[weather], tracer_provider=spans.provider
    ) as queue:
        run = await start(
            temporal_env.client, queue, run_id="traced-alone", tools=[weather], tracing=Tracing()
        )
        assert (await run.result()).end_reason == "model"

    assert sorted(span.name for span in spans.all()) == ["execute_tool weather", "execute_tool weather"]
    assert all(span.parent is None for span in spans.all())

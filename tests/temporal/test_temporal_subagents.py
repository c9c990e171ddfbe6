"""Sub-agents on Temporal (issue 30): a sub-run runs inside its parent's workflow, as the same core
programs as in a ``ToolRunner``. Each test runs one script both ways and compares what was sent,
the state and the usage: one sub-agent, two at once, two levels, a nested approval decided through
the workflow's updates (across a worker's restart), the tree's budget, and segments."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import anyio
import pytest
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.support.helpers import plain
from tests.support.subagents import by_model, lookup, ran, researcher, searcher
from tests.temporal.temporal_helpers import Rendezvous, start, task_queue, worker
from toolrunner import (
    ApprovalDecided,
    Phase,
    RunnerEvent,
    RunState,
    SubAgent,
    SubRunEvent,
    ToolRunner,
    tool,
)
from toolrunner.temporal import (
    MemoryPayloadStore,
    RunHandle,
    RunResult,
    ToolRunnerWorkflow,
    create_worker,
    workflow_runner,
)
from toolrunner.temporal._run_input import run_input  # pyright: ignore[reportPrivateUsage]
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

Scripts = Callable[[], dict[str, list[ScriptEntry]]]


def plain_runner(fake: FakeMessagesAPI, tools: list[Any], **options: Any) -> ToolRunner:
    options.setdefault("model", "claude-parent")
    options.setdefault("max_tokens", 100)
    options.setdefault("messages", [{"role": "user", "content": "Go."}])
    return ToolRunner(fake.async_client(), tools=tools, **options)


async def on_temporal(
    env: WorkflowEnvironment, fake: FakeMessagesAPI, tools: list[Any], run_id: str, **options: Any
) -> tuple[RunResult, RunState, list[RunnerEvent]]:
    """The run on Temporal to its end: its result, its state (the query), the workers' events."""
    events: list[RunnerEvent] = []
    async with worker(env, fake, MemoryPayloadStore(), tools=tools, on_event=listener(events)) as queue:
        options.setdefault("model", "claude-parent")
        options.setdefault("max_tokens", 100)
        run = await start(env.client, queue, run_id=run_id, tools=tools, **options)
        result = await run.result()
        state = await run.state()
    return result, state, events


def listener(events: list[RunnerEvent]) -> Callable[[str, RunnerEvent], None]:
    """A worker's ``on_event`` that keeps the events in ``events``."""

    def listen(run_id: str, event: RunnerEvent) -> None:
        events.append(event)

    return listen


def bodies(fake: FakeMessagesAPI) -> list[str]:
    """What the fake was sent, each request as JSON, in order."""
    return [json.dumps(request.body, sort_keys=True) for request in fake.requests]


def same_run(plain_state: RunState, state: RunState) -> None:
    """The Temporal run's state is the ``ToolRunner``'s: history, usage, sub-runs' summaries, end."""
    ours, theirs = plain(plain_state.to_dict()), state.to_dict()
    for key in ("messages", "usage", "end_reason", "phase", "calls"):
        assert theirs[key] == ours[key], key
    # in the order the sub-runs ended (of calls run at once, in either order)
    assert sorted(theirs["sub_runs"], key=repr) == sorted(ours["sub_runs"], key=repr)


def heard(events: list[RunnerEvent]) -> Counter[tuple[object, ...]]:
    """What the events say (the path, the event's kind, its call), whatever their order."""

    def said(event: RunnerEvent) -> tuple[object, ...]:
        path = event.path if isinstance(event, SubRunEvent) else ()
        inner = event.event if isinstance(event, SubRunEvent) else event
        call = getattr(inner, "call", None)
        return (path, type(inner).__name__, getattr(call, "id", None))

    return Counter(said(event) for event in events)


def one_level() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("searcher", {"task": "Weather in Paris?"}, id="toolu_p1")),
            text_reply("Paris is warm."),
        ],
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
            text_reply("Paris: 20 C, sunny."),
        ],
    }


# -- the workflow's input -------------------------------------------------------------------------


def test_the_workflows_input_carries_a_sub_agents_definition_and_its_tools_flags() -> None:
    run = run_input(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "Go."}], tools=[researcher()]
    )
    (spec,) = run.tools
    assert (spec.name, spec.idempotent, spec.gated) == ("researcher", True, False)
    assert spec.agent == researcher().definition()
    assert spec.tools is not None
    (inner,) = spec.tools
    assert inner.agent == searcher().definition()
    assert inner.tools is not None
    assert [(tool.name, tool.agent) for tool in inner.tools] == [("lookup", None)]


# -- parity with ToolRunner -----------------------------------------------------------------------


async def test_a_sub_agent_call_is_what_a_tool_runner_does(temporal_env: WorkflowEnvironment) -> None:
    ran.clear()
    plain_events: list[RunnerEvent] = []
    plain_fake = FakeMessagesAPI(responder=by_model(one_level()))
    runner = plain_runner(plain_fake, [searcher()], on_event=plain_events.append)
    await runner.until_done()
    assert ran == ["Paris"]

    fake = FakeMessagesAPI(responder=by_model(one_level()))
    result, state, events = await on_temporal(temporal_env, fake, [searcher()], "sub-one")

    assert ran == ["Paris", "Paris"]  # once each way
    assert result.end_reason == "model"
    assert bodies(fake) == bodies(plain_fake)
    same_run(runner.state, state)
    assert [summary.path for summary in state.sub_runs] == [("toolu_p1", "searcher")]
    # the workers hear what the runner's listener heard: the sub-run's events, with its path
    assert heard(events) == heard(plain_events)
    assert heard(events)[(("toolu_p1", "searcher"), "ToolCallFinished", "toolu_c1")] == 1
    assert heard(events)[((), "ToolCallFinished", "toolu_p1")] == 1


def two_at_once() -> Callable[[RecordedRequest], ScriptEntry]:
    """The parent calls the searcher twice in one reply; each sub-run looks its own city up."""

    def respond(request: RecordedRequest) -> ScriptEntry:
        first = len(request.messages) == 1
        if request.body["model"] == "claude-parent":
            if first:
                return tool_reply(
                    tool_call("searcher", {"task": "Paris"}, id="toolu_p1"),
                    tool_call("searcher", {"task": "Rome"}, id="toolu_p2"),
                )
            return text_reply("Both are warm.")
        city = str(request.messages[0]["content"])
        if first:
            return tool_reply(tool_call("meet", {"city": city}, id=f"toolu_{city}"))
        return text_reply(f"{city} is warm.")

    return respond


async def test_two_sub_agent_calls_of_one_reply_run_at_once(temporal_env: WorkflowEnvironment) -> None:
    def meeting() -> SubAgent:
        rendezvous = Rendezvous(2)  # the two sub-runs' tools finish only if they run at once

        @tool
        async def meet(city: str) -> str:
            """Look a city up.

            Args:
                city: The city.
            """
            await rendezvous.meet()
            return f"{city}: 20 C"

        return searcher(tools=[meet])

    plain_fake = FakeMessagesAPI(responder=two_at_once())
    runner = plain_runner(plain_fake, [meeting()])
    await runner.until_done()

    fake = FakeMessagesAPI(responder=two_at_once())
    result, state, _ = await on_temporal(temporal_env, fake, [meeting()], "sub-two")

    assert result.end_reason == "model"
    assert sorted(bodies(fake)) == sorted(bodies(plain_fake))  # the sub-runs' requests interleave
    same_run(runner.state, state)
    assert sorted(summary.path for summary in state.sub_runs) == [
        ("toolu_p1", "searcher"),
        ("toolu_p2", "searcher"),
    ]
    results = fake.requests[-1].messages[-1]["content"]
    assert [block["content"] for block in results] == ["Paris is warm.", "Rome is warm."]


def two_levels() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("researcher", {"task": "Research Paris."}, id="toolu_p1")),
            text_reply("Paris it is."),
        ],
        "claude-mid": [
            tool_reply(tool_call("searcher", {"task": "Weather in Paris?"}, id="toolu_m1")),
            text_reply("Paris is at 20 C."),
        ],
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
            text_reply("20 C in Paris."),
        ],
    }


async def test_a_sub_agent_of_a_sub_agent(temporal_env: WorkflowEnvironment) -> None:
    plain_events: list[RunnerEvent] = []
    plain_fake = FakeMessagesAPI(responder=by_model(two_levels()))
    runner = plain_runner(plain_fake, [researcher()], on_event=plain_events.append)
    await runner.until_done()

    fake = FakeMessagesAPI(responder=by_model(two_levels()))
    result, state, events = await on_temporal(temporal_env, fake, [researcher()], "sub-levels")

    assert result.end_reason == "model"
    assert bodies(fake) == bodies(plain_fake)
    same_run(runner.state, state)
    assert [summary.path for summary in state.sub_runs] == [
        ("toolu_p1", "researcher"),
        ("toolu_p1", "researcher", "toolu_m1", "searcher"),
    ]
    assert heard(events) == heard(plain_events)
    deep = ("toolu_p1", "researcher", "toolu_m1", "searcher")
    assert heard(events)[(deep, "ToolCallStarted", "toolu_c1")] == 1


async def test_a_worker_without_the_sub_agent_fails_the_run_naming_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    from temporalio.client import WorkflowFailureError

    @tool(name="searcher")
    def plain_searcher(task: str) -> str:
        """A tool, not a sub-agent."""
        return task

    # Without it, the run's first request fails (its tools name it); with a tool of its name that is
    # no sub-agent, the sub-run's first request does.
    cases: list[tuple[list[Any], str, list[str]]] = [
        ([lookup], "'searcher' is not registered on this worker", []),
        ([plain_searcher], "'searcher' of this worker is not a sub-agent", ["claude-parent"]),
    ]
    for number, (tools, error, sent) in enumerate(cases):
        fake = FakeMessagesAPI(responder=by_model(one_level()))
        async with worker(temporal_env, fake, MemoryPayloadStore(), tools=tools) as queue:
            run = await start(
                temporal_env.client,
                queue,
                run_id=f"sub-missing-{number}",
                tools=[searcher()],
                model="claude-parent",
                max_tokens=100,
            )
            with pytest.raises(WorkflowFailureError) as failed:
                await run.result()
        assert error in str(failed.value.cause)
        assert [request.body["model"] for request in fake.requests] == sent


# -- approvals ------------------------------------------------------------------------------------

paid: list[int] = []


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount.

    Args:
        amount: How much.
    """
    paid.append(amount)
    return f"paid {amount}"


def coordinator() -> SubAgent:
    specialist = SubAgent(
        name="specialist", description="Pays.", model="claude-sub", max_tokens=200, tools=[pay, lookup]
    )
    return SubAgent(
        name="coordinator",
        description="Hands work out.",
        model="claude-mid",
        max_tokens=200,
        tools=[specialist],
    )


def paying() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("coordinator", {"task": "Settle the bill."}, id="toolu_p1")),
            text_reply("Settled."),
        ],
        "claude-mid": [
            tool_reply(tool_call("specialist", {"task": "Pay 7."}, id="toolu_m1")),
            text_reply("The specialist paid."),
        ],
        "claude-sub": [
            tool_reply(
                tool_call("lookup", {"city": "Oslo"}, id="toolu_c0"),
                tool_call("pay", {"amount": 7}, id="toolu_c1"),
            ),
            text_reply("I paid."),
        ],
    }


PATH = ("toolu_p1", "coordinator", "toolu_m1", "specialist")


async def paused(run: RunHandle) -> RunState:
    """Until the run pauses for decisions (it goes on in the workers: poll its state); its state."""
    with anyio.fail_after(30):  # a guard against a hang, not a timing
        while True:
            state = await run.state()
            if state.phase is Phase.AWAITING:
                return state
            await anyio.sleep(0.02)


async def test_a_nested_approval_is_decided_through_the_workflow_across_a_workers_restart(
    temporal_env: WorkflowEnvironment,
) -> None:
    paid.clear()
    ran.clear()
    plain_fake, plain_events = FakeMessagesAPI(responder=by_model(paying())), list[RunnerEvent]()
    runner = plain_runner(plain_fake, [coordinator()], on_event=plain_events.append)
    async for _ in runner:
        pass
    runner.approve("toolu_c1", input={"amount": 6}, by="ada")
    await runner.until_done()
    assert (paid, ran) == ([6], ["Oslo"])

    fake, store, queue = FakeMessagesAPI(responder=by_model(paying())), MemoryPayloadStore(), task_queue()
    events: list[RunnerEvent] = []
    options: dict[str, Any] = {
        "tools": [coordinator()],
        "anthropic_client": fake.async_client(),
        "store": store,
        "on_event": listener(events),
        "max_cached_workflows": 0,  # the next worker takes the run at once (see docs/temporal.md)
    }
    async with create_worker(temporal_env.client, task_queue=queue, **options):
        run = await start(
            temporal_env.client,
            queue,
            run_id="sub-approval",
            tools=[coordinator()],
            model="claude-parent",
            max_tokens=100,
        )
        state = await paused(run)
        [call] = await run.pending_approvals()
    # The whole tree waits: the parent's call is suspended, its sub-run and the sub-run's too.
    assert state.end_reason == "awaiting_approval"
    assert (call.id, call.name, call.input, call.path) == ("toolu_c1", "pay", {"amount": 7}, PATH)
    record = state.calls["toolu_p1"]
    assert record.status.value == "started"
    assert record.sub_run is not None
    assert record.sub_run.state.calls["toolu_m1"].sub_run is not None
    assert (paid, ran) == ([6], ["Oslo", "Oslo"])  # the call that needs no decision ran

    # Another worker (after a deploy, say) replays the tree and takes the decisions.
    async with create_worker(temporal_env.client, task_queue=queue, **options):
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await run.approve("toolu_c1", input={"amount": "six"})  # checked against the nested tool
        assert "amount" in str(refused.value.cause)
        with pytest.raises(WorkflowUpdateFailedError):
            await run.approve("toolu_nowhere")
        await run.approve("toolu_c1", input={"amount": 6}, by="ada")
        result = await run.result()
        ended = await run.state()
        history = await run.workflow.fetch_history()

    assert result.end_reason == "model"
    assert (paid, ran) == ([6, 6], ["Oslo", "Oslo"])  # the tool ran once, after the decision
    assert bodies(fake) == bodies(plain_fake)
    same_run(runner.state, ended)
    decided = [
        (event.path, event.event.by, event.event.input)
        for event in events
        if isinstance(event, SubRunEvent) and isinstance(event.event, ApprovalDecided)
    ]
    assert decided == [(PATH, "ada", {"amount": 6})]
    assert heard(events) == heard(plain_events)
    # The history replays: the sub-runs' programs decide the same commands again.
    replayer = Replayer(workflows=[ToolRunnerWorkflow], workflow_runner=workflow_runner())
    await replayer.replay_workflow(history)


async def test_a_nested_call_is_denied_or_answered_through_the_workflow(
    temporal_env: WorkflowEnvironment,
) -> None:
    paid.clear()
    fake = FakeMessagesAPI(responder=by_model(paying()))
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[coordinator()]) as queue:
        run = await start(
            temporal_env.client,
            queue,
            run_id="sub-deny",
            tools=[coordinator()],
            model="claude-parent",
            max_tokens=100,
        )
        await paused(run)
        await run.deny("toolu_c1", "Not today.", by="bob")
        result = await run.result()
    assert result.end_reason == "model"
    assert paid == []
    denied = fake.requests[3].messages[-1]["content"][1]  # the specialist's second request
    assert (denied["tool_use_id"], denied["is_error"], denied["content"]) == ("toolu_c1", True, "Not today.")

    fake = FakeMessagesAPI(responder=by_model(paying()))
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[coordinator()]) as queue:
        run = await start(
            temporal_env.client,
            queue,
            run_id="sub-answer",
            tools=[coordinator()],
            model="claude-parent",
            max_tokens=100,
        )
        await paused(run)
        await run.answer("toolu_c1", "paid by hand")
        await run.result()
    assert paid == []
    answered = fake.requests[3].messages[-1]["content"][1]
    assert answered["content"] == "paid by hand"


async def test_a_nested_call_no_one_decides_in_time_is_denied(temporal_env: WorkflowEnvironment) -> None:
    paid.clear()
    fake = FakeMessagesAPI(responder=by_model(paying()))
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[coordinator()]) as queue:
        run = await start(
            temporal_env.client,
            queue,
            run_id="sub-timeout",
            tools=[coordinator()],
            model="claude-parent",
            max_tokens=100,
            approval_timeout=timedelta(hours=8),
        )
        await paused(run)
        await temporal_env.sleep(timedelta(hours=9))  # the test server skips them
        result = await run.result()
    assert result.end_reason == "model"
    assert paid == []
    denied = fake.requests[3].messages[-1]["content"][1]  # the specialist's second request
    assert denied["is_error"] is True
    assert "No decision on this call to 'pay' came within 8 hours" in denied["content"]


# -- one budget -----------------------------------------------------------------------------------


def used(tokens: int) -> dict[str, int]:
    return {
        "input_tokens": tokens - 10,
        "output_tokens": 10,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


def looping() -> Callable[[RecordedRequest], ScriptEntry]:
    """The parent calls the searcher; the searcher looks a city up again and again."""

    def respond(request: RecordedRequest) -> ScriptEntry:
        if request.body["model"] == "claude-parent":
            if len(request.messages) == 1:
                return tool_reply(tool_call("searcher", {"task": "Weather?"}, id="toolu_p1"), usage=used(100))
            return text_reply("No answer.", usage=used(100))
        turn = len(request.messages) // 2
        return tool_reply(
            tool_call("lookup", {"city": "Oslo"}, id=f"toolu_c{turn}"), text="Still looking.", usage=used(100)
        )

    return respond


async def test_the_trees_budget_stops_the_sub_run_and_then_the_parent(
    temporal_env: WorkflowEnvironment,
) -> None:
    plain_fake = FakeMessagesAPI(responder=looping())
    runner = plain_runner(plain_fake, [searcher()], max_total_tokens=350)
    await runner.until_done()
    assert runner.end_reason == "token_budget"

    fake = FakeMessagesAPI(responder=looping())
    result, state, _ = await on_temporal(temporal_env, fake, [searcher()], "sub-budget", max_total_tokens=350)

    assert result.end_reason == "token_budget"
    assert bodies(fake) == bodies(plain_fake)
    same_run(runner.state, state)
    assert len(fake.requests) == 4  # the parent's one, the searcher's three: the tree has 400 tokens
    answer = state.messages[-1]["content"][0]
    assert answer["is_error"] is True
    assert "budget of the whole run" in str(answer["content"])
    (summary,) = state.sub_runs
    assert (summary.end_reason, len(summary.usage)) == ("token_budget", 3)
    assert result.requests == 1  # the run's own requests, as runner.usage counts them


# -- segments -------------------------------------------------------------------------------------


def every_turn() -> Callable[[RecordedRequest], ScriptEntry]:
    """The parent calls the searcher at every turn; each sub-run looks a city up and answers."""

    def respond(request: RecordedRequest) -> ScriptEntry:
        turn = len(request.messages) // 2
        if request.body["model"] == "claude-parent":
            return tool_reply(tool_call("searcher", {"task": f"City {turn}?"}, id=f"toolu_p{turn}"))
        task = str(request.messages[0]["content"])
        if turn == 0:
            return tool_reply(tool_call("lookup", {"city": task}, id=f"toolu_c{task[5:-1]}"))
        return text_reply(f"{task} is warm.")

    return respond


async def test_segments_carry_the_trees_summaries_and_its_budget(temporal_env: WorkflowEnvironment) -> None:
    plain_fake = FakeMessagesAPI(responder=every_turn())
    runner = plain_runner(plain_fake, [searcher()], max_iterations=25)
    await runner.until_done()
    assert runner.end_reason == "max_iterations"

    fake = FakeMessagesAPI(responder=every_turn())
    result, state, _ = await on_temporal(
        temporal_env, fake, [searcher()], "sub-segments", max_iterations=25, continue_as_new_events=100
    )

    assert result.end_reason == "max_iterations"
    assert bodies(fake) == bodies(plain_fake)
    assert len(fake.requests) == 25  # the tree's requests: the limit counted them over the segments
    assert state.to_dict()["sub_runs"] == plain(runner.state.to_dict())["sub_runs"]
    assert result.requests == runner.requests_sent == 9
    history = await temporal_env.client.get_workflow_handle("sub-segments").fetch_history()
    started = history.events[0].workflow_execution_started_event_attributes
    assert started.continued_execution_run_id  # the run went on in a new segment


# -- one trace ------------------------------------------------------------------------------------


async def test_a_sub_run_has_a_tool_runners_spans(temporal_env: WorkflowEnvironment) -> None:
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from temporalio.client import Client
    from temporalio.contrib.opentelemetry import TracingInterceptor

    from tests.temporal.test_temporal_features import shape
    from toolrunner import Tracing

    def exported() -> tuple[TracerProvider, InMemorySpanExporter]:
        exporter, provider = InMemorySpanExporter(), TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        return provider, exporter

    def ours(exporter: InMemorySpanExporter) -> list[ReadableSpan]:
        """toolrunner's spans and the SDK's (``gen_ai.operation.name``), not Temporal's."""
        return [
            span
            for span in exporter.get_finished_spans()
            if span.attributes and "gen_ai.operation.name" in span.attributes
        ]

    plain_provider, plain_exporter = exported()
    plain_fake = FakeMessagesAPI(responder=by_model(two_levels()))
    runner = ToolRunner(
        plain_fake.async_client(open_telemetry={"tracer_provider": plain_provider}),
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=[researcher()],
        tracing=Tracing(agent_name="coordinator", content=True, tracer_provider=plain_provider),
    )
    await runner.until_done()

    provider, exporter = exported()
    config = temporal_env.client.config()
    config["interceptors"] = [TracingInterceptor(provider.get_tracer("temporal"))]
    client = Client(**config)
    fake = FakeMessagesAPI(responder=by_model(two_levels()))
    async with worker(
        temporal_env,
        fake,
        MemoryPayloadStore(),
        tools=[researcher()],
        anthropic_client=fake.async_client(open_telemetry={"tracer_provider": provider}),
        tracer_provider=provider,
        client=client,
    ) as queue:
        run = await start(
            client,
            queue,
            run_id="sub-traced",
            tools=[researcher()],
            model="claude-parent",
            max_tokens=100,
            tracing=Tracing(agent_name="coordinator", content=True),
        )
        await run.result()
    plain_provider.shutdown()
    provider.shutdown()

    names = sorted(span.name for span in ours(exporter))
    assert names.count("invoke_agent researcher") == names.count("invoke_agent searcher") == 1
    assert sorted(map(shape, ours(exporter)), key=repr) == sorted(map(shape, ours(plain_exporter)), key=repr)


async def test_a_sub_agents_transport_params_reach_its_requests_from_the_worker(
    temporal_env: WorkflowEnvironment,
) -> None:
    """A sub-agent's headers (a secret, say) are never in a state nor its definition, so the worker's
    ``SubAgent`` gives them: each sub-run's request carries its own and its parents', as in a
    ``ToolRunner``, and the workflow's history never holds them."""

    def agents() -> list[SubAgent]:
        inner = searcher(params={"extra_headers": {"X-Inner": "SECRET-INNER"}})
        return [
            SubAgent(
                name="researcher",
                description="Researches, with a searcher.",
                model="claude-mid",
                max_tokens=200,
                tools=[inner],
                params={"extra_headers": {"X-Outer": "SECRET-OUTER"}},
            )
        ]

    def headers(fake: FakeMessagesAPI) -> list[tuple[str, str | None, str | None]]:
        return [
            (str(request.body["model"]), request.headers.get("x-outer"), request.headers.get("x-inner"))
            for request in fake.requests
        ]

    plain_fake = FakeMessagesAPI(responder=by_model(two_levels()))
    await plain_runner(plain_fake, agents()).until_done()
    fake = FakeMessagesAPI(responder=by_model(two_levels()))
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=agents()) as queue:
        run = await start(
            temporal_env.client,
            queue,
            run_id="sub-headers",
            tools=agents(),
            model="claude-parent",
            max_tokens=100,
        )
        assert (await run.result()).end_reason == "model"
        history = await temporal_env.client.get_workflow_handle("sub-headers").fetch_history()

    assert headers(fake) == headers(plain_fake)
    assert ("claude-sub", "SECRET-OUTER", "SECRET-INNER") in headers(fake)
    assert ("claude-mid", "SECRET-OUTER", None) in headers(fake)
    assert ("claude-parent", None, None) in headers(fake)
    assert b"SECRET-" not in history.to_json().encode()

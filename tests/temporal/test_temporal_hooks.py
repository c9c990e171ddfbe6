"""Hooks and per-tool call limits on Temporal (``create_worker(hooks={name: Hooks(...)})``,
``start_run(hooks=name, max_calls=...)``): the same requests, decisions and events as a
``ToolRunner`` with the same hooks; a hook that fails fails closed as there; a refused request
fails the run with ``RequestRefusedError``; what a hook decided is recorded, so a worker whose hook
changed since does not change a run's past; and options that cannot work are refused."""

from __future__ import annotations

import logging
from collections import Counter
from typing import Any, cast

import anyio
import pydantic
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from temporalio.client import Client, WorkflowFailureError
from temporalio.contrib.opentelemetry import TracingInterceptor
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from tests.temporal.temporal_helpers import fast_retries, run_plainly, start, worker
from tests.temporal.test_temporal_segments import segment_input, segments
from toolrunner import (
    Deny,
    HookDecided,
    Hooks,
    LoopFinished,
    ParamsError,
    RequestInfo,
    RequestRefusedError,
    RunnerEvent,
    RunWith,
    ToolCallInfo,
    Tracing,
    tool,
)
from toolrunner.temporal import (
    MemoryPayloadStore,
    ToolRunnerWorkflow,
    create_worker,
    workflow_runner,
)
from toolrunner.temporal._run_input import run_input
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

asked: Counter[str] = Counter()
ran: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> None:
    asked.clear()
    ran.clear()


@tool
def read(path: str) -> str:
    """Read a file."""
    ran.append(path)
    return f"contents of {path}"


def guard(info: ToolCallInfo) -> Deny | RunWith | None:
    asked[f"before {info.id}"] += 1
    given = cast("dict[str, object]", info.input)
    path = str(given.get("path", ""))
    if path.startswith("/etc"):
        return Deny(f"{path} is off limits")
    if path.startswith("~"):
        return RunWith({"path": "/home/ada" + path[1:]})
    return None


async def redact(info: ToolCallInfo, block: Any) -> str | None:  # an async hook
    asked[f"after {info.id}"] += 1
    return "[redacted]" if "secret" in str(info.input) else None


def no_maybe(answer: Any) -> Deny | None:
    asked["check"] += 1
    text = "".join(block.text for block in answer.content if block.type == "text")
    return Deny("Give a definite answer.") if "maybe" in text else None


HOOKS = Hooks(before_tool_call=guard, after_tool_call=redact, check_output=no_maybe)


def script() -> list[ScriptEntry]:
    return [
        tool_reply(
            tool_call("read", {"path": "/etc/passwd"}, id="toolu_1"),
            tool_call("read", {"path": "~/notes"}, id="toolu_2"),
            tool_call("read", {"path": "/srv/secret"}, id="toolu_3"),
            tool_call("read", {"path": "/srv/a"}, id="toolu_4"),
            tool_call("read", {"path": "/srv/b"}, id="toolu_5"),
        ),
        text_reply("maybe it is fine"),
        text_reply("It is fine."),
    ]


def decisions(events: list[RunnerEvent]) -> list[tuple[str, str | None, str]]:
    return sorted(
        (event.hook, None if event.call is None else event.call.id, event.decision)
        for event in events
        if isinstance(event, HookDecided)
    )


async def test_a_run_with_hooks_and_limits_does_what_a_tool_runner_does(
    temporal_env: WorkflowEnvironment,
) -> None:
    plain_heard: list[RunnerEvent] = []
    plain_fake = FakeMessagesAPI(script())
    runner = await run_plainly(
        plain_fake, tools=[read], hooks=HOOKS, max_calls={"read": 3}, on_event=plain_heard.append
    )
    plain_ran, plain_asked = sorted(ran), Counter(asked)
    ran.clear()
    asked.clear()

    heard: list[RunnerEvent] = []

    def listener(run_id: str, event: RunnerEvent) -> None:
        heard.append(event)

    fake = FakeMessagesAPI(script())
    async with worker(
        temporal_env,
        fake,
        MemoryPayloadStore(),
        tools=[read],
        hooks={"guarded": HOOKS},
        on_event=listener,
    ) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="hooked", tools=[read], hooks="guarded", max_calls={"read": 3}
        )
        result = await handle.result()
        state = await handle.state()
        history = await handle.workflow.fetch_history()

    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert (result.end_reason, result.requests) == ("model", 3)
    # The hooks' answers are in the history: a replay (no worker, no hook asked) ends as the run did.
    asked_before = Counter(asked)
    replay = await Replayer(
        workflows=[ToolRunnerWorkflow], workflow_runner=workflow_runner()
    ).replay_workflow(history)
    assert replay.replay_failure is None
    assert asked == asked_before
    # toolu_1 took a place under the limit and was denied (it keeps it for the turn: docs/hooks.md)
    assert sorted(ran) == plain_ran == ["/home/ada/notes", "/srv/secret"]
    assert asked == plain_asked  # each hook asked once per call, as in-process
    assert decisions(heard) == decisions(plain_heard)
    assert state.call_counts == runner.state.call_counts == {"read": 2}
    assert decisions(heard) == [
        ("after_tool_call", "toolu_3", "replaced"),
        ("before_tool_call", "toolu_1", "denied"),
        ("before_tool_call", "toolu_2", "rewritten"),
        ("before_tool_call", "toolu_3", "run"),
        ("check_output", None, "refused"),
        ("max_calls", "toolu_4", "limited"),
        ("max_calls", "toolu_5", "limited"),
    ]
    results = fake.requests[1].body["messages"][-1]["content"]
    assert results[0]["content"] == "/etc/passwd is off limits"
    assert results[2]["content"] == "[redacted]"


def broken(info: ToolCallInfo) -> None:
    raise ValueError("the policy service is down")


async def test_a_hook_that_raises_on_its_worker_fails_closed_as_in_a_tool_runner(
    temporal_env: WorkflowEnvironment,
) -> None:
    entries: list[ScriptEntry] = [tool_reply(tool_call("read", {"path": "/srv/a"})), text_reply("ok")]
    plain_fake = FakeMessagesAPI(entries)
    await run_plainly(plain_fake, tools=[read], hooks=Hooks(before_tool_call=broken))
    fake = FakeMessagesAPI(entries)
    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=[read], hooks={"b": Hooks(before_tool_call=broken)}
    ) as queue:
        handle = await start(temporal_env.client, queue, run_id="hook-raises", tools=[read], hooks="b")
        await handle.result()
    assert ran == []  # denied both times: it never ran
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    reason = fake.requests[1].body["messages"][-1]["content"][0]["content"]
    assert "ValueError: the policy service is down" in reason


async def test_a_refused_request_fails_the_run_with_request_refused_error(
    temporal_env: WorkflowEnvironment,
) -> None:
    seen: list[RequestInfo] = []

    def budget(info: RequestInfo) -> Deny | None:
        seen.append(info)
        return Deny("one request is enough") if info.requests_sent >= 1 else None

    fake = FakeMessagesAPI([tool_reply(tool_call("read", {"path": "/srv/a"})), text_reply("ok")])
    store = MemoryPayloadStore()
    async with worker(
        temporal_env,
        fake,
        store,
        tools=[read],
        hooks={"budget": Hooks(before_request=budget)},
        inline_limit=8,
    ) as queue:
        handle = await start(temporal_env.client, queue, run_id="refused", tools=[read], hooks="budget")
        with pytest.raises(RequestRefusedError) as caught:
            await handle.result()
    assert caught.value.reason == "one request is enough"
    assert "start a new run" in str(caught.value)  # a Temporal run cannot be iterated again
    assert len(fake.requests) == 1
    # The hook saw the whole history (large blocks read back from the store), as a ToolRunner's does.
    assert [info.requests_sent for info in seen] == [0, 1]
    last = seen[-1].messages
    assert last[0] == {"role": "user", "content": "Go."}
    assert last[-1]["content"][0]["content"] == "contents of /srv/a"
    assert seen[-1].params["model"] == "claude-sonnet-4-6"
    assert seen[-1].tools == ("read",)


class Verdict(pydantic.BaseModel):
    ok: bool


async def test_check_output_sees_the_typed_answer_and_shares_its_retries(
    temporal_env: WorkflowEnvironment,
) -> None:
    seen: list[Any] = []

    def must_be_ok(answer: Any) -> Deny | None:
        seen.append(answer.parsed_output)
        return None if answer.parsed_output.ok else Deny("Look again.")

    entries: list[ScriptEntry] = [text_reply('{"ok": false}'), text_reply('{"ok": true}')]
    fake = FakeMessagesAPI(entries)
    async with worker(
        temporal_env,
        fake,
        MemoryPayloadStore(),
        tools=[],
        output_types=[Verdict],
        hooks={"checked": Hooks(check_output=must_be_ok)},
    ) as queue:
        handle = await start(
            temporal_env.client,
            queue,
            run_id="checked",
            tools=[],
            hooks="checked",
            output_format="Verdict",
            output_retries=1,
        )
        result = await handle.result()
    assert seen == [Verdict(ok=False), Verdict(ok=True)]
    assert result.output == {"ok": True}
    assert "Look again." in str(fake.requests[1].body["messages"][-1]["content"])


async def test_decisions_are_recorded_and_carried_across_segments(temporal_env: WorkflowEnvironment) -> None:
    """A run long enough to continue as new: the plan (which hooks the name stands for) and the
    call counts go with it, and the plan is asked for once."""
    turns = 12
    entries: list[ScriptEntry] = [
        tool_reply(tool_call("read", {"path": f"/srv/{n}"}, id=f"toolu_{n}")) for n in range(turns)
    ]
    entries.append(text_reply("done"))
    fake = FakeMessagesAPI(entries)
    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=[read], hooks={"guarded": HOOKS}
    ) as queue:
        handle = await start(
            temporal_env.client,
            queue,
            run_id="hooked-segments",
            tools=[read],
            hooks="guarded",
            max_calls={"read": 10},
            continue_as_new_events=100,
        )
        result = await handle.result()
        state = await handle.state()
        histories = await segments(temporal_env, handle)
    assert len(histories) > 1
    assert segment_input(histories[-1])["hooks"]["plan"] == [
        "before_tool_call",
        "after_tool_call",
        "check_output",
    ]
    plans = [
        event
        for history in histories
        for event in history.events
        if event.activity_task_scheduled_event_attributes.activity_type.name == "toolrunner.hook"
        and b'"plan"' in event.activity_task_scheduled_event_attributes.input.payloads[0].data
    ]
    assert len(plans) == 1
    assert result.end_reason == "model"
    assert state.call_counts == {"read": 10}
    assert len(ran) == 10
    assert all(asked[f"before toolu_{n}"] == 1 for n in range(10))


async def test_options_that_cannot_work_are_refused(temporal_env: WorkflowEnvironment) -> None:
    with pytest.raises(ParamsError, match="register them on the workers"):
        await start(temporal_env.client, "q", run_id="x", tools=[read], hooks=HOOKS)
    with pytest.raises(ParamsError, match="must name hooks"):
        await start(temporal_env.client, "q", run_id="x", tools=[read], hooks="")
    with pytest.raises(ParamsError, match="max_calls"):
        await start(temporal_env.client, "q", run_id="x", tools=[read], max_calls={"read": -1})
    with pytest.raises(ParamsError, match="mapping of names to Hooks"):
        create_worker(
            temporal_env.client,
            task_queue="q",
            tools=[read],
            anthropic_client=FakeMessagesAPI([]).async_client(),
            store=MemoryPayloadStore(),
            hooks=HOOKS,  # type: ignore[arg-type]
        )


async def test_a_run_whose_hooks_no_worker_has_fails_with_what_to_do(
    temporal_env: WorkflowEnvironment,
) -> None:
    fake = FakeMessagesAPI([text_reply("hi")])
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[read], hooks={"a": HOOKS}) as queue:
        handle = await start(temporal_env.client, queue, run_id="unhooked", tools=[read], hooks="missing")
        with pytest.raises(WorkflowFailureError) as caught:
            await handle.result()
    assert "not registered on this worker" in str(caught.value.cause)
    assert fake.requests == []


async def test_a_traced_call_the_hooks_let_run_carries_their_decision(
    temporal_env: WorkflowEnvironment,
) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fake = FakeMessagesAPI([*script()[:1], text_reply("It is fine.")])
    async with worker(
        temporal_env,
        fake,
        MemoryPayloadStore(),
        tools=[read],
        hooks={"guarded": Hooks(before_tool_call=guard)},
        tracer_provider=provider,
    ) as queue:
        handle = await start(
            temporal_env.client,
            queue,
            run_id="hooked-traced",
            tools=[read],
            hooks="guarded",
            tracing=Tracing(),
        )
        await handle.result()
    decided = sorted(
        str((span.attributes or {}).get("toolrunner.tool.hook"))
        for span in exporter.get_finished_spans()
        if span.name == "execute_tool read"
    )
    assert decided == ["rewritten", "run", "run", "run"]  # toolu_1, denied, has no tool activity


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    ran.append(f"pay {amount}")
    return "paid"


async def test_a_worker_without_the_runs_hook_says_so_in_the_reason(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The run started on a worker with the hooks, and goes on (after a pause) on one deployed
    without that hook: the question is retried, then fails closed with what is missing."""
    fake = FakeMessagesAPI([tool_reply(tool_call("pay", {"amount": 5}, id="p")), text_reply("ok")])
    store = MemoryPayloadStore()
    options: dict[str, Any] = {"max_cached_workflows": 0}  # a new worker takes the run's next task
    paused = anyio.Event()

    def listen(run_id: str, event: RunnerEvent) -> None:
        if isinstance(event, LoopFinished) and event.reason == "awaiting_approval":
            paused.set()

    async with worker(
        temporal_env,
        fake,
        store,
        tools=[pay],
        hooks={"g": Hooks(before_tool_call=guard)},
        on_event=listen,
        **options,
    ) as queue:
        handle = await start(
            temporal_env.client,
            queue,
            run_id="hooks-gone",
            tools=[pay],
            hooks="g",
            activity_options=fast_retries(),
        )
        with anyio.fail_after(30):  # a guard against a hang, not a timing
            await paused.wait()
    async with create_worker(
        temporal_env.client,
        task_queue=queue,
        tools=[pay],
        anthropic_client=fake.async_client(),
        store=store,
        hooks={"g": Hooks(check_output=no_maybe)},
        **options,
    ):
        await handle.approve("p")
        result = await handle.result()
    assert result.end_reason == "model"
    assert ran == []  # denied: fail closed
    reason = fake.requests[1].body["messages"][-1]["content"][0]["content"]
    assert "HooksNotRegistered" in reason
    assert "no before_tool_call hook" in reason


async def test_a_misspelt_limit_is_logged_as_in_a_tool_runner(
    temporal_env: WorkflowEnvironment, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="toolrunner"):
        run_input(tools=[read], model="m", max_tokens=1, messages=[], max_calls={"raed": 1})
    assert "'raed'" in caplog.text


def stopped_spans(exporter: InMemorySpanExporter) -> list[tuple[str, dict[str, Any]]]:
    """The spans of the calls the hooks stopped: their names and attributes (less those Temporal's
    interceptor adds to every span of a workflow)."""
    found = [
        (
            span.name,
            {key: value for key, value in (span.attributes or {}).items() if not key.startswith("temporal")},
        )
        for span in exporter.get_finished_spans()
        if (span.attributes or {}).get("toolrunner.tool.hook") in ("denied", "limited")
    ]
    return sorted(found, key=repr)


async def test_a_call_the_hooks_stopped_has_the_span_a_tool_runner_gives_it(
    temporal_env: WorkflowEnvironment,
) -> None:
    tracing = Tracing(content=True)
    plain_exporter, plain_provider = InMemorySpanExporter(), TracerProvider()
    plain_provider.add_span_processor(SimpleSpanProcessor(plain_exporter))
    await run_plainly(
        FakeMessagesAPI(script()),
        tools=[read],
        hooks=HOOKS,
        max_calls={"read": 3},
        tracing=Tracing(content=True, tracer_provider=plain_provider),
    )
    exporter, provider = InMemorySpanExporter(), TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    config = temporal_env.client.config()
    config["interceptors"] = [TracingInterceptor(provider.get_tracer("temporal"))]
    client = Client(**config)
    async with worker(
        temporal_env,
        FakeMessagesAPI(script()),
        MemoryPayloadStore(),
        tools=[read],
        hooks={"guarded": HOOKS},
        tracer_provider=provider,
        client=client,
    ) as queue:
        handle = await start(
            client,
            queue,
            run_id="stopped-traced",
            tools=[read],
            hooks="guarded",
            max_calls={"read": 3},
            tracing=tracing,
        )
        await handle.result()
    stopped = stopped_spans(exporter)
    assert [
        (name, attributes["gen_ai.tool.call.id"], attributes["toolrunner.tool.hook"])
        for name, attributes in stopped
    ] == [
        ("execute_tool read", "toolu_1", "denied"),
        ("execute_tool read", "toolu_4", "limited"),
        ("execute_tool read", "toolu_5", "limited"),
    ]
    assert stopped == stopped_spans(plain_exporter)  # the same names and attributes as in-process

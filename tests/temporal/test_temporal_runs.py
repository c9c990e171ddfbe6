"""Runs on Temporal do what a ``ToolRunner`` does: the same requests, the same results, the same ends."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import anyio
import pytest
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ActivityError
from temporalio.testing import WorkflowEnvironment

from tests.support.helpers import plain
from tests.temporal.temporal_helpers import (
    MODEL,
    Browser,
    Rendezvous,
    fast_retries,
    member,
    run_plainly,
    start,
    worker,
)
from toolrunner import (
    CheckpointError,
    Phase,
    RunnerEvent,
    ToolContext,
    ToolError,
    ToolRunner,
    ToolRunnerError,
    tool,
)
from toolrunner.temporal import MemoryPayloadStore
from toolrunner.testing import (
    FakeMessagesAPI,
    ScriptEntry,
    fault,
    message_reply,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio


class _AnyKey:
    """Equal to any payload key (a SHA-256 hex digest)."""

    def __eq__(self, other: object) -> bool:
        return isinstance(other, str) and len(other) == 64

    def __hash__(self) -> int:
        return 0


ANY_KEY = _AnyKey()


def cause_of(failure: WorkflowFailureError) -> BaseException | None:
    """What made the run fail: the error inside the failed activity."""
    return failure.cause.__cause__ if isinstance(failure.cause, ActivityError) else failure.cause


def conversation(**tools: Any) -> list[ScriptEntry]:
    """Three calls at once; then a sequential tool's call between two others, a call to a raw
    definition, a call to no tool, a call with a bad input and a tool that raises; then an answer."""
    return [
        tool_reply(*(tool_call("weather", {"city": city}) for city in ("Paris", "Rome", "Oslo"))),
        tool_reply(
            tool_call("weather", {"city": "Lima"}),
            tool_call("log", {"line": "checked"}),
            tool_call("weather", {"city": "Kyiv"}),
            tool_call("web_search", {"query": "tides"}),
            tool_call("teleport", {"to": "Mars"}),
            tool_call("weather", {"town": "Nice"}),
            tool_call("book", {"table": 4}),
        ),
        text_reply("Sunny everywhere."),
    ]


def make_tools(meeting: Rendezvous, lines: list[str]) -> list[Any]:
    @tool
    async def weather(city: str) -> str:
        """The weather in a city."""
        if city in ("Paris", "Rome", "Oslo"):
            await meeting.meet()
        return f"{city}: sunny"

    @tool(sequential=True)
    def log(line: str) -> str:
        """Write a line to the log."""
        lines.append(line)
        return "logged"

    @tool
    async def book(table: int) -> str:
        """Book a table."""
        raise ToolError(f"Table {table} is taken; try another.")

    return [weather, log, book, {"type": "web_search_20250305", "name": "web_search"}]


async def test_a_run_with_concurrent_calls_sends_the_requests_a_tool_runner_sends(
    temporal_env: WorkflowEnvironment,
) -> None:
    plain_fake = FakeMessagesAPI(conversation())
    runner = await run_plainly(plain_fake, tools=make_tools(Rendezvous(3), []), max_iterations=10)

    fake, lines = FakeMessagesAPI(conversation()), list[str]()
    tools = make_tools(Rendezvous(3), lines)
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=tools) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="same-requests", tools=tools, max_iterations=10
        )
        result = await handle.result()

    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert len(fake.requests) == 3
    assert lines == ["checked"]
    assert (result.end_reason, result.requests) == (runner.end_reason, runner.requests_sent)
    assert result.message is not None
    assert runner.last_message is not None
    assert result.message.content == runner.last_message.content
    assert result.total == runner.usage.total


def family_conversation() -> list[ScriptEntry]:
    """Browser members around ordinary calls, one member failing; then browser members again (a new
    reply: the failure halted its own reply's members only); then an answer."""
    return [
        message_reply(
            [
                {"type": "tool_use", "id": "w1", "name": "weather", "input": {"city": "Lima"}},
                member("navigate", "a", url="https://example.com"),
                member("fail", "b"),
                {"type": "tool_use", "id": "w2", "name": "weather", "input": {"city": "Kyiv"}},
                member("click", "c"),
                {"type": "tool_use", "id": "l", "name": "log", "input": {"line": "clicked"}},
                member("type", "d", text="hi"),
            ],
            stop_reason="tool_use",
        ),
        message_reply([member("reload", "e"), member("click", "f")], stop_reason="tool_use"),
        text_reply("The page was gone; it is back."),
    ]


async def test_a_toolset_familys_calls_run_in_order_and_halt_as_in_a_tool_runner(
    temporal_env: WorkflowEnvironment,
) -> None:
    # ToolRunner runs a family's members one at a time, in order, and answers the family's calls
    # after a failed one "Not executed" without running them: the workflow must do the same.
    plain_fake, plain_browser = FakeMessagesAPI(family_conversation()), Browser()
    runner = await run_plainly(plain_fake, tools=[*make_tools(Rendezvous(3), []), plain_browser])

    fake, browser, lines = FakeMessagesAPI(family_conversation()), Browser(), list[str]()
    tools = [*make_tools(Rendezvous(3), lines), browser]
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=tools) as queue:
        handle = await start(temporal_env.client, queue, run_id="family", tools=tools)
        result = await handle.result()

    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert browser.calls == plain_browser.calls == ["navigate", "fail", "reload", "click"]
    assert lines == ["clicked"]
    halted = "Not executed: an earlier action in this turn failed."
    assert [
        (block["tool_use_id"], block["content"], block.get("is_error", False), block.get("toolset_name"))
        for block in fake.requests[1].body["messages"][-1]["content"]
    ] == [
        ("w1", "Lima: sunny", False, None),
        ("a", "navigate done", False, "browser"),
        ("b", "the page is gone", True, "browser"),
        ("w2", "Kyiv: sunny", False, None),
        ("c", halted, True, "browser"),
        ("l", "logged", False, None),
        ("d", halted, True, "browser"),
    ]
    assert (result.end_reason, result.requests) == (runner.end_reason, runner.requests_sent)


async def test_the_runs_state_and_whole_history_can_be_read(temporal_env: WorkflowEnvironment) -> None:
    fake, store = FakeMessagesAPI(conversation()), MemoryPayloadStore()
    tools = make_tools(Rendezvous(3), [])
    async with worker(temporal_env, fake, store, tools=tools) as queue:
        handle = await start(temporal_env.client, queue, run_id="inspect", tools=tools)
        result = await handle.result()
        state = await handle.state()
    runner = await run_plainly(FakeMessagesAPI(conversation()), tools=make_tools(Rendezvous(3), []))

    assert state.phase is Phase.DONE
    assert state.end_reason == "model"
    assert len(state.messages) == len(runner.messages)
    assert await result.messages(store) == plain(runner.messages)


async def test_a_limit_ends_the_run_with_one_last_request_that_may_not_call_tools(
    temporal_env: WorkflowEnvironment,
) -> None:
    def script() -> list[ScriptEntry]:
        return [*(tool_reply(tool_call("weather", {"city": "Bern"})) for _ in range(2)), text_reply("Done.")]

    plain_fake = FakeMessagesAPI(script())
    tools = make_tools(Rendezvous(3), [])
    runner = await run_plainly(plain_fake, tools=tools, max_iterations=2, on_limit="final_answer")

    fake = FakeMessagesAPI(script())
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=tools) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="limit", tools=tools, max_iterations=2, on_limit="final_answer"
        )
        result = await handle.result()

    assert fake.requests[-1].body["tool_choice"] == {"type": "none"}
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert result.end_reason == runner.end_reason == "max_iterations"


async def test_the_close_signal_keeps_the_reply_and_runs_none_of_its_tools(
    temporal_env: WorkflowEnvironment,
) -> None:
    asked, release = anyio.Event(), anyio.Event()
    ran: list[str] = []

    async def reply_later(request: Any) -> ScriptEntry:
        asked.set()
        await release.wait()
        return tool_reply(tool_call("note", {"text": "hi"}))

    @tool
    def note(text: str) -> str:
        """Note something."""
        ran.append(text)
        return "noted"

    fake, store = FakeMessagesAPI(responder=reply_later), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[note]) as queue:
        handle = await start(temporal_env.client, queue, run_id="close", tools=[note])
        await asked.wait()
        await handle.close()
        release.set()
        result = await handle.result()

    assert result.end_reason == "closed"
    assert ran == []
    assert [message["role"] for message in await result.messages(store)] == ["user", "assistant"]


async def test_a_run_cannot_take_the_name_of_another(temporal_env: WorkflowEnvironment) -> None:
    fake = FakeMessagesAPI([text_reply("Hello.")])
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[]) as queue:
        run = await start(temporal_env.client, queue, run_id="taken", tools=[])
        await run.result()
        with pytest.raises(
            CheckpointError, match=r"a run named 'taken' exists already .* get_run\(client, 'taken'\)"
        ):
            await start(temporal_env.client, queue, run_id="taken", tools=[])
    assert len(fake.requests) == 1


async def test_a_retryable_error_is_retried_by_temporal_and_not_by_the_sdk(
    temporal_env: WorkflowEnvironment,
) -> None:
    fake = FakeMessagesAPI([fault(529), fault(500), text_reply("Hello.")])
    store = MemoryPayloadStore()
    # The worker's client would retry twice itself; inside the activity its retries are off.
    async with worker(
        temporal_env, fake, store, tools=[], anthropic_client=fake.async_client(max_retries=2)
    ) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="retried", tools=[], activity_options=fast_retries()
        )
        result = await handle.result()
        history = await handle.workflow.fetch_history()

    assert result.end_reason == "model"
    assert len(fake.requests) == 3
    attempts = [
        event.activity_task_started_event_attributes.attempt
        for event in history.events
        if event.HasField("activity_task_started_event_attributes")
    ]
    assert attempts == [3]  # one activity, completed at its third attempt


async def test_a_request_the_service_refuses_fails_the_run_at_once(temporal_env: WorkflowEnvironment) -> None:
    fake = FakeMessagesAPI([fault(400, message="messages: bad")])
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[]) as queue:
        handle = await start(
            temporal_env.client, queue, run_id="refused", tools=[], activity_options=fast_retries()
        )
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()

    assert len(fake.requests) == 1
    assert "messages: bad" in str(cause_of(failure.value))


async def test_a_tool_missing_on_the_worker_fails_the_run_with_a_clear_error(
    temporal_env: WorkflowEnvironment,
) -> None:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        return key

    fake = FakeMessagesAPI([text_reply("never")])
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[]) as queue:
        handle = await start(temporal_env.client, queue, run_id="missing-tool", tools=[lookup])
        with pytest.raises(WorkflowFailureError) as failure:
            await handle.result()

    assert "the tool 'lookup' is not registered on this worker" in str(cause_of(failure.value))
    assert fake.requests == []


async def test_a_tool_cannot_reach_a_runner_from_its_activity(temporal_env: WorkflowEnvironment) -> None:
    @tool
    def peek(context: ToolContext) -> str:
        """Look at the history."""
        return str(len(context.runner.messages))

    fake = FakeMessagesAPI([tool_reply(tool_call("peek", {})), text_reply("Done.")])
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[peek]) as queue:
        handle = await start(temporal_env.client, queue, run_id="no-runner", tools=[peek])
        await handle.result()

    result = fake.requests[1].body["messages"][-1]["content"][0]
    assert result["is_error"] is True
    assert "runs in an activity, where there is no runner" in result["content"]


def test_options_that_belong_on_the_workers_are_refused_by_name() -> None:
    from toolrunner import MemoryCheckpointer, ParamsError
    from toolrunner.temporal._client import run_input

    base: dict[str, Any] = {"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}]}
    with pytest.raises(ParamsError, match=r"stream= cannot be given to a Temporal run"):
        run_input(**base, stream=True)
    with pytest.raises(ParamsError, match=r"checkpointer= cannot be given"):
        run_input(**base, checkpointer=MemoryCheckpointer())
    with pytest.raises(ParamsError, match=r"max_iterations must be a positive int"):
        run_input(**base, max_iterations=0)
    with pytest.raises(ParamsError, match=r"'max_token' is not a parameter"):
        run_input(model=MODEL, max_token=10, messages=[])
    with pytest.raises(ToolRunnerError, match=r"client must be an anthropic.AsyncAnthropic"):
        from toolrunner.temporal._activities import Activities

        Activities(FakeMessagesAPI().client(), tools=[], store=MemoryPayloadStore())  # type: ignore[arg-type]


async def test_workers_stream_replies_and_report_events(temporal_env: WorkflowEnvironment) -> None:
    def script() -> list[ScriptEntry]:
        return [tool_reply(tool_call("weather", {"city": "Lima"}), text="Let me look."), text_reply("Sunny.")]

    plain_fake = FakeMessagesAPI(script())
    runner = ToolRunner(
        plain_fake.async_client(),
        stream=True,
        model=MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": "Go."}],
        tools=make_tools(Rendezvous(3), []),
    )
    await runner.until_done()

    events: list[tuple[str, str]] = []
    fake, tools = FakeMessagesAPI(script()), make_tools(Rendezvous(3), [])

    def listen(run_id: str, event: RunnerEvent) -> None:
        events.append((run_id, type(event).__name__))

    async with worker(
        temporal_env, fake, MemoryPayloadStore(), tools=tools, stream=True, on_event=listen
    ) as queue:
        run = await start(temporal_env.client, queue, run_id="streamed", tools=tools)
        await run.result()

    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert all(request.stream for request in fake.requests)
    assert {run_id for run_id, _ in events} == {"streamed"}
    names = [name for _, name in events]
    assert names[: names.index("MessageFinished")] == ["TextDelta"] * names.index("MessageFinished")
    assert names.count("MessageFinished") == 2
    assert names.count("ToolCallStarted") == names.count("ToolCallFinished") == 1


async def test_a_large_final_reply_is_a_stub_in_the_result_and_whole_from_the_store(
    temporal_env: WorkflowEnvironment,
) -> None:
    essay = "A long answer. " * 500
    fake, store = FakeMessagesAPI([text_reply(essay)]), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[]) as queue:
        run = await start(temporal_env.client, queue, run_id="essay", tools=[])
        result = await run.result()

    assert result.reply is not None
    assert result.reply["content"] == [{"type": "text", "text": "", "toolrunner_ref": ANY_KEY}]
    final = await result.final_message(store)
    assert final is not None
    assert final.content[0].type == "text"
    assert final.content[0].text == essay
    assert (await result.messages(store))[-1] == {
        "role": "assistant",
        "content": [{"type": "text", "text": essay}],
    }


async def test_retry_after_sets_the_next_attempts_delay(temporal_env: WorkflowEnvironment) -> None:
    fake = FakeMessagesAPI([fault(429, retry_after=600), text_reply("Hello.")])
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[]) as queue:
        run = await start(temporal_env.client, queue, run_id="rate-limited", tools=[])
        await run.result()  # the test server skips the ten minutes
        history = await run.workflow.fetch_history()

    [scheduled] = [
        event for event in history.events if event.HasField("activity_task_scheduled_event_attributes")
    ]
    [started] = [
        event for event in history.events if event.HasField("activity_task_started_event_attributes")
    ]
    assert started.activity_task_started_event_attributes.attempt == 2
    waited = started.event_time.ToDatetime() - scheduled.event_time.ToDatetime()
    assert waited >= timedelta(minutes=10)


async def test_prompt_caching_and_sdk_tools_send_what_a_tool_runner_sends(
    temporal_env: WorkflowEnvironment,
) -> None:
    from anthropic.lib.tools import beta_async_tool

    from toolrunner import CachePolicy

    @beta_async_tool
    async def shout(text: str) -> str:
        """Say it louder.

        Args:
            text: What to say.
        """
        return text.upper()

    def script() -> list[ScriptEntry]:
        return [
            tool_reply(tool_call("shout", {"text": "hi"})),
            tool_reply(tool_call("shout", {"text": "ho"})),
            text_reply("HI HO"),
        ]

    options: dict[str, Any] = {"cache": CachePolicy(ttl="1h", system=True), "system": "Be loud."}
    plain_fake = FakeMessagesAPI(script())
    await run_plainly(plain_fake, tools=[shout], **options)
    fake = FakeMessagesAPI(script())
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[shout]) as queue:
        run = await start(temporal_env.client, queue, run_id="cached", tools=[shout], **options)
        await run.result()

    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert fake.requests[-1].body["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


def test_transport_params_and_a_tracer_provider_are_refused_by_name() -> None:
    # A header may hold a secret, and the run's input is written into its workflow history.
    from opentelemetry.sdk.trace import TracerProvider

    from toolrunner import ParamsError, Toolset, Tracing
    from toolrunner.temporal._client import run_input

    base: dict[str, Any] = {"model": MODEL, "max_tokens": 10, "messages": [{"role": "user", "content": "Hi"}]}
    transport: list[tuple[str, Any]] = [
        ("extra_headers", {"x-api-key": "sk-secret"}),
        ("extra_query", {"a": "b"}),
        ("timeout", 5),
    ]
    for name, value in transport:
        with pytest.raises(
            ParamsError, match=rf"{name}= cannot be given to a Temporal run: .* workflow history"
        ):
            run_input(**{**base, name: value})
    with pytest.raises(
        ParamsError, match=r"Tracing\(tracer_provider=...\) cannot be given to a Temporal run"
    ):
        run_input(**base, tracing=Tracing(tracer_provider=TracerProvider()))

    run = run_input(
        **base,
        compaction_control={"enabled": True, "keep_turns": 2},
        tracing=Tracing(agent_name="bot"),
        tools=[Toolset([], name="Shelf")],
    )
    assert run.compaction_control == {"enabled": True, "keep_turns": 2}
    assert run.tracing == {"content": False, "agent_name": "bot"}
    assert run.state["tools"] == ["toolset:Shelf"]

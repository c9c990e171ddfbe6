"""Steering a tree of runs (issue 30): the sub-runs in flight are read from the parent's state
while its calls run (``runner.sub_runs_in_progress``: by a listener, a task beside the run, the
loop body of ``events()``), and cancelling or closing the parent stops its sub-runs, the tree saved
so that it goes on where it was."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.support.subagents import Held, by_model, lookup, ran, researcher, searcher
from toolrunner import (
    MemoryCheckpointer,
    MessageFinished,
    RunnerEvent,
    SubAgent,
    SubRunEvent,
    SubRunProgress,
    SyncToolRunner,
    ToolCallStarted,
    ToolContext,
    ToolRunner,
    text_of,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


def runner_of(client: Any, tools: list[Any], **options: Any) -> ToolRunner:
    return ToolRunner(
        client,
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=tools,
        **options,
    )


def shown(progress: list[SubRunProgress]) -> list[tuple[tuple[str, ...], str, int]]:
    return [(sub.path, sub.status, sub.requests_sent) for sub in progress]


def two_levels() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("researcher", {"task": "Research Paris."}, id="toolu_p1")),
            text_reply("Paris it is."),
        ],
        "claude-mid": [
            tool_reply(tool_call("searcher", {"task": "Weather in Paris?"}, id="toolu_m1")),
            text_reply("Paris is warm."),
        ],
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_s1")),
            text_reply("Paris: 20 C."),
        ],
    }


async def test_a_listener_reads_the_sub_runs_in_flight_as_each_event_reports_them() -> None:
    ran.clear()
    fake = FakeMessagesAPI(responder=by_model(two_levels()))
    read: list[tuple[tuple[str, ...], list[tuple[tuple[str, ...], str, int]]]] = []
    holder: list[ToolRunner] = []

    def heard(event: RunnerEvent) -> None:
        if isinstance(event, SubRunEvent) and isinstance(event.event, MessageFinished):
            read.append((event.path, shown(holder[0].sub_runs_in_progress)))

    async with fake.async_client() as client:
        runner = runner_of(client, [researcher()], on_event=heard)
        holder.append(runner)
        assert runner.sub_runs_in_progress == []
        final = await runner.until_done()
    assert text_of(final) == "Paris it is."
    mid, sub = ("toolu_p1", "researcher"), ("toolu_p1", "researcher", "toolu_m1", "searcher")
    assert read == [
        (mid, [(mid, "running", 1)]),  # the researcher's first reply is in the state as it is heard
        (sub, [(mid, "running", 1), (sub, "running", 1)]),
        (sub, [(mid, "running", 1), (sub, "running", 2)]),
        (mid, [(mid, "running", 2)]),  # the searcher ended: no longer in flight
    ]
    assert runner.sub_runs_in_progress == []  # the turn ended
    assert [summary.path for summary in runner.state.sub_runs] == [mid, sub]


async def test_a_task_beside_the_run_reads_a_sub_run_while_its_tool_runs() -> None:
    held = Held()
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Weather in Berlin?"}, id="toolu_p1")),
                    text_reply("Done."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("slow_lookup", {"city": "Berlin"}, id="toolu_c1"), text="Looking."),
                    text_reply("Berlin: 20 C."),
                ],
            }
        )
    )
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher(tools=[held.tool])])
        read: list[SubRunProgress] = []
        async with anyio.create_task_group() as group:
            group.start_soon(runner.until_done)
            await held.started.wait()
            read = runner.sub_runs_in_progress
            held.release()
    [progress] = read
    assert (progress.path, progress.call_id, progress.agent, progress.agents) == (
        ("toolu_p1", "searcher"),
        "toolu_p1",
        "searcher",
        ("searcher",),
    )
    assert (progress.task, progress.status, progress.requests_sent) == ("Weather in Berlin?", "running", 1)
    assert len(progress.usage) == 1
    assert progress.total == progress.usage[0].usage
    assert progress.last_message is not None
    assert text_of(progress.last_message) == "Looking."
    assert progress.state.calls["toolu_c1"].status.value == "started"
    assert held.finished == ["Berlin"]
    assert runner.end_reason == "model"
    assert runner.sub_runs_in_progress == []


async def test_the_loop_body_of_events_hears_tagged_events_and_reads_the_progress() -> None:
    ran.clear()
    heard: list[object] = []
    fake = FakeMessagesAPI(responder=by_model(two_levels()))
    async with fake.async_client() as client:
        runner = runner_of(client, [researcher()], on_event=heard.append)
        tagged: list[tuple[tuple[str, ...], str]] = []
        read: list[list[tuple[str, ...]]] = []
        async with runner.events() as events:
            async for event in events:
                if isinstance(event, SubRunEvent):
                    tagged.append((event.path, type(event.event).__name__))
                    read.append([sub.path for sub in runner.sub_runs_in_progress])
    sub = ("toolu_p1", "researcher", "toolu_m1", "searcher")
    assert (sub, "ToolCallStarted") in tagged
    assert (("toolu_p1", "researcher"), "LoopFinished") in tagged
    assert all(path in (("toolu_p1", "researcher"), sub) for path, _ in tagged)
    assert all(paths[0] == ("toolu_p1", "researcher") for paths in read if paths)  # read as it stood
    # on_event= keeps hearing them, tagged the same way
    assert [
        (event.path, type(event.event).__name__) for event in heard if isinstance(event, SubRunEvent)
    ] == tagged
    assert runner.end_reason == "model"


async def test_a_paused_tree_shows_its_sub_run_awaiting_then_ready() -> None:
    paid: list[int] = []

    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        paid.append(amount)
        return "paid"

    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Pay 5."}, id="toolu_p1")),
                    text_reply("Paid."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("pay", {"amount": 5}, id="toolu_c1")),
                    text_reply("I paid."),
                ],
            }
        )
    )
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher(tools=[pay])])
        async for _ in runner:
            pass
        assert shown(runner.sub_runs_in_progress) == [(("toolu_p1", "searcher"), "awaiting", 1)]
        runner.approve("toolu_c1", by="ada")
        assert shown(runner.sub_runs_in_progress) == [(("toolu_p1", "searcher"), "ready", 1)]
        await runner.until_done()
    assert paid == [5]
    assert runner.sub_runs_in_progress == []


def test_a_sync_runner_reads_the_sub_runs_in_flight_too() -> None:
    @tool(requires_approval=True)
    def pay(amount: int) -> str:
        """Pay.

        Args:
            amount: How much.
        """
        return "paid"

    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Pay 5."}, id="toolu_p1")),
                    text_reply("Paid."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("pay", {"amount": 5}, id="toolu_c1")),
                    text_reply("I paid."),
                ],
            }
        )
    )
    runner = SyncToolRunner(
        fake.client(),
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=[searcher(tools=[pay])],
    )
    for _ in runner:
        pass
    assert shown(runner.sub_runs_in_progress) == [(("toolu_p1", "searcher"), "awaiting", 1)]
    runner.approve("toolu_c1")
    runner.until_done()
    assert runner.sub_runs_in_progress == []


# -- cancelled with its parent ------------------------------------------------------------------------


def berlin_after_paris() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("searcher", {"task": "Paris and Berlin?"}, id="toolu_p1")),
            text_reply("Done."),
        ],
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
            tool_reply(tool_call("slow_lookup", {"city": "Berlin"}, id="toolu_c2")),
            text_reply("Paris and Berlin: 20 C."),
        ],
    }


def sub_requests(fake: FakeMessagesAPI) -> list[Any]:
    return [request for request in fake.requests if request.body["model"] == "claude-sub"]


@pytest.mark.parametrize("idempotent", [False, True])
async def test_cancelling_the_parent_cancels_its_sub_run_and_a_resume_goes_on_where_it_was(
    idempotent: bool,
) -> None:
    ran.clear()
    held = Held(idempotent=idempotent)
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(responder=by_model(berlin_after_paris()))

    def tools() -> list[Any]:
        return [searcher(tools=[lookup, held.tool])]

    async with fake.async_client() as client:
        runner = runner_of(client, tools(), checkpointer=store, run_id="trip")
        async with anyio.create_task_group() as group:
            group.start_soon(runner.until_done)
            await held.started.wait()
            group.cancel_scope.cancel()  # the task that iterates the parent is cancelled
        assert held.finished == []  # the sub-run's tool was cancelled with it

        saved = await store.load("trip")  # the tree, as its last save left it
        assert saved is not None
        record = saved.state.calls["toolu_p1"]
        assert record.status.value == "started"
        assert record.sub_run is not None
        child = record.sub_run.state
        assert "Paris: 20 C" in str(child.messages[-1]["content"])  # its first turn, ended
        assert child.calls["toolu_c2"].status.value == "started"

        held.release()
        resumed = await ToolRunner.resume(client, run_id="trip", checkpointer=store, tools=tools())
        assert text_of(await resumed.until_done()) == "Done."
    assert ran == ["Paris"]  # its finished call never ran again
    requests = sub_requests(fake)
    assert len(requests) == 3  # the sub-run went on: its first two requests were not sent again
    berlin = str(requests[2].messages[-1]["content"])
    if idempotent:  # its cut-off call ran again
        assert held.ran == ["Berlin", "Berlin"]
        assert "Berlin: 20 C" in berlin
    else:  # answered as after a crash
        assert held.ran == ["Berlin"]
        assert "was interrupted" in berlin


async def test_leaving_events_early_cancels_the_sub_run_and_the_same_runner_goes_on() -> None:
    ran.clear()
    held = Held(idempotent=True)
    fake = FakeMessagesAPI(responder=by_model(berlin_after_paris()))
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher(tools=[lookup, held.tool])])
        async with runner.events() as events:
            async for event in events:
                started = event.event if isinstance(event, SubRunEvent) else None
                if isinstance(started, ToolCallStarted) and started.call.name == "slow_lookup":
                    await held.started.wait()
                    break
        assert held.finished == []
        [progress] = runner.sub_runs_in_progress  # kept in memory, as it stood
        assert progress.requests_sent == 2
        held.release()
        assert text_of(await runner.until_done()) == "Done."
    assert ran == ["Paris"]
    assert held.ran == ["Berlin", "Berlin"]
    assert len(sub_requests(fake)) == 3


async def test_closing_the_parent_closes_its_sub_runs_after_their_step_under_way() -> None:
    ran.clear()
    held = Held()
    scripts = two_levels()
    scripts["claude-sub"][0] = tool_reply(
        tool_call("slow_lookup", {"city": "Paris"}, id="toolu_s1"), text="Looking."
    )
    fake = FakeMessagesAPI(responder=by_model(scripts))
    store = MemoryCheckpointer()
    mid_agent = SubAgent(  # a researcher whose searcher's lookup is held
        name="researcher",
        description="Researches.",
        model="claude-mid",
        max_tokens=200,
        tools=[searcher(tools=[held.tool])],
    )

    async def drain(runner: ToolRunner) -> None:
        async for _ in runner:
            pass

    async with fake.async_client() as client:
        runner = runner_of(client, [mid_agent], checkpointer=store, run_id="trip")
        async with anyio.create_task_group() as group:
            group.start_soon(drain, runner)
            await held.started.wait()
            runner.close()  # from another task, while the searcher's tool runs
            held.release()
    assert held.finished == ["Paris"]  # the step under way finished whole
    assert runner.end_reason == "closed"
    models = [request.body["model"] for request in fake.requests]
    assert models == ["claude-parent", "claude-mid", "claude-sub"]  # then nothing more was sent
    assert runner.sub_runs_in_progress == []
    assert [(summary.path[-1], summary.end_reason) for summary in runner.state.sub_runs] == [
        ("researcher", "closed"),
        ("searcher", "closed"),
    ]
    result = runner.messages[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_p1"
    assert result["is_error"] is True
    assert (
        "'researcher' was stopped before it finished: the run that called it was closed" in result["content"]
    )
    saved = await store.load("trip")
    assert saved is not None
    assert saved.state.end_reason == "closed"
    assert saved.state.messages == runner.state.messages


async def test_a_sub_run_that_starts_after_its_parent_was_closed_ends_at_once() -> None:
    ran.clear()

    @tool(sequential=True)
    async def stop(ctx: ToolContext) -> str:
        """Stop the run."""
        ctx.runner.close()
        return "stopping"

    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(
                        tool_call("stop", {}, id="toolu_p0"),
                        tool_call("searcher", {"task": "Weather in Paris?"}, id="toolu_p1"),
                    )
                ],
                "claude-sub": [],
            }
        )
    )
    async with fake.async_client() as client:
        runner = runner_of(client, [stop, searcher()])
        await runner.until_done()
    assert runner.end_reason == "closed"
    assert [request.body["model"] for request in fake.requests] == ["claude-parent"]  # the sub-run sent none
    stopped, answered = runner.messages[-1]["content"]
    assert stopped["content"] == "stopping"
    assert answered["is_error"] is True
    assert "was stopped before it finished" in answered["content"]
    assert "nothing yet" in answered["content"]

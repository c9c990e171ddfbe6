"""Sub-agents (issue 30, first slice): a run as a tool, its sub-run inside the parent's state."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.support.subagents import by_model, ran, searcher
from toolrunner import SubAgent, SubRunEvent, ToolCallFinished, ToolRunner, text_of, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio


async def test_a_parent_calls_a_sub_agent_that_calls_a_tool() -> None:
    ran.clear()
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Weather in Paris?"}, id="toolu_p1")),
                    text_reply("Paris is warm."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
                    text_reply("Paris: 20 C, sunny."),
                ],
            }
        )
    )
    events: list[object] = []
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[searcher()],
            on_event=events.append,
        )
        final = await runner.until_done()
    assert text_of(final) == "Paris is warm."
    assert ran == ["Paris"]
    # the sub-agent's request: its system, its tools, the task
    sub = [request for request in fake.requests if request.body["model"] == "claude-sub"]
    assert sub[0].body["system"] == "You search."
    assert [t["name"] for t in sub[0].body["tools"]] == ["lookup"]
    assert sub[0].messages[0] == {"role": "user", "content": "Weather in Paris?"}
    # the parent offered the sub-agent as a tool of {"task": string}
    parent = [request for request in fake.requests if request.body["model"] == "claude-parent"]
    assert parent[0].body["tools"][0]["input_schema"]["required"] == ["task"]
    # its answer reached the parent's model
    result = parent[1].messages[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_p1"
    assert "Paris: 20 C, sunny." in str(result["content"])
    assert not result.get("is_error")
    # tagged events
    tagged = [event for event in events if isinstance(event, SubRunEvent)]
    assert tagged
    assert all(event.path == ("toolu_p1", "searcher") for event in tagged)
    assert any(
        isinstance(event.event, ToolCallFinished) and event.event.call.id == "toolu_c1" for event in tagged
    )
    assert not any(isinstance(event, ToolCallFinished) and event.call.id == "toolu_c1" for event in events)


def task_of(request: RecordedRequest) -> str:
    return str(request.messages[0]["content"])


async def test_two_sub_agent_calls_of_one_reply_run_at_once() -> None:
    met: list[str] = []
    both = anyio.Event()

    @tool
    async def meet(who: str) -> str:
        """Wait for the other one.

        Args:
            who: Who arrives.
        """
        met.append(who)
        if len(met) == 2:
            both.set()
        with anyio.fail_after(5):  # run one after the other, they would never meet
            await both.wait()
        return f"{who} met"

    def respond(request: RecordedRequest) -> ScriptEntry:
        if request.body["model"] == "claude-parent":
            if len(request.messages) == 1:
                return tool_reply(
                    tool_call("searcher", {"task": "a"}, id="toolu_pa"),
                    tool_call("searcher", {"task": "b"}, id="toolu_pb"),
                )
            return text_reply("both met")
        if len(request.messages) == 1:
            return tool_reply(tool_call("meet", {"who": task_of(request)}))
        return text_reply(f"{task_of(request)} is done")

    fake = FakeMessagesAPI(responder=respond)
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Go."}],
            tools=[searcher(tools=[meet])],
        )
        await runner.until_done()
    assert sorted(met) == ["a", "b"]
    results = fake.requests[-1].messages[-1]["content"]
    assert [block["tool_use_id"] for block in results] == ["toolu_pa", "toolu_pb"]
    assert [block["content"] for block in results] == ["a is done", "b is done"]


def nested(**changes: Any) -> SubAgent:
    return SubAgent(
        name="researcher",
        description="Researches, with a searcher.",
        model="claude-mid",
        max_tokens=200,
        tools=[searcher()],
        **changes,
    )


async def test_a_sub_agent_of_a_sub_agent() -> None:
    ran.clear()
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("researcher", {"task": "Research Paris."}, id="toolu_p1")),
                    text_reply("Done: Paris is warm."),
                ],
                "claude-mid": [
                    tool_reply(tool_call("searcher", {"task": "Weather in Paris?"}, id="toolu_m1")),
                    text_reply("Research: Paris is warm."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
                    text_reply("Paris: 20 C."),
                ],
            }
        )
    )
    events: list[object] = []
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Go."}],
            tools=[nested()],
            on_event=events.append,
        )
        final = await runner.until_done()
    assert text_of(final) == "Done: Paris is warm."
    assert ran == ["Paris"]
    mid = [request for request in fake.requests if request.body["model"] == "claude-mid"]
    assert "Paris: 20 C." in str(mid[1].messages[-1]["content"])
    assert [t["name"] for t in mid[0].body["tools"]] == ["searcher"]
    deepest = [
        event.event
        for event in events
        if isinstance(event, SubRunEvent) and event.path == ("toolu_p1", "researcher", "toolu_m1", "searcher")
    ]
    assert any(isinstance(event, ToolCallFinished) and event.call.id == "toolu_c1" for event in deepest)
    assert all(not isinstance(event.event, SubRunEvent) for event in events if isinstance(event, SubRunEvent))


async def test_a_sub_agent_that_hits_its_limit_answers_with_an_error_result() -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Weather?"}, id="toolu_p1")),
                    text_reply("It could not tell."),
                ],
                "claude-sub": [tool_reply(tool_call("lookup", {"city": "Oslo"}), text="Looking up Oslo.")],
            }
        )
    )
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Go."}],
            tools=[searcher(max_iterations=1)],
        )
        await runner.until_done()
    result = fake.requests[-1].messages[-1]["content"][0]
    assert result["is_error"] is True
    assert "max_iterations" in str(result["content"])
    assert "Looking up Oslo." in str(result["content"])


async def test_a_sub_agents_call_is_timed_by_the_runners_clock_like_a_tool() -> None:
    @tool
    async def nap(city: str) -> str:
        """Look a city up, slowly.

        Args:
            city: The city.
        """
        await anyio.sleep(0.05)
        return f"{city}: 20 C"

    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Paris?"}, id="toolu_p1")),
                    text_reply("Done."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("nap", {"city": "Paris"}, id="toolu_c1")),
                    text_reply("Warm."),
                ],
            }
        )
    )
    durations: dict[str, float] = {}

    def heard(event: object) -> None:
        finished = event.event if isinstance(event, SubRunEvent) else event
        if isinstance(finished, ToolCallFinished):
            durations[finished.call.id] = finished.duration

    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Go."}],
            tools=[searcher(tools=[nap])],
            on_event=heard,
        )
        await runner.until_done()
    assert durations["toolu_c1"] >= 0.04  # the tool, as the performer timed it
    assert durations["toolu_p1"] >= durations["toolu_c1"]  # its sub-run, the tool's time and more

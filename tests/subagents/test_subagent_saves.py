"""Sub-agents' runs saved inside the parent's state: the JSON round trip, a crash inside the child
and the resume, and definitions refused at construction (sub-agents on Temporal:
tests/temporal/test_temporal_subagents.py)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.subagents import by_model, lookup, ran, searcher
from toolrunner import MemoryCheckpointer, ParamsError, RunState, ToolRunner, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio


def script() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("searcher", {"task": "Paris and Berlin?"}, id="toolu_p1")),
            text_reply("Both warm."),
        ],
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
            tool_reply(tool_call("lookup", {"city": "Berlin"}, id="toolu_c2")),
            text_reply("Paris and Berlin: 20 C."),
        ],
    }


class Crash(BaseException):
    """The process dies (no handler of the runner's catches it)."""


class CrashAfterFirstChildCall:
    """A store whose first save after the child's first call was saved finished dies."""

    def __init__(self, inner: MemoryCheckpointer) -> None:
        self.inner = inner
        self.armed = False

    async def save(self, checkpoint: Any) -> None:
        if self.armed:
            raise Crash
        record = checkpoint.state.calls.get("toolu_p1")
        child = None if record is None or record.sub_run is None else record.sub_run.state
        if child is not None and child.calls.get("toolu_c1") is not None and child.calls["toolu_c1"].result:
            self.armed = True
        await self.inner.save(checkpoint)

    async def load(self, run_id: str) -> Any:
        return await self.inner.load(run_id)


async def test_a_crash_inside_the_child_resumes_it_where_it_was() -> None:
    ran.clear()
    scripts = script()
    fake = FakeMessagesAPI(responder=by_model(scripts))
    inner = MemoryCheckpointer()
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Go."}],
            tools=[searcher()],
            checkpointer=CrashAfterFirstChildCall(inner),
            run_id="crashy",
        )
        with pytest.raises(Crash):
            await runner.until_done()
        assert ran == ["Paris"]
        saved = await inner.load("crashy")
        assert saved is not None
        record = saved.state.calls["toolu_p1"]
        assert record.sub_run is not None
        assert record.sub_run.state.calls["toolu_c1"].result is not None

        resumed = await ToolRunner.resume(client, run_id="crashy", checkpointer=inner, tools=[searcher()])
        await resumed.until_done()
    assert ran == ["Paris", "Berlin"]  # Paris never ran again
    sub = [request for request in fake.requests if request.body["model"] == "claude-sub"]
    assert len(sub) == 3  # the child went on: its first request was not sent again
    assert "Paris: 20 C" in str(sub[1].messages[-1]["content"])
    parent = [request for request in fake.requests if request.body["model"] == "claude-parent"]
    assert "Paris and Berlin: 20 C." in str(parent[-1].messages[-1]["content"])
    final = await inner.load("crashy")
    assert final is not None
    assert final.state.end_reason == "model"


async def test_the_state_with_a_sub_run_in_flight_round_trips_through_json() -> None:
    states: list[RunState] = []

    @tool
    async def snapshot(city: str) -> str:
        """Take the parent's saved state.

        Args:
            city: The city.
        """
        loaded = await store.load("trip")
        assert loaded is not None
        states.append(loaded.state)
        return city

    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Oslo?"}, id="toolu_p1")),
                    text_reply("Done."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("snapshot", {"city": "Oslo"}, id="toolu_c1")),
                    text_reply("Oslo."),
                ],
            }
        )
    )
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Go."}],
            tools=[searcher(tools=[snapshot])],
            checkpointer=store,
            run_id="trip",
        )
        await runner.until_done()
    (state,) = states
    record = state.calls["toolu_p1"]
    assert record.sub_run is not None
    assert record.sub_run.agent == "searcher"
    child = record.sub_run.state
    assert child.calls["toolu_c1"].status.value == "started"  # saved before its tool began
    assert child.messages[0] == {"role": "user", "content": "Oslo?"}
    again = RunState.from_json(state.to_json())
    assert again.to_dict() == state.to_dict()
    sub_run = again.calls["toolu_p1"].sub_run
    assert sub_run is not None
    assert sub_run.agent == "searcher"
    assert sub_run.state.to_dict() == child.to_dict()
    data = state.to_dict()
    assert "sub_run" in data["calls"][0]
    assert all("sub_run" not in record for record in data["calls"][0]["sub_run"]["state"]["calls"])


def test_a_damaged_sub_run_is_refused_naming_its_call() -> None:
    state = RunState(params={"model": "m", "max_tokens": 1})
    data = state.to_dict()
    data["calls"] = [
        {
            "id": "toolu_p1",
            "name": "searcher",
            "input": {"task": "x"},
            "status": "started",
            "result": None,
            "approved_input": None,
            "decision": None,
            "decided_by": None,
            "decided_at": None,
            "tool": None,
            "sub_run": {"agent": "searcher", "state": {"version": 5, "phase": 7}},
        }
    ]
    with pytest.raises(Exception, match="toolu_p1"):
        RunState.from_dict(data)


def test_a_sub_agents_definition_is_json_and_bad_ones_are_refused() -> None:
    agent = searcher(system="Search.", max_cost="0.5", params={"stop_sequences": ["END"]})
    assert agent.definition() == {
        "name": "searcher",
        "description": "Finds facts.",
        "model": "claude-sub",
        "max_tokens": 200,
        "system": "Search.",
        "tools": ["lookup"],
        "max_iterations": None,
        "max_total_tokens": None,
        "max_cost": "0.5",
        "output": None,
        "params": {"stop_sequences": ["END"]},
    }
    assert agent.to_param()["input_schema"]["required"] == ["task"]
    assert agent.idempotent
    assert not agent.start_early
    cases: list[tuple[dict[str, Any], str]] = [
        ({"name": "no spaces"}, "tool name"),
        ({"description": ""}, "description"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_iterations": -1}, "max_iterations"),
        ({"max_cost": "free"}, "max_cost"),
        ({"params": {"messages": []}}, "messages"),
        ({"tools": [lookup, lookup]}, "unique"),
        ({"tools": [{"name": "raw", "input_schema": {}}]}, "cannot be a sub-agent's tool"),
    ]
    for changes, match in cases:
        with pytest.raises(ParamsError, match=match):
            searcher(**changes)

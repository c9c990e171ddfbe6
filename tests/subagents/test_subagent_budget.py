"""One budget for a run's tree (issue 30): the tree's usage and cost add up, the parent's limits
stop its sub-agents and then itself, per-agent figures, and the summaries of ended sub-runs
(``RunState.sub_runs``) through saves, resumes and old saved states."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from tests.support.subagents import by_model, researcher, searcher
from toolrunner import (
    MemoryCheckpointer,
    ParamsError,
    Price,
    RunState,
    StateError,
    SubAgent,
    ToolRunner,
    Usage,
    text_of,
)
from toolrunner._core.state import SubRunSummary
from toolrunner._core.transitions import Limits, capped, limit_reached
from toolrunner._core.usage import RequestUsage
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

MODELS = ("claude-parent", "claude-mid", "claude-sub", "claude-writer")
PRICES = {model: Price(input=1000, output=1000, cache_read=0, cache_write=0) for model in MODELS}
"""A token costs a thousandth of a dollar: a reply of 100 tokens costs $0.1."""


def used(tokens: int) -> dict[str, int]:
    return {
        "input_tokens": tokens - 10,
        "output_tokens": 10,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


def writer() -> SubAgent:
    return SubAgent(name="writer", description="Writes.", model="claude-writer", max_tokens=200)


def looping(model_tokens: dict[str, int], parent: list[ScriptedReply]):  # type: ignore[no-untyped-def]
    """The parent follows its script; a sub-agent looks a city up again and again."""

    def respond(request: RecordedRequest) -> ScriptEntry:
        model = request.body["model"]
        if model == "claude-parent":
            return parent.pop(0)
        return tool_reply(
            tool_call("lookup", {"city": "Oslo"}), text="Still looking.", usage=used(model_tokens[model])
        )

    return respond


def runner_of(client: Any, tools: list[Any], **options: Any) -> ToolRunner:
    return ToolRunner(
        client,
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=tools,
        prices=PRICES,
        **options,
    )


async def test_the_trees_tokens_and_cost_add_up_with_per_agent_figures() -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(
                        tool_call("researcher", {"task": "Research Paris."}, id="toolu_p1"),
                        tool_call("writer", {"task": "Write a line."}, id="toolu_p2"),
                        usage=used(100),
                    ),
                    text_reply("Done.", usage=used(110)),
                ],
                "claude-mid": [
                    tool_reply(tool_call("searcher", {"task": "Paris?"}, id="toolu_m1"), usage=used(200)),
                    text_reply("Paris is warm.", usage=used(210)),
                ],
                "claude-sub": [
                    tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1"), usage=used(300)),
                    text_reply("Paris: 20 C.", usage=used(310)),
                ],
                "claude-writer": [text_reply("A line.", usage=used(400))],
            }
        )
    )
    async with fake.async_client() as client:
        runner = runner_of(client, [researcher(), writer()], max_total_tokens=10_000, max_cost="100")
        final = await runner.until_done()
    assert text_of(final) == "Done."
    assert runner.end_reason == "model"
    # runner.usage is the parent's own requests
    assert len(runner.usage.requests) == runner.requests_sent == 2
    assert runner.usage.total.total_tokens == 210
    # the tree: parent 210 + researcher 410 + its searcher 610 + writer 400
    tree = runner.tree_usage
    assert len(tree.requests) == 7
    assert tree.total.total_tokens == 1630
    assert tree.cost == Decimal("1.63")
    by_agent = runner.usage_by_agent()
    assert {path: figures.total.total_tokens for path, figures in by_agent.items()} == {
        (): 210,
        ("researcher",): 410,
        ("researcher", "searcher"): 610,
        ("writer",): 400,
    }
    assert by_agent[("writer",)].cost == Decimal("0.4")
    # the summaries: flat, with their paths, kept after the turn's end (the journal is empty)
    summaries = runner.state.sub_runs
    assert runner.state.calls == {}
    assert sorted(summary.path for summary in summaries) == [
        ("toolu_p1", "researcher"),
        ("toolu_p1", "researcher", "toolu_m1", "searcher"),
        ("toolu_p2", "writer"),
    ]
    assert all(summary.end_reason == "model" for summary in summaries)
    nested = next(summary for summary in summaries if len(summary.path) == 4)
    assert (nested.call_id, nested.agent, nested.agents) == (
        "toolu_m1",
        "searcher",
        ("researcher", "searcher"),
    )
    assert nested.total.total_tokens == 610
    assert nested.cost == Decimal("0.61")


async def test_a_parent_token_budget_stops_a_sub_agent_mid_run_and_then_the_parent() -> None:
    parent = [tool_reply(tool_call("searcher", {"task": "Weather?"}, id="toolu_p1"), usage=used(100))]
    fake = FakeMessagesAPI(responder=looping({"claude-sub": 100}, parent))
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher()], max_total_tokens=350)
        await runner.until_done()
    # parent 100, then the sub-agent's requests until the tree has 350: 200, 300, 400
    assert runner.end_reason == "token_budget"
    assert runner.requests_sent == 1
    sub = [request for request in fake.requests if request.body["model"] == "claude-sub"]
    assert len(sub) == 3
    assert runner.tree_usage.total.total_tokens == 400
    result = runner.messages[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_p1"
    assert result["is_error"] is True
    assert "budget of the whole run" in str(result["content"])
    assert "max_total_tokens" in str(result["content"])
    assert "Still looking." in str(result["content"])
    (summary,) = runner.state.sub_runs
    assert summary.end_reason == "token_budget"
    assert len(summary.usage) == 3


async def test_a_sub_agents_own_limit_is_named_as_its_own() -> None:
    parent = [
        tool_reply(tool_call("searcher", {"task": "Weather?"}, id="toolu_p1"), usage=used(100)),
        text_reply("It could not tell.", usage=used(100)),
    ]
    fake = FakeMessagesAPI(responder=looping({"claude-sub": 100}, parent))
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher(max_total_tokens=150)], max_total_tokens=10_000)
        await runner.until_done()
    assert runner.end_reason == "model"
    result = fake.requests[-1].messages[-1]["content"][0]
    assert result["is_error"] is True
    assert "its limit max_total_tokens" in str(result["content"])
    assert runner.tree_usage.total.total_tokens == 400  # parent 200, the sub-agent's 2 requests


async def test_max_iterations_counts_the_trees_requests() -> None:
    parent = [
        tool_reply(
            tool_call("searcher", {"task": "a"}, id="toolu_p1"),
            usage=used(100),
        )
    ]
    fake = FakeMessagesAPI(responder=looping({"claude-sub": 100}, parent))
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher()], max_iterations=4)
        await runner.until_done()
    assert runner.end_reason == "max_iterations"
    assert runner.requests_sent == 1
    assert len(runner.tree_usage.requests) == 4  # the parent's one and the sub-agent's three
    result = runner.messages[-1]["content"][0]
    assert result["is_error"] is True
    assert "max_iterations" in str(result["content"])


async def test_a_nested_sub_agent_stops_at_the_roots_budget() -> None:
    def respond(request: RecordedRequest) -> ScriptEntry:
        model = request.body["model"]
        if model == "claude-parent":
            return tool_reply(tool_call("researcher", {"task": "Research."}, id="toolu_p1"), usage=used(100))
        if model == "claude-mid":
            if len(request.messages) == 1:
                return tool_reply(tool_call("searcher", {"task": "Search."}, id="toolu_m1"), usage=used(100))
            return text_reply("Research done.", usage=used(100))
        return tool_reply(tool_call("lookup", {"city": "Oslo"}), usage=used(100))

    fake = FakeMessagesAPI(responder=respond)
    async with fake.async_client() as client:
        runner = runner_of(client, [researcher()], max_total_tokens=500)
        await runner.until_done()
    # parent 100, researcher 100, searcher 100, 100, 100 (the tree at 500): the searcher stops,
    # the researcher stops before its next request, and so does the parent
    assert runner.end_reason == "token_budget"
    sub = [request for request in fake.requests if request.body["model"] == "claude-sub"]
    assert len(sub) == 3
    assert runner.tree_usage.total.total_tokens == 500
    reasons = {summary.path: summary.end_reason for summary in runner.state.sub_runs}
    assert reasons == {
        ("toolu_p1", "researcher"): "token_budget",
        ("toolu_p1", "researcher", "toolu_m1", "searcher"): "token_budget",
    }


class Crash(BaseException):
    """The process dies (no handler of the runner's catches it)."""


class CrashInSecondSubRun:
    """A store that dies at its first save once the second sub-agent call's sub-run has a reply."""

    def __init__(self, inner: MemoryCheckpointer) -> None:
        self.inner = inner

    async def save(self, checkpoint: Any) -> None:
        record = checkpoint.state.calls.get("toolu_p2")
        if record is not None and record.sub_run is not None and record.sub_run.state.usage:
            raise Crash
        await self.inner.save(checkpoint)

    async def load(self, run_id: str) -> Any:
        return await self.inner.load(run_id)


def two_turns() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("searcher", {"task": "Paris?"}, id="toolu_p1"), usage=used(100)),
            tool_reply(tool_call("searcher", {"task": "Berlin?"}, id="toolu_p2"), usage=used(100)),
            text_reply("Both warm.", usage=used(100)),
        ],
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1"), usage=used(50)),
            text_reply("Paris: 20 C.", usage=used(50)),
            tool_reply(tool_call("lookup", {"city": "Berlin"}, id="toolu_c2"), usage=used(50)),
            text_reply("Berlin: 20 C.", usage=used(50)),
        ],
    }


async def test_the_summaries_survive_a_save_a_crash_and_a_resume() -> None:
    fake = FakeMessagesAPI(responder=by_model(two_turns()))
    inner = MemoryCheckpointer()
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher()], checkpointer=CrashInSecondSubRun(inner), run_id="tree")
        with pytest.raises(Crash):
            await runner.until_done()
        saved = await inner.load("tree")
        assert saved is not None
        assert [summary.path for summary in saved.state.sub_runs] == [("toolu_p1", "searcher")]
        assert RunState.from_json(saved.state.to_json()).sub_runs == saved.state.sub_runs

        resumed = await ToolRunner.resume(
            client,
            run_id="tree",
            checkpointer=inner,
            tools=[searcher()],
            prices=PRICES,
            max_total_tokens=10_000,
        )
        # the ended sub-run counts at once (the one in flight had no saved reply yet)
        assert resumed.tree_usage.total.total_tokens == 300
        await resumed.until_done()
    assert resumed.end_reason == "model"
    assert [summary.path for summary in resumed.state.sub_runs] == [
        ("toolu_p1", "searcher"),
        ("toolu_p2", "searcher"),
    ]
    # the reply whose save the crash cut off is not counted (as with a run's own requests): the
    # resumed sub-run sent its request again, and got the script's next reply
    assert resumed.tree_usage.total.total_tokens == 450
    assert resumed.usage_by_agent()[("searcher",)].total.total_tokens == 150
    final = await inner.load("tree")
    assert final is not None
    assert final.state.sub_runs == resumed.state.sub_runs


async def test_a_resumed_run_counts_its_ended_sub_runs_against_its_budget() -> None:
    fake = FakeMessagesAPI(responder=by_model(two_turns()))
    inner = MemoryCheckpointer()
    async with fake.async_client() as client:
        runner = runner_of(client, [searcher()], checkpointer=CrashInSecondSubRun(inner), run_id="tight")
        with pytest.raises(Crash):
            await runner.until_done()
        # the tree had 300 tokens when it crashed: the parent's 200 and the first sub-run's 100
        resumed = await ToolRunner.resume(
            client,
            run_id="tight",
            checkpointer=inner,
            tools=[searcher()],
            prices=PRICES,
            max_total_tokens=300,
        )
        await resumed.until_done()
    assert resumed.end_reason == "token_budget"
    result = resumed.messages[-1]["content"][0]
    assert result["tool_use_id"] == "toolu_p2"
    assert result["is_error"] is True
    assert "budget of the whole run" in str(result["content"])


def test_old_saved_states_load_without_summaries_and_bad_ones_are_refused() -> None:
    data = RunState(params={"model": "m", "max_tokens": 1}).to_dict()
    assert "sub_runs" not in data  # written only when a sub-run ended: other states are as before
    assert RunState.from_dict(data).sub_runs == ()
    request = {"model": "m", "input_tokens": 1, "output_tokens": 2, "cache_read_input_tokens": 0}
    request |= {"cache_creation_input_tokens": 0, "cost": "0.5"}
    good = {**data, "sub_runs": [{"path": ["toolu_1", "a"], "usage": [request], "end_reason": "model"}]}
    (summary,) = RunState.from_dict(good).sub_runs
    assert summary == SubRunSummary(
        path=("toolu_1", "a"), usage=(RequestUsage("m", Usage(1, 2), Decimal("0.5")),), end_reason="model"
    )
    for bad in (
        [{"path": ["toolu_1"], "usage": [], "end_reason": None}],
        [{"path": ["toolu_1", "a"], "usage": [{"model": "m"}], "end_reason": None}],
        [{"path": ["toolu_1", "a"], "usage": [], "end_reason": "tired"}],
    ):
        with pytest.raises(StateError, match="sub_runs"):
            RunState.from_dict({**data, "sub_runs": bad})


def test_a_sub_runs_limits_are_capped_by_what_its_parents_tree_has_left() -> None:
    def request(tokens: int) -> RequestUsage:
        return RequestUsage("m", Usage(tokens), Decimal(tokens) / 1000)

    parent = RunState(
        params={},
        usage=(request(100),),
        total=Usage(100),
        cost=Decimal("0.1"),
        sub_runs=(SubRunSummary(("toolu_1", "a"), (request(200), request(50))),),
    )
    child = RunState(params={}, usage=(request(30),), total=Usage(30), cost=Decimal("0.03"))
    outer = Limits(max_iterations=10, max_total_tokens=1000, max_cost=Decimal(1))
    own = Limits(max_iterations=20, max_total_tokens=500)
    limits = capped(own, child, parent, "toolu_2", outer)
    # the others spent 3 requests, 350 tokens, $0.35
    assert limits == Limits(max_iterations=7, max_total_tokens=500, max_cost=Decimal("0.65"))
    assert limit_reached(parent, outer) is None
    assert limit_reached(parent, Limits(max_total_tokens=350)) == "token_budget"
    assert limit_reached(parent, Limits(max_iterations=3)) == "max_iterations"
    assert capped(own, child, parent, "toolu_2", Limits()) is own


def test_a_cost_budget_needs_a_price_for_every_sub_agents_model() -> None:
    fake = FakeMessagesAPI([])
    unpriced = SubAgent(name="odd", description="Odd.", model="claude-unpriced", max_tokens=10)
    deep = SubAgent(name="outer", description="Outer.", model="claude-mid", max_tokens=10, tools=[unpriced])
    with pytest.raises(ParamsError, match=r"'odd'.*'claude-unpriced'"):
        runner_of(fake.async_client(), [deep], max_cost="1")
    own = SubAgent(name="odd", description="Odd.", model="claude-unpriced", max_tokens=10, max_cost="1")
    with pytest.raises(ParamsError, match="'claude-unpriced'"):
        runner_of(fake.async_client(), [own])
    runner_of(fake.async_client(), [deep])  # without a cost budget, no price is needed

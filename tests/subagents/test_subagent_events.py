"""The events of calls to sub-agents that pause (issue 30, audit finding F4): a sub-agent's call
whose sub-run paused for a decision is reported started once, as any call is, across the pause,
the decision and the run going on (in the runner that paused, or in a runner that resumed it),
at every level of the tree."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from tests.support.subagents import by_model, calls_heard
from toolrunner import MemoryCheckpointer, RunnerEvent, SubAgent, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

paid: list[int] = []


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount.

    Args:
        amount: How much.
    """
    paid.append(amount)
    return f"paid {amount}"


def tree() -> SubAgent:
    """``boss`` (model ``claude-mid``) calls ``payer`` (``claude-sub``), whose ``pay`` waits."""
    payer = SubAgent(name="payer", description="Pays.", model="claude-sub", max_tokens=200, tools=[pay])
    return SubAgent(
        name="boss", description="Has bills paid.", model="claude-mid", max_tokens=200, tools=[payer]
    )


def scripts() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(
                tool_call("boss", {"task": "Have 5 paid."}, id="toolu_boss"),
                tool_call("pay", {"amount": 7}, id="toolu_top"),
            ),
            text_reply("Both paid."),
        ],
        "claude-mid": [
            tool_reply(tool_call("payer", {"task": "Pay 5."}, id="toolu_payer")),
            text_reply("5 is paid."),
        ],
        "claude-sub": [tool_reply(tool_call("pay", {"amount": 5}, id="toolu_pay")), text_reply("I paid 5.")],
    }


def runner_of(client: Any, events: list[RunnerEvent], **options: Any) -> ToolRunner:
    return ToolRunner(
        client,
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Pay my bills."}],
        tools=[tree(), pay],
        on_event=events.append,
        **options,
    )


CALLS = ("toolu_boss", "toolu_top", "toolu_payer", "toolu_pay")


def assert_each_call_reported_once(events: list[RunnerEvent]) -> None:
    heard = calls_heard(events)
    assert Counter(heard) == {(kind, call): 1 for kind in ("started", "finished") for call in CALLS}
    for call in CALLS:  # and started before it finished
        assert heard.index(("started", call)) < heard.index(("finished", call))


async def test_a_paused_sub_agents_call_is_reported_started_once_in_the_runner_that_paused() -> None:
    paid.clear()
    events: list[RunnerEvent] = []
    async with FakeMessagesAPI(responder=by_model(scripts())).async_client() as client:
        runner = runner_of(client, events)
        async for _ in runner:
            pass
        assert runner.end_reason == "awaiting_approval"
        assert [call.id for call in runner.pending_approvals] == ["toolu_top", "toolu_pay"]
        assert ("started", "toolu_boss") in calls_heard(events)
        runner.approve("toolu_pay", by="ada")
        runner.approve("toolu_top", by="ada")
        await runner.until_done()
    assert sorted(paid) == [5, 7]
    assert_each_call_reported_once(events)


async def test_it_is_reported_started_once_across_a_decision_through_the_store_and_a_resume() -> None:
    paid.clear()
    events: list[RunnerEvent] = []
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(responder=by_model(scripts()))
    async with fake.async_client() as client:
        paused = runner_of(client, events, checkpointer=store, run_id="bills")
        async for _ in paused:
            pass
        assert paused.end_reason == "awaiting_approval"
        await store.approve_call("bills", "toolu_pay", by="ada")
        await store.approve_call("bills", "toolu_top", by="ada")
        resumed = await ToolRunner.resume(
            client, checkpointer=store, run_id="bills", tools=[tree(), pay], on_event=events.append
        )
        await resumed.until_done()
    assert sorted(paid) == [5, 7]
    assert_each_call_reported_once(events)

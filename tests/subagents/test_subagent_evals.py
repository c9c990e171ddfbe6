"""A run with sub-agents, read as an evaluation's trajectory: its usage, cost and requests are its
tree's (its sub-agents' requests too), and the cost of replaying it is estimated with them."""

from __future__ import annotations

from decimal import Decimal

import pytest

from tests.support.subagents import by_model, searcher
from toolrunner import Price, ToolRunner
from toolrunner.evals import Replay, estimate_cost, trajectory_of
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

PRICES = {
    "claude-parent": Price(Decimal(1), Decimal(2), Decimal(0), Decimal(0)),
    "claude-sub": Price(Decimal(3), Decimal(4), Decimal(0), Decimal(0)),
}


async def test_a_trajectory_counts_the_trees_requests_and_its_cost() -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("searcher", {"task": "Paris?"}, id="toolu_p1")),
                    text_reply("Warm."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
                    text_reply("Paris: 20 C."),
                ],
            }
        )
    )
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[searcher()],
            prices=PRICES,
        )
        await runner.until_done()
    state = runner.state
    assert len(state.usage) == 2  # the run's own requests
    trajectory = trajectory_of(state)
    assert trajectory.requests == 4  # and its sub-agent's two
    assert trajectory.usage == runner.tree_usage.total
    own, sub = state.cost, state.sub_runs[0].cost
    assert own is not None
    assert sub is not None
    assert sub > 0
    assert trajectory.cost == own + sub
    estimate = estimate_cost([state], Replay(name="same"), prices=PRICES)
    assert estimate == own + sub  # the recorded tokens at the same prices

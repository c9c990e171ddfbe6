"""Resuming a run whose sub-run is under way needs the sub-agent given again with every tool its
sub-run uses, as a run needs its own tools (audit F3): a ``SubAgent`` that lacks one, or a plain
tool in the sub-agent's place, is refused at resume with a ``ParamsError`` naming the path and the
tool, before anything runs, and a person's approval inside the sub-run stays (it used to be lost:
the approved call was answered "There is no tool named 'pay'", or the sub-run started afresh)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.subagents import by_model, lookup, outer, paid, pay, payer, paying_scripts
from toolrunner import ParamsError, SQLiteCheckpointer, ToolLike, ToolRunner, tool
from toolrunner._core.nested import record_in_tree
from toolrunner.testing import FakeMessagesAPI

pytestmark = pytest.mark.anyio


async def approved_in_a_store(path: Path, fake: FakeMessagesAPI) -> None:
    """The run paused on ``pay`` two levels down, and a person approved it through the store."""
    store = SQLiteCheckpointer(path)
    try:
        runner = ToolRunner(
            fake.async_client(),
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Pay my bill."}],
            tools=[outer(payer())],
            checkpointer=store,
            run_id="bill",
        )
        async for _ in runner:
            pass
        assert runner.end_reason == "awaiting_approval"
        await store.approve_call("bill", "toolu_c1", by="ada")
    finally:
        store.close()


def pays(task: str) -> str:
    """Pays, without a sub-run.

    Args:
        task: The task.
    """
    return "paid"


@pytest.mark.parametrize(
    ("tools", "words"),
    [
        (
            [outer(payer(tools=[]))],
            "a sub-run of the sub-agent 'payer' under way (at toolu_o1 → outer → toolu_p1 → payer) that uses the "
            "tool(s) ['pay'], which the SubAgent 'payer' given has not",
        ),
        (
            [outer(payer(tools=[lookup]))],  # renamed, or another tool in its place
            "uses the tool(s) ['pay']",
        ),
        (
            [outer(tool(name="payer")(pays))],  # a plain tool named as the sub-agent
            "a sub-run of the sub-agent 'payer' under way (at toolu_o1 → outer → toolu_p1 → payer), but the tools "
            "given have no SubAgent named 'payer'",
        ),
        (
            [tool(name="outer")(pays)],  # the same, one level up
            "a sub-run of the sub-agent 'outer' under way (at toolu_o1 → outer), but the tools given have no "
            "SubAgent named 'outer'",
        ),
    ],
)
async def test_a_resume_that_would_lose_a_sub_runs_tool_is_refused_and_the_approval_stays(
    tmp_path: Path, tools: list[ToolLike], words: str
) -> None:
    paid.clear()
    fake = FakeMessagesAPI(responder=by_model(paying_scripts()))
    path = tmp_path / "runs.db"
    await approved_in_a_store(path, fake)
    sent = len(fake.requests)

    store = SQLiteCheckpointer(path)
    try:
        with pytest.raises(ParamsError) as refused:
            await ToolRunner.resume(fake.async_client(), run_id="bill", checkpointer=store, tools=tools)
        assert words in str(refused.value)
        assert "'bill'" in str(refused.value)
        loaded = await store.load("bill")
        assert loaded is not None
        record = record_in_tree(loaded.state, "toolu_c1")
        assert record is not None
        assert (record.decision, record.decided_by) == ("approved", "ada")
        assert len(fake.requests) == sent
        assert paid == []

        # Given its tools again, the run goes on with the person's approval: the tool runs once.
        resumed = await ToolRunner.resume(
            fake.async_client(), run_id="bill", checkpointer=store, tools=[outer(payer())]
        )
        await resumed.until_done()
    finally:
        store.close()
    assert paid == [5]
    assert resumed.end_reason == "model"


async def test_a_sub_agent_may_gain_a_tool(tmp_path: Path) -> None:
    # More tools than the saved sub-run names are no loss: the sub-run goes on (its requests offer
    # the SubAgent's tools as given).
    paid.clear()
    fake = FakeMessagesAPI(responder=by_model(paying_scripts()))
    path = tmp_path / "runs.db"
    await approved_in_a_store(path, fake)
    store = SQLiteCheckpointer(path)
    try:
        resumed = await ToolRunner.resume(
            fake.async_client(), run_id="bill", checkpointer=store, tools=[outer(payer(tools=[pay, lookup]))]
        )
        await resumed.until_done()
    finally:
        store.close()
    assert paid == [5]
    assert [tool["name"] for tool in fake.requests[-3].tools] == ["pay", "lookup"]

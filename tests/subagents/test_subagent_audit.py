"""The audit of a tree (issue 30): a decision taken inside a sub-run stays in the root's audit
(``RunState.decisions``, with its path) for the life of the run, after the sub-run's record left
the journal with the parent's turn: in the store, on the command line; and a decision the store
took first on a nested call overrules this runner's, which says so."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.subagents import by_model
from toolrunner import (
    ApprovalError,
    MemoryCheckpointer,
    RunState,
    SQLiteCheckpointer,
    SubAgent,
    ToolCall,
    ToolRunner,
    tool,
)
from toolrunner._core.tree_audit import decisions_in_tree
from toolrunner._ops.cli import run as run_cli  # pyright: ignore[reportPrivateUsage]
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


def payer() -> SubAgent:
    return SubAgent(name="payer", description="Pays bills.", model="claude-sub", max_tokens=200, tools=[pay])


def accountant() -> SubAgent:
    """Two levels: an accountant whose payer pays."""
    return SubAgent(
        name="accountant", description="Keeps the books.", model="claude-mid", max_tokens=200, tools=[payer()]
    )


def one_level() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("payer", {"task": "Pay 5."}, id="toolu_p1")),
            text_reply("Paid."),
        ],
        "claude-sub": [tool_reply(tool_call("pay", {"amount": 5}, id="toolu_c1")), text_reply("I paid 5.")],
    }


def runner_of(client: Any, **options: Any) -> ToolRunner:
    defaults: dict[str, Any] = {
        "model": "claude-parent",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Go."}],
        "tools": [payer()],
    }
    return ToolRunner(client, **(defaults | options))


def audit(state: RunState) -> list[tuple[str, str, str | None, str | None, tuple[str, ...]]]:
    return [(entry.call.id, entry.decision, entry.by, entry.via, entry.path) for entry in state.decisions]


async def test_a_nested_decision_stays_in_the_roots_audit_after_the_turn_and_in_the_store() -> None:
    paid.clear()
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(responder=by_model(one_level()))
    async with fake.async_client() as client:
        runner = runner_of(client, checkpointer=store, run_id="bill")
        async for _ in runner:
            pass
        runner.approve("toolu_c1", by="ada")
        assert audit(runner.state) == []  # in flight: the sub-run's own audit holds it
        assert [(entry.call.id, entry.path) for entry in decisions_in_tree(runner.state)] == [
            ("toolu_c1", ("toolu_p1", "payer"))
        ]
        await runner.until_done()
    assert paid == [5]
    assert runner.state.calls == {}  # the turn ended: the sub-run's record left the journal
    expected = [("toolu_c1", "approved", "ada", "runner", ("toolu_p1", "payer"))]
    assert audit(runner.state) == expected
    saved = await store.load("bill")
    assert saved is not None
    assert audit(saved.state) == expected
    assert audit(RunState.from_json(saved.state.to_json())) == expected
    [entry] = saved.state.decisions
    assert entry.call == ToolCall("toolu_c1", "pay", {"amount": 5})
    assert entry.at is not None


async def test_two_levels_down_a_decision_through_the_store_joins_each_audit_up_to_the_root(
    tmp_path: Path,
) -> None:
    paid.clear()
    path = tmp_path / "runs.db"
    scripts: dict[str, list[ScriptEntry]] = {
        "claude-parent": [
            tool_reply(tool_call("accountant", {"task": "Settle the bill."}, id="toolu_p1")),
            text_reply("Settled."),
        ],
        "claude-mid": [
            tool_reply(tool_call("payer", {"task": "Pay 5."}, id="toolu_m1")),
            text_reply("Paid 5."),
        ],
        "claude-sub": [tool_reply(tool_call("pay", {"amount": 5}, id="toolu_c1")), text_reply("I paid 5.")],
    }
    fake = FakeMessagesAPI(responder=by_model(scripts))
    store = SQLiteCheckpointer(path)
    try:
        async with fake.async_client() as client:
            runner = runner_of(client, tools=[accountant()], checkpointer=store, run_id="bill")
            async for _ in runner:
                pass
            await store.deny_call("bill", "toolu_c1", "Not this month.", by="bob")
            resumed = await ToolRunner.resume(client, run_id="bill", checkpointer=store, tools=[accountant()])
            await resumed.until_done()
        saved = await store.load("bill")
    finally:
        store.close()
    assert paid == []
    assert saved is not None
    assert audit(saved.state) == [
        ("toolu_c1", "denied", "bob", "store", ("toolu_p1", "accountant", "toolu_m1", "payer"))
    ]
    assert saved.state.decisions[0].reason == "Not this month."


def test_the_command_line_shows_nested_decisions_with_their_path_in_flight_and_after(tmp_path: Path) -> None:
    paid.clear()
    path = tmp_path / "runs.db"
    fake = FakeMessagesAPI(responder=by_model(one_level()))

    def cli(*argv: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        code = run_cli([*argv, "--store", str(path)], out, err)
        assert code == 0, out.getvalue() + err.getvalue()
        return out.getvalue()

    async def pause() -> None:
        store = SQLiteCheckpointer(path)
        try:
            async with fake.async_client() as client:
                runner = runner_of(client, checkpointer=store, run_id="bill")
                async for _ in runner:
                    pass
        finally:
            store.close()

    async def go_on() -> None:
        store = SQLiteCheckpointer(path)
        try:
            async with fake.async_client() as client:
                resumed = await ToolRunner.resume(client, run_id="bill", checkpointer=store, tools=[payer()])
                await resumed.until_done()
        finally:
            store.close()

    anyio.run(pause)
    cli("runs", "approve", "bill", "toolu_c1", "--by", "ada")
    shown = cli("runs", "show", "bill").split("── decisions", 1)[1]
    assert "toolu_c1  pay" in shown
    assert "approved by ada" in shown
    assert "in a sub-agent's run: toolu_p1 → payer → toolu_c1" in shown
    anyio.run(go_on)
    shown = cli("runs", "show", "bill").split("── decisions", 1)[1]
    assert "approved by ada" in shown
    assert "in a sub-agent's run: toolu_p1 → payer → toolu_c1" in shown
    assert paid == [5]


async def test_a_sub_run_the_run_went_on_without_leaves_its_decisions_and_usage() -> None:
    paid.clear()
    scripts = one_level()
    scripts["claude-sub"][0] = tool_reply(
        tool_call("pay", {"amount": 5}, id="toolu_c1"), tool_call("pay", {"amount": 7}, id="toolu_c2")
    )
    scripts["claude-parent"][1] = text_reply("Fine, no payment.")
    fake = FakeMessagesAPI(responder=by_model(scripts))
    async with fake.async_client() as client:
        runner = runner_of(client)
        async for _ in runner:
            pass
        runner.deny("toolu_c1", "No.", by="ada")  # the other one still waits
        spent = runner.tree_usage.total.total_tokens
        runner.close()  # the person gives up on the run, then asks something else
        runner.push_messages({"role": "user", "content": "Forget the payment."})
        await runner.until_done()
    assert paid == []
    assert runner.state.calls == {}  # the paused turn left the journal with its sub-run
    assert audit(runner.state) == [("toolu_c1", "denied", "ada", "runner", ("toolu_p1", "payer"))]
    assert [(summary.path, summary.end_reason) for summary in runner.state.sub_runs] == [
        (("toolu_p1", "payer"), "awaiting_approval")
    ]
    assert runner.tree_usage.total.total_tokens > spent  # what it spent still counts, with the new request


async def test_a_gate_that_fails_inside_a_sub_run_is_in_the_roots_audit() -> None:
    def broken(call: ToolCall) -> bool:
        raise RuntimeError("the gate is down")

    @tool(requires_approval=broken)
    def refund(amount: int) -> str:
        """Refund an amount.

        Args:
            amount: How much.
        """
        return "refunded"

    scripts = one_level()
    scripts["claude-sub"][0] = tool_reply(tool_call("refund", {"amount": 5}, id="toolu_c1"))
    fake = FakeMessagesAPI(responder=by_model(scripts))
    agent = SubAgent(name="payer", description="Pays.", model="claude-sub", max_tokens=200, tools=[refund])
    async with fake.async_client() as client:
        runner = runner_of(client, tools=[agent])
        await runner.until_done()
    assert audit(runner.state) == [("toolu_c1", "denied", None, "gate", ("toolu_p1", "payer"))]


async def test_the_stores_decision_on_a_nested_call_overrules_the_runners_and_the_runner_says_so() -> None:
    paid.clear()
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(responder=by_model(one_level()))
    async with fake.async_client() as client:
        held = runner_of(client, checkpointer=store, run_id="bill")
        async for _ in held:
            pass
        held.deny("toolu_c1", "No.")  # in this process, not saved yet
        await store.approve_call("bill", "toolu_c1", by="ada")
        with pytest.raises(
            ApprovalError,
            match=r"'toolu_c1' was approved by 'ada' .* this runner's decision \(denied\) is dropped",
        ):
            await held.until_done()
        assert paid == []  # nothing ran on the way to the error
        await held.until_done()  # as told: iterate again
    assert paid == [5]
    # The audit keeps the decision the call went on with, once: the overruled one left it.
    assert audit(held.state) == [("toolu_c1", "approved", "ada", "store", ("toolu_p1", "payer"))]
    saved = await store.load("bill")
    assert saved is not None
    assert audit(saved.state) == audit(held.state)

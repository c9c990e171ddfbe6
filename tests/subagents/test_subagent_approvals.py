"""Approvals inside sub-runs (issue 30): a call of a sub-agent that needs approval pauses the
whole tree; it is listed with its path, decided in the runner or through the store, and the run
goes on down the same path (the tool runs once, the child's answer reaches the parent)."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.subagents import by_model
from toolrunner import (
    ApprovalDecided,
    ApprovalError,
    MemoryCheckpointer,
    RunStatus,
    SQLiteCheckpointer,
    SubAgent,
    SubRunEvent,
    ToolRunner,
    tool,
)
from toolrunner._ops.cli import run as run_cli  # pyright: ignore[reportPrivateUsage]
from toolrunner.testing import (
    FailingCheckpointer,
    FakeMessagesAPI,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

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


def payer(**changes: Any) -> SubAgent:
    options: dict[str, Any] = {
        "name": "payer",
        "description": "Pays bills.",
        "model": "claude-sub",
        "max_tokens": 200,
        "tools": [pay],
    }
    return SubAgent(**(options | changes))


def one_level() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(tool_call("payer", {"task": "Pay 5."}, id="toolu_p1")),
            text_reply("Paid."),
        ],
        "claude-sub": [
            tool_reply(tool_call("pay", {"amount": 5}, id="toolu_c1")),
            text_reply("I paid 5."),
        ],
    }


def runner_of(client: Any, **options: Any) -> ToolRunner:
    defaults: dict[str, Any] = {
        "model": "claude-parent",
        "max_tokens": 100,
        "messages": [{"role": "user", "content": "Go."}],
        "tools": [payer()],
    }
    return ToolRunner(client, **(defaults | options))


def decisions_heard(seen: list[Any]) -> list[tuple[tuple[str, ...], ApprovalDecided]]:
    """The decisions on calls inside sub-runs the parent's listener heard: their path and event."""
    return [
        (event.path, event.event)
        for event in seen
        if isinstance(event, SubRunEvent) and isinstance(event.event, ApprovalDecided)
    ]


def models(fake: FakeMessagesAPI) -> list[str]:
    return [request.body["model"] for request in fake.requests]


async def test_a_nested_call_pauses_the_tree_and_is_approved_in_the_runner() -> None:
    paid.clear()
    seen: list[Any] = []
    fake = FakeMessagesAPI(responder=by_model(one_level()))
    async with fake.async_client() as client:
        runner = runner_of(client, on_event=seen.append)
        async for _ in runner:
            pass
        assert runner.state.end_reason == "awaiting_approval"
        assert paid == []
        (waiting,) = runner.pending_approvals
        assert (waiting.id, waiting.name, waiting.input) == ("toolu_c1", "pay", {"amount": 5})
        assert waiting.path == ("toolu_p1", "payer")
        record = runner.state.calls["toolu_p1"]
        assert record.status.value == "started"  # suspended, not answered
        assert record.sub_run is not None
        assert record.sub_run.state.end_reason == "awaiting_approval"

        runner.approve("toolu_c1", by="ada")
        assert runner.pending_approvals == []
        text = (await runner.until_done()).content[0]
        assert getattr(text, "text", None) == "Paid."
    assert paid == [5]
    assert models(fake) == ["claude-parent", "claude-sub", "claude-sub", "claude-parent"]
    assert "I paid 5." in str(fake.requests[-1].messages[-1]["content"])
    assert "paid 5" in str(fake.requests[2].messages[-1]["content"])
    decided = decisions_heard(seen)
    assert [(path, event.by, event.via) for path, event in decided] == [
        (("toolu_p1", "payer"), "ada", "runner")
    ]


async def test_a_denied_nested_call_is_read_by_the_childs_model() -> None:
    paid.clear()
    scripts = one_level()
    scripts["claude-sub"][1] = text_reply("I could not pay.")
    fake = FakeMessagesAPI(responder=by_model(scripts))
    async with fake.async_client() as client:
        runner = runner_of(client)
        async for _ in runner:
            pass
        runner.deny("toolu_c1", "Too much today.")
        await runner.until_done()
    assert paid == []
    child_second = fake.requests[2]
    assert child_second.body["model"] == "claude-sub"
    result = child_second.messages[-1]["content"][0]
    assert result["is_error"] is True
    assert "Too much today." in str(result["content"])
    assert "I could not pay." in str(fake.requests[-1].messages[-1]["content"])


async def test_answer_a_nested_call() -> None:
    paid.clear()
    fake = FakeMessagesAPI(responder=by_model(one_level()))
    async with fake.async_client() as client:
        runner = runner_of(client)
        async for _ in runner:
            pass
        runner.answer("toolu_c1", "paid by hand")
        await runner.until_done()
    assert paid == []
    assert "paid by hand" in str(fake.requests[2].messages[-1]["content"])


async def test_a_two_level_tree_pauses_and_goes_on() -> None:
    paid.clear()
    specialist = payer(name="specialist")
    coordinator = SubAgent(
        name="coordinator",
        description="Hands work out.",
        model="claude-mid",
        max_tokens=200,
        tools=[specialist],
    )
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": [
                    tool_reply(tool_call("coordinator", {"task": "Settle the bill."}, id="toolu_p1")),
                    text_reply("Settled."),
                ],
                "claude-mid": [
                    tool_reply(tool_call("specialist", {"task": "Pay 7."}, id="toolu_m1")),
                    text_reply("The specialist paid 7."),
                ],
                "claude-sub": [
                    tool_reply(tool_call("pay", {"amount": 7}, id="toolu_c1")),
                    text_reply("I paid 7."),
                ],
            }
        )
    )
    async with fake.async_client() as client:
        runner = runner_of(client, tools=[coordinator])
        async for _ in runner:
            pass
        assert runner.state.end_reason == "awaiting_approval"
        (waiting,) = runner.pending_approvals
        assert waiting.id == "toolu_c1"
        assert waiting.path == ("toolu_p1", "coordinator", "toolu_m1", "specialist")
        runner.approve("toolu_c1", input={"amount": 6})
        await runner.until_done()
    assert paid == [6]
    assert models(fake) == [
        "claude-parent",
        "claude-mid",
        "claude-sub",
        "claude-sub",
        "claude-mid",
        "claude-parent",
    ]
    assert "The specialist paid 7." in str(fake.requests[-1].messages[-1]["content"])


async def test_an_id_that_waits_nowhere_is_refused() -> None:
    fake = FakeMessagesAPI(responder=by_model(one_level()))
    async with fake.async_client() as client:
        runner = runner_of(client)
        async for _ in runner:
            pass
        with pytest.raises(ApprovalError, match=r"toolu_nope.*toolu_c1"):
            runner.approve("toolu_nope")
        with pytest.raises(ApprovalError, match=r"toolu_p1.*running"):
            runner.deny("toolu_p1", "no")  # the suspended parent's call is not decided itself
        runner.approve("toolu_c1")
        with pytest.raises(ApprovalError, match="approved already"):
            runner.approve("toolu_c1")


def after_the_tool_ran(inner: MemoryCheckpointer) -> FailingCheckpointer:
    """A store whose save of the child's call's result fails (once); every other save is saved."""
    store = FailingCheckpointer(inner, fail_on=[])
    save = store.save

    async def watched(checkpoint: Any) -> None:
        record = checkpoint.state.calls.get("toolu_p1")
        child = None if record is None or record.sub_run is None else record.sub_run.state
        done = child is not None and "toolu_c1" in child.calls and child.calls["toolu_c1"].result is not None
        if done and not store.failed:
            store.fail_on = frozenset({store.saves + 1})
        await save(checkpoint)

    store.save = watched  # type: ignore[method-assign]
    return store


@pytest.mark.parametrize("go_on", ["same runner", "resumed"])
async def test_the_tool_never_runs_twice_across_a_pause_a_failed_save_and_a_resume(go_on: str) -> None:
    paid.clear()
    fake = FakeMessagesAPI(responder=by_model(one_level()))
    inner = MemoryCheckpointer()
    store = after_the_tool_ran(inner)
    async with fake.async_client() as client:
        runner = runner_of(client, checkpointer=store, run_id="bill")
        async for _ in runner:
            pass
        assert runner.state.end_reason == "awaiting_approval"
        paused = await inner.load("bill")
        assert paused is not None
        assert paused.state.end_reason == "awaiting_approval"

        runner.approve("toolu_c1")
        with pytest.raises(OSError, match="No space left"):
            await runner.until_done()
        assert paid == [5]
        assert len(store.failed) == 1
        if go_on == "same runner":  # its state holds the result: the next step saves it
            await runner.until_done()
        else:  # a new process, from the store (the failed step's own save kept the result)
            resumed = await ToolRunner.resume(client, run_id="bill", checkpointer=inner, tools=[payer()])
            await resumed.until_done()
        assert "paid 5" in str(fake.requests[2].messages[-1]["content"])
    assert paid == [5]
    final = await inner.load("bill")
    assert final is not None
    assert final.state.end_reason == "model"
    assert models(fake) == ["claude-parent", "claude-sub", "claude-sub", "claude-parent"]
    assert "I paid 5." in str(fake.requests[-1].messages[-1]["content"])


# -- through the store: its summary, its decisions, the command line ---------------------------------


async def paused_in_sqlite(client: Any, path: Path) -> None:
    store = SQLiteCheckpointer(path)
    try:
        runner = runner_of(client, checkpointer=store, run_id="bill")
        async for _ in runner:
            pass
        assert runner.state.end_reason == "awaiting_approval"
    finally:
        store.close()


async def test_a_nested_call_is_decided_through_the_store_and_a_resume_goes_on(tmp_path: Path) -> None:
    paid.clear()
    path = tmp_path / "runs.db"
    fake = FakeMessagesAPI(responder=by_model(one_level()))
    async with fake.async_client() as client:
        await paused_in_sqlite(client, path)
        other = SQLiteCheckpointer(path)  # another process: a person's inbox, say
        try:
            summary = await other.get_run("bill")
            assert summary is not None
            assert summary.status is RunStatus.AWAITING
            assert summary.end_reason == "awaiting_approval"
            (waiting,) = summary.waiting
            assert (waiting.id, waiting.name, waiting.path) == ("toolu_c1", "pay", ("toolu_p1", "payer"))
            listed = await other.list_runs(status="awaiting")
            assert [run.run_id for run in listed.runs] == ["bill"]

            record = await other.approve_call("bill", "toolu_c1", by="ada")
            assert (record.call.id, record.decision, record.decided_by) == ("toolu_c1", "approved", "ada")
            summary = await other.get_run("bill")
            assert summary is not None
            assert summary.status is RunStatus.READY
            assert summary.waiting == ()
            with pytest.raises(ApprovalError, match="was approved by 'ada'"):
                await other.deny_call("bill", "toolu_c1", "no")
            with pytest.raises(ApprovalError, match="toolu_nope"):
                await other.approve_call("bill", "toolu_nope")
            assert paid == []

            resumed = await ToolRunner.resume(client, run_id="bill", checkpointer=other, tools=[payer()])
            await resumed.until_done()
            done = await other.get_run("bill")
            assert done is not None
            assert done.status is RunStatus.FINISHED
        finally:
            other.close()
    assert paid == [5]
    assert models(fake) == ["claude-parent", "claude-sub", "claude-sub", "claude-parent"]
    assert "I paid 5." in str(fake.requests[-1].messages[-1]["content"])


async def test_a_runner_that_holds_the_run_takes_a_nested_decision_from_the_store(tmp_path: Path) -> None:
    paid.clear()
    path = tmp_path / "runs.db"
    scripts = one_level()
    scripts["claude-sub"][1] = text_reply("Not paid.")
    fake = FakeMessagesAPI(responder=by_model(scripts))
    seen: list[Any] = []
    store, other = SQLiteCheckpointer(path), SQLiteCheckpointer(path)
    try:
        async with fake.async_client() as client:
            runner = runner_of(client, checkpointer=store, run_id="bill", on_event=seen.append)
            async for _ in runner:
                pass
            await other.deny_call("bill", "toolu_c1", "Not this month.", by="bob")
            await runner.until_done()  # the same runner, iterated again
    finally:
        store.close()
        other.close()
    assert paid == []
    assert "Not this month." in str(fake.requests[2].messages[-1]["content"])
    decided = decisions_heard(seen)
    assert [(path, event.by, event.via) for path, event in decided] == [
        (("toolu_p1", "payer"), "bob", "store")
    ]


def test_the_command_line_shows_and_approves_a_nested_call(tmp_path: Path) -> None:
    paid.clear()
    path = tmp_path / "runs.db"
    fake = FakeMessagesAPI(responder=by_model(one_level()))

    async def pause() -> None:
        async with fake.async_client() as client:
            await paused_in_sqlite(client, path)

    anyio.run(pause)

    def cli(*argv: str) -> tuple[int, str]:
        out, err = io.StringIO(), io.StringIO()
        code = run_cli([*argv, "--store", str(path)], out, err)
        return code, out.getvalue() + err.getvalue()

    code, out = cli("runs", "show", "bill")
    assert code == 0, out
    assert "toolu_c1" in out
    assert "toolu_p1 → payer → toolu_c1" in out
    code, out = cli("runs", "approve", "bill", "toolu_c1", "--by", "ada")
    assert code == 0, out
    assert "Approved toolu_c1 (pay) of run bill by ada" in out
    assert "The run is ready" in out


async def test_a_nested_call_decided_first_leaves_the_runs_own_call_decidable_through_the_store() -> None:
    """A sub-agent's call whose paused sub-run has all its calls decided does not run (it goes on
    when a runner takes the turn up): the run still waits for its own call, listed and decidable."""
    paid.clear()
    scripts = one_level()
    scripts["claude-parent"] = [
        tool_reply(
            tool_call("payer", {"task": "Pay 5."}, id="toolu_p1"),
            tool_call("pay", {"amount": 7}, id="toolu_top"),
        ),
        text_reply("Paid."),
    ]
    store = MemoryCheckpointer()
    async with FakeMessagesAPI(responder=by_model(scripts)).async_client() as client:
        runner = runner_of(client, tools=[payer(), pay], checkpointer=store, run_id="bills")
        async for _ in runner:
            pass
        await store.approve_call("bills", "toolu_c1", by="ada")
        summary = await store.get_run("bills")
        assert summary is not None
        assert summary.status is RunStatus.AWAITING
        assert [call.id for call in summary.waiting] == ["toolu_top"]
        await store.approve_call("bills", "toolu_top", by="ada")
        summary = await store.get_run("bills")
        assert summary is not None
        assert (summary.status, summary.waiting) == (RunStatus.READY, ())
        await runner.until_done()
    assert sorted(paid) == [5, 7]

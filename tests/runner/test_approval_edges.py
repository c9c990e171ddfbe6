"""Approvals at their edges, where the order of the run's effects decides (``_core``): an edited
decision survives a restarted call; a decision is atomic, JSON, convertible; ``events()`` sees
decisions taken before it; a pause is no end. Each test is a defect found from outside, named by
what must hold instead.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import Any

import anyio
import pytest

from tests.support.counted_tools import runs
from tests.support.helpers import MODEL, USER, FailOnce, make_runner, results_of
from toolrunner import (
    ApprovalDecided,
    ApprovalError,
    MemoryCheckpointer,
    RunnerEvent,
    SyncToolRunner,
    ToolCallStarted,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

refund_started = threading.Event()


@tool(requires_approval=True)
async def refund(account: int, amount: int) -> str:
    """Refund an amount to an account."""
    runs[f"refund {amount}"] += 1
    refund_started.set()
    await anyio.sleep(0.05)  # long enough to be cancelled in the middle
    return f"refunded {amount} to {account}"


def refund_script() -> FakeMessagesAPI:
    return FakeMessagesAPI(
        [tool_reply(tool_call("refund", {"account": 7, "amount": 500}, id="r")), text_reply("Refunded.")]
    )


async def to_the_pause(runner: ToolRunner[Any]) -> None:
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"


# -- approvals ------------------------------------------------------------------------------------


@tool(requires_approval=True, idempotent=True, name="refund")
async def idempotent_refund(account: int, amount: int) -> str:
    """Refund an amount to an account (the service dedupes refunds)."""
    return await refund(account, amount)


@pytest.mark.parametrize("durable", [False, True], ids=["without-a-store", "idempotent-with-a-store"])
async def test_an_edited_approval_is_what_runs_after_the_call_is_cancelled_and_started_again(
    durable: bool,
) -> None:
    # A call cut off mid-flight runs again only where nothing says it started (no store), or where
    # its tool may run again (idempotent); tests/runner/test_failed_saves.py: otherwise it is interrupted.
    options: dict[str, Any] = {"checkpointer": MemoryCheckpointer(), "run_id": "r"} if durable else {}
    runner = make_runner(refund_script(), idempotent_refund if durable else refund, **options)
    await to_the_pause(runner)
    runner.approve("r", input={"account": 7, "amount": 50})
    with anyio.move_on_after(0.02):  # cancelled while the refund runs
        async for _ in runner:
            pass
    assert runs == Counter({"refund 50": 1})
    await runner.until_done()
    assert runs == Counter({"refund 50": 2})  # started again, as approved: never 500
    assert results_of(runner.messages[2]) == [("r", "refunded 50 to 7", False)]


async def test_an_edited_approval_is_what_runs_after_the_save_as_it_starts_fails_once() -> None:
    store = FailOnce(fail_at=-1)
    runner = make_runner(refund_script(), refund, checkpointer=store, run_id="r")
    await to_the_pause(runner)
    runner.approve("r", input={"account": 7, "amount": 50})
    store.fail_at = store.attempts  # the save that journals the refund as started
    with pytest.raises(OSError, match="No space left"):
        await runner.until_done()
    assert runs == Counter()  # the tool never began
    assert runner.state.calls["r"].approved_input == {"account": 7, "amount": 50}
    await runner.until_done()
    assert runs == Counter({"refund 50": 1})


async def test_an_approved_input_json_cannot_carry_is_refused_and_the_call_still_waits() -> None:
    runner = make_runner(refund_script(), refund)
    await to_the_pause(runner)
    with pytest.raises(ApprovalError, match="JSON cannot carry"):
        runner.approve("r", input={"account": 7, "amount": {50}})
    assert [call.id for call in runner.pending_approvals] == ["r"]
    await to_the_pause(runner)  # still paused: nothing ran
    runner.approve("r", input={"account": 7, "amount": 50})
    await runner.until_done()
    assert runs == Counter({"refund 50": 1})


def test_two_decisions_on_one_call_from_two_threads_one_wins_and_the_other_is_refused() -> None:
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads switch as often as they can: the race shows if there is one
    try:
        for _ in range(100):
            race_two_decisions()
    finally:
        sys.setswitchinterval(interval)


def race_two_decisions() -> None:
    fake = refund_script()
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER], tools=[refund])
    for _ in runner:
        pass
    barrier = threading.Barrier(2)
    outcomes: list[str] = []

    def decide(kind: str) -> None:
        barrier.wait()
        try:
            if kind == "approve":
                runner.approve("r")
            else:
                runner.deny("r", "No.")
            outcomes.append(kind)
        except ApprovalError:
            outcomes.append("refused")

    threads = [threading.Thread(target=decide, args=(kind,)) for kind in ("approve", "deny")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(outcomes)[-1] == "refused", outcomes
    [winner] = [outcome for outcome in outcomes if outcome != "refused"]
    assert runner.state.calls["r"].decision == {"approve": "approved", "deny": "denied"}[winner]


async def test_an_answer_no_result_can_hold_is_refused_and_the_call_still_waits() -> None:
    runner = make_runner(refund_script(), refund)
    await to_the_pause(runner)
    with pytest.raises(ApprovalError, match=r"answer\('r', ...\) got a 'object'"):
        runner.answer("r", object())
    assert [call.id for call in runner.pending_approvals] == ["r"]


async def test_events_opened_after_a_decision_begin_with_it() -> None:
    runner = make_runner(refund_script(), refund)
    await to_the_pause(runner)
    runner.approve("r", by="ada")
    seen: list[RunnerEvent] = []
    async with runner.events() as events:
        async for event in events:
            seen.append(event)
    assert isinstance(seen[0], ApprovalDecided)
    assert seen[0].call.id == "r"
    assert isinstance(seen[1], ToolCallStarted)
    assert runner.state.reply is not None
    assert runner.end_reason == "model"


async def test_who_decided_and_when_is_kept_with_the_call() -> None:
    store = MemoryCheckpointer()
    runner = make_runner(refund_script(), refund, checkpointer=store, run_id="r")
    await to_the_pause(runner)
    runner.deny("r", "Over the limit.", by="ada@example.com")
    record = runner.state.calls["r"]
    assert record.decided_by == "ada@example.com"
    assert record.decided_at is not None
    assert record.decided_at.endswith("+00:00")
    assert record.tool is not None
    assert record.tool["name"] == "refund"
    assert record.tool["input_schema"]["required"] == ["account", "amount"]

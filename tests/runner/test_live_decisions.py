"""A runner that holds a paused run takes over the decisions taken through the store meanwhile.

A run pauses in a process that keeps its runner (a service that iterates it again later); a
person decides a waiting call through the store (the command line, the inbox, ``approve_call``).
When the runner goes on, it reads the store, takes the decision over (with who made it and when)
and saves on from the store's save; it does not stop with a conflict. A decision this process
made on the same call since its last save is dropped (the store's was saved first) and the
runner says so; a run that another runner went on with, or that was deleted, stops this one.
Each case runs on every store (memory, SQLite, PostgreSQL).
"""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from tests.support.helpers import MODEL
from tests.support.stores import look as look_tool, paid, pay as pay_tool, runner
from toolrunner import (
    ApprovalDecided,
    ApprovalError,
    AwaitingApprovalError,
    CheckpointConflictError,
    RunnerEvent,
    RunStatus,
    RunStore,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _clear_paid() -> None:
    paid.clear()


def pay(amount: int, id_: str) -> Any:
    return tool_call("pay", {"amount": amount}, id=id_)


async def paused(store: RunStore, *calls: Any, events: list[RunnerEvent] | None = None) -> ToolRunner:
    """A runner of the run "r", paused with ``calls`` waiting (its fake answers "Paid." next)."""
    script = [tool_reply(*calls), text_reply("Paid.")]
    held = runner(store, "r", script, **({} if events is None else {"on_event": events.append}))
    with pytest.raises(AwaitingApprovalError):
        await held.until_done()
    return held


def results_sent(held: ToolRunner) -> list[dict[str, Any]]:
    """The tool_result blocks of the history's last user message."""
    [*_, last_user, _reply] = held.state.messages
    return list(last_user["content"])


async def test_an_approval_through_the_store_is_taken_over_with_its_edited_input(store: RunStore) -> None:
    events: list[RunnerEvent] = []
    held = await paused(store, pay(120, "c"), events=events)
    await store.approve_call("r", "c", input={"amount": 80}, by="ada")
    await held.until_done()  # no CheckpointConflictError: the runner goes on from the store's save
    assert paid == [80]
    assert held.state.end_reason == "model"
    [result] = results_sent(held)
    assert (result["tool_use_id"], result["content"]) == ("c", "paid 80 to ACME")
    assert [(e.call.id, e.decision) for e in events if isinstance(e, ApprovalDecided)] == [("c", "approved")]
    saved = await store.load("r")
    assert saved is not None
    assert saved.state.end_reason == "model"
    assert saved.state.to_dict() == held.state.to_dict()


async def test_a_denial_and_an_answer_through_the_store_reach_the_model(store: RunStore) -> None:
    held = await paused(store, pay(120, "c1"), pay(130, "c2"))
    await store.deny_call("r", "c1", "Not this month.", by="ada")
    await store.answer_call("r", "c2", "paid by hand", by="bob")
    await held.until_done()
    assert paid == []
    [denial, answer] = results_sent(held)
    assert (denial["tool_use_id"], denial["content"], denial.get("is_error")) == (
        "c1",
        "Not this month.",
        True,
    )
    assert answer["tool_use_id"] == "c2"
    assert "paid by hand" in str(answer["content"])


async def test_decisions_in_the_process_and_through_the_store_on_other_calls_both_apply(
    store: RunStore,
) -> None:
    held = await paused(store, pay(120, "c1"), pay(130, "c2"))
    held.approve("c1")
    await store.deny_call("r", "c2", "No.", by="ada")
    await held.until_done()
    assert paid == [120]
    assert [block["tool_use_id"] for block in results_sent(held)] == ["c1", "c2"]


async def test_the_stores_decision_on_the_same_call_stands_and_the_runner_says_so(store: RunStore) -> None:
    held = await paused(store, pay(120, "c"))
    held.deny("c", "No.")  # in this process, not saved yet
    await store.approve_call("r", "c", input={"amount": 90}, by="ada")
    with pytest.raises(
        ApprovalError, match=r"'c' was approved by 'ada' .* this runner's decision \(denied\) is dropped"
    ):
        await held.until_done()
    assert paid == []  # nothing ran on the way to the error
    await held.until_done()  # as told: iterate again
    assert paid == [90]
    # The audit keeps the decision the call went on with, once: the overruled one leaves it.
    audit = [(entry.call.id, entry.decision, entry.by, entry.via) for entry in held.state.decisions]
    assert audit == [("c", "approved", "ada", "store")]
    saved = await store.load("r")
    assert saved is not None
    assert [(entry.decision, entry.via) for entry in saved.state.decisions] == [("approved", "store")]


async def test_a_runner_that_reads_no_decision_pauses_again_and_goes_on_with_its_own(store: RunStore) -> None:
    held = await paused(store, pay(120, "c"))
    with pytest.raises(AwaitingApprovalError):
        await held.until_done()
    saved = await store.load("r")
    assert saved is not None
    assert saved.state.calls["c"].decision is None
    held.approve("c")
    await held.until_done()
    assert paid == [120]


async def test_a_run_another_runner_went_on_with_stops_the_held_one(store: RunStore) -> None:
    held = await paused(store, pay(120, "c"))
    other = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=held_tools(),
    )
    other.approve("c")
    await other.until_done()
    assert paid == [120]
    with pytest.raises(CheckpointConflictError, match="saved by another runner"):
        await held.until_done()
    with pytest.raises(CheckpointConflictError, match="saved by another runner"):
        await held.until_done()  # once refused, always refused
    assert paid == [120]  # the held runner ran nothing


async def test_a_deleted_run_stops_the_held_runner(store: RunStore) -> None:
    held = await paused(store, pay(120, "c"))
    await store.delete_run("r")
    held.approve("c")
    with pytest.raises(CheckpointConflictError, match="deleted from the store"):
        await held.until_done()
    assert paid == []


def held_tools() -> list[Any]:
    from tests.support.stores import look, pay as pay_tool

    return [pay_tool, look]


async def test_a_turn_a_runner_goes_on_with_takes_no_decision_through_the_store(store: RunStore) -> None:
    # A reply with a call that needs no decision (still running) and one that waits: until the turn
    # pauses, the run is the runner's, and the store says so rather than take a decision it would lose.
    started, release = anyio.Event(), anyio.Event()

    @tool
    async def slow_look(q: str) -> str:
        """Look something up, slowly."""
        started.set()
        await release.wait()
        return f"found {q}"

    script = [tool_reply(tool_call("slow_look", {"q": "x"}, id="s"), pay(120, "c")), text_reply("Paid.")]
    held = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": "Pay."}],
        tools=[slow_look, *held_tools()],
        checkpointer=store,
        run_id="r",
    )
    refusals: list[str] = []

    async def decide_while_it_runs() -> None:
        await started.wait()
        summary = await store.get_run("r")
        assert summary is not None
        assert (summary.status, summary.waiting) == (RunStatus.RUNNING, ())
        with pytest.raises(ApprovalError) as refused:
            await store.approve_call("r", "c", by="ada")
        refusals.append(str(refused.value))
        release.set()

    async with anyio.create_task_group() as group:
        group.start_soon(decide_while_it_runs)
        with pytest.raises(AwaitingApprovalError):
            await held.until_done()
    assert "is going on in a runner" in refusals[0]
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.status is RunStatus.AWAITING  # paused now: decidable
    await store.approve_call("r", "c", by="ada")
    await held.until_done()
    assert paid == [120]
    [look_result, pay_result] = results_sent(held)
    assert (look_result["content"], pay_result["content"]) == ("found x", "paid 120 to ACME")


class DecidesAfterLoads:
    """A store through which a person decides right after the runner read the run (before its
    next save): the race between a runner taking up a paused turn and a decider."""

    def __init__(self, inner: RunStore, decide_after_load: int) -> None:
        self.inner, self.loads, self.decide_after_load = inner, 0, decide_after_load

    async def save(self, checkpoint: Any) -> None:
        await self.inner.save(checkpoint)

    async def load(self, run_id: str) -> Any:
        loaded = await self.inner.load(run_id)
        self.loads += 1
        if self.loads == self.decide_after_load:
            await self.inner.approve_call(run_id, "c", input={"amount": 70}, by="ada")
        return loaded


@pytest.mark.parametrize("after", [1, 2], ids=["after-resume-loads", "after-the-read-before-the-claim"])
async def test_a_decision_that_lands_as_the_runner_takes_up_the_turn_is_taken_over(
    store: RunStore, after: int
) -> None:
    await paused(store, pay(120, "c"))
    racing = DecidesAfterLoads(store, decide_after_load=after)
    again = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=racing,
        run_id="r",
        tools=held_tools(),
    )  # resume loads first; the runner reads the store again as it takes the paused turn up
    await again.until_done()  # after the read: the claim's save is refused, the runner reads again
    assert paid == [70]
    assert racing.loads > after


# -- a decision through the store never wedges the runner, whatever the loop body does (issue 27) --


FOLLOW_UP = {"role": "user", "content": "Never mind the payment; just say hello."}


def decided_events(events: list[RunnerEvent]) -> list[tuple[str, str, str | None, object, str | None]]:
    return [
        (event.call.id, event.decision, event.by, event.input, event.via)
        for event in events
        if isinstance(event, ApprovalDecided)
    ]


@pytest.mark.parametrize("steer", ["push_messages", "set_messages_params", "close"])
async def test_steering_past_a_call_decided_through_the_store_goes_on_and_keeps_the_decision(
    store: RunStore, steer: str
) -> None:
    events: list[RunnerEvent] = []
    script = [tool_reply(pay(120, "c")), text_reply("Hello.")]
    held = runner(store, "r", script, on_event=events.append)
    with pytest.raises(AwaitingApprovalError):
        await held.until_done()
    await store.approve_call("r", "c", input={"amount": 80}, by="ada")
    if steer == "push_messages":
        held.push_messages(FOLLOW_UP)  # allowed: none of the paused calls ran
    elif steer == "set_messages_params":
        held.set_messages_params(lambda params: {**params, "messages": [*params["messages"], FOLLOW_UP]})
    else:
        await held.aclose()  # the close is saved: the decision is taken over, not refused
    for _ in range(2):  # never DecidedMeanwhileError, at the first iteration or any later one
        if steer == "close":
            async for _message in held:
                pass
        else:
            await held.until_done()
    assert paid == []  # steered past: the call never ran
    assert held.state.end_reason == ("closed" if steer == "close" else "model")
    [entry] = held.state.decisions
    assert (entry.call.id, entry.decision, entry.approved_input, entry.by, entry.via) == (
        "c",
        "approved",
        {"amount": 80},
        "ada",
        "store",
    )
    assert decided_events(events) == [("c", "approved", "ada", {"amount": 80}, "store")]
    saved = await store.load("r")
    assert saved is not None
    assert saved.state.to_dict() == held.state.to_dict()


async def test_a_decision_through_the_store_is_reported_once_by_the_runner_that_resumes_the_run(
    store: RunStore,
) -> None:
    await paused(store, pay(120, "c1"), pay(130, "c2"))
    await store.approve_call("r", "c1", input={"amount": 80}, by="ada")
    await store.deny_call("r", "c2", "Not this month.", by="bob")
    events: list[RunnerEvent] = []
    resumed = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=[pay_tool, look_tool],
        on_event=events.append,
    )
    await resumed.until_done()
    assert paid == [80]
    assert decided_events(events) == [
        ("c1", "approved", "ada", {"amount": 80}, "store"),
        ("c2", "denied", "bob", None, "store"),
    ]


async def test_a_decision_made_in_the_runner_before_the_pause_is_not_reported_again_after_a_resume(
    store: RunStore,
) -> None:
    held = await paused(store, pay(120, "c1"), pay(130, "c2"))
    held.approve("c1", by="ada")
    with pytest.raises(AwaitingApprovalError):
        await held.until_done()  # c1 runs; c2 still waits: the pause is saved with c1's decision
    await store.approve_call("r", "c2", by="bob")
    events: list[RunnerEvent] = []
    resumed = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=[pay_tool, look_tool],
        on_event=events.append,
    )
    await resumed.until_done()
    assert paid == [120, 130]
    assert decided_events(events) == [("c2", "approved", "bob", None, "store")]


async def test_the_audit_of_every_decision_outlives_its_turn_and_a_resume(store: RunStore) -> None:
    held = await paused(store, pay(120, "c1"), pay(130, "c2"))
    held.approve("c1", input={"amount": 90}, by="carol")
    with pytest.raises(AwaitingApprovalError):
        await held.until_done()  # c1 runs; c2 still waits
    await store.deny_call("r", "c2", "Not now.", by="bob")
    resumed = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=[pay_tool, look_tool],
    )
    await resumed.until_done()
    assert paid == [90]
    saved = await store.load("r")
    assert saved is not None
    assert saved.state.calls == {}  # the journal holds the current turn only; the audit stays
    audit = [
        (e.call.id, e.call.name, e.call.input, e.decision, e.approved_input, e.reason, e.by, e.via)
        for e in saved.state.decisions
    ]
    assert audit == [
        ("c1", "pay", {"amount": 120}, "approved", {"amount": 90}, None, "carol", "runner"),
        ("c2", "pay", {"amount": 130}, "denied", None, "Not now.", "bob", "store"),
    ]
    assert all(entry.at for entry in saved.state.decisions)


async def test_every_decider_writes_the_time_alike(store: RunStore) -> None:
    """The runner and the store keep a decision's time in one form (``decided_at``): UTC, to the
    millisecond, so that a run's audit sorts and reads alike whoever decided."""
    import re

    held = await paused(store, pay(120, "c1"), pay(130, "c2"))
    held.approve("c1", by="bob")
    await store.deny_call("r", "c2", "No.", by="ada")
    await held.until_done()
    times = [entry.at for entry in held.state.decisions]
    assert len(times) == 2
    for at in times:
        assert at is not None
        assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}\+00:00", at), at

"""Approvals on Temporal: a call that needs a decision waits in the workflow (no worker held, for
days if need be), and the decisions come as updates from any client."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any, cast

import anyio
import pytest
from temporalio import workflow
from temporalio.client import WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from tests.temporal.temporal_helpers import Browser, member, run_plainly, start, task_queue, worker
from toolrunner import ApprovalDecided, CallRecord, Phase, RunnerEvent, ToolCall, ToolRunner, tool
from toolrunner._core.drive import Performing, intercepted
from toolrunner._core.effects import AwaitDecisions, Decisions
from toolrunner._core.results import tool_result_block
from toolrunner._core.run import TIMED_OUT
from toolrunner.temporal import MemoryPayloadStore, RunHandle, create_worker
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool
async def look_up(name: str) -> str:
    """Look up a customer."""
    ran.append(f"look_up {name}")
    return f"{name}: account 7"


@tool(requires_approval=True)
async def refund(account: int, amount: int) -> str:
    """Refund an amount to an account."""
    ran.append(f"refund {amount}")
    return f"refunded {amount} to account {account}"


def over_100(call: ToolCall) -> bool:
    amount = cast("dict[str, int]", call.input)["amount"]
    if amount < 0:
        raise ValueError("a negative amount")
    return amount > 100


@tool(requires_approval=over_100)
async def pay(amount: int) -> str:
    """Pay an amount."""
    ran.append(f"pay {amount}")
    return f"paid {amount}"


TOOLS: list[Any] = [look_up, refund, pay]


def refund_script() -> list[ScriptEntry]:
    return [
        tool_reply(
            tool_call("look_up", {"name": "Ada"}, id="look"),
            tool_call("refund", {"account": 7, "amount": 500}, id="refund"),
        ),
        text_reply("Done: Ada is refunded."),
    ]


async def wait_until_paused(run: RunHandle) -> list[ToolCall]:
    """Until the run pauses for decisions (it goes on in the workers: poll its state); the calls that wait."""
    with anyio.fail_after(30):  # a guard against a hang, not a timing
        while True:
            if (await run.state()).phase is Phase.AWAITING:
                return await run.pending_approvals()
            await anyio.sleep(0.02)


async def test_a_call_waits_a_day_for_its_approval_without_holding_a_worker(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()
    fake, store, queue = FakeMessagesAPI(refund_script()), MemoryPayloadStore(), task_queue()
    # No workflow cache: the test server keeps a stopped worker's sticky queue, where the update would
    # wait (a real server releases it when the worker shuts down).
    options: dict[str, Any] = {
        "tools": TOOLS,
        "anthropic_client": fake.async_client(),
        "store": store,
        "max_cached_workflows": 0,
    }
    async with create_worker(temporal_env.client, task_queue=queue, **options):
        run = await start(temporal_env.client, queue, run_id="a-day", tools=TOOLS)
        [call] = await wait_until_paused(run)
        state = await run.state()
    assert (call.id, call.name) == ("refund", "refund")
    assert (state.phase, state.end_reason) == (Phase.AWAITING, "awaiting_approval")
    assert ran == ["look_up Ada"]  # the call that needs no decision ran at once

    await temporal_env.sleep(timedelta(days=1))  # no worker runs meanwhile

    async with create_worker(temporal_env.client, task_queue=queue, **options):
        await run.approve("refund", input={"account": 7, "amount": 50})
        result = await run.result()
        history = await run.workflow.fetch_history()

    assert result.end_reason == "model"
    assert ran == ["look_up Ada", "refund 50"]
    results = fake.requests[1].body["messages"][-1]["content"]
    assert [block["content"] for block in results] == ["Ada: account 7", "refunded 50 to account 7"]
    started, ended = history.events[0].event_time.ToDatetime(), history.events[-1].event_time.ToDatetime()
    assert ended - started >= timedelta(days=1)

    # A ToolRunner that pauses and gets the same decision sends the same requests.
    plain_fake = FakeMessagesAPI(refund_script())
    runner = ToolRunner(
        plain_fake.async_client(),
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Go."}],
        tools=TOOLS,
    )
    async for _ in runner:  # to the pause
        pass
    runner.approve("refund", input={"account": 7, "amount": 50})
    await runner.until_done()
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]


async def test_a_reply_of_gated_calls_alone_is_decided_on_a_new_worker_without_a_cache(
    temporal_env: WorkflowEnvironment,
) -> None:
    # The workflow's first task after the restart replays the pause from its history alone: the
    # calls that wait are known there too (nothing ran in the paused turn to record them).
    ran.clear()
    script = [
        tool_reply(tool_call("refund", {"account": 7, "amount": 500}, id="refund")),
        text_reply("Done."),
    ]
    fake, store, queue = FakeMessagesAPI(script), MemoryPayloadStore(), task_queue()
    options: dict[str, Any] = {
        "tools": TOOLS,
        "anthropic_client": fake.async_client(),
        "store": store,
        "max_cached_workflows": 0,
    }
    async with create_worker(temporal_env.client, task_queue=queue, **options):
        run = await start(temporal_env.client, queue, run_id="gated-alone", tools=TOOLS)
        [call] = await wait_until_paused(run)
    assert call.id == "refund"
    async with create_worker(temporal_env.client, task_queue=queue, **options):
        assert [waiting.id for waiting in await run.pending_approvals()] == ["refund"]
        await run.approve("refund")
        result = await run.result()
    assert result.end_reason == "model"
    assert ran == ["refund 500"]


async def test_deny_answer_and_refused_decisions(temporal_env: WorkflowEnvironment) -> None:
    ran.clear()
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("refund", {"account": 7, "amount": 500}, id="r1"),
                tool_call("refund", {"account": 8, "amount": 20}, id="r2"),
            ),
            text_reply("Done."),
        ]
    )
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=TOOLS) as queue:
        run = await start(temporal_env.client, queue, run_id="decisions", tools=TOOLS)
        await wait_until_paused(run)
        with pytest.raises(WorkflowUpdateFailedError) as unknown:
            await run.approve("nope")
        with pytest.raises(WorkflowUpdateFailedError) as bad_input:
            await run.approve("r1", input={"account": "seven"})
        await run.deny("r1", "Over the limit; ask the user first.")
        with pytest.raises(WorkflowUpdateFailedError) as twice:
            await run.approve("r1")
        await run.answer("r2", {"refunded": 20, "by": "the finance team"})
        result = await run.result()

    assert "no pending tool call has the id 'nope'" in str(unknown.value.cause)
    assert "account" in str(bad_input.value.cause)
    assert "cannot be approved" in str(twice.value.cause)
    assert result.end_reason == "model"
    assert ran == []
    r1, r2 = fake.requests[1].body["messages"][-1]["content"]
    assert r1 == {
        "type": "tool_result",
        "tool_use_id": "r1",
        "content": "Over the limit; ask the user first.",
        "is_error": True,
    }
    assert json.loads(r2["content"]) == {"refunded": 20, "by": "the finance team"}


async def test_a_gate_that_is_a_function_decides_per_call_and_fails_closed(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()

    def script() -> list[ScriptEntry]:
        return [
            tool_reply(
                tool_call("pay", {"amount": 20}, id="small"),
                tool_call("pay", {"amount": 500}, id="large"),
                tool_call("pay", {"amount": -5}, id="odd"),
            ),
            text_reply("Done."),
        ]

    fake = FakeMessagesAPI(script())
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=TOOLS) as queue:
        run = await start(temporal_env.client, queue, run_id="gates", tools=TOOLS)
        [call] = await wait_until_paused(run)
        assert call.id == "large"
        await run.approve("large")
        await run.result()

    plain_fake = FakeMessagesAPI(script())
    runner = ToolRunner(
        plain_fake.async_client(),
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Go."}],
        tools=TOOLS,
    )
    async for _ in runner:  # to the pause
        pass
    runner.approve("large")
    await runner.until_done()
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    odd = fake.requests[1].body["messages"][-1]["content"][2]
    assert odd["is_error"] is True
    assert "denied because deciding whether it needs approval failed" in odd["content"]


class AwaitDecisionsOutcomes:
    """An interceptor (``intercepted``; the workflow's sandbox passes toolrunner through, so its
    runs perform through the same ``drive``) that records how each ``AwaitDecisions`` is answered."""

    def __init__(self) -> None:
        self.outcomes: list[Decisions] = []

    async def __call__(self, performing: Performing) -> Any:
        outcome = await performing.perform()
        if isinstance(performing.effect, AwaitDecisions) and not (
            workflow.in_workflow() and workflow.unsafe.is_replaying()
        ):
            self.outcomes.append(outcome)
        return outcome


journals: list[dict[str, CallRecord]] = []
timed_run: list[RunHandle] = []


@tool(requires_approval=True)
async def transfer(amount: int) -> str:
    """Transfer an amount; reads the run's journal as it runs."""
    journals.append(dict((await timed_run[0].state()).calls))
    return f"transferred {amount}"


async def test_a_call_whose_decision_does_not_come_in_time_is_denied_by_the_core(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()
    journals.clear()
    timed_run.clear()
    watch = AwaitDecisionsOutcomes()
    heard: list[RunnerEvent] = []
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("refund", {"account": 7, "amount": 500}, id="late"),
                tool_call("transfer", {"amount": 20}, id="in-time"),
            ),
            text_reply("Transferred 20; the refund got no decision."),
        ]
    )
    tools = [refund, transfer]

    def listen(_: str, event: RunnerEvent) -> None:
        heard.append(event)

    with intercepted(watch):
        async with worker(temporal_env, fake, MemoryPayloadStore(), tools=tools, on_event=listen) as queue:
            run = await start(
                temporal_env.client, queue, run_id="timeout", tools=tools, approval_timeout=timedelta(hours=8)
            )
            timed_run.append(run)
            assert [call.id for call in await wait_until_paused(run)] == ["late", "in-time"]
            await run.approve("in-time", by="ada")
            result = await run.result()  # the test server skips the eight hours

    # The workflow waited, and answered the core's AwaitDecisions: the time ran out.
    assert watch.outcomes == [Decisions.TIMED_OUT]
    assert result.end_reason == "model"
    assert ran == []  # the refund never ran
    late, in_time = fake.requests[1].body["messages"][-1]["content"]
    reason = TIMED_OUT.format(name="refund", timeout="8 hours")
    assert (late["content"], late["is_error"]) == (reason, True)
    assert in_time["content"] == "transferred 20"
    # The journal keeps the denial: no one decided it, and the result says why.
    [journal] = journals
    assert (journal["late"].decision, journal["late"].decided_by) == ("denied", None)
    assert journal["late"].result == tool_result_block("late", reason, is_error=True)
    assert (journal["in-time"].decision, journal["in-time"].decided_by) == ("approved", "ada")
    # Each decision is reported once (docs/approvals.md).
    decided = [(event.call.id, event.decision) for event in heard if isinstance(event, ApprovalDecided)]
    assert decided == [("in-time", "approved"), ("late", "denied")]


async def test_closing_a_run_that_waits_ends_it_without_running_the_waiting_call(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()
    fake = FakeMessagesAPI(refund_script())
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=TOOLS) as queue:
        run = await start(temporal_env.client, queue, run_id="close-waiting", tools=TOOLS)
        await wait_until_paused(run)
        await run.close()
        result = await run.result()

    assert result.end_reason == "closed"
    assert ran == ["look_up Ada"]
    assert len(fake.requests) == 1


async def test_a_runner_and_a_temporal_run_without_gated_tools_agree(
    temporal_env: WorkflowEnvironment,
) -> None:
    # The gates run on the worker for every reply; a reply with none gated changes nothing.
    script = [tool_reply(tool_call("pay", {"amount": 5})), text_reply("Paid.")]
    plain_fake = FakeMessagesAPI(list(script))
    await run_plainly(plain_fake, tools=TOOLS)
    fake = FakeMessagesAPI(list(script))
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=TOOLS) as queue:
        run = await start(temporal_env.client, queue, run_id="no-gates", tools=TOOLS)
        await run.result()
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]


async def test_pending_approvals_keep_a_toolset_members_family(
    temporal_env: WorkflowEnvironment, monkeypatch: pytest.MonkeyPatch
) -> None:
    from toolrunner._tools.sdk import SdkToolsetTool

    # No toolset asks for approval today; a gated family shows what a client must be told: which
    # family a member belongs to (``navigate`` means nothing without ``browser``).
    monkeypatch.setattr(SdkToolsetTool, "requires_approval", True)

    def script() -> list[ScriptEntry]:
        return [
            message_reply([member("navigate", "a", url="https://example.com")], stop_reason="tool_use"),
            text_reply("Done."),
        ]

    plain_fake = FakeMessagesAPI(script())
    runner = ToolRunner(
        plain_fake.async_client(),
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Go."}],
        tools=[Browser()],
    )
    async for _ in runner:  # to the pause
        pass
    fake, browser = FakeMessagesAPI(script()), Browser()
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[browser]) as queue:
        run = await start(temporal_env.client, queue, run_id="gated-family", tools=[Browser()])
        pending = await wait_until_paused(run)
        assert pending == runner.pending_approvals
        assert [call.toolset_name for call in pending] == ["browser"]
        await run.approve("a")
        await run.result()
    assert browser.calls == ["navigate"]


async def test_a_decider_or_a_reason_no_store_keeps_is_refused_before_anything_is_sent(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The rule of every way in (``_core.ids``): the handle checks ``by`` and a denial's reason before
    it sends an update, and the workflow's validators check them again for a client that is not ours."""
    from toolrunner import ApprovalError
    from toolrunner.temporal._data import Approval, Denial
    from toolrunner.temporal._workflow import ToolRunnerWorkflow

    ran.clear()
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("refund", {"account": 7, "amount": 500}, id="r1")), text_reply("Ok.")]
    )
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=TOOLS) as queue:
        run = await start(temporal_env.client, queue, run_id="bad-deciders", tools=TOOLS)
        await wait_until_paused(run)
        for by in (7, "", "ada\nbob", "\u202eada", "a" * 257):
            with pytest.raises(ApprovalError, match="Nothing was decided"):
                await run.approve("r1", by=cast(Any, by))
            with pytest.raises(ApprovalError, match="Nothing was decided"):
                await run.answer("r1", "done", by=cast(Any, by))
            with pytest.raises(ApprovalError, match="Nothing was decided"):
                await run.deny("r1", "No.", by=cast(Any, by))
        with pytest.raises(ApprovalError, match="needs a reason the model can read"):
            await run.deny("r1", "   ")
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await run.workflow.execute_update(ToolRunnerWorkflow.approve, Approval("r1", None, "ada\nbob"))  # pyright: ignore[reportUnknownMemberType]
        assert "ApprovalError" in repr(refused.value.cause)
        for denial in (Denial("r1", "No.", "\u202eada"), Denial("r1", " ", "ada")):
            with pytest.raises(WorkflowUpdateFailedError) as refused:
                await run.workflow.execute_update(ToolRunnerWorkflow.deny, denial)  # pyright: ignore[reportUnknownMemberType]
            assert "ApprovalError" in repr(refused.value.cause)
        assert [call.id for call in await run.pending_approvals()] == ["r1"]  # still waits: nothing decided
        await run.approve("r1", by="ada")
        result = await run.result()
    assert result.end_reason == "model"
    assert ran == ["refund 500"]

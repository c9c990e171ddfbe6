"""Approvals and deferred calls (issue 13): a person decides, in any order, across restarts.

The reply most tests use has three calls, one of them gated (``pay``); the other two run at once,
once, and their results wait until every call is settled.
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from typing import Any, Literal

import anyio
import pytest
from hypothesis import given, strategies as st

from tests.support._hypothesis_profiles import property_settings
from tests.support.counted_tools import look_keyed as look, runs
from tests.support.helpers import MODEL, USER, make_runner, results_of, roles
from toolrunner import (
    STATE_VERSION,
    ApprovalDecided,
    ApprovalError,
    ApprovalRequested,
    AwaitingApprovalError,
    CallStatus,
    MemoryCheckpointer,
    Phase,
    RunState,
    SyncToolRunner,
    ToolCall,
    ToolCallStarted,
    ToolError,
    ToolInputError,
    ToolRunner,
    tool,
)
from toolrunner._stores.protocol import Checkpoint
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]


@tool
def note(text: str) -> str:
    """Write a note."""
    runs[f"note {text}"] += 1
    return f"noted {text}"


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    runs[f"pay {amount}"] += 1
    return f"paid {amount}"


def three_calls() -> Any:
    return tool_reply(
        tool_call("look", {"q": "a"}, id="look_a"),
        tool_call("pay", {"amount": 5}, id="pay_5"),
        tool_call("note", {"text": "b"}, id="note_b"),
    )


def build(fake: FakeMessagesAPI, **options: Any) -> ToolRunner[Any]:
    return make_runner(fake, look, note, pay, **options)


def answers(runner: ToolRunner[Any], index: int = 2) -> list[tuple[str, Any, bool]]:
    return results_of(runner.messages[index])


async def paused(runner: ToolRunner[Any]) -> None:
    """Iterate until the loop pauses for a decision."""
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    assert runner.state.phase is Phase.AWAITING


# -- the basic flow ------------------------------------------------------------------------------------


async def test_ungated_calls_run_at_once_and_the_loop_pauses_for_the_gated_one() -> None:
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    runner = build(fake)
    async for message in runner:
        assert message.stop_reason == "tool_use"
        assert runner.pending_approvals == [ToolCall("pay_5", "pay", {"amount": 5})]
    assert runner.end_reason == "awaiting_approval"
    assert runner.finished
    assert runs == {"look a": 1, "note b": 1}
    assert roles(runner.messages) == ["user"]  # nothing appended until every call is settled
    assert len(fake.requests) == 1
    runner.approve("pay_5")
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert runs == {"look a": 1, "note b": 1, "pay 5": 1}
    assert answers(runner) == [
        ("look_a", "found a", False),
        ("pay_5", "paid 5", False),
        ("note_b", "noted b", False),
    ]
    assert runner.end_reason == "model"


@pytest.mark.parametrize("when", ["in the body", "after the pause"])
@pytest.mark.parametrize("decision", ["approve", "edit", "deny", "answer", "answer an error"])
async def test_each_decision_in_the_body_or_after_the_pause(when: str, decision: str) -> None:
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    runner = build(fake)

    def decide() -> None:
        if decision == "approve":
            runner.approve("pay_5")
        elif decision == "edit":
            runner.approve("pay_5", input={"amount": 3})
        elif decision == "deny":
            runner.deny("pay_5", "Over the limit for today.")
        elif decision == "answer":
            runner.answer("pay_5", {"receipt": "R-1"})
        else:
            runner.answer("pay_5", ToolError("The bank refused."))

    async for message in runner:
        if when == "in the body" and message.stop_reason == "tool_use":
            decide()
    if when == "after the pause":
        decide()
    await runner.until_done()
    outcomes: dict[str, tuple[tuple[str, bool], dict[str, int]]] = {
        "approve": (("paid 5", False), {"pay 5": 1}),
        "edit": (("paid 3", False), {"pay 3": 1}),
        "deny": (("Over the limit for today.", True), {}),
        "answer": (('{"receipt": "R-1"}', False), {}),
        "answer an error": (("The bank refused.", True), {}),
    }
    result, pay_runs = outcomes[decision]
    [_, (pay_id, content, is_error), _] = answers(runner)
    assert (pay_id, content, is_error) == ("pay_5", *result)
    assert runs == {"look a": 1, "note b": 1, **pay_runs}
    assert len(fake.requests) == 2


async def test_an_edited_input_is_checked_like_the_models_and_a_bad_one_changes_nothing() -> None:
    runner = build(FakeMessagesAPI([three_calls(), text_reply("done")]))
    await paused(runner)
    with pytest.raises(ToolInputError, match="amount: Input should be a valid integer"):
        runner.approve("pay_5", input={"amount": "lots"})
    assert [call.id for call in runner.pending_approvals] == ["pay_5"]
    runner.approve("pay_5", input={"amount": 2})
    await runner.until_done()
    assert runs["pay 2"] == 1


async def test_unknown_ids_deciding_twice_and_deciding_what_ran_are_refused() -> None:
    runner = build(FakeMessagesAPI([three_calls(), text_reply("done")]))
    await paused(runner)
    with pytest.raises(ApprovalError, match=r"no pending tool call has the id 'nope'.*\['pay_5'\]"):
        runner.approve("nope")
    with pytest.raises(ApprovalError, match="'look_a' has its result already, so it cannot be approved"):
        runner.approve("look_a")
    with pytest.raises(ApprovalError, match="'look_a' has its result already, so it cannot be denied"):
        runner.deny("look_a", "too late")
    with pytest.raises(ApprovalError, match="needs a reason the model can read"):
        runner.deny("pay_5", "  ")
    runner.deny("pay_5", "No.")
    with pytest.raises(ApprovalError, match="'pay_5' has its result already"):
        runner.approve("pay_5")
    with pytest.raises(ApprovalError, match="'pay_5' has its result already"):
        runner.answer("pay_5", "paid elsewhere")
    await runner.until_done()
    assert runs == {"look a": 1, "note b": 1}


async def test_an_ungated_call_can_be_answered_from_elsewhere_before_it_runs() -> None:
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    runner = build(fake)
    async for message in runner:
        if message.stop_reason != "tool_use":
            continue
        with pytest.raises(ApprovalError, match="'note_b' needs no approval, so it cannot be approved"):
            runner.approve("note_b")
        runner.answer("note_b", "noted by the front end")
        runner.approve("pay_5")
    assert runs == {"look a": 1, "pay 5": 1}
    assert answers(runner)[2] == ("note_b", "noted by the front end", False)


async def test_generate_tool_response_with_open_decisions_raises_after_running_the_rest() -> None:
    runner = build(FakeMessagesAPI([three_calls(), text_reply("done")]))
    async for message in runner:
        if message.stop_reason != "tool_use":
            continue
        with pytest.raises(ApprovalError, match=r"the tool calls \['pay_5'\] wait for a decision"):
            await runner.generate_tool_response()
        assert runs == {"look a": 1, "note b": 1}
        runner.approve("pay_5")
        response = await runner.generate_tool_response()
        assert response is not None
        assert [block["tool_use_id"] for block in response["content"]] == ["look_a", "pay_5", "note_b"]
    assert runs == {"look a": 1, "note b": 1, "pay 5": 1}


# -- gates and the inline callback ------------------------------------------------------------------------


async def test_a_gate_function_decides_per_call_sync_or_async() -> None:
    async def over_ten(call: ToolCall) -> bool:
        await anyio.lowlevel.checkpoint()
        return call.input["amount"] > 10  # type: ignore[index]

    @tool(name="pay", requires_approval=over_ten)
    async def gated_pay(amount: int) -> str:
        """Pay an amount."""
        runs[f"pay {amount}"] += 1
        return f"paid {amount}"

    @tool(requires_approval=lambda call: call.input["to"] != "me")  # type: ignore[index]
    def send(to: str) -> str:
        """Send money."""
        runs[f"send {to}"] += 1
        return "sent"

    reply = tool_reply(
        tool_call("pay", {"amount": 5}, id="small"),
        tool_call("pay", {"amount": 50}, id="big"),
        tool_call("send", {"to": "me"}, id="mine"),
        tool_call("send", {"to": "them"}, id="theirs"),
    )
    runner = ToolRunner(
        FakeMessagesAPI([reply, text_reply("ok")]).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[gated_pay, send],
    )
    await paused(runner)
    assert [call.id for call in runner.pending_approvals] == ["big", "theirs"]
    assert runs == {"pay 5": 1, "send me": 1}


async def test_a_gate_that_raises_denies_the_call_and_says_why() -> None:
    def broken(call: ToolCall) -> bool:
        raise KeyError("amount")

    @tool(name="pay", requires_approval=broken)
    async def gated_pay(amount: int) -> str:
        """Pay an amount."""
        runs["pay"] += 1
        return "paid"

    runner = ToolRunner(
        FakeMessagesAPI(
            [tool_reply(tool_call("pay", {"amount": 5}, id="p")), text_reply("ok")]
        ).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[gated_pay],
    )
    await runner.until_done()
    [(_, content, is_error)] = answers(runner)
    assert is_error
    assert "denied because deciding whether it needs approval failed (KeyError: 'amount')" in content
    assert runs == {}


class Unshowable(Exception):
    """An exception whose ``__str__`` and ``__repr__`` raise (as a buggy library's may)."""

    def __str__(self) -> str:
        raise AttributeError("no message")

    def __repr__(self) -> str:
        raise AttributeError("no repr")


@pytest.mark.parametrize("where", ["gate", "approve"])
async def test_a_gate_or_approve_callback_raising_an_exception_that_cannot_be_shown_denies_the_call(
    where: str, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(call: ToolCall) -> bool:
        raise Unshowable

    @tool(name="pay", requires_approval=broken if where == "gate" else True)
    async def gated_pay(amount: int) -> str:
        """Pay an amount."""
        runs["pay"] += 1
        return "paid"

    runner = ToolRunner(
        FakeMessagesAPI(
            [tool_reply(tool_call("pay", {"amount": 5}, id="p")), text_reply("ok")]
        ).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[gated_pay],
        approve=broken if where == "approve" else None,
    )
    with caplog.at_level(logging.WARNING, logger="toolrunner"):  # formatting the log line must not fail
        await runner.until_done()
    [(_, content, is_error)] = answers(runner)
    assert is_error
    assert "failed (Unshowable: " in content
    assert runs == {}
    assert any("Unshowable(" in record.getMessage() for record in caplog.records)


@pytest.mark.parametrize(
    ("verdict", "expected"),
    [
        (True, ("paid 5", False)),
        (False, ("A person denied this call to 'pay'; it did not run.", True)),
        ("Not today.", ("Not today.", True)),
        (RuntimeError("prompt crashed"), ("denied because asking for approval failed (RuntimeError", True)),
    ],
)
async def test_the_inline_approve_callback(verdict: object, expected: tuple[str, bool]) -> None:
    asked: list[str] = []

    async def approve(call: ToolCall) -> bool | str:
        asked.append(call.id)
        if isinstance(verdict, Exception):
            raise verdict
        return verdict  # type: ignore[return-value]

    runner = build(FakeMessagesAPI([three_calls(), text_reply("done")]), approve=approve)
    await runner.until_done()
    assert asked == ["pay_5"]
    assert runner.end_reason == "model"
    [_, (_, content, is_error), _] = answers(runner)
    assert expected[0] in content
    assert is_error is expected[1]


async def test_a_gated_call_never_starts_early_while_the_reply_streams() -> None:
    started: list[tuple[str, bool]] = []

    def on_event(event: object) -> None:
        if isinstance(event, ToolCallStarted):
            started.append((event.call.id, event.early))

    runner = ToolRunner(
        FakeMessagesAPI([three_calls(), text_reply("done")]).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look, note, pay],
        stream=True,
        run_tools_eagerly=True,
        on_event=on_event,
    )
    async with runner:
        async for stream in runner:
            await stream.get_final_message()
        assert runner.end_reason == "awaiting_approval"
        assert ("look_a", True) in started
        assert all(call != "pay_5" for call, _ in started)
        runner.approve("pay_5")
        await runner.until_done()
    assert ("pay_5", False) in started
    assert runs["pay 5"] == 1


# -- across restarts ------------------------------------------------------------------------------------------


async def test_a_decision_taken_by_another_process_after_a_resume() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    first = build(fake, checkpointer=store, run_id="order-7")
    await paused(first)
    # A web app, later: load the run, decide, and go on.
    again = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="order-7", tools=[look, note, pay]
    )
    assert again.state.phase is Phase.AWAITING
    assert [call.id for call in again.pending_approvals] == ["pay_5"]
    again.approve("pay_5", input={"amount": 4})
    await again.until_done()
    assert runs == {"look a": 1, "note b": 1, "pay 4": 1}
    assert [content for _, content, _ in answers(again)] == ["found a", "paid 4", "noted b"]


async def test_events_are_emitted_once_per_call_across_a_pause_and_a_resume() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    events: list[tuple[str, str]] = []

    def on_event(event: object) -> None:
        if isinstance(event, ToolCallStarted | ApprovalRequested | ApprovalDecided):
            events.append((type(event).__name__, event.call.id))

    first = build(fake, checkpointer=store, run_id="r", on_event=on_event)
    await paused(first)
    again = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="r", tools=[look, note, pay], on_event=on_event
    )
    again.approve("pay_5")
    await again.until_done()
    assert sorted(events) == sorted(
        [
            ("ApprovalRequested", "pay_5"),
            ("ToolCallStarted", "look_a"),
            ("ToolCallStarted", "note_b"),
            ("ApprovalDecided", "pay_5"),
            ("ToolCallStarted", "pay_5"),
        ]
    )


async def test_an_awaiting_state_round_trips_and_a_version_1_state_loads() -> None:
    runner = build(FakeMessagesAPI([three_calls(), text_reply("done")]))
    await paused(runner)
    text = runner.state.to_json()
    again = RunState.from_json(text)
    assert again.to_json() == text
    assert again.phase is Phase.AWAITING
    assert again.calls["pay_5"].status is CallStatus.AWAITING
    # The same state as version 1 wrote it (no decisions then): it loads, with none.
    data = json.loads(text)
    data["version"] = 1
    data["phase"], data["end_reason"] = "with_body", None
    del data["failure"], data["tool_changes"]
    later = ("approved_input", "decision", "decided_by", "decided_at", "tool")
    data["calls"] = [
        {key: value for key, value in record.items() if key not in later}
        for record in data["calls"]
        if record["status"] in ("started", "finished")
    ]
    old = RunState.from_json(json.dumps(data))
    assert old.phase is Phase.WITH_BODY
    assert {record.decision for record in old.calls.values()} == {None}
    assert old.failure is None
    assert old.tool_changes == ()
    assert STATE_VERSION == 5
    assert old.decisions == ()  # version 1 kept no decisions


async def test_a_version_3_state_loads_without_who_decided_nor_the_waiting_tool() -> None:
    runner = build(FakeMessagesAPI([three_calls(), text_reply("done")]))
    await paused(runner)
    data = json.loads(runner.state.to_json())
    data["version"] = 3
    del data["failure"]
    data["calls"] = [
        {key: value for key, value in record.items() if key not in ("decided_by", "decided_at", "tool")}
        for record in data["calls"]
    ]
    old = RunState.from_json(json.dumps(data))
    assert old.calls["pay_5"].status is CallStatus.AWAITING
    assert (old.calls["pay_5"].decided_by, old.calls["pay_5"].tool, old.failure) == (None, None, None)


def test_a_sync_runner_pauses_and_takes_decisions() -> None:
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    runner = SyncToolRunner(
        fake.client(), model=MODEL, max_tokens=64, messages=[USER], tools=[look, note, pay]
    )
    for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    assert [call.id for call in runner.pending_approvals] == ["pay_5"]
    runner.deny("pay_5", "No.")
    runner.until_done()
    assert runner.end_reason == "model"


# -- a property over replies, gates and decision orders ------------------------------------------------------


Kind = Literal["approve", "edit", "deny", "answer"]


@st.composite
def scenarios(draw: st.DrawFn) -> tuple[list[bool], list[Kind], list[int], list[bool], str]:
    size = draw(st.integers(1, 4))
    gated = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    kinds = draw(
        st.lists(st.sampled_from(["approve", "edit", "deny", "answer"]), min_size=size, max_size=size)
    )
    order = draw(st.permutations(range(size)))
    in_body = draw(st.lists(st.booleans(), min_size=size, max_size=size))
    backend = draw(st.sampled_from(["asyncio", "trio"]))
    return gated, kinds, list(order), in_body, backend  # type: ignore[return-value]


@given(scenarios())
@property_settings
def test_every_tool_runs_at_most_once_and_the_model_gets_every_result_in_order(
    scenario: tuple[list[bool], list[Kind], list[int], list[bool], str],
) -> None:
    gated, kinds, order, in_body, backend = scenario
    ran: Counter[str] = Counter()

    @tool(requires_approval=lambda call: gated[int(call.id[1:])])
    async def act(n: int) -> str:
        """Act."""
        ran[f"c{n}"] += 1
        return f"did {n}"

    reply = tool_reply(*(tool_call("act", {"n": n}, id=f"c{n}") for n in range(len(gated))))
    fake = FakeMessagesAPI([reply, text_reply("done")])

    async def main() -> None:
        runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[act])
        decide_now = [n for n in order if gated[n] and in_body[n]]
        decide_later = [n for n in order if gated[n] and not in_body[n]]

        def decide(n: int) -> None:
            kind = kinds[n]
            if kind == "approve":
                runner.approve(f"c{n}")
            elif kind == "edit":
                runner.approve(f"c{n}", input={"n": n + 100})
            elif kind == "deny":
                runner.deny(f"c{n}", f"no {n}")
            else:
                runner.answer(f"c{n}", f"answered {n}")

        async for _ in runner:
            for n in decide_now:
                decide(n)
            decide_now.clear()
        if decide_later:
            assert runner.end_reason == "awaiting_approval"
            assert {call.id for call in runner.pending_approvals} == {f"c{n}" for n in decide_later}
            for n in decide_later:
                decide(n)
            await runner.until_done()
        assert runner.end_reason == "model"
        results = answers(runner)
        assert [tool_use_id for tool_use_id, _, _ in results] == [f"c{n}" for n in range(len(gated))]
        for n, (_, content, is_error) in enumerate(results):
            if not gated[n] or kinds[n] == "approve":
                assert (content, is_error) == (f"did {n}", False)
            elif kinds[n] == "edit":
                assert (content, is_error) == (f"did {n + 100}", False)
            elif kinds[n] == "deny":
                assert (content, is_error) == (f"no {n}", True)
            else:
                assert (content, is_error) == (f"answered {n}", False)
        assert all(count == 1 for count in ran.values())
        assert len(fake.requests) == 2

    anyio.run(main, backend=backend)


# -- leaving `async with` / `with` keeps a paused run paused ----------------------------------------


async def test_leaving_async_with_keeps_a_paused_run_waiting_in_the_store_and_in_the_runner() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    async with build(fake, checkpointer=store, run_id="r") as runner:
        with pytest.raises(AwaitingApprovalError, match=r"\['pay_5'\] wait for a decision") as paused_at:
            await runner.until_done()  # a pause is no end: until_done() returns no reply
        assert [call.id for call in paused_at.value.calls] == ["pay_5"]
        assert runner.end_reason == "awaiting_approval"
    assert runner.end_reason == "awaiting_approval"  # not "closed"
    assert [call.id for call in runner.pending_approvals] == ["pay_5"]
    later = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="r", tools=[look, note, pay]
    )
    assert later.state.phase is Phase.AWAITING
    later.approve("pay_5")
    final = await later.until_done()
    assert final.content[0].type == "text"
    assert runs == Counter({"look a": 1, "note b": 1, "pay 5": 1})


def test_leaving_with_keeps_a_paused_sync_run_waiting() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    with SyncToolRunner(
        fake.client(), model=MODEL, max_tokens=64, messages=[USER], tools=[look, note, pay],
        checkpointer=store, run_id="s",
    ) as runner:  # fmt: skip
        for _ in runner:
            pass
    assert runner.end_reason == "awaiting_approval"
    later = SyncToolRunner.resume(fake.client(), checkpointer=store, run_id="s", tools=[look, note, pay])
    assert [call.id for call in later.pending_approvals] == ["pay_5"]


async def test_leaving_async_with_by_an_exception_leaves_the_store_as_the_last_step_saved_it() -> None:
    """A shutdown that cancels the block while a tool runs is like a crash: the finished call's
    result stays in the journal, and the run resumes from there (not as a closed run)."""
    looked = anyio.Event()
    started = anyio.Event()

    class Store(MemoryCheckpointer):
        async def save(self, checkpoint: Any) -> None:
            await super().save(checkpoint)
            record = checkpoint.state.calls.get("look_a")
            if record is not None and record.status is CallStatus.FINISHED:
                looked.set()

    store = Store()

    @tool(name="slow")
    async def slow_tool(n: int) -> str:
        """Wait."""
        runs[f"slow {n}"] += 1
        await looked.wait()  # the sibling's result is saved
        started.set()
        await anyio.sleep_forever()
        return "never"

    reply = tool_reply(tool_call("look", {"q": "a"}, id="look_a"), tool_call("slow", {"n": 1}, id="slow_1"))
    fake = FakeMessagesAPI([reply, text_reply("done")])
    tools: list[Any] = [look, slow_tool]
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=tools,
        checkpointer=store, run_id="c",
    )  # fmt: skip
    with anyio.CancelScope() as scope:
        async with runner, anyio.create_task_group() as group:
            group.start_soon(runner.until_done)
            await started.wait()
            scope.cancel()
    saved = await store.load("c")
    assert saved is not None
    assert saved.state.phase is not Phase.DONE
    assert saved.state.calls["look_a"].status is CallStatus.FINISHED
    later = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="c", tools=tools)
    await later.until_done()
    assert runs["look a"] == 1  # answered from the journal, not run again
    (look_id, found, look_failed), (slow_id, interrupted, slow_failed) = results_of(later.state.messages[2])
    assert (look_id, found, look_failed) == ("look_a", "found a", False)
    assert (slow_id, slow_failed) == ("slow_1", True)
    assert "interrupted" in str(interrupted)


async def test_an_approved_idempotent_call_interrupted_while_running_runs_again_as_approved() -> None:
    """Resuming from the save taken as the approved call started: it runs again (its tool is
    idempotent) with the input the person approved, and is not asked about again."""

    @tool(name="pay", requires_approval=True, idempotent=True)
    async def pay_again(amount: int) -> str:
        """Pay an amount (safe to repeat: the payment has a key)."""
        runs[f"pay {amount}"] += 1
        return f"paid {amount}"

    class Recording(MemoryCheckpointer):
        def __init__(self) -> None:
            super().__init__()
            self.texts: list[tuple[int, str]] = []

        async def save(self, checkpoint: Any) -> None:
            await super().save(checkpoint)
            self.texts.append((checkpoint.sequence, checkpoint.state.to_json()))

    tools: list[Any] = [look, note, pay_again]
    store = Recording()
    fake = FakeMessagesAPI([three_calls(), text_reply("done")])
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=tools,
        checkpointer=store, run_id="r",
    )  # fmt: skip
    await paused(runner)
    runner.approve("pay_5", input={"amount": 7})
    await runner.until_done()
    started = next(
        text
        for _, text in store.texts
        if RunState.from_json(text).calls.get("pay_5") is not None
        and RunState.from_json(text).calls["pay_5"].status is CallStatus.STARTED
    )
    crashed = MemoryCheckpointer()
    await crashed.save(Checkpoint("r", RunState.from_json(started), 0, 0, 0))  # as if the process died here
    requested: list[Any] = []
    later = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("done")]).async_client(), checkpointer=crashed, run_id="r", tools=tools,
        on_event=requested.append,
    )  # fmt: skip
    await later.until_done()
    assert later.end_reason == "model"
    assert not [event for event in requested if isinstance(event, ApprovalRequested)]
    assert runs["pay 7"] == 2  # once before the crash, once after, as approved
    assert runs["pay 5"] == 0
    assert ("pay_5", "paid 7", False) in results_of(later.state.messages[2])


async def test_steering_a_paused_run_whose_other_calls_ran_is_refused_and_nothing_is_lost() -> None:
    fake = FakeMessagesAPI([three_calls(), text_reply("done"), text_reply("and the follow-up")])
    runner = build(fake)
    await paused(runner)
    with pytest.raises(ApprovalError, match=r"'look_a', 'note_b'.*Decide the waiting calls first"):
        runner.push_messages({"role": "user", "content": "Never mind."})
    with pytest.raises(ApprovalError, match="already ran"):
        runner.set_messages_params(lambda params: params)
    runner.deny("pay_5", reason="not now")
    await runner.until_done()
    runner.push_messages({"role": "user", "content": "Never mind."})
    await runner.until_done()
    assert runs == Counter({"look a": 1, "note b": 1})
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant", "user", "assistant"]


async def test_a_gate_is_asked_once_per_call_so_a_changing_answer_cannot_pause_a_settled_turn() -> None:
    asked: Counter[str] = Counter()

    def flaky(call: ToolCall) -> bool:
        asked[call.id] += 1
        return asked[call.id] > 1  # no decision needed the first time; "needed" if asked again

    @tool(name="pay", requires_approval=flaky)
    async def pay_flaky(amount: int) -> str:
        """Pay an amount."""
        runs[f"pay {amount}"] += 1
        return f"paid {amount}"

    fake = FakeMessagesAPI([tool_reply(tool_call("pay", {"amount": 5}, id="pay_5")), text_reply("done")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[pay_flaky])
    async for _ in runner:
        assert runner.pending_approvals == []
    assert runner.end_reason == "model"
    assert asked == Counter({"pay_5": 1})
    assert runs == Counter({"pay 5": 1})

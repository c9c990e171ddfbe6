"""The promises at their edges, where the order of the run's effects decides (``_core``): each test
is a defect found from outside, named by what must hold instead.

Approvals: an edited decision survives a restarted call; a decision is atomic, JSON, convertible;
``events()`` sees decisions taken before it; a pause is no end. Saves: the body sees a reply whose
save failed; a run taken over runs no further tool; a call waiting for a slot is not started.
Requests: transport params stay out of the store. Errors pass through ``async with`` as themselves.
Tools: a tool asking for its own turn's results is refused; a resumed run's toolsets are open before
its calls run; held calls (``defer_tool_call``) do not start early.
"""

from __future__ import annotations

import sys
import threading
from collections import Counter
from typing import Any

import anthropic
import anyio
import pytest
from mcp import Client
from mcp.server.mcpserver import MCPServer

from tests.helpers import MODEL, USER, plain, results_of
from toolrunner import (
    ApprovalDecided,
    ApprovalError,
    Checkpoint,
    CheckpointError,
    MemoryCheckpointer,
    Phase,
    RunnerEvent,
    SyncToolRunner,
    ToolCallStarted,
    ToolContext,
    ToolRunner,
    tool,
)
from toolrunner.mcp import MCPToolset
from toolrunner.testing import FakeMessagesAPI, fault, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

runs: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _fresh() -> None:
    runs.clear()


class FailOnce(MemoryCheckpointer):
    """A store whose save number ``fail_at`` (from 0) raises once, as a full disk would."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.attempts = 0

    async def save(self, checkpoint: Checkpoint) -> None:
        attempt, self.attempts = self.attempts, self.attempts + 1
        if attempt == self.fail_at:
            raise OSError(28, "No space left on device")
        await super().save(checkpoint)


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


def runner_of(fake: FakeMessagesAPI, tools: list[Any], **options: Any) -> ToolRunner[Any]:
    return ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=tools, **options
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
    # its tool may run again (idempotent); tests/test_failed_saves.py: otherwise it is interrupted.
    options: dict[str, Any] = {"checkpointer": MemoryCheckpointer(), "run_id": "r"} if durable else {}
    runner = runner_of(refund_script(), [idempotent_refund if durable else refund], **options)
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
    runner = runner_of(refund_script(), [refund], checkpointer=store, run_id="r")
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
    runner = runner_of(refund_script(), [refund])
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
    runner = runner_of(refund_script(), [refund])
    await to_the_pause(runner)
    with pytest.raises(ApprovalError, match=r"answer\('r', ...\) got a 'object'"):
        runner.answer("r", object())
    assert [call.id for call in runner.pending_approvals] == ["r"]


async def test_events_opened_after_a_decision_begin_with_it() -> None:
    runner = runner_of(refund_script(), [refund])
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
    runner = runner_of(refund_script(), [refund], checkpointer=store, run_id="r")
    await to_the_pause(runner)
    runner.deny("r", "Over the limit.", by="ada@example.com")
    record = runner.state.calls["r"]
    assert record.decided_by == "ada@example.com"
    assert record.decided_at is not None
    assert record.decided_at.endswith("+00:00")
    assert record.tool is not None
    assert record.tool["name"] == "refund"
    assert record.tool["input_schema"]["required"] == ["account", "amount"]


# -- saves ----------------------------------------------------------------------------------------


@tool
async def look(q: str) -> str:
    """Look something up."""
    runs[f"look {q}"] += 1
    return f"found {q}"


async def test_a_reply_whose_save_fails_is_handed_to_the_body_before_its_tools_run() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    store = FailOnce(fail_at=1)  # 0: the run, before the request; 1: the reply
    runner = runner_of(fake, [look], checkpointer=store, run_id="r")
    seen: list[str] = []
    for _ in range(3):
        try:
            async for message in runner:
                seen.append(message.stop_reason)
                if message.stop_reason == "tool_use":
                    assert runs["look a"] == 0  # the body has the reply before its tools run
            break
        except OSError:
            continue
    assert seen == ["tool_use", "end_turn"]
    assert runs == Counter({"look a": 1})


async def test_a_run_taken_over_by_another_runner_runs_no_further_tool() -> None:
    store = MemoryCheckpointer()
    taken = anyio.Event()

    @tool(name="look")
    async def look_and_take_over(q: str) -> str:
        """Look something up."""
        runs[f"look {q}"] += 1
        if not taken.is_set():  # meanwhile, another runner resumes the run and saves it
            loaded = await store.load("r")
            assert loaded is not None
            await store.save(Checkpoint("r", loaded.state, loaded.sequence + 1, 0, 0))
            taken.set()
        return f"found {q}"

    fake = FakeMessagesAPI(
        [tool_reply(*(tool_call("look", {"q": q}, id=q) for q in "abc")), text_reply("Done.")]
    )
    runner = runner_of(fake, [look_and_take_over], checkpointer=store, run_id="r", max_concurrency=1)
    with pytest.raises(CheckpointError, match="saved by another runner"):
        await runner.until_done()
    assert sum(runs.values()) == 1  # the two others waited for the slot, and never ran


async def test_a_call_waiting_for_a_concurrency_slot_is_not_started_and_runs_after_a_crash() -> None:
    store = MemoryCheckpointer()
    snapshot: list[str] = []
    first: list[str] = []

    @tool(name="look")
    async def look_and_crash(q: str) -> str:
        """Look something up."""
        runs[f"look {q}"] += 1
        if not snapshot:  # the first call to run (the order of b and c is the event loop's)
            loaded = await store.load("r")
            assert loaded is not None
            snapshot.append(loaded.state.to_json())  # what the store holds if the process dies now
            first.append(q)
        return f"found {q}"

    def fake() -> FakeMessagesAPI:
        return FakeMessagesAPI(
            [tool_reply(*(tool_call("look", {"q": q}, id=q) for q in "abc")), text_reply("Done.")]
        )

    runner = runner_of(fake(), [look_and_crash], checkpointer=store, run_id="r", max_concurrency=1)
    await runner.until_done()
    crashed = MemoryCheckpointer()
    from toolrunner import RunState

    state = RunState.from_json(snapshot[0])
    [running] = first
    assert sorted(state.calls) == [running]  # the others wait for the slot: not journaled as started
    await crashed.save(Checkpoint("r", state, 0, 0, 0))
    runs.clear()
    again = await ToolRunner.resume(
        fake().async_client(), checkpointer=crashed, run_id="r", tools=[look_and_crash], max_concurrency=1
    )
    await again.until_done()
    answered = {call_id: content for call_id, content, _ in results_of(again.messages[2])}
    for call_id in "abc":
        if call_id == running:
            assert "interrupted" in str(answered[call_id])
        else:
            assert answered[call_id] == f"found {call_id}"  # it simply runs


# -- requests ------------------------------------------------------------------------------------


async def test_transport_params_are_sent_but_never_saved_and_are_given_again_on_resume() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    secret = {"X-Secret-Token": "sk-secret-123"}
    runner = runner_of(fake, [look], checkpointer=store, run_id="r", extra_headers=secret, timeout=30)
    async for _ in runner:
        break
    assert fake.requests[0].headers["x-secret-token"] == "sk-secret-123"
    saved = await store.load("r")
    assert saved is not None
    assert "sk-secret-123" not in saved.state.to_json()
    assert "timeout" not in saved.state.params
    assert runner.params["extra_headers"] == secret  # the runner still has them
    again = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="r", tools=[look], extra_headers=secret
    )
    await again.until_done()
    assert fake.requests[-1].headers["x-secret-token"] == "sk-secret-123"


# -- errors pass through `async with` as themselves -------------------------------------------------


async def test_an_error_in_the_body_of_async_with_arrives_as_itself() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    with pytest.raises(ValueError, match=r"^from the body$"):
        async with runner_of(fake, [look]) as runner:
            async for _ in runner:
                raise ValueError("from the body")


async def test_a_service_error_inside_async_with_arrives_as_itself() -> None:
    fake = FakeMessagesAPI([fault(400)])
    with pytest.raises(anthropic.BadRequestError):
        async with runner_of(fake, [look]) as runner:
            await runner.until_done()


async def test_a_refused_save_inside_async_with_arrives_as_itself() -> None:
    store = MemoryCheckpointer()
    await store.save(
        Checkpoint(
            "r",
            ToolRunner(FakeMessagesAPI().async_client(), model=MODEL, max_tokens=8, messages=[USER]).state,
            0,
        )
    )
    fake = FakeMessagesAPI([text_reply("Hi.")])
    with pytest.raises(CheckpointError, match="is saved already"):
        async with runner_of(fake, [look], checkpointer=store, run_id="r") as runner:
            await runner.until_done()


def test_an_error_in_the_body_of_a_sync_with_arrives_as_itself() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER], tools=[look])
    with pytest.raises(KeyError), runner:
        for _ in runner:
            raise KeyError("from the body")


# -- tools ---------------------------------------------------------------------------------------


async def test_a_tool_that_asks_for_its_own_turns_results_is_refused_instead_of_waiting_forever() -> None:
    @tool
    async def selfish(context: ToolContext) -> str:
        """Wait for the turn's results."""
        await context.runner.generate_tool_response()  # type: ignore[attr-defined]
        return "never"

    fake = FakeMessagesAPI([tool_reply(tool_call("selfish", {}, id="s")), text_reply("Done.")])
    runner = runner_of(fake, [selfish])
    with anyio.fail_after(30):  # a guard against the hang this test is about, not a measurement
        await runner.until_done()
    [(call_id, content, is_error)] = results_of(runner.messages[2])
    assert call_id == "s"
    assert is_error
    assert "its own result forever" in str(content)


class Adding(MCPServer[Any]):
    def __init__(self) -> None:
        super().__init__("adding", log_level="WARNING")

        @self.tool()
        def add(a: int, b: int) -> int:
            """Add two numbers."""
            runs["add"] += 1
            return a + b


@pytest.mark.parametrize("entered", [True, False], ids=["async with", "not entered"])
async def test_a_resumed_run_opens_its_mcp_toolset_before_its_calls_run(entered: bool) -> None:
    server = Adding()
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([tool_reply(tool_call("add", {"a": 2, "b": 3}, id="a")), text_reply("5.")])
    async with runner_of(fake, [MCPToolset(Client(server))], checkpointer=store, run_id="r") as first:
        async for _ in first:
            break
        saved = await store.load("r")  # as the process that dies here left it
    assert saved is not None
    crashed = MemoryCheckpointer()
    await crashed.save(Checkpoint("r", saved.state, 0, 0, 0))
    again = await ToolRunner.resume(
        fake.async_client(), checkpointer=crashed, run_id="r", tools=[MCPToolset(Client(server))]
    )
    if entered:
        async with again:
            await again.until_done()
    else:
        await again.until_done()
    assert runs == Counter({"add": 1})
    [(_, content, is_error)] = results_of(again.messages[2])
    assert not is_error, content


def test_a_resumed_sync_run_streams() -> None:
    from anthropic.lib.streaming import MessageStream

    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    first = SyncToolRunner(
        fake.client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look],
        checkpointer=store,
        run_id="r",
    )
    for _ in first:
        break
    again = SyncToolRunner.resume(fake.client(), stream=True, checkpointer=store, run_id="r", tools=[look])
    kinds = [type(stream) for stream in again]
    assert kinds == [MessageStream]
    assert again.end_reason == "model"
    assert plain(again.messages[-1])["content"] == [{"type": "text", "text": "Done."}]


async def test_a_deferred_call_does_not_start_while_its_reply_streams() -> None:
    started: list[str] = []

    @tool
    async def act(n: int, context: ToolContext) -> str:
        """Act."""
        started.append(context.call.id)
        return f"did {n}"

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("act", {"n": 1}, id="one"), tool_call("act", {"n": 2}, id="two")),
            text_reply("Done."),
        ]
    )
    runner = ToolRunner(
        fake.async_client(), stream=True, model=MODEL, max_tokens=64, messages=[USER], tools=[act],
        run_tools_eagerly=True,
    )  # fmt: skip
    held: list[list[str]] = []
    async with runner:
        async for stream in runner:
            async for event in stream:
                if (
                    event.type == "content_block_start"
                    and event.content_block.type == "tool_use"
                    and event.content_block.id == "two"
                ):
                    runner.defer_tool_call(event.content_block)
            await stream.get_final_message()
            held.append([call.id for call in runner.deferred_tool_calls])
            if held[-1]:
                await anyio.sleep(0.01)  # what started early has had its chance to run
                assert started == ["one"]
    assert held == [["two"], []]
    assert sorted(started) == ["one", "two"]
    assert runner.state.phase is Phase.DONE

"""A run that does not go on: what each ``RunHandle`` call does on a run that ended (its loop
ended, it was closed, or terminated), on a name no run has, and on a run that continued as new.

Decisions and steering on a run that ended raise ``RunEndedError`` (whether the workflow is closed
or only its loop ended); ``close()`` does nothing; ``result()``, ``state()`` and
``pending_approvals()`` answer as the run ended. Every call on a name no run has raises
``CheckpointError``. A handle names the run, not a segment: after continue-as-new, calls reach the
segment that runs."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast

import anyio
import pytest
from temporalio.client import WorkflowUpdateHandle, WorkflowUpdateStage
from temporalio.service import RPCError, RPCStatusCode
from temporalio.testing import WorkflowEnvironment

from tests.temporal.temporal_helpers import start, worker
from toolrunner import CheckpointError, LoopFinished, Phase, RunEndedError, RunnerEvent, tool
from toolrunner.temporal import MemoryPayloadStore, RunHandle, ToolRunnerWorkflow, get_run
from toolrunner.temporal._client import QUERY_ATTEMPTS
from toolrunner.temporal._data import MessagesInput
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

FOLLOW_UP = {"role": "user", "content": "And Rome?"}


@tool(requires_approval=True)
async def book(city: str) -> str:
    """Book a trip."""
    return f"booked {city}"


@tool
async def note(line: str) -> str:
    """Note a line."""
    return "noted"


async def until_paused(run: RunHandle) -> None:
    with anyio.fail_after(30):  # a guard against a hang, not a timing
        while True:  # the run goes on in the workers: poll its state
            if (await run.state()).phase is Phase.AWAITING:
                return
            await anyio.sleep(0.02)


def steering_and_decisions(run: RunHandle) -> dict[str, Callable[[], Awaitable[None]]]:
    """Every call of a handle that would make the run go on."""
    return {
        "approve": lambda: run.approve("trip"),
        "deny": lambda: run.deny("trip", "No."),
        "answer": lambda: run.answer("trip", "booked elsewhere"),
        "push_messages": lambda: run.push_messages(FOLLOW_UP),
        "set_messages": lambda: run.set_messages([FOLLOW_UP]),
        "set_params": lambda: run.set_params({"system": "Be brief."}),
        "compact_before_next_turn": lambda: run.compact_before_next_turn(),
    }


async def ended_run(env: WorkflowEnvironment, how: str) -> RunHandle:
    """A run that ended: its loop ended (the model answered), it was closed while it waited for a
    decision, or it was terminated (by an operator, say)."""
    fake = FakeMessagesAPI([tool_reply(tool_call("book", {"city": "Paris"}, id="trip")), text_reply("Done.")])
    async with worker(env, fake, MemoryPayloadStore(), tools=[book]) as queue:
        run = await start(env.client, queue, run_id=f"ended-{how}", tools=[book])
        await until_paused(run)
        if how == "model":
            await run.approve("trip")
        elif how == "closed":
            await run.close()
        else:
            await run.workflow.terminate("an operator stopped it")
            return run
        assert (await run.result()).end_reason == how
        # Read while a worker runs: a query on a closed workflow is answered by replaying it.
        state = await run.state()
        assert (state.end_reason, await run.pending_approvals()) == (how, [])
    return run


@pytest.mark.parametrize("how", ["model", "closed", "terminated"])
async def test_decisions_and_steering_on_a_run_that_ended_raise_run_ended_error(
    temporal_env: WorkflowEnvironment, how: str
) -> None:
    run = await ended_run(temporal_env, how)
    for method, call in steering_and_decisions(run).items():
        with pytest.raises(RunEndedError) as ended:
            await call()
        assert str(ended.value) == (
            f"{method}() came after the run 'ended-{how}' ended ({how}); start a new run to go on."
        )
    await run.close()  # nothing to end: idempotent, as ToolRunner.close() is
    if how != "terminated":
        assert (await run.result()).end_reason == how


async def test_every_call_on_a_name_no_run_has_raises_checkpoint_error(
    temporal_env: WorkflowEnvironment,
) -> None:
    run = get_run(temporal_env.client, "no-such-run")
    calls: dict[str, Callable[[], Awaitable[Any]]] = {
        **steering_and_decisions(run),
        "close": run.close,
        "result": run.result,
        "state": run.state,
        "pending_approvals": run.pending_approvals,
    }
    for method, call in calls.items():
        with pytest.raises(CheckpointError) as missing:
            await call()
        assert not isinstance(missing.value, RunEndedError)
        assert str(missing.value) == (
            f"{method}() found no run named 'no-such-run'; check the name (the run_id given to start_run), or "
            "start the run with start_run()."
        )


async def test_steering_the_run_ends_before_it_applies_raises_run_ended_error(
    temporal_env: WorkflowEnvironment,
) -> None:
    # A push queued while the request is out, then close(): the reply is kept, the loop ends, and
    # the push never reaches a point where it could apply.
    updates: list[WorkflowUpdateHandle[Any]] = []

    async def respond(request: RecordedRequest) -> ScriptEntry:
        handle = get_run(temporal_env.client, "ends-first").workflow
        updates.append(
            await handle.start_update(  # pyright: ignore[reportUnknownMemberType]
                ToolRunnerWorkflow.push_messages,
                MessagesInput([FOLLOW_UP]),
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            )
        )
        await get_run(temporal_env.client, "ends-first").close()
        return text_reply("Paris is sunny.")

    fake = FakeMessagesAPI(responder=respond)
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[book]) as queue:
        run = await start(temporal_env.client, queue, run_id="ends-first", tools=[book])
        assert (await run.result()).end_reason == "closed"
        with pytest.raises(RunEndedError) as ended:
            await run._call("push_messages", updates[0].result)  # pyright: ignore[reportPrivateUsage]
    assert str(ended.value) == (
        "push_messages() could not apply: the run 'ends-first' ended (closed) before the next point where it "
        "could be steered; start a new run to go on."
    )


async def test_a_handle_names_the_run_across_continue_as_new(temporal_env: WorkflowEnvironment) -> None:
    turns = 14  # a few turns past the first segment's 100 events

    def respond(request: RecordedRequest) -> ScriptEntry:
        replies = sum(1 for message in request.messages if message["role"] == "assistant")
        if replies < turns:
            return tool_reply(tool_call("note", {"line": f"line {replies}"}))
        if replies == turns:
            return tool_reply(tool_call("book", {"city": "Paris"}, id="trip"))
        return text_reply("Booked.")

    # The worker hears the run pause (no polling: the test server can lose a query that reaches a
    # segment as it continues as new).
    paused = anyio.Event()

    def listen(_: str, event: RunnerEvent) -> None:
        if isinstance(event, LoopFinished) and event.reason == "awaiting_approval":
            paused.set()

    fake = FakeMessagesAPI(responder=respond)
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[note, book], on_event=listen) as queue:
        run = await start(
            temporal_env.client, queue, run_id="segments", tools=[note, book], continue_as_new_events=100
        )
        with anyio.fail_after(30):  # a guard against a hang, not a timing
            await paused.wait()
        assert (
            await run.workflow.describe()
        ).run_id != run.workflow.first_execution_run_id  # a later segment
        assert [call.id for call in await run.pending_approvals()] == ["trip"]
        await run.approve("trip")
        assert (await run.result()).end_reason == "model"
        with pytest.raises(RunEndedError):
            await run.approve("trip")


class TimingOut:
    """A workflow handle whose queries time out ``times`` times, then answer."""

    def __init__(self, times: int) -> None:
        self.times = times
        self.sent = 0
        self.id = "timing-out"

    async def query(self, query: object) -> list[Any]:
        self.sent += 1
        if self.sent <= self.times:
            raise RPCError("context deadline exceeded", RPCStatusCode.DEADLINE_EXCEEDED, b"")
        return []


async def test_a_query_that_timed_out_is_sent_again_a_few_times_then_raises() -> None:
    # Just after a worker restarted, on a loaded machine, a query can time out while no worker has
    # taken the run's task yet; a query only reads, so it is sent again.
    handle = TimingOut(times=QUERY_ATTEMPTS - 1)
    assert await RunHandle(cast(Any, handle)).pending_approvals() == []
    assert handle.sent == QUERY_ATTEMPTS
    handle = TimingOut(times=QUERY_ATTEMPTS)
    with pytest.raises(RPCError) as raised:
        await RunHandle(cast(Any, handle)).pending_approvals()
    assert raised.value.status is RPCStatusCode.DEADLINE_EXCEEDED
    assert handle.sent == QUERY_ATTEMPTS

"""Saves at their edges, where the order of the run's effects decides (``_core``): the body sees a
reply whose save failed; a run taken over runs no further tool; a call waiting for a slot is not
started; transport params are sent but never saved.
"""

from __future__ import annotations

from collections import Counter

import anyio
import pytest

from tests.support.counted_tools import look_keyed as look, runs
from tests.support.helpers import FailOnce, make_runner, results_of
from toolrunner import (
    Checkpoint,
    CheckpointError,
    MemoryCheckpointer,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

# -- saves ----------------------------------------------------------------------------------------


async def test_a_reply_whose_save_fails_is_handed_to_the_body_before_its_tools_run() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    store = FailOnce(fail_at=1)  # 0: the run, before the request; 1: the reply
    runner = make_runner(fake, look, checkpointer=store, run_id="r")
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
    runner = make_runner(fake, look_and_take_over, checkpointer=store, run_id="r", max_concurrency=1)
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

    runner = make_runner(fake(), look_and_crash, checkpointer=store, run_id="r", max_concurrency=1)
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
    runner = make_runner(fake, look, checkpointer=store, run_id="r", extra_headers=secret, timeout=30)
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

"""A cancelled tree (issue 30, audit finding F9): a call cut off by a cancellation is answered by
one rule at every level, the root's. Without a store nothing was saved: the root's own call and a
call inside a sub-run both run again when the runner goes on. With a store their starts were
saved: both are answered as after a crash ("interrupted"; neither tool is idempotent)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import anyio
import pytest

from tests.support.subagents import by_model
from toolrunner import MemoryCheckpointer, SubAgent, ToolRunner, text_of, tool
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

began: Counter[str] = Counter()
completed: Counter[str] = Counter()
both_began = anyio.Event()  # made again by each test (an Event belongs to one event loop)


@tool
async def wait(what: str) -> str:
    """Wait for something: the first time, until cancelled.

    Args:
        what: What to wait for.
    """
    began[what] += 1
    if began[what] == 1:
        if sum(began.values()) == 2:
            both_began.set()
        await anyio.sleep_forever()
    completed[what] += 1
    return f"{what}: here"


WAITER = SubAgent(name="waiter", description="Waits.", model="claude-sub", max_tokens=100, tools=[wait])


def scripts() -> dict[str, list[ScriptEntry]]:
    return {
        "claude-parent": [
            tool_reply(
                tool_call("waiter", {"task": "Wait for the bus."}, id="toolu_sub"),
                tool_call("wait", {"what": "the train"}, id="toolu_own"),
            ),
            text_reply("Both came."),
        ],
        "claude-sub": [
            tool_reply(tool_call("wait", {"what": "the bus"}, id="toolu_nested")),
            text_reply("The bus came."),
        ],
    }


async def cancelled_then_done(store: MemoryCheckpointer | None) -> tuple[ToolRunner, FakeMessagesAPI]:
    """The run, cancelled while the root's own ``wait`` and the sub-run's both wait; then to its end."""
    global both_began
    both_began = anyio.Event()
    began.clear()
    completed.clear()
    fake = FakeMessagesAPI(responder=by_model(scripts()))
    options: dict[str, Any] = {} if store is None else {"checkpointer": store, "run_id": "r"}
    runner = ToolRunner(
        fake.async_client(),
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=[WAITER, wait],
        **options,
    )
    async with anyio.create_task_group() as group:
        group.start_soon(runner.until_done)
        await both_began.wait()
        group.cancel_scope.cancel()
    assert text_of(await runner.until_done()) == "Both came."
    return runner, fake


def result_of(fake: FakeMessagesAPI, model: str, call_id: str) -> object:
    """The content of ``call_id``'s result, as the last request of ``model`` sent it."""
    last = [request for request in fake.requests if request.body["model"] == model][-1]
    blocks: list[dict[str, Any]] = last.messages[2]["content"]
    (block,) = [block for block in blocks if block.get("tool_use_id") == call_id]
    return block["content"]


async def test_without_a_store_a_cut_off_call_runs_again_at_every_level() -> None:
    _, fake = await cancelled_then_done(None)
    assert began == {"the train": 2, "the bus": 2}
    assert completed == {"the train": 1, "the bus": 1}
    assert result_of(fake, "claude-parent", "toolu_own") == "the train: here"
    assert result_of(fake, "claude-sub", "toolu_nested") == "the bus: here"
    assert result_of(fake, "claude-parent", "toolu_sub") == "The bus came."


async def test_with_a_store_a_cut_off_call_is_interrupted_at_every_level() -> None:
    _, fake = await cancelled_then_done(MemoryCheckpointer())
    assert began == {"the train": 1, "the bus": 1}
    assert completed == {}
    for model, call_id in (("claude-parent", "toolu_own"), ("claude-sub", "toolu_nested")):
        content = result_of(fake, model, call_id)
        assert isinstance(content, str)
        assert "interrupted" in content
    assert result_of(fake, "claude-parent", "toolu_sub") == "The bus came."

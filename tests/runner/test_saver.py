"""The runner's side of saving (``toolrunner._runner.saver.Saver``): a save that fails is sent again
at the next step, a refused one stops the runner, and a save whose commit went through though its
answer was lost (a connection that broke during the commit) counts as saved."""

from __future__ import annotations

import pytest

from tests.support.helpers import MODEL, USER
from toolrunner import (
    Checkpoint,
    CheckpointConflictError,
    CheckpointError,
    MemoryCheckpointer,
    Phase,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

runs: list[str] = []


@tool
async def look(q: str) -> str:
    """Look something up."""
    runs.append(q)
    return f"found {q}"


class Flaky(MemoryCheckpointer):
    """Fails the ``fail_at``-th save: before writing it, or (``after_commit``) after."""

    def __init__(self, fail_at: int, *, after_commit: bool) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.after_commit = after_commit
        self.count = 0

    async def save(self, checkpoint: Checkpoint) -> None:
        self.count += 1
        if self.count == self.fail_at and not self.after_commit:
            raise CheckpointError("the disk is full")
        await super().save(checkpoint)
        if self.count == self.fail_at:
            raise CheckpointError("the connection broke during the commit")


def build(store: MemoryCheckpointer) -> ToolRunner:
    script = [
        tool_reply(tool_call("look", {"q": "a"}, id="toolu_a")),
        tool_reply(tool_call("look", {"q": "b"}, id="toolu_b")),
        text_reply("Done."),
    ]
    return ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look],
        checkpointer=store,
        run_id="r",
    )


@pytest.mark.parametrize("after_commit", [False, True], ids=["before-the-commit", "after-the-commit"])
@pytest.mark.parametrize("fail_at", [1, 2, 3, 4, 5])
async def test_a_save_that_failed_is_sent_again_and_the_run_ends_as_without_the_failure(
    fail_at: int, after_commit: bool
) -> None:
    runs.clear()
    store = Flaky(fail_at, after_commit=after_commit)
    runner = build(store)
    with pytest.raises(CheckpointError) as raised:
        await runner.until_done()
    assert not isinstance(raised.value, CheckpointConflictError)
    final = await runner.until_done()  # iterated again: it saves again, and goes on
    assert final.content[0].type == "text"
    assert runs == ["a", "b"]  # nothing ran twice
    loaded = await store.load("r")
    assert loaded is not None
    assert loaded.state.phase is Phase.DONE
    assert len(loaded.state.messages) == len(runner.messages) == 6


async def test_a_refused_save_refuses_every_later_one() -> None:
    store = MemoryCheckpointer()
    runner = build(store)
    async for _ in runner:
        break
    loaded = await store.load("r")
    assert loaded is not None
    await store.save(
        Checkpoint("r", loaded.state, loaded.sequence + 1, loaded.kept_messages, loaded.kept_usage)
    )
    with pytest.raises(CheckpointConflictError):
        await runner.until_done()
    with pytest.raises(CheckpointConflictError):
        await runner.until_done()

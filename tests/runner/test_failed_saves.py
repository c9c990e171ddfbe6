"""A save that fails, or a cancellation, while several calls of one reply run: a call whose start
is saved never runs again unless its tool is idempotent (docs/reliability.md, "When a save fails
while calls run"), and one call's failed save does not stop its siblings."""

from __future__ import annotations

from typing import Any

import anyio
import anyio.lowlevel
import pytest

from tests.support.helpers import MODEL, USER, results_of
from toolrunner import (
    CallStatus,
    Checkpoint,
    CheckpointConflictError,
    CheckpointError,
    MemoryCheckpointer,
    ToolRunner,
    tool,
)
from toolrunner._core.transitions import INTERRUPTED
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


class FailsOnce(MemoryCheckpointer):
    """Fails, once, the save that journals the second of two calls as started (a full disk, or
    ``error``), after telling ``failed`` so that the first one's tool, waiting on it, goes on. The
    calls' tasks may start in either order (trio does not promise first come, first served): the
    second is whichever is journaled second."""

    def __init__(self, error: CheckpointError | None = None) -> None:
        super().__init__()
        self.error = error or CheckpointError("No space left on device")
        self.failed = anyio.Event()
        self.second: str | None = None

    async def save(self, checkpoint: Checkpoint) -> None:
        started = [call_id for call_id, r in checkpoint.state.calls.items() if r.status is CallStatus.STARTED]
        if not self.failed.is_set() and len(started) == 2:
            self.second = started[-1]  # the journal keeps start order
            self.failed.set()
            raise self.error
        await super().save(checkpoint)


def two_charges() -> FakeMessagesAPI:
    return FakeMessagesAPI(
        [
            tool_reply(
                tool_call("charge", {"card": "a"}, id="toolu_a"),
                tool_call("charge", {"card": "b"}, id="toolu_b"),
            ),
            text_reply("Both charged."),
        ]
    )


def charging(store: FailsOnce, charged: list[str]) -> Any:
    @tool
    async def charge(card: str) -> str:
        """Charge a card."""
        charged.append(card)
        await store.failed.wait()  # the first is mid-flight when the second's start fails to save
        await anyio.lowlevel.checkpoint()
        return f"charged {card}"

    return charge


def runner_of(store: FailsOnce, charged: list[str]) -> ToolRunner[Any]:
    return ToolRunner(
        two_charges().async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[charging(store, charged)],
        checkpointer=store,
        run_id="r",
    )


async def test_a_failed_save_of_one_call_does_not_cancel_a_sibling_that_began() -> None:
    store = FailsOnce()
    charged: list[str] = []
    runner = runner_of(store, charged)
    with pytest.raises(CheckpointError, match="No space left"):
        await runner.until_done()
    # The first finished, and its result is kept; the second never began (its start was not saved).
    assert store.second is not None
    [first] = charged
    assert f"toolu_{first}" != store.second
    assert runner.state.calls[f"toolu_{first}"].status is CallStatus.FINISHED
    final = await runner.until_done()  # iterated again, as the docs say to after a failed save
    assert final.content[0].type == "text"
    assert sorted(charged) == ["a", "b"]  # the first did not run again
    assert results_of(runner.messages[2]) == [
        ("toolu_a", "charged a", False),
        ("toolu_b", "charged b", False),
    ]


async def test_a_refused_save_lets_a_sibling_that_began_finish_and_starts_nothing_more() -> None:
    store = FailsOnce(CheckpointConflictError("saved by another runner"))
    charged: list[str] = []
    runner = runner_of(store, charged)
    with pytest.raises(CheckpointConflictError):
        await runner.until_done()
    [first] = charged
    assert runner.state.calls[f"toolu_{first}"].status is CallStatus.FINISHED  # it ran to its end
    with pytest.raises(CheckpointConflictError):
        await runner.until_done()  # refused for good: the second never starts
    assert charged == [first]


async def run_cancelled_mid_flight(
    *, idempotent: bool
) -> tuple[list[str], ToolRunner[Any], MemoryCheckpointer]:
    started = anyio.Event()
    charged: list[str] = []
    first = True

    @tool(idempotent=idempotent)
    async def charge(card: str) -> str:
        """Charge a card."""
        nonlocal first
        charged.append(card)
        if first:
            first = False
            started.set()
            await anyio.sleep_forever()
        return f"charged {card}"

    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("charge", {"card": "a"}, id="toolu_a")), text_reply("Done.")]
    )
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[charge],
        checkpointer=store,
        run_id="r",
    )
    async with anyio.create_task_group() as group:

        async def cancel_once_started() -> None:
            await started.wait()
            group.cancel_scope.cancel()

        group.start_soon(cancel_once_started)
        await runner.until_done()
    await runner.until_done()  # the loop goes on after the cancellation
    return charged, runner, store


async def test_a_call_cancelled_after_its_start_was_saved_is_answered_interrupted_not_run_again() -> None:
    charged, runner, store = await run_cancelled_mid_flight(idempotent=False)
    assert charged == ["a"]
    [(call_id, content, is_error)] = results_of(runner.messages[2])
    assert call_id == "toolu_a"
    assert is_error
    assert content == INTERRUPTED.format(name="charge")
    saved = await store.load("r")
    assert saved is not None
    assert len(saved.state.messages) == len(runner.messages)


async def test_an_idempotent_call_cancelled_mid_flight_runs_again() -> None:
    charged, runner, _ = await run_cancelled_mid_flight(idempotent=True)
    assert charged == ["a", "a"]
    assert results_of(runner.messages[2]) == [("toolu_a", "charged a", False)]

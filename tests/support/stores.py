"""The stores of the contract suite, and runs in each status to put in them.

``store`` (a fixture of ``conftest.py``) is each store in turn, new and empty: ``MemoryCheckpointer``,
``SQLiteCheckpointer`` on a new file, and ``PostgresCheckpointer`` on a new schema of the session's
server (``tests/support/postgres_server.py``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.helpers import MODEL
from toolrunner import (
    AwaitingApprovalError,
    Checkpoint,
    MemoryCheckpointer,
    PostgresCheckpointer,
    RunState,
    RunStore,
    SQLiteCheckpointer,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

__all__ = [
    "KINDS",
    "SQL_KINDS",
    "Clock",
    "finished_run",
    "look",
    "make_store",
    "paused_run",
    "pay",
    "running_run",
    "save_changed",
    "store_fixture",
]

KINDS = ["memory", "sqlite", "postgres"]
SQL_KINDS = ["sqlite", "postgres"]
"""The stores a URL reaches (the command line's): ``@pytest.mark.parametrize("store", SQL_KINDS,
indirect=True)`` makes ``store`` only these."""
USER = {"role": "user", "content": "Pay the invoices."}
paid: list[int] = []


@tool(requires_approval=True)
async def pay(amount: int, to: str = "ACME") -> str:
    """Pay an amount.

    Args:
        amount: In euros, at most 1000.
        to: Whom to pay.
    """
    paid.append(amount)
    return f"paid {amount} to {to}"


@tool
async def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def make_store(kind: str, directory: Path, postgres: pytest.FixtureRequest | None = None) -> RunStore:
    """A new, empty store of that kind."""
    if kind == "memory":
        return MemoryCheckpointer()
    if kind == "sqlite":
        return SQLiteCheckpointer(directory / "runs.db")
    assert postgres is not None
    return PostgresCheckpointer(postgres.getfixturevalue("postgres_url"))


@pytest.fixture(params=KINDS, name="store")
def store_fixture(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[RunStore]:
    store = make_store(str(request.param), tmp_path, request)
    yield store
    if isinstance(store, SQLiteCheckpointer | PostgresCheckpointer):
        store.close()


class Clock:
    """The store's clock, set by the test (``monkeypatch.setattr(store, "_now", clock)``)."""

    def __init__(self, now: float = 1_750_000_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def runner(store: RunStore, run_id: str, script: list[Any], **options: Any) -> ToolRunner:
    return ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[pay, look],
        checkpointer=store,
        run_id=run_id,
        **options,
    )


async def finished_run(store: RunStore, run_id: str) -> None:
    """A run whose loop ended: a lookup, then an answer."""
    script = [tool_reply(tool_call("look", {"q": "x"}, id=f"{run_id}_look")), text_reply("Done.")]
    await runner(store, run_id, script).until_done()


async def paused_run(store: RunStore, run_id: str, *amounts: int, schema: bool = True) -> list[str]:
    """A run paused with a call to ``pay`` per amount waiting for a decision; the calls' ids. Without
    ``schema``, the calls carry no definition of their tool (a process without the tools cannot
    check an edited input then)."""
    ids = [f"{run_id}_pay{n}" for n in range(len(amounts or (120,)))]
    calls = [
        tool_call("pay", {"amount": amount}, id=id_)
        for id_, amount in zip(ids, amounts or (120,), strict=True)
    ]
    with pytest.raises(AwaitingApprovalError):
        await runner(store, run_id, [tool_reply(*calls), text_reply("Paid.")]).until_done()
    if not schema:  # as a runner that saved no tool definitions with waiting calls (toolrunner 0.1) left it

        def without_tool(state: RunState) -> RunState:
            records = {key: dataclasses.replace(record, tool=None) for key, record in state.calls.items()}
            return state.replace(calls=records)

        await save_changed(store, run_id, without_tool)
    return ids


async def running_run(store: RunStore, run_id: str) -> None:
    """A run with a finished turn, stopped before its next request (as a process that died)."""
    script = [tool_reply(tool_call("look", {"q": "y"}, id=f"{run_id}_look")), text_reply("Done.")]
    run = runner(store, run_id, script)
    async for _ in run:
        await run.generate_tool_response()
        break


async def save_changed(store: RunStore, run_id: str, change: Callable[[RunState], RunState]) -> None:
    """Save the run again with its state changed by ``change`` (as its runner's next save would)."""
    loaded = await store.load(run_id)
    assert loaded is not None
    state = change(loaded.state)
    await store.save(Checkpoint(run_id, state, loaded.sequence + 1, loaded.kept_messages, loaded.kept_usage))

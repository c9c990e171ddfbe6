"""The app of the cross-process resumer tests (``tests/operations/test_resumer_processes.py``), as
``toolrunner resume --app tests.support.resumer_app:factory`` imports it: its one tool and its factory.

Everything it records and every marker it obeys is a file in ``$RESUMER_TEST_DIR``:

- ``pay(amount)`` needs approval. It appends ``pay <amount>`` to ``ledger.txt`` (one ``O_APPEND``
  write) when it starts. If ``hang-tool-<amount>`` exists, the first start also writes
  ``inside-<amount>`` and then never returns (the test kills the process there).
- The factory's fake Messages API answers ``Paid <amount>.``; if ``hang-request-<run id>`` exists,
  the first request of that run writes ``requesting-<run id>`` and never returns.

``start(url, run_id, amount)`` starts a run that pauses for ``pay(amount)`` (the call's id is
``<run id>-pay``).
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio

from toolrunner import AwaitingApprovalError, RunStore, ToolRunner, open_store, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)


def directory() -> Path:
    return Path(os.environ["RESUMER_TEST_DIR"])


def first_time(marker: Path) -> bool:
    """Whether this is the first process to get here (it makes ``marker``, atomically)."""
    try:
        os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    except FileExistsError:
        return False
    return True


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    descriptor = os.open(directory() / "ledger.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, f"pay {amount}\n".encode())
    finally:
        os.close(descriptor)
    if (directory() / f"hang-tool-{amount}").exists() and first_time(directory() / f"inside-{amount}"):
        await anyio.sleep_forever()
    return f"paid {amount}"


def client(run_id: str) -> FakeMessagesAPI:
    async def answer(request: RecordedRequest) -> ScriptEntry:
        if (directory() / f"hang-request-{run_id}").exists() and first_time(
            directory() / f"requesting-{run_id}"
        ):
            await anyio.sleep_forever()
        [result] = request.messages[-1]["content"]
        return text_reply(f"Done: {result['content']}")

    return FakeMessagesAPI(responder=answer)


async def factory(run_id: str, store: RunStore) -> ToolRunner:
    """The app's part of ``toolrunner resume``: the runner that goes on with ``run_id``."""
    return await ToolRunner.resume(
        client(run_id).async_client(), checkpointer=store, run_id=run_id, tools=[pay]
    )


async def start(url: str, run_id: str, amount: int) -> None:
    store = open_store(url)
    fake = FakeMessagesAPI([tool_reply(tool_call("pay", {"amount": amount}, id=f"{run_id}-pay"))])
    runner = ToolRunner(
        fake.async_client(),
        model="claude-sonnet-4-6",
        max_tokens=64,
        messages=[{"role": "user", "content": f"Pay {amount}."}],
        tools=[pay],
        checkpointer=store,
        run_id=run_id,
    )
    try:
        await runner.until_done()
    except AwaitingApprovalError:
        pass
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()

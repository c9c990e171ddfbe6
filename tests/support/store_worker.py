"""A worker process of the cross-process tests (``tests/stores/test_store_processes.py``).

    python -m tests.support.store_worker start STORE_URL RUN_ID LEDGER    # a run that pauses: pay(120) waits
    python -m tests.support.store_worker resume STORE_URL RUN_ID LEDGER   # goes on with it, to the end
    python -m tests.support.store_worker resume STORE_URL RUN_ID LEDGER --barrier
        # prints "loaded" once it has loaded the run, and waits for a line on stdin before going on

``pay`` appends ``paid <amount>`` to the ledger file, one ``O_APPEND`` write. ``resume`` prints
who decided each call, as the saved journal says, and exits with status 3 when its save is
refused because another runner went on with the run (the error on standard error).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anyio

from toolrunner import AwaitingApprovalError, CheckpointConflictError, ToolRunner, open_store, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

REFUSED = 3

ledger = Path()


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    descriptor = os.open(ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, f"paid {amount}\n".encode())
    finally:
        os.close(descriptor)
    return f"paid {amount}"


async def start(url: str, run_id: str) -> int:
    store = open_store(url)
    fake = FakeMessagesAPI([tool_reply(tool_call("pay", {"amount": 120}, id="toolu_pay"))])
    runner = ToolRunner(
        fake.async_client(),
        model="claude-sonnet-4-6",
        max_tokens=64,
        messages=[{"role": "user", "content": "Pay 120."}],
        tools=[pay],
        checkpointer=store,
        run_id=run_id,
    )
    try:
        await runner.until_done()
    except AwaitingApprovalError as paused:
        print(runner.state.end_reason, " ".join(call.id for call in paused.calls))
    close(store)
    return 0


async def resume(url: str, run_id: str, barrier: bool) -> int:
    store = open_store(url)
    fake = FakeMessagesAPI([text_reply("Paid.")])
    runner = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id=run_id, tools=[pay])
    for record in runner.state.calls.values():
        print(f"{record.call.id} {record.decision} by {record.decided_by} at {record.decided_at}", flush=True)
    if barrier:
        print("loaded", flush=True)
        await anyio.to_thread.run_sync(sys.stdin.readline)
    try:
        final = await runner.until_done()
    except CheckpointConflictError as error:
        print(error, file=sys.stderr)
        return REFUSED
    finally:
        close(store)
    print("".join(getattr(block, "text", "") for block in final.content))
    return 0


def close(store: object) -> None:
    closing = getattr(store, "close", None)
    if callable(closing):
        closing()


def main(argv: list[str]) -> int:
    global ledger
    command, url, run_id, ledger_path, *rest = argv
    ledger = Path(ledger_path)
    if command == "start":
        return anyio.run(start, url, run_id)
    return anyio.run(resume, url, run_id, rest == ["--barrier"])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))

"""A run that outlives the process running it: checkpoints, a crash, and resume.

A child process (this file, run with ``--child``) starts a run with an SQLite checkpointer. Claude
asks for two tools at once: ``charge_card``, whose side effect is a line in ``charges.txt``, and
``book_courier``, which is slow. Right after the charge's result is saved, while the courier is
still being booked, the child kills itself with SIGKILL, as a crash, a deploy or an OOM kill would.

This process then resumes the run from the database. The charge is answered from the saved
journal and not run again (``charges.txt`` keeps one line); the courier booking may or may not
have gone through, so it is answered with an error that says so, and Claude decides what to do.

Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set, in which case
it talks to the real service (where Claude may not call both tools at once, and nothing crashes):

    python examples/durable.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path

import anthropic
import anyio

from toolrunner import (
    CallStatus,
    Checkpoint,
    Checkpointer,
    RunnerEvent,
    SQLiteCheckpointer,
    Tool,
    ToolCallFinished,
    ToolCallStarted,
    ToolRunner,
    tool,
)
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

RUN_ID = "order-42"
PROMPT = "Charge 30 EUR for order 42 and book a courier to pick it up."


def make_tools(directory: Path) -> list[Tool]:
    """The shop's tools; the card processor's record of charges is ``directory/charges.txt``."""

    @tool
    async def charge_card(order: str, amount: float) -> str:
        """Charge the customer's card for an order. Not safe to repeat: it charges again.

        Args:
            order: The order number.
            amount: The amount in euros.
        """
        with (directory / "charges.txt").open("a") as charges:
            charges.write(f"order {order}: {amount:.2f} EUR\n")
        return f"charged {amount:.2f} EUR for order {order}"

    @tool
    async def book_courier(order: str) -> str:
        """Book a courier to pick up an order.

        Args:
            order: The order number.
        """
        await anyio.sleep(5)  # a slow courier service: in the child, the process dies before it answers
        return f"courier booked for order {order}"

    return [charge_card, book_courier]


def charges(directory: Path) -> int:
    path = directory / "charges.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def offline_reply(request: RecordedRequest) -> ScriptEntry:
    """The fake service's answer follows from the request alone, so a new process (with a new
    fake) goes on with the same conversation."""
    if not any(message["role"] == "assistant" for message in request.messages):
        return tool_reply(
            tool_call("charge_card", {"order": "42", "amount": 30}, id="toolu_charge"),
            tool_call("book_courier", {"order": "42"}, id="toolu_courier"),
            text="I'll charge the card and book the courier at the same time.",
        )
    return text_reply(
        "Order 42 is paid (30.00 EUR). The courier booking was interrupted and may have gone through, "
        "so I did not book again: please check with the courier before I retry."
    )


def make_client() -> anthropic.AsyncAnthropic:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return anthropic.AsyncAnthropic()
    return FakeMessagesAPI(responder=offline_reply).async_client()


class CrashAfterTheCharge:
    """A checkpointer around the real one that kills this process right after the save that holds
    the charge as finished and the courier booking as started: a stand-in for a crash."""

    def __init__(self, store: Checkpointer) -> None:
        self.store = store

    async def save(self, checkpoint: Checkpoint) -> None:
        await self.store.save(checkpoint)
        status = {record.call.name: record.status for record in checkpoint.state.calls.values()}
        if (
            status.get("charge_card") is CallStatus.FINISHED
            and status.get("book_courier") is CallStatus.STARTED
        ):
            print("   [child] the charge is saved and the courier is being booked: SIGKILL now", flush=True)
            os.kill(os.getpid(), signal.SIGKILL)

    async def load(self, run_id: str) -> Checkpoint | None:
        return await self.store.load(run_id)


def show_call(event: RunnerEvent) -> None:
    if isinstance(event, ToolCallStarted):
        print(f"   [child] -> {event.call.name}({event.call.input})", flush=True)
    elif isinstance(event, ToolCallFinished):
        print(f"   [child] <- {event.call.name} finished", flush=True)


async def child(directory: Path) -> None:
    """Start the run; it does not end here (offline, at least)."""
    store = SQLiteCheckpointer(directory / "runs.db")
    client = make_client()
    runner = ToolRunner(
        client,
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": PROMPT}],
        tools=make_tools(directory),
        checkpointer=CrashAfterTheCharge(store),
        run_id=RUN_ID,
        on_event=show_call,
    )
    async with client:
        await runner.until_done()
    store.close()


async def resume(directory: Path) -> None:
    """Go on with the saved run, in this process."""
    store = SQLiteCheckpointer(directory / "runs.db")
    client = make_client()
    async with client:
        runner = await ToolRunner.resume(
            client, checkpointer=store, run_id=RUN_ID, tools=make_tools(directory), on_event=show_call
        )
        for record in runner.state.calls.values():  # the journal of the turn the crash cut short
            result: Mapping[str, object] = record.result or {}
            content = result.get("content")
            text = content if isinstance(content, str) else str(content)
            if result.get("is_error"):
                print(f"   {record.call.name}: [is_error] {text}")
            else:
                print(f"   {record.call.name}: answered from the journal, not run again: {text!r}")
        final = await runner.until_done()
    store.close()
    for block in final.content:
        if block.type == "text":
            print(f"Claude: {block.text}")
    print(
        f"The card was charged {charges(directory)} time(s); the run ended ({runner.end_reason}) after "
        f"{runner.requests_sent} requests."
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        print("1. A child process starts the run, with checkpoints in runs.db.", flush=True)
        warnings = [f"-W{option}" for option in sys.warnoptions]
        done = subprocess.run([sys.executable, *warnings, __file__, "--child", name], check=False)
        if done.returncode == -signal.SIGKILL:
            print(f"   the child was killed by SIGKILL; charges.txt has {charges(directory)} line(s).")
        elif done.returncode == 0:
            print("   the child finished the run by itself (Claude did not ask for both tools at once).")
        else:
            raise SystemExit(f"the child failed with exit status {done.returncode}")
        print("2. This process resumes the run from runs.db.")
        anyio.run(resume, directory)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        anyio.run(child, Path(sys.argv[2]))
    else:
        main()

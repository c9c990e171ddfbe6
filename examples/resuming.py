"""The decided run goes on by itself: an app starts a run that pauses for a person, a resumer
waits in a process of its own, a person approves at the command line (or in the inbox), and the
resumer takes the run up with the app's tools: it finishes. No line of the app's code polls.

The app's part is this module's ``resume_run``: the runner that goes on with a run, given its id
and the store. ``toolrunner resume --app resuming:resume_run`` imports it (from the working
directory, as ``python -m`` would).

Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set, in which case
it talks to the real service:

    python examples/resuming.py
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import anthropic
import anyio

from toolrunner import AwaitingApprovalError, RunStore, SQLiteCheckpointer, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

HERE = Path(__file__).resolve().parent
RESUME = [sys.executable, "-m", "toolrunner", "resume"]


@tool(requires_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order.

    Args:
        order: The order number.
        amount: The amount in EUR.
    """
    return f"Refunded {amount} EUR for order {order}."


def client(*replies: ScriptEntry) -> anthropic.AsyncAnthropic:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return anthropic.AsyncAnthropic()
    return FakeMessagesAPI(list(replies)).async_client()


async def resume_run(run_id: str, store: RunStore) -> ToolRunner:
    """The app's factory: what ``toolrunner resume`` calls for each run it takes up."""
    return await ToolRunner.resume(
        client(text_reply("I refunded 120 EUR for order A-1047.")),
        checkpointer=store,
        run_id=run_id,
        tools=[refund],
    )


async def start(store: SQLiteCheckpointer) -> str | None:
    """The app, in a web request: it starts the run, which pauses, and moves on; the id of the
    call that waits (``None`` if the model asked for no refund)."""
    runner = ToolRunner(
        client(tool_reply(tool_call("refund", {"order": "A-1047", "amount": 120}), text="I'll refund it.")),
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Order A-1047 arrived broken. Please refund it."}],
        tools=[refund],
        checkpointer=store,
        run_id="refund-A-1047",
    )
    try:
        await runner.until_done()
    except AwaitingApprovalError as paused:
        print(f"The run waits for a person: {paused.calls[0].name}({paused.calls[0].input})")
        return paused.calls[0].id
    finally:
        store.close()
    return None


def toolrunner_command(*argv: str) -> None:
    """The command line in a process of its own, as someone on call would run it."""
    print(f"\n$ toolrunner {' '.join(argv)}")
    done = subprocess.run(
        [sys.executable, "-m", "toolrunner", *argv], cwd=HERE, capture_output=True, text=True, check=False
    )
    print(done.stdout.rstrip() or done.stderr.rstrip())


def main() -> None:
    path = Path(tempfile.mkdtemp()) / "runs.db"
    url = f"sqlite:///{path}"
    waiting = anyio.run(start, SQLiteCheckpointer(path))
    if waiting is None:
        return  # the model asked for no refund: nothing waits

    # Deployed once, next to the app: a resumer (as many as you like, on as many machines).
    print(f"\n$ toolrunner resume --store {url} --app resuming:resume_run  (in the background)")
    resumer = subprocess.Popen(
        [*RESUME, "--store", url, "--app", "resuming:resume_run", "--poll-interval", "0.2"],
        cwd=HERE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert resumer.stderr is not None
    try:
        log = [resumer.stderr.readline()]  # it serves

        # Later: a person decides, here at the command line (the inbox does the same).
        toolrunner_command("runs", "list", "--status", "awaiting", "--store", url)
        toolrunner_command("runs", "approve", "refund-A-1047", waiting, "--by", "ada", "--store", url)

        # The resumer takes the run up, with the app's tools; the app does nothing.
        while "ended" not in log[-1] and "paused" not in log[-1] and log[-1]:
            log.append(resumer.stderr.readline())
        resumer.send_signal(signal.SIGTERM)
        log += resumer.stderr.readlines()
        resumer.wait()
    finally:
        if resumer.poll() is None:
            resumer.kill()
            resumer.wait()
        resumer.stderr.close()
    print("\nThe resumer's log:")
    for line in log:
        print("  " + line.rstrip().split("toolrunner resume: ", 1)[-1])

    toolrunner_command("runs", "show", "refund-A-1047", "--store", url)


if __name__ == "__main__":
    main()

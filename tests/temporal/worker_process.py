"""A worker in a process of its own, for the test that kills one with SIGKILL.

    python -m tests.temporal.worker_process --target HOST:PORT --task-queue Q --base-url URL --store DIR --log FILE [--block]

Its tools write a line to ``--log`` as each call starts and ends; with ``--block``, ``charge`` and
``lookup`` never end (the test kills this process while they run). The sub-agent ``auditor`` looks
orders up with ``lookup``.
"""

from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

import anthropic
from temporalio.client import Client

from toolrunner import SubAgent, tool
from toolrunner.temporal import FilePayloadStore, create_worker

parser = argparse.ArgumentParser()
for option in ("--target", "--task-queue", "--base-url", "--store", "--log"):
    parser.add_argument(option, required=True)
parser.add_argument("--block", action="store_true")
args = parser.parse_args()
log = Path(args.log)


def note(line: str) -> None:
    with log.open("a", encoding="utf-8") as file:  # one short append: whole lines, across processes
        file.write(line + "\n")


async def maybe_block() -> None:
    if args.block:
        await asyncio.Event().wait()


@tool
async def step(number: int) -> str:
    """Do one step."""
    note(f"start step {number}")
    note(f"end step {number}")
    return f"step {number} done"


@tool
async def charge(order: str) -> str:
    """Charge the card for an order (charging twice would charge twice)."""
    note(f"start charge {order}")
    await maybe_block()
    note(f"end charge {order}")
    return f"charged {order}"


@tool(idempotent=True)
async def lookup(order: str) -> str:
    """Look an order up (harmless to repeat)."""
    note(f"start lookup {order}")
    await maybe_block()
    note(f"end lookup {order}")
    return f"order {order}: paid"


auditor = SubAgent(
    name="auditor", description="Checks an order.", model="claude-haiku-4-5", max_tokens=100, tools=[lookup]
)


async def main() -> None:
    client = await Client.connect(args.target)
    worker = create_worker(
        client,
        task_queue=args.task_queue,
        tools=[step, charge, lookup, auditor],
        anthropic_client=anthropic.AsyncAnthropic(api_key="sk-ant-fake-key", base_url=args.base_url),
        store=FilePayloadStore(args.store),
        max_cached_workflows=0,  # no sticky queue: the next worker takes the run at once
    )
    note("worker ready")
    await worker.run()


if __name__ == "__main__":
    asyncio.run(main())

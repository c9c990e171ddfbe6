"""Record the workflow history that ``test_temporal_replay.py`` replays.

    python -m tests.temporal.record_history

writes ``tests/temporal/fixtures/run_history.json``. Record it again only on purpose: the committed
history is what runs started by an older toolrunner left behind, and the replay test checks that
today's workflow code still makes the same decisions for it. A change that breaks the replay
breaks every run in flight; guard it with ``workflow.patched()`` instead of recording anew.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from toolrunner import ToolError, tool
from toolrunner.temporal import MemoryPayloadStore, RunResult, create_worker, start_run
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

FIXTURE = Path(__file__).parent / "fixtures" / "run_history.json"
RUN_ID = "recorded-run"
TASK_QUEUE = "recorded"


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


@tool(sequential=True, idempotent=True)
def archive(city: str) -> str:
    """The weather archive of a city (a long text)."""
    return f"{city}: " + "rain, sun, " * 300


@tool
def book(table: int) -> str:
    """Book a table."""
    raise ToolError(f"Table {table} is taken.")


TOOLS: list[Any] = [weather, archive, book]


def script() -> list[ScriptEntry]:
    """Concurrent calls; a sequential tool with a large result; a failing tool and no tool; an answer."""
    return [
        tool_reply(tool_call("weather", {"city": "Paris"}), tool_call("weather", {"city": "Rome"})),
        tool_reply(
            tool_call("archive", {"city": "Paris"}),
            tool_call("book", {"table": 4}),
            tool_call("teleport", {"to": "Mars"}),
        ),
        text_reply("Sunny in Paris and Rome; it often rains in Paris."),
    ]


async def record(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """Run the recorded conversation on ``env``; its result and its history."""
    fake = FakeMessagesAPI(script())
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=TOOLS,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
    ):
        handle = await start_run(
            env.client,
            run_id=RUN_ID,
            task_queue=TASK_QUEUE,
            tools=TOOLS,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Weather in Paris and Rome, and book a table."}],
            max_iterations=10,
        )
        result = await handle.result()
        return result, await handle.workflow.fetch_history()


async def main() -> None:
    from toolrunner.temporal import start_test_environment

    async with await start_test_environment() as env:
        _, history = await record(env)
    FIXTURE.parent.mkdir(exist_ok=True)
    FIXTURE.write_text(history.to_json() + "\n", encoding="utf-8")
    print(f"wrote {FIXTURE} ({len(history.events)} events)")


if __name__ == "__main__":
    asyncio.run(main())

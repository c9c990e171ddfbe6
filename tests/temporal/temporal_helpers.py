"""Helpers of the Temporal tests."""

from __future__ import annotations

import itertools
from collections.abc import AsyncGenerator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import anyio
from anthropic.lib.tools import BetaAsyncRunnableToolset, ToolError as SdkToolError
from anthropic.tools import BetaToolsetCallContext
from anthropic.types.beta import BetaBrowserToolset20260801Param
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from toolrunner import ToolRunner
from toolrunner.temporal import ActivityOptions, PayloadStore, RunHandle, create_worker, start_run
from toolrunner.testing import FakeMessagesAPI

MODEL = "claude-sonnet-4-6"
_queues = itertools.count()


def task_queue() -> str:
    """A task queue of its own for each test, so that workers of other tests do not take its tasks."""
    return f"test-queue-{next(_queues)}"


@asynccontextmanager
async def worker(
    env: WorkflowEnvironment,
    fake: FakeMessagesAPI,
    store: PayloadStore,
    *,
    tools: Iterable[Any],
    **options: Any,
) -> AsyncGenerator[str]:
    """A worker for ``fake`` on a new task queue (of ``env``'s client, or ``client=``); yields the task queue."""
    queue = task_queue()
    options.setdefault("anthropic_client", fake.async_client())
    client = options.pop("client", env.client)
    async with create_worker(client, task_queue=queue, tools=tools, store=store, **options):
        yield queue


async def start(
    client: Client, queue: str, *, run_id: str, tools: Iterable[Any], **options: Any
) -> RunHandle:
    options.setdefault("model", MODEL)
    options.setdefault("max_tokens", 1024)
    options.setdefault("messages", [{"role": "user", "content": "Go."}])
    return await start_run(client, run_id=run_id, task_queue=queue, tools=tools, **options)


async def run_plainly(fake: FakeMessagesAPI, *, tools: Iterable[Any], **options: Any) -> ToolRunner:
    """The same run with a plain ``ToolRunner``, to the end."""
    options.setdefault("model", MODEL)
    options.setdefault("max_tokens", 1024)
    options.setdefault("messages", [{"role": "user", "content": "Go."}])
    runner = ToolRunner(fake.async_client(), tools=list(tools), **options)
    await runner.until_done()
    return runner


class Rendezvous:
    """``n`` calls that each wait until all ``n`` have started: they finish only if they run at once."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.arrived = 0
        self.all_here = anyio.Event()

    async def meet(self) -> None:
        self.arrived += 1
        if self.arrived == self.n:
            self.all_here.set()
        with anyio.fail_after(30):  # a deadlock guard, not a timing: sequential calls never meet
            await self.all_here.wait()


def fast_retries() -> ActivityOptions:
    """Activity options whose retries wait little (the test server skips only timers)."""
    from datetime import timedelta

    from temporalio.common import RetryPolicy

    return ActivityOptions(
        request_retry=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=5),
        tool_retry=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=3),
    )


class Browser(BetaAsyncRunnableToolset):
    """A browser toolset that records the members it runs, in order; the member ``fail`` fails."""

    toolset_name = "browser"

    def __init__(self) -> None:
        self.calls: list[str] = []

    def to_dict(self) -> BetaBrowserToolset20260801Param:
        return {"type": "browser_toolset_20260801"}

    async def call(self, context: BetaToolsetCallContext, name: str, input: Mapping[str, object]) -> str:
        self.calls.append(name)
        if name == "fail":
            raise SdkToolError("the page is gone")
        return f"{name} done"


def member(name: str, tool_use_id: str, toolset: str = "browser", **input: object) -> dict[str, Any]:
    """A tool_use block calling a member of a toolset family."""
    return {"type": "tool_use", "id": tool_use_id, "name": name, "input": input, "toolset_name": toolset}

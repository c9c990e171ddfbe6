"""The two agents the web tests serve, for the tests that take the same steps on each (the official
clients in node, the example pages in a browser): ``OnAgent``, an ``Agent`` on a store in this
process, and ``OnTemporal``, a ``TemporalAgent`` over workflow runs on Temporal's time-skipping
test server with a worker on the fake Messages API. Each serves an app on uvicorn on a free port
of 127.0.0.1 (``served``) and gives the state of a run afterwards (``state``): a test reads the
decisions (with who decided) and the end from it, whichever agent ran it.

The Temporal pieces are async (``time_skipping``, ``serving``, ``on_uvicorn``) for the tests that
run in the worker's loop (tests/web/test_web_temporal.py); ``OnTemporal`` runs them in a loop of
their own, in a thread (an anyio portal), for the synchronous tests: node and Playwright's sync API
block the test's thread while that loop serves their requests. Temporal's SDK runs on asyncio only.
"""

from __future__ import annotations

import gc
import itertools
import socket
from collections.abc import AsyncGenerator, Callable, Generator
from contextlib import AbstractContextManager, AsyncExitStack, asynccontextmanager, contextmanager
from typing import Any, Protocol

import anyio
import uvicorn
from anyio.from_thread import BlockingPortal, start_blocking_portal
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.support.inbox_browser import in_thread
from tests.support.web_server import MODEL, conversation, look, make_agent, pay, served
from toolrunner import DecisionSource, MemoryCheckpointer, RunState
from toolrunner.temporal import MemoryPayloadStore, create_worker, get_run, start_test_environment
from toolrunner.testing import FakeMessagesAPI
from toolrunner.web import Agent, TemporalAgent

__all__ = [
    "AppOf",
    "Backend",
    "OnAgent",
    "OnTemporal",
    "on_temporal",
    "on_uvicorn",
    "serving",
    "time_skipping",
]

AppOf = Callable[[Any], Any]
"""``agui_app`` or ``ui_message_stream_app``: the app over an agent."""
queues = itertools.count()


class Backend(Protocol):
    """An agent the web tests serve: ``OnAgent`` or ``OnTemporal``."""

    via: DecisionSource
    """Where a decision the endpoint took is recorded as coming from (``DecisionRecord.via``)."""

    def served(self, app_of: AppOf, fake: FakeMessagesAPI) -> AbstractContextManager[str]:
        """``app_of(agent)`` on uvicorn, the agent's model ``fake``; its URL."""
        ...

    def state(self, run_id: str) -> RunState:
        """The state of the run ``run_id`` (the conversation's thread or chat id)."""
        ...


class OnAgent:
    """An ``Agent`` on a ``MemoryCheckpointer``, in the server's thread."""

    via: DecisionSource = "store"  # the endpoint decides in the store, the run goes on from it

    def __init__(self) -> None:
        self._agent: Agent | None = None

    @contextmanager
    def served(self, app_of: AppOf, fake: FakeMessagesAPI) -> Generator[str]:
        self._agent = make_agent(fake, MemoryCheckpointer())
        with served(app_of(self._agent)) as url:
            yield url

    def state(self, run_id: str) -> RunState:
        agent = self._agent
        assert agent is not None, "nothing was served"
        loaded = in_thread(lambda: agent.store.load(run_id))
        assert loaded is not None, f"the store has no run {run_id!r}"
        return loaded.state


class OnTemporal:
    """A ``TemporalAgent`` and its worker, in the loop of ``portal`` with the test server ``env``;
    each worker runs until ``workers`` closes (``on_temporal``'s end), so that a run's state can
    be queried after its app stopped."""

    via: DecisionSource = "runner"  # the workflow takes the decision (an update), as a runner does

    def __init__(self, portal: BlockingPortal, env: WorkflowEnvironment, workers: AsyncExitStack) -> None:
        self.portal = portal
        self.env = env
        self.workers = workers

    @contextmanager
    def served(self, app_of: AppOf, fake: FakeMessagesAPI) -> Generator[str]:
        with self.portal.wrap_async_context_manager(self._served(app_of, fake)) as url:
            yield url

    @asynccontextmanager
    async def _served(self, app_of: AppOf, fake: FakeMessagesAPI) -> AsyncGenerator[str]:
        worker, agent = serving(self.env, fake)
        await self.workers.enter_async_context(worker)
        async with on_uvicorn(app_of(agent)) as url:
            yield url

    def state(self, run_id: str) -> RunState:
        return self.portal.call(get_run(self.env.client, run_id).state)  # the worker answers it


@contextmanager
def on_temporal() -> Generator[OnTemporal]:
    """``OnTemporal`` on a test server of its own, in a loop in a thread of its own, shut down at the end."""
    with (
        start_blocking_portal("asyncio") as portal,
        portal.wrap_async_context_manager(time_skipping()) as env,
        portal.wrap_async_context_manager(AsyncExitStack()) as workers,
    ):
        yield OnTemporal(portal, env, workers)


@asynccontextmanager
async def time_skipping() -> AsyncGenerator[WorkflowEnvironment]:
    """Temporal's time-skipping test server (``start_test_environment``), shut down at the end."""
    env = await start_test_environment()
    try:
        yield env
    finally:
        await env.shutdown()
        # temporalio/sdk-python#300, as tests/temporal/conftest.py says: the SDK's native threads
        # can crash the interpreter when they release objects while it shuts down
        del env
        gc.collect()


def serving(env: WorkflowEnvironment, fake: FakeMessagesAPI | None = None) -> tuple[Worker, TemporalAgent]:
    """A worker of a task queue of its own on ``fake`` (default: the scripted conversation), and
    the agent over it."""
    queue = f"web-{next(queues)}"
    store = MemoryPayloadStore()
    worker = create_worker(
        env.client,
        task_queue=queue,
        tools=[look, pay],
        anthropic_client=(fake or conversation()).async_client(),
        store=store,
    )
    agent = TemporalAgent(
        env.client, task_queue=queue, store=store, tools=[look, pay], model=MODEL, max_tokens=256
    )
    return worker, agent


@asynccontextmanager
async def on_uvicorn(app: Any) -> AsyncGenerator[str]:
    """``app`` on uvicorn in this loop, on a free port of 127.0.0.1 (its lifespan run); its URL."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listening])
            try:
                for _ in range(1000):  # a bound, not a measurement: the server says when it listens
                    if server.started:
                        break
                    await anyio.sleep(0.01)
                assert server.started, "uvicorn did not start"
                yield f"http://127.0.0.1:{port}"
            finally:
                server.should_exit = True
    finally:
        listening.close()

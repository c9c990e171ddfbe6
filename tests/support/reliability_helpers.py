"""Checks shared by the reliability tests: history shape, leaks, and blocking calls on the loop.

Each check is independent of the runner's own code, so a bug there cannot hide itself:

- ``pairing_problems`` reads a history the way the service does;
- ``skeleton`` reduces a history to what the lifecycle decides (roles, block kinds, ids);
- ``LeakCheck`` compares threads and tasks before and after;
- ``LoopWatch`` records blocking calls made on the event loop's thread, and the loop's lag.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import AsyncIterator, Callable, Generator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, cast

import anyio
import anyio.abc
import anyio.lowlevel
import httpx2

from tests.support.helpers import plain

__all__ = [
    "Block",
    "CountingTransport",
    "LeakCheck",
    "LoopWatch",
    "Skeleton",
    "pairing_problems",
    "plain",
    "quiet_tool_failures",
    "skeleton",
    "worker_threads_idle",
]

Block = tuple[Any, ...]
"""One content block reduced to what the lifecycle decides: ("text", text), ("tool_use", id, name),
("tool_result", tool_use_id, is_error), or (type,) for any other block."""
Skeleton = tuple[str, tuple[Block, ...]]
"""One message reduced to its role and blocks."""


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content: object = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if isinstance(content, list):
        return [cast(dict[str, Any], block) for block in cast(list[Any], content)]
    return []


def _block(block: dict[str, Any]) -> Block:
    kind = block.get("type")
    if kind == "text":
        return ("text", block.get("text"))
    if kind == "tool_use":
        return ("tool_use", block.get("id"), block.get("name"))
    if kind == "tool_result":
        return ("tool_result", block.get("tool_use_id"), bool(block.get("is_error")))
    return (kind,)


def skeleton(messages: Sequence[object]) -> list[Skeleton]:
    """A history reduced to roles and blocks (text, tool_use ids and names, tool_result ids)."""
    data: list[dict[str, Any]] = plain(list(messages))
    return [(message["role"], tuple(_block(block) for block in _blocks(message))) for message in data]


def pairing_problems(messages: Sequence[object], *, allow_trailing: bool = False) -> list[str]:
    """What the service would reject about tool_use/tool_result pairing, as sentences; [] when none.

    Every client tool_use must be answered exactly once by a tool_result at the start of the next
    message, in tool_use order, and no tool_result may answer anything else. With ``allow_trailing``,
    a last assistant message may wait for its results (a history between two steps of the loop).
    """
    data: list[dict[str, Any]] = plain(list(messages))
    problems: list[str] = []
    asked: list[str] = []
    for index, message in enumerate(data):
        blocks = _blocks(message)
        if message.get("role") == "assistant":
            if asked:
                problems.append(
                    f"messages[{index - 1}] asks {asked} and messages[{index}] is not a user message"
                )
            asked = [block["id"] for block in blocks if block.get("type") == "tool_use"]
            continue
        answered = [block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"]
        leading = [
            block.get("tool_use_id") for block in blocks[: len(asked)] if block.get("type") == "tool_result"
        ]
        if leading != asked:
            problems.append(f"messages[{index}] starts with results {leading}, not {asked} in order")
        if len(answered) != len(set(answered)) or set(answered) - set(asked):
            problems.append(
                f"messages[{index}] answers {answered}, which are not exactly once each of {asked}"
            )
        asked = []
    if asked and not allow_trailing:
        problems.append(f"the last message asks {asked} and nothing answers it")
    return problems


# -- leaks ------------------------------------------------------------------------------------------

# Threads that pools keep for reuse: they are idle between calls, not leaked.
_POOL_THREAD_PREFIXES = ("AnyIO worker thread", "Trio thread", "asyncio_")


def _is_pool_thread(thread: threading.Thread) -> bool:
    # trio names a cache thread "<function> from <caller>" while it runs a job; anyio's is "wrapper"
    return thread.name.startswith((*_POOL_THREAD_PREFIXES, "wrapper from "))


def worker_threads_idle(timeout: float = 5.0) -> bool:
    """Whether every anyio worker thread is idle, waiting for work (polls up to ``timeout``).

    An idle anyio worker blocks in ``queue.get``; a busy one runs a function. We read each pool
    thread's current frame: idle when it is inside the queue's ``get``.
    """
    import sys

    deadline = time.monotonic() + timeout
    while True:
        frames = sys._current_frames()  # pyright: ignore[reportPrivateUsage]
        busy = [
            thread.name
            for thread in threading.enumerate()
            if _is_pool_thread(thread) and thread.ident in frames and not _idle(frames[thread.ident])
        ]
        if not busy or time.monotonic() > deadline:
            return not busy
        time.sleep(0.005)


def _idle(frame: Any) -> bool:
    """An idle pool thread waits for its next job: anyio's in ``queue.get``, trio's in ``_work``,
    the asyncio default executor's in ``_worker``."""
    code = frame.f_code
    if code.co_name == "_work" and code.co_filename.endswith("_thread_cache.py"):
        return True
    if code.co_name == "_worker" and code.co_filename.endswith("thread.py"):
        return True
    parent = frame.f_back
    return (
        code.co_name == "wait"
        and parent is not None
        and parent.f_code.co_name == "get"
        and parent.f_code.co_filename.endswith("queue.py")
    )


@dataclass
class LeakCheck:
    """Threads and tasks that exist now; ``assert_none_new()`` fails on any added since.

    Pool worker threads are allowed (they are reused), and so are the threads listed in ``allowed``
    (an abandoned timed-out sync tool, which Python cannot stop).
    """

    threads: set[threading.Thread] = field(default_factory=lambda: set(threading.enumerate()))
    tasks: int | None = None

    @classmethod
    async def start(cls) -> LeakCheck:
        check = cls()
        check.tasks = len(anyio.get_running_tasks())
        return check

    def new_threads(self, allowed: Sequence[threading.Thread] = ()) -> list[threading.Thread]:
        return [
            thread
            for thread in threading.enumerate()
            if thread not in self.threads and not _is_pool_thread(thread) and thread not in allowed
        ]

    async def assert_none_new(self, allowed: Sequence[threading.Thread] = ()) -> None:
        for _ in range(3):  # let finished tasks be reaped
            await anyio.lowlevel.checkpoint()
        leaked = self.new_threads(allowed)
        assert not leaked, f"threads left running: {leaked}"
        if self.tasks is not None:
            tasks = anyio.get_running_tasks()
            assert len(tasks) <= self.tasks, f"tasks left running: {[t.name for t in tasks]}"


# -- blocking calls on the event loop -----------------------------------------------------------------


@dataclass
class LoopWatch:
    """Records blocking calls made on the event loop's thread, and how late the loop ran.

    Inside ``watching()``, ``time.sleep`` and ``open`` made on the loop's thread are recorded in
    ``blocking`` (and still run, so that code under test behaves as it would); a ticker task
    measures the longest gap between its wake-ups in ``max_lag``.
    """

    tick: float = 0.002
    blocking: list[str] = field(default_factory=list[str])
    max_lag: float = 0.0
    _loop_thread: int | None = None

    @contextmanager
    def _patched(self) -> Generator[None]:
        import builtins
        import io

        real_sleep = time.sleep
        real_open = builtins.open

        def guarded_sleep(seconds: float) -> None:
            self._note(f"time.sleep({seconds!r})")
            real_sleep(seconds)

        def guarded_open(*args: Any, **kwargs: Any) -> Any:
            self._note(f"open({os.fspath(args[0])!r})" if args else "open()")
            return cast(Any, real_open)(*args, **kwargs)

        time.sleep = guarded_sleep
        builtins.open = guarded_open
        io.open = guarded_open
        try:
            yield
        finally:
            time.sleep = real_sleep
            builtins.open = real_open
            io.open = real_open

    def _note(self, call: str) -> None:
        if threading.get_ident() == self._loop_thread:
            self.blocking.append(call)

    async def watching(self, body: Callable[[], Any]) -> Any:
        """Run ``await body()`` with the guards on and the ticker running; return its value."""
        self._loop_thread = threading.get_ident()
        result: list[Any] = []
        with self._patched():
            async with anyio.create_task_group() as group:
                await group.start(self._ticker)
                result.append(await body())
                # Code that never suspends starves the ticker: let it wake once more, so that a
                # block during ``body`` shows up as lag even then.
                await anyio.sleep(self.tick * 3)
                group.cancel_scope.cancel()
        return result[0]

    async def _ticker(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        last = time.perf_counter()
        task_status.started()
        while True:
            await anyio.sleep(self.tick)
            now = time.perf_counter()
            self.max_lag = max(self.max_lag, now - last - self.tick)
            last = now


# -- transports -----------------------------------------------------------------------------------


class _TrackedStream(httpx2.AsyncByteStream):
    def __init__(self, inner: httpx2.AsyncByteStream, owner: CountingTransport) -> None:
        self._inner = inner
        self._owner = owner
        owner.open_streams += 1

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        if not getattr(self, "_closed", False):
            self._closed = True
            self._owner.open_streams -= 1
        await self._inner.aclose()


class CountingTransport(httpx2.AsyncBaseTransport):
    """Wraps an async transport and counts response streams that were opened but not closed.

    ``rewrite`` may replace the answer to a request (by its number, from 0) with another response,
    e.g. a malformed body.
    """

    def __init__(
        self,
        inner: httpx2.AsyncBaseTransport,
        rewrite: Callable[[int, httpx2.Response], httpx2.Response] | None = None,
    ) -> None:
        self.inner = inner
        self.rewrite = rewrite
        self.open_streams = 0
        self.requests = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        number = self.requests
        self.requests += 1
        response = await self.inner.handle_async_request(request)
        if self.rewrite is not None:
            response = self.rewrite(number, response)
        stream = cast(httpx2.AsyncByteStream, response.stream)
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=_TrackedStream(stream, self)
        )

    async def aclose(self) -> None:
        await self.inner.aclose()


@contextmanager
def quiet_tool_failures() -> Generator[None]:
    """The runner logs tools that raise; tests that check the results instead silence that."""
    logger = logging.getLogger("toolrunner")
    level = logger.level
    logger.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        logger.setLevel(level)

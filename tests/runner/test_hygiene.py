"""Hygiene: warnings are errors, nothing is left open or running, and the runner never blocks the
event loop.

The loop-blocking check (``LoopWatch`` in reliability_helpers.py) records ``time.sleep`` and
``open`` called on the event loop's thread and measures how late a 2 ms ticker runs; the first
tests show that it does catch a blocking tool, so that its silence elsewhere means something.
"""

from __future__ import annotations

import gc
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx2
import pytest

from tests.support.reliability_helpers import CountingTransport, LeakCheck, LoopWatch, worker_threads_idle
from toolrunner import SyncToolRunner, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, fault, text_reply, tool_call, tool_reply

MODEL = "claude-sonnet-4-6"
USER = {"role": "user", "content": "Check the stock."}
GUARD = 10
BLOCK = 0.3  # seconds a sync tool blocks its worker thread
CONTROL_BLOCK = 0.8  # seconds the deliberately broken tool blocks the loop
# A loop that runs later than this was blocked; generous, so that a busy CI machine does not trip it.
LAG_LIMIT = 0.5


@tool
def count_stock(item: str) -> str:
    """Count the stock of an item (slowly, in a worker thread).

    Args:
        item: The item.
    """
    time.sleep(BLOCK)
    return f"{item}: 4"


@tool
async def check_price(item: str) -> str:
    """Check a price.

    Args:
        item: The item.
    """
    await anyio.sleep(0.01)
    return f"{item}: 3 EUR"


def stock_script() -> list[Any]:
    return [
        tool_reply(
            tool_call("count_stock", {"item": "tea"}, id="a"),
            tool_call("count_stock", {"item": "cups"}, id="b"),
            tool_call("check_price", {"item": "tea"}, id="c"),
        ),
        text_reply("Tea: 4 left at 3 EUR."),
    ]


# -- warnings ------------------------------------------------------------------------------------------


def test_the_suite_turns_warnings_into_errors(pytestconfig: pytest.Config) -> None:
    assert "error" in pytestconfig.getini("filterwarnings")
    with pytest.raises(DeprecationWarning):
        warnings.warn("this would fail any test that triggers it", DeprecationWarning, stacklevel=1)


# -- the loop watch can fail ---------------------------------------------------------------------------


@pytest.mark.anyio
async def test_the_loop_watch_catches_a_tool_that_blocks_the_loop() -> None:
    @tool
    async def blocks_the_loop() -> str:
        """Sleep without awaiting (a bug in a tool)."""
        time.sleep(CONTROL_BLOCK)  # noqa: ASYNC251 - the bug the watch must catch
        return "done"

    fake = FakeMessagesAPI([tool_reply(tool_call("blocks_the_loop", {}, id="x")), text_reply("ok")])
    async with fake.async_client() as client:
        runner = ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[blocks_the_loop])
        watch = LoopWatch()
        await watch.watching(runner.until_done)
    assert watch.blocking == [f"time.sleep({CONTROL_BLOCK!r})"]
    assert watch.max_lag > LAG_LIMIT


@pytest.mark.anyio
async def test_the_loop_watch_catches_file_reads_on_the_loop(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("hello")

    @tool
    async def reads_on_the_loop() -> str:
        """Read a file on the loop (a bug in a tool)."""
        return path.read_text()

    fake = FakeMessagesAPI([tool_reply(tool_call("reads_on_the_loop", {}, id="x")), text_reply("ok")])
    async with fake.async_client() as client:
        runner = ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[reads_on_the_loop])
        watch = LoopWatch()
        await watch.watching(runner.until_done)
    assert watch.blocking == [f"open({str(path)!r})"]
    assert watch.max_lag < LAG_LIMIT  # a small read is quick: only the open() call gives it away


# -- the runner never blocks the loop ---------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["whole", "stream", "eager"])
async def test_sync_tools_and_file_results_never_block_the_loop(tmp_path: Path, mode: str) -> None:
    report = tmp_path / "report.txt"
    report.write_text("All in stock.")

    @tool
    async def get_report() -> Path:
        """The stock report (the runner reads the file)."""
        return report

    script = stock_script()
    script[0] = tool_reply(*[tool_call(**c) for c in _calls(script[0])], tool_call("get_report", {}, id="r"))
    fake = FakeMessagesAPI(script)
    options: dict[str, Any] = {"whole": {}, "stream": {"stream": True}}.get(
        mode, {"stream": True, "run_tools_eagerly": True}
    )
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model=MODEL,
            max_tokens=64,
            messages=[USER],
            tools=[count_stock, check_price, get_report],
            **options,
        )
        watch = LoopWatch()
        async with runner:
            await watch.watching(runner.until_done)
    assert watch.blocking == []
    assert watch.max_lag < LAG_LIMIT, f"the loop ran {watch.max_lag:.3f} s late"
    assert "All in stock." in str(runner.messages[2]["content"][-1])


def _calls(reply: Any) -> list[dict[str, Any]]:
    return [
        {"name": block["name"], "input": block["input"], "id": block["id"]}
        for block in reply.content
        if block["type"] == "tool_use"
    ]


@pytest.mark.anyio
async def test_a_sync_client_never_blocks_the_loop() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("check_price", {"item": "tea"}, id="c"), delay=BLOCK / 4),
            text_reply("3 EUR.", delay=BLOCK / 4),
        ]
    )
    with fake.client() as client:  # the fake's sync transport sleeps for the delay
        runner = ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[check_price])
        watch = LoopWatch()
        await watch.watching(runner.until_done)
    assert watch.blocking == []
    assert watch.max_lag < LAG_LIMIT


# -- nothing left open or running ------------------------------------------------------------------------


@pytest.mark.anyio
async def test_no_thread_task_or_stream_is_left_after_a_loop_with_faults_and_sync_tools() -> None:
    fake = FakeMessagesAPI([fault(529, retry_after=0.001), *stock_script()])
    transport = CountingTransport(fake.async_transport())
    leaks = await LeakCheck.start()
    client = anthropic.AsyncAnthropic(
        api_key="sk-ant-fake-key",
        base_url="https://api.anthropic.com",
        max_retries=1,
        http_client=httpx2.AsyncClient(transport=transport),
    )
    async with (
        client,
        ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[count_stock]) as runner,
    ):
        await runner.until_done()
        assert not client.is_closed()  # the runner never closes a client it was given
    assert transport.open_streams == 0
    await leaks.assert_none_new()
    assert worker_threads_idle()


def test_dropped_runners_and_clients_leave_no_resource_warnings() -> None:
    async def run_and_drop() -> None:
        fake = FakeMessagesAPI(stock_script())
        async with fake.async_client() as client:
            runner = ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[count_stock])
            async for _ in runner:
                break  # abandoned mid-loop: the reply and its calls are dropped with the runner

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for backend in ("asyncio", "trio"):
            anyio.run(run_and_drop, backend=backend)
        gc.collect()
    assert [str(w.message) for w in caught] == []


def test_a_sync_runner_left_by_break_leaves_no_portal_thread() -> None:
    before = set(threading.enumerate())
    fake = FakeMessagesAPI(stock_script())
    with fake.client() as client:
        runner = SyncToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[count_stock])
        for _ in runner:
            break
        left = [t for t in threading.enumerate() if t not in before and not t.name.startswith("AnyIO worker")]
        assert left == []
        runner.until_done()
    left = [t for t in threading.enumerate() if t not in before and not t.name.startswith("AnyIO worker")]
    assert left == []


@pytest.mark.anyio
async def test_a_timed_out_sync_tool_is_the_one_thread_left_busy_until_it_returns() -> None:
    """The documented exception: Python cannot stop a thread, so a sync tool that overruns its own
    timeout keeps its worker thread until it returns; the loop does not wait for it."""
    release = threading.Event()

    @tool(timeout=0.05)
    def stuck() -> str:
        """Block until released."""
        release.wait(GUARD)
        return "late"

    fake = FakeMessagesAPI([tool_reply(tool_call("stuck", {}, id="s")), text_reply("ok")])
    async with fake.async_client() as client:
        runner = ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[stuck])
        leaks = await LeakCheck.start()
        try:
            with anyio.fail_after(GUARD / 2):
                await runner.until_done()
            assert not worker_threads_idle(timeout=0.05)  # the abandoned call still runs
        finally:
            release.set()
        assert worker_threads_idle()
        await leaks.assert_none_new()


@tool
def echo(text: str) -> str:
    """Echo the text back.

    Args:
        text: What to echo.
    """
    return text


@pytest.mark.anyio
@pytest.mark.parametrize("entered", [False, True])
async def test_a_finished_run_is_freed_without_the_cycle_collector(entered: bool) -> None:
    """Nothing of a run without tracing refers back to its runner (the tools' context holds it
    weakly): when the last reference goes, the run's objects, its history and its state are freed
    at once, not left to the cycle collector (which 100 runs at once made walk all their histories)."""
    import weakref

    fake = FakeMessagesAPI([tool_reply(tool_call("echo", {"text": "a"})), text_reply("done")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[echo])
    gc.collect()
    gc.disable()
    try:
        if entered:
            async with runner:
                await runner.until_done()
        else:
            await runner.until_done()
        freed = [weakref.ref(runner), weakref.ref(runner._core), weakref.ref(runner.state)]  # pyright: ignore[reportPrivateUsage]
        del runner
        assert [ref() is None for ref in freed] == [True, True, True]
    finally:
        gc.enable()

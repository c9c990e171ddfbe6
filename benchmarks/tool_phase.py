"""How long one reply's tool phase takes: 4 tool calls in one reply, each sleeping 0.2 s.

    python benchmarks/tool_phase.py [--runs N]

The calls run concurrently, so the tool phase (from the reply's arrival to its tool results being
ready) should take about 0.2 s, not 4 x 0.2 s. Measured for async tools (``await anyio.sleep``) and
sync tools (``time.sleep``, run in worker threads), against the in-process fake Messages API.
Prints medians of several runs; this is a benchmark, not a test, so nothing is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import anyio

from toolrunner import Tool, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

CALLS = 4
SLEEP = 0.2


@tool
async def sleep_async(n: int) -> str:
    """Sleep without blocking the event loop.

    Args:
        n: The call's number.
    """
    await anyio.sleep(SLEEP)
    return f"slept {n}"


@tool
def sleep_sync(n: int) -> str:
    """Sleep in a worker thread.

    Args:
        n: The call's number.
    """
    time.sleep(SLEEP)
    return f"slept {n}"


async def measure(tool_: Tool[..., Any]) -> tuple[float, float]:
    """One run: (tool phase seconds, whole loop seconds) for one reply of ``CALLS`` calls."""
    fake = FakeMessagesAPI(
        [tool_reply(*(tool_call(tool_.name, {"n": n}) for n in range(CALLS))), text_reply("Done.")]
    )
    tool_phase = float("nan")
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Sleep four times."}],
            tools=[tool_],
        )
        start = time.perf_counter()
        async for message in runner:
            if message.stop_reason == "tool_use":
                # The reply has arrived: time until its tool results are ready. The runner
                # reuses these results (cached by tool_use id) when the loop goes on.
                phase_start = time.perf_counter()
                response = await runner.generate_tool_response()
                tool_phase = time.perf_counter() - phase_start
                assert response is not None
        whole = time.perf_counter() - start
    fake.assert_complete()
    return tool_phase, whole


def report(label: str, runs: int, run: Callable[[], tuple[float, float]]) -> None:
    run()  # warm-up: imports, thread pool, first-request costs
    samples = [run() for _ in range(runs)]
    phase = statistics.median(sample[0] for sample in samples)
    whole = statistics.median(sample[1] for sample in samples)
    print(
        f"{label:<28} tool phase {phase:6.3f} s   whole loop (2 requests) {whole:6.3f} s   "
        f"(sequential would be {CALLS * SLEEP:.1f} s)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=5, help="runs per kind of tool (median reported)")
    args = parser.parse_args()
    print(f"{CALLS} tool calls in one reply, each sleeping {SLEEP} s; medians of {args.runs} runs")
    report("async tools (anyio.sleep)", args.runs, lambda: anyio.run(measure, sleep_async))
    report("sync tools (time.sleep)", args.runs, lambda: anyio.run(measure, sleep_sync))


if __name__ == "__main__":
    main()

"""What a replay evaluation costs: the client's time to replay saved runs, against running the same
conversations live (ratios taken per round, rounds interleaved).

    python benchmarks/evals.py [--quick] [--runs N] [--rounds R]

Every conversation is three requests (a lookup, an action, the answer) on the offline fake
Messages API, answered in process, so the figures are toolrunner's own work and the SDK's, not a
network's. The rows:

- live: the conversations run by ``ToolRunner``, saved in SQLite (how production made the record);
- replay: ``replay_runs`` over those saved runs, replays kept in memory;
- replay into SQLite: the same, the replays saved in a SQLite store (resumable);
- replay, batch path: the same through the Message Batches API (``batch=True``, every replay under
  way at once so that a batch holds a request of each), the fake ending each batch at its first
  look; with the batches it sent, and their sizes.

Each run checks its result (every replay "replayed", with no divergence), so a replay that goes
wrong fails the benchmark instead of looking fast. No target: a replay does what a live run does
(the same requests) plus the journal lookups, and the rows say what that adds.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from toolrunner import SQLiteCheckpointer, ToolRunner, tool
from toolrunner.evals import Replay, ReplayReport, replay_runs
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

MODEL = "claude-sonnet-4-6"


@tool
async def lookup(order: str) -> str:
    """Look an order up."""
    return f"order {order}: 42 dollars"


@tool
async def refund(order: str, amount: int) -> str:
    """Refund an order."""
    return f"refunded {amount} on {order}"


def model(request: RecordedRequest) -> ScriptEntry:
    """The fake model: a pure function of the request, so a replay asks what the record asked."""
    messages = request.body["messages"]
    order = messages[0]["content"].split()[-1]
    turn = sum(message["role"] == "assistant" for message in messages)
    if turn == 0:
        return tool_reply(tool_call("lookup", {"order": order}))
    if turn == 1:
        return tool_reply(tool_call("refund", {"order": order, "amount": 42}))
    return text_reply(f"Refunded 42 dollars on order {order}.")


async def live(directory: Path, runs: int, round_: int) -> SQLiteCheckpointer:
    """The conversations run live, saved: the record the replays read."""
    store = SQLiteCheckpointer(directory / f"runs-{round_}.db")
    client = FakeMessagesAPI(responder=model).async_client()
    for number in range(runs):
        runner = ToolRunner(
            client,
            model=MODEL,
            max_tokens=256,
            messages=[{"role": "user", "content": f"Refund order A{number}"}],
            tools=[lookup, refund],
            checkpointer=store,
            run_id=f"run-{number}",
        )
        async for _ in runner:
            pass
    return store


def check(report: ReplayReport, runs: int) -> ReplayReport:
    statuses = Counter(run.status for run in report.runs)
    diverged = sum(1 for run in report.runs if run.comparison is None or run.comparison.divergences)
    if statuses != {"replayed": runs} or diverged:
        raise SystemExit(f"the replays went wrong: {dict(statuses)}, {diverged} diverged")
    return report


async def replay(
    store: SQLiteCheckpointer, runs: int, into: SQLiteCheckpointer | None, *, batch: bool
) -> tuple[ReplayReport, FakeMessagesAPI]:
    fake = FakeMessagesAPI(responder=model, batch_polls=1)
    change = Replay(name="bench", params={"system": "Be brief."}, tools=[lookup, refund])
    report = await replay_runs(  # a batch holds a request of each replay under way: all of them at once
        fake.async_client(),
        change,
        store=store,
        limit=runs,
        into=into,
        batch=batch,
        poll_interval=0.001,
        max_concurrency=runs if batch else 8,
    )
    return check(report, runs), fake


def timed(action: Callable[[], Awaitable[Any]]) -> tuple[float, float, Any]:
    """Wall and CPU seconds of ``anyio.run(action)``, and its value."""
    wall, cpu = time.perf_counter(), time.process_time()
    value = anyio.run(action)
    return time.perf_counter() - wall, time.process_time() - cpu, value


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes that run in seconds")
    parser.add_argument("--runs", type=int, default=100, help="saved runs replayed per round (100)")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds (5)")
    arguments = parser.parse_args()
    runs, rounds = (8, 2) if arguments.quick else (arguments.runs, arguments.rounds)
    figures: dict[str, list[tuple[float, float]]] = {}
    batches: list[int] = []
    with tempfile.TemporaryDirectory() as scratch:
        directory = Path(scratch)
        for round_ in range(rounds):
            wall, cpu, store = timed(partial(live, directory, runs, round_))
            figures.setdefault("live, SQLite", []).append((wall, cpu))
            into = SQLiteCheckpointer(directory / f"evals-{round_}.db")
            rows: list[tuple[str, Callable[[], Awaitable[Any]]]] = [
                ("replay, in memory", partial(replay, store, runs, None, batch=False)),
                ("replay into SQLite", partial(replay, store, runs, into, batch=False)),
                ("replay, batch path", partial(replay, store, runs, None, batch=True)),
            ]
            for offset in range(len(rows)):  # the order rotates each round
                name, action = rows[(round_ + offset) % len(rows)]
                wall, cpu, (_, fake) = timed(action)
                figures.setdefault(name, []).append((wall, cpu))
                if name == "replay, batch path":
                    batches += list(
                        Counter(r.batch_id for r in fake.requests if r.batch_id is not None).values()
                    )
    base = figures["live, SQLite"]
    print(f"{runs} saved runs of 3 requests each, {rounds} rounds (median per run; ratio to live, per round)")
    print(f"{'':24} {'wall/run':>10} {'CPU/run':>10} {'wall ratio':>11} {'CPU ratio':>10}")
    for name, values in figures.items():
        wall = statistics.median(w for w, _ in values) / runs * 1e6
        cpu = statistics.median(c for _, c in values) / runs * 1e6
        wall_ratio = statistics.median(w / b[0] for (w, _), b in zip(values, base, strict=True))
        cpu_ratio = statistics.median(c / b[1] for (_, c), b in zip(values, base, strict=True))
        print(f"{name:24} {wall:>8.0f}µs {cpu:>8.0f}µs {wall_ratio:>10.2f}x {cpu_ratio:>9.2f}x")
    print(
        f"batch path: {len(batches)} batches, {statistics.mean(batches):.1f} requests each on average "
        f"({3 * runs * rounds} requests in all)"
    )


if __name__ == "__main__":
    main()

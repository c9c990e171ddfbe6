"""What a sub-agent's call costs over a plain tool call that does the same work by hand: the client's
CPU time per call, on the in-process fake Messages API.

    python benchmarks/subagents.py            # 15 rounds of 100 runs, a few minutes on 2 cores
    python benchmarks/subagents.py --quick    # tiny sizes, seconds: the smoke test runs this

Every parent run is one turn of a new ``ToolRunner``: the parent's model calls a tool named
``searcher`` (four times in one reply for the fan-out), the calls run, and the parent's model
answers. Four measurements, each against a baseline whose requests are the same (checked before the
rounds: the fake receives the same bodies from both, but that ``@tool`` writes
``"additionalProperties": false`` in the tool's schema):

1. **a sub-agent**: ``searcher`` is a ``SubAgent`` without tools (one request of its own), against a
   plain ``@tool`` that sends that request with the same client by hand and returns its text; no
   store;
2. **with SQLite**: the same two, each run saved in a ``SQLiteCheckpointer`` on a temporary file
   (a sub-run's steps save the parent's state, which holds the sub-run's), with the saves a run
   makes and the size of the largest state saved (its JSON, and its fixed part: all but the
   history and the usage records, which every save writes whole);
3. **a sub-agent with a tool**: ``searcher`` calls one tool (two requests of its own), against a
   plain tool that sends both requests and runs that tool's function by hand;
4. **fan-out**: one reply with 4 calls of the sub-agent of 1, run concurrently, against 4 calls of
   the plain tool of 1 (async, run concurrently too).

CPU time is the process's (``time.process_time()``: the event loop's thread and the worker threads)
over a round's runs of one contender, one after another in one event loop on one client, divided
by the calls they made. In each round a row's two contenders run one right after the other, in an
order that alternates, and the rows' order rotates; figures are medians over rounds, ratios and
differences medians of per-round ones, shown with the rounds' lowest and highest ratio (on a loaded
machine they spread). The function calls per call (Python's and C's, counted with
``sys.setprofile`` on the event loop's thread, in runs apart) do not move with the load. The
fake's own work (parsing each request, rendering each reply; no validation) is in both sides of a
row alike, and so are the parent's two requests and its runner's making: the difference column is
what a sub-run adds to a call. Each run checks the results its parent's model received, so a
contender that gets its work wrong stops the benchmark instead of looking fast. It prints a table
and asserts nothing.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from types import FrameType
from typing import Any, cast

import anthropic
import anyio

from toolrunner import (
    Checkpoint,
    Checkpointer,
    SQLiteCheckpointer,
    SubAgent,
    Tool,
    ToolRunner,
    text_of,
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

from _report import print_markdown_table, step

MODEL = "claude-parent"
SUB_MODEL = "claude-sub"
MAX_TOKENS = 1024
SUB_MAX_TOKENS = 512
SYSTEM = "You find facts. Answer in one line."
DESCRIPTION = "Finds a fact: give it the task in words."
FAN_OUT = 4
LOOKUP_TEXT = ("A lookup's result: a short text of about two hundred bytes, like a small search hit. " * 3)[
    :200
]


@dataclass(frozen=True, slots=True)
class Config:
    runs: int
    """Parent runs per contender and round."""
    rounds: int


FULL = Config(runs=100, rounds=15)
QUICK = Config(runs=3, rounds=2)


# -- the conversation -----------------------------------------------------------------------------


def task_of(number: int) -> str:
    return f"Find fact number {number}."


def answer_of(task: str) -> str:
    return f"Fact found for {task!r}: it is 42."


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    if isinstance(content, str):
        return content
    return "".join(part["text"] for part in cast("list[dict[str, Any]]", content or []))


def respond(request: RecordedRequest) -> ScriptedReply:
    """The fake's models, a pure function of the request (runs of every contender share it).

    The parent asks for as many facts as its prompt says, then answers ``Done.`` if each call's
    result is its fact; the sub-agent's model answers its task, after one lookup if it has tools.
    """
    body, messages = request.body, request.messages
    if body["model"] == SUB_MODEL:
        task = messages[0]["content"]
        if "tools" in body and len(messages) == 1:
            return tool_reply(tool_call("lookup", {"query": task}, id="toolu_lookup"))
        if "tools" in body and result_text(messages[-1]["content"][0]) != LOOKUP_TEXT:
            return text_reply("The lookup went wrong.")
        return text_reply(answer_of(task))
    if len(messages) == 1:
        calls = int(messages[0]["content"].split()[1])
        return tool_reply(
            *(tool_call("searcher", {"task": task_of(n)}, id=f"toolu_{n}") for n in range(calls))
        )
    results = messages[-1]["content"]
    right = all(
        block["tool_use_id"] == f"toolu_{n}"
        and not block.get("is_error")
        and result_text(block) == answer_of(task_of(n))
        for n, block in enumerate(results)
    )
    return text_reply("Done." if right else f"Wrong results: {results!r}")


async def lookup_function(query: str) -> str:
    return LOOKUP_TEXT


lookup = tool(name="lookup", description="Look a fact up.")(lookup_function)


def sub_agent(*, with_lookup: bool) -> SubAgent:
    return SubAgent(
        name="searcher",
        description=DESCRIPTION,
        model=SUB_MODEL,
        max_tokens=SUB_MAX_TOKENS,
        system=SYSTEM,
        tools=[lookup] if with_lookup else [],
    )


def by_hand(client: anthropic.AsyncAnthropic, *, with_lookup: bool) -> Tool[..., Any]:
    """The plain tool: the sub-agent's requests sent by hand with ``client`` (and its tool run)."""
    definitions: Any = [lookup.to_param()] if with_lookup else anthropic.omit  # no "tools" key

    async def searcher(task: str) -> str:
        """Finds a fact.

        Args:
            task: The task, in words.
        """
        messages: list[dict[str, Any]] = [{"role": "user", "content": task}]
        while True:
            message = await client.messages.create(
                model=SUB_MODEL,
                max_tokens=SUB_MAX_TOKENS,
                system=SYSTEM,
                messages=messages,  # pyright: ignore[reportArgumentType]
                tools=definitions,
            )
            if message.stop_reason != "tool_use":
                return "".join(block.text for block in message.content if block.type == "text")
            content = [
                block.model_dump(mode="json", by_alias=True, exclude_unset=True) for block in message.content
            ]
            results: list[dict[str, Any]] = []
            for block in message.content:
                if block.type == "tool_use":
                    text = await lookup_function(**cast("dict[str, str]", block.input))
                    results.append({"type": "tool_result", "tool_use_id": block.id, "content": text})
            messages += [{"role": "assistant", "content": content}, {"role": "user", "content": results}]

    return tool(name="searcher", description=DESCRIPTION)(searcher)


# -- the contenders -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Contender:
    name: str
    sub_agent: bool
    calls: int = 1
    with_lookup: bool = False
    sqlite: bool = False

    def tools(self, client: anthropic.AsyncAnthropic) -> list[Any]:
        if self.sub_agent:
            return [sub_agent(with_lookup=self.with_lookup)]
        return [by_hand(client, with_lookup=self.with_lookup)]


@dataclass(frozen=True, slots=True)
class Pair:
    measure: str
    baseline: Contender
    measured: Contender


PAIRS = [
    Pair(
        "a sub-agent (1 request) vs a plain tool sending it by hand, in memory",
        Contender("plain", sub_agent=False),
        Contender("sub-agent", sub_agent=True),
    ),
    Pair(
        "the same, each run saved in SQLite",
        Contender("plain+sqlite", sub_agent=False, sqlite=True),
        Contender("sub-agent+sqlite", sub_agent=True, sqlite=True),
    ),
    Pair(
        "a sub-agent calling a tool (2 requests) vs the same work by hand",
        Contender("plain+lookup", sub_agent=False, with_lookup=True),
        Contender("sub-agent+lookup", sub_agent=True, with_lookup=True),
    ),
    Pair(
        f"fan-out: {FAN_OUT} sub-agents in one reply vs {FAN_OUT} plain tools",
        Contender(f"plain x{FAN_OUT}", sub_agent=False, calls=FAN_OUT),
        Contender(f"sub-agent x{FAN_OUT}", sub_agent=True, calls=FAN_OUT),
    ),
]
CONTENDERS = [contender for pair in PAIRS for contender in (pair.baseline, pair.measured)]


async def one_run(
    client: anthropic.AsyncAnthropic,
    contender: Contender,
    tools: list[Any],
    store: Checkpointer | None,
    number: int,
) -> None:
    options: dict[str, Any] = {} if store is None else {"checkpointer": store, "run_id": f"run-{number}"}
    runner = ToolRunner(
        client,
        model=MODEL,
        max_tokens=MAX_TOKENS,
        messages=[{"role": "user", "content": f"Find {contender.calls} facts."}],
        tools=tools,
        **options,
    )
    final = text_of(await runner.until_done())
    if final != "Done.":
        raise RuntimeError(f"{contender.name}: the parent's model ended with {final!r}")


def run_batch(contender: Contender, runs: int, database: Path) -> float:
    """CPU seconds per call of ``runs`` parent runs of ``contender``, one after another, with a
    fresh fake, client and (for SQLite) store on ``database``."""

    async def main() -> float:
        store = SQLiteCheckpointer(database) if contender.sqlite else None
        try:
            if store is not None:
                await store.list_runs(limit=1)  # the connection and the tables, before the clock starts
            async with FakeMessagesAPI(responder=respond, validate=False).async_client() as client:
                tools = contender.tools(client)
                cpu = time.process_time()
                for number in range(runs):
                    await one_run(client, contender, tools, store, number)
                cpu = time.process_time() - cpu
        finally:
            if store is not None:
                store.close()
        return cpu / (runs * contender.calls)

    gc.collect()
    return anyio.run(main)


def request_bodies(contender: Contender) -> list[str]:
    """The bodies the fake receives in one run of ``contender``, sorted (the fan-out's requests
    arrive in any order)."""
    fake = FakeMessagesAPI(responder=respond, validate=False)

    async def main() -> None:
        async with fake.async_client() as client:
            await one_run(client, contender, contender.tools(client), None, 0)

    anyio.run(main)
    bodies: list[str] = []
    for request in fake.requests:
        body = dict(request.body)
        if "tools" in body and body["model"] == MODEL:  # @tool's schema forbids other properties
            body["tools"] = [
                {**definition, "input_schema": {**definition["input_schema"], "additionalProperties": False}}
                for definition in body["tools"]
            ]
        bodies.append(json.dumps(body, sort_keys=True))
    return sorted(bodies)


def check_requests() -> None:
    """Each baseline sends the requests its sub-agent sends, as JSON data (but that the plain tool's
    definition in the parent's requests says ``"additionalProperties": false``, which ``@tool``
    writes and a sub-agent's does not)."""
    for pair in PAIRS:
        baseline, measured = request_bodies(pair.baseline), request_bodies(pair.measured)
        if baseline != measured:
            raise SystemExit(
                f"{pair.measure}: the baseline's requests differ from the sub-agent's:\n"
                + "\n".join(baseline)
                + "\n---\n"
                + "\n".join(measured)
            )


# -- the saves ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Saves:
    count: int
    """The saves of one run."""
    largest: int
    """The largest state saved, as JSON (bytes)."""
    fixed: int
    """Its fixed part (all but the history and the usage records), written whole by every save."""


@dataclass(slots=True)
class CountingStore:
    """A checkpointer around an ``SQLiteCheckpointer`` that notes each save's state."""

    store: SQLiteCheckpointer
    states: list[tuple[int, int]] = field(default_factory=list[tuple[int, int]])

    async def save(self, checkpoint: Checkpoint) -> None:
        state = checkpoint.state
        fixed = json.dumps(state.to_dict(history=False), separators=(",", ":"))
        self.states.append((len(state.to_json().encode()), len(fixed.encode())))
        await self.store.save(checkpoint)

    async def load(self, run_id: str) -> Checkpoint | None:
        return await self.store.load(run_id)


def count_saves(contender: Contender, database: Path) -> Saves:
    async def main() -> Saves:
        store = CountingStore(SQLiteCheckpointer(database))
        try:
            async with FakeMessagesAPI(responder=respond, validate=False).async_client() as client:
                await one_run(client, contender, contender.tools(client), store, 0)
        finally:
            store.store.close()
        largest = max(store.states)
        return Saves(len(store.states), largest[0], largest[1])

    return anyio.run(main)


# -- the table ------------------------------------------------------------------------------------


def measure(config: Config, directory: Path) -> dict[str, list[float]]:
    """CPU seconds per call of each contender, a figure a round. A pair's two contenders run one
    right after the other, in an order that alternates; the pairs' order rotates."""
    for contender in CONTENDERS:  # warm-up: imports, first-use caches, untimed
        run_batch(contender, 2, directory / f"warm-up-{contender.name}.db")
    per_call: dict[str, list[float]] = {contender.name: [] for contender in CONTENDERS}
    for number in range(config.rounds):
        shift = number % len(PAIRS)
        for pair in PAIRS[shift:] + PAIRS[:shift]:
            order = [pair.baseline, pair.measured] if number % 2 == 0 else [pair.measured, pair.baseline]
            for contender in order:
                database = directory / f"{contender.name}-{number}.db"
                per_call[contender.name].append(run_batch(contender, config.runs, database))
    return per_call


def count_calls(contender: Contender, runs: int, database: Path) -> float:
    """The function calls (Python's and C's) per call on the event loop's thread, counted through
    ``sys.setprofile`` (a coroutine's resumption counts as a call; a store's worker thread is not
    counted): a figure that the machine's load does not move."""
    count = 0

    def counted(frame: FrameType, event: str, argument: object) -> None:
        nonlocal count
        if event in ("call", "c_call"):
            count += 1

    async def main() -> None:
        store = SQLiteCheckpointer(database) if contender.sqlite else None
        try:
            async with FakeMessagesAPI(responder=respond, validate=False).async_client() as client:
                tools = contender.tools(client)
                await one_run(client, contender, tools, store, runs)  # warm-up
                sys.setprofile(counted)
                try:
                    for number in range(runs):
                        await one_run(client, contender, tools, store, number)
                finally:
                    sys.setprofile(None)
        finally:
            if store is not None:
                store.close()

    anyio.run(main)
    return count / (runs * contender.calls)


def rows(
    per_call: dict[str, list[float]], calls: dict[str, float], saves: dict[str, Saves]
) -> list[list[str]]:
    table: list[list[str]] = []
    for pair in PAIRS:
        base, mine = per_call[pair.baseline.name], per_call[pair.measured.name]
        ratios = [m / b for m, b in zip(mine, base, strict=True)]
        difference = statistics.median(m - b for m, b in zip(mine, base, strict=True))
        note = ""
        if pair.baseline.sqlite:
            plain, nested = saves[pair.baseline.name], saves[pair.measured.name]
            note = (
                f"{nested.count} saves a run, plain {plain.count} ({nested.count - plain.count:+d} a call); "
                f"largest state {nested.largest:,} B (plain {plain.largest:,} B), its fixed part "
                f"{nested.fixed:,} B (plain {plain.fixed:,} B)"
            )
        base_calls, my_calls = calls[pair.baseline.name], calls[pair.measured.name]
        table.append(
            [
                pair.measure,
                f"{statistics.median(base) * 1e6:,.0f} µs",
                f"{statistics.median(mine) * 1e6:,.0f} µs",
                f"{difference * 1e6:+,.0f} µs",
                f"{statistics.median(ratios):.2f}x",
                f"{min(ratios):.2f}x to {max(ratios):.2f}x",
                f"{base_calls:,.0f} → {my_calls:,.0f} ({my_calls / base_calls - 1:+.0%})",
                note,
            ]
        )
    return table


def load_average() -> str:
    if not hasattr(os, "getloadavg"):
        return "n/a"
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="tiny sizes that run in seconds")
    parser.add_argument("--runs", type=int, default=FULL.runs, help="parent runs per contender and round")
    parser.add_argument("--rounds", type=int, default=FULL.rounds, help="interleaved rounds")
    args = parser.parse_args()
    config = QUICK if args.quick else Config(runs=args.runs, rounds=args.rounds)
    print(
        f"toolrunner sub-agent benchmarks{' (quick)' if args.quick else ''}: {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}, anthropic {metadata.version('anthropic')}, "
        f"load average {load_average()} (1, 5, 15 min) at the start"
    )
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        directory = Path(name)
        step("the baselines' requests checked against the sub-agents'", check_requests)
        saves: dict[str, Saves] = step(
            "the saves of one run counted",
            lambda: {
                contender.name: count_saves(contender, directory / f"count-{contender.name}.db")
                for contender in CONTENDERS
                if contender.sqlite
            },
        )
        calls: dict[str, float] = step(
            "the function calls per call counted",
            lambda: {
                contender.name: count_calls(
                    contender, max(1, config.runs // 4), directory / f"calls-{contender.name}.db"
                )
                for contender in CONTENDERS
            },
        )
        per_call: dict[str, list[float]] = step(
            f"{len(CONTENDERS)} contenders, {config.rounds} rounds of {config.runs} runs each",
            lambda: measure(config, directory),
        )
    print()
    print_markdown_table(
        [
            "measure",
            "baseline",
            "measured",
            "difference",
            "ratio",
            "rounds' ratios",
            "function calls",
            "saves and state",
        ],
        rows(per_call, calls, saves),
    )
    print(
        f"\nCPU time per call (the process's, over a round's runs, divided by the calls); medians over "
        f"{config.rounds} rounds, ratios and differences medians of per-round ones; function calls on the "
        f"event loop's thread, per call. Load average {load_average()} at the end. "
        f"Took {time.perf_counter() - start:.0f} s."
    )


if __name__ == "__main__":
    main()

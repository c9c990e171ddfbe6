"""The benchmark suite: toolrunner against a raw SDK loop and the SDK's own tool runner.

    python benchmarks/run.py            # the full suite (a few minutes)
    python benchmarks/run.py --quick    # a tiny configuration (seconds), as the smoke test runs it

It starts the fake Messages API of ``_server.py`` in a process of its own on 127.0.0.1, then runs
each scenario's conversation with the three contenders of ``_contenders.py`` in interleaved rounds
(the order rotates each round), prints a table (medians, ratios against the raw loop of the same
run, targets, pass/fail) and writes everything, every run included, to
``benchmarks/results/latest.json``. Memory is measured in one child process per contender.

The exit status is 0 whatever the figures (``--check`` makes a missed target exit 1); a contender
that gets its conversation wrong stops the run with an error.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Generator
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

import anthropic

import toolrunner
from toolrunner import ParamsError, ToolRunner

# Run as a script: the sibling modules import as top-level modules.
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _contenders import CONTENDERS, Contender, Conversation, Run, run_once
from _memory import child_main
from _report import print_markdown_table, step

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results" / "latest.json"
NAMES: dict[Contender, str] = {"raw": "raw loop", "sdk": "SDK runner", "toolrunner": "toolrunner"}


@dataclass(frozen=True, slots=True)
class Config:
    """The sizes of one suite run."""

    short_turns: int
    long_turns: int
    window: int
    """Iterations at each end of the long run whose per-iteration overhead is compared."""
    sleep_turns: int
    sleep_calls: int
    sleep: float
    memory_turns: int
    repeat_turns: int
    repeats: int
    stream_turns: int
    stream_calls: int
    stream_sleep: float
    stream_pace: float
    stream_tail: float
    short_runs: int
    long_runs: int
    sleep_runs: int
    stream_runs: int


FULL = Config(
    short_turns=100, long_turns=400, window=50, sleep_turns=4, sleep_calls=8, sleep=0.1,
    memory_turns=1000, repeat_turns=200, repeats=5, stream_turns=2, stream_calls=4, stream_sleep=0.2,
    stream_pace=0.02, stream_tail=0.1, short_runs=9, long_runs=5, sleep_runs=3, stream_runs=3,
)  # fmt: skip
QUICK = Config(
    short_turns=10, long_turns=20, window=5, sleep_turns=2, sleep_calls=3, sleep=0.02,
    memory_turns=30, repeat_turns=10, repeats=3, stream_turns=1, stream_calls=3, stream_sleep=0.05,
    stream_pace=0.005, stream_tail=0.03, short_runs=2, long_runs=2, sleep_runs=2, stream_runs=2,
)  # fmt: skip


@dataclass(slots=True)
class Row:
    """One line of the table."""

    scenario: str
    target: str
    raw: str = ""
    sdk: str = ""
    toolrunner: str = ""
    sdk_ratio: str = ""
    toolrunner_ratio: str = ""
    cpu_ratio: str = ""
    result: str = ""
    passed: bool | None = None
    details: dict[str, Any] = field(default_factory=dict[str, Any])


# -- the server -----------------------------------------------------------------------------------


@contextmanager
def fake_server(max_requests: int) -> Generator[int]:
    """Start ``_server.py`` in its own process; yield its port; stop it at the end."""
    process = subprocess.Popen(
        [sys.executable, str(HERE / "_server.py"), "--max-requests", str(max_requests)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if not line.startswith("PORT "):
            raise RuntimeError(f"the benchmark server did not start; it printed {line!r}.")
        yield int(line.split()[1])
    finally:
        if process.stdin is not None:
            process.stdin.close()  # the server stops when its stdin closes
        try:
            process.wait(5)
        except subprocess.TimeoutExpired:
            process.terminate()
            process.wait(5)


# -- timing ---------------------------------------------------------------------------------------


def interleaved(conversation: Conversation, port: int, rounds: int) -> dict[Contender, list[Run]]:
    """``rounds`` runs per contender, one of each per round; the order rotates every round."""
    runs: dict[Contender, list[Run]] = {contender: [] for contender in CONTENDERS}
    for number in range(rounds):
        shift = number % len(CONTENDERS)
        for contender in CONTENDERS[shift:] + CONTENDERS[:shift]:
            gc.collect()  # so one contender's garbage is not collected in another's run
            runs[contender].append(run_once(contender, conversation, port))
    return runs


def median_seconds(runs: list[Run]) -> float:
    return statistics.median(run.seconds for run in runs)


def paired_ratio(runs: dict[Contender, list[Run]], contender: Contender) -> float:
    """The median over rounds of (contender / raw loop) in the same round."""
    return statistics.median(
        mine.seconds / raw.seconds for mine, raw in zip(runs[contender], runs["raw"], strict=True)
    )


def per_iteration(run: Run, window: int) -> tuple[float, float]:
    """Mean seconds per iteration over the first and the last ``window`` iterations."""
    arrivals = run.arrivals
    return (arrivals[window] - arrivals[0]) / window, (arrivals[-1] - arrivals[-1 - window]) / window


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.2f} ms"


def ratio_row(scenario: str, runs: dict[Contender, list[Run]], limit: float) -> Row:
    row = Row(scenario, f"≤ {limit:.2f}x raw")
    row.raw, row.sdk, row.toolrunner = (f"{median_seconds(runs[c]):.3f} s" for c in CONTENDERS)
    sdk, mine = paired_ratio(runs, "sdk"), paired_ratio(runs, "toolrunner")
    row.sdk_ratio, row.toolrunner_ratio = f"{sdk:.2f}x", f"{mine:.2f}x"
    row.passed = mine <= limit
    cpu = {
        c: statistics.median(m.cpu_seconds / r.cpu_seconds for m, r in zip(runs[c], runs["raw"], strict=True))
        for c in ("sdk", "toolrunner")
    }
    row.cpu_ratio = f"{cpu['sdk']:.2f}x / {cpu['toolrunner']:.2f}x"
    row.details = {
        "seconds": {c: [run.seconds for run in runs[c]] for c in CONTENDERS},
        "cpu_seconds": {c: [run.cpu_seconds for run in runs[c]] for c in CONTENDERS},
        "ratio_vs_raw": {"sdk": sdk, "toolrunner": mine},
        "cpu_ratio_vs_raw": cpu,
    }
    return row


def growth_row(scenario: str, runs: dict[Contender, list[Run]], window: int) -> Row:
    """Per-iteration overhead against the raw loop, first ``window`` iterations vs last ``window``."""
    row = Row(scenario, "overhead/iteration: last = first ± noise")
    overhead: dict[str, dict[str, list[float]]] = {}
    cells: list[str] = []
    for contender in ("sdk", "toolrunner"):
        pairs = [
            (per_iteration(mine, window), per_iteration(raw, window))
            for mine, raw in zip(runs[contender], runs["raw"], strict=True)
        ]
        first = [m[0] - r[0] for m, r in pairs]
        last = [m[1] - r[1] for m, r in pairs]
        overhead[contender] = {"first": first, "last": last}
        cells.append(f"{ms(statistics.median(first))} → {ms(statistics.median(last))}")
    raw_first, raw_last = zip(*(per_iteration(run, window) for run in runs["raw"]), strict=True)
    row.raw = f"{ms(statistics.median(raw_first))} → {ms(statistics.median(raw_last))}"
    row.sdk, row.toolrunner = cells
    first, last = overhead["toolrunner"]["first"], overhead["toolrunner"]["last"]
    growth = statistics.median(last) - statistics.median(first)
    # Noise: how much the raw loop's own last-window time varies between rounds (its spread),
    # with a floor of 5% of that time, the suite's ratio target.
    spread = max(raw_last) - min(raw_last)
    noise = max(spread, 0.05 * statistics.median(raw_last))
    row.toolrunner_ratio = f"growth {ms(growth)}"
    row.sdk_ratio = f"growth {ms(statistics.median(overhead['sdk']['last']) - statistics.median(overhead['sdk']['first']))}"
    row.passed = growth <= noise
    row.result = f"noise {ms(noise)}"
    row.details = {
        "window": window,
        "raw_per_iteration": {"first": list(raw_first), "last": list(raw_last)},
        "overhead_per_iteration": overhead,
        "toolrunner_growth": growth,
        "noise": noise,
    }
    return row


def wall_row(scenario: str, runs: dict[Contender, list[Run]], limit: float) -> Row:
    row = Row(scenario, f"≤ {limit:.2f} s wall")
    row.raw, row.sdk, row.toolrunner = (f"{median_seconds(runs[c]):.3f} s" for c in CONTENDERS)
    row.sdk_ratio = f"{paired_ratio(runs, 'sdk'):.2f}x"
    row.toolrunner_ratio = f"{paired_ratio(runs, 'toolrunner'):.2f}x"
    row.passed = median_seconds(runs["toolrunner"]) <= limit
    row.details = {"seconds": {c: [run.seconds for run in runs[c]] for c in CONTENDERS}}
    return row


# -- memory ---------------------------------------------------------------------------------------


def measure_memory(config: Config, port: int) -> dict[Contender, dict[str, Any]]:
    """One child process per contender, all at once: memory figures do not depend on the CPU
    the children share (their times do, and are only recorded)."""
    children: dict[Contender, subprocess.Popen[str]] = {}
    for contender in CONTENDERS:
        command = [
            sys.executable, str(Path(__file__).resolve()), "--memory-child", contender, "--port", str(port),
            "--turns", str(config.memory_turns), "--repeat-turns", str(config.repeat_turns),
            "--repeats", str(config.repeats),
        ]  # fmt: skip
        children[contender] = subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
    results: dict[Contender, dict[str, Any]] = {}
    for contender, child in children.items():
        stdout, stderr = child.communicate()
        if child.returncode != 0:
            raise RuntimeError(f"the memory run of {contender!r} failed:\n{stderr}")
        results[contender] = json.loads(stdout.strip().splitlines()[-1])
    return results


def memory_rows(config: Config, memory: dict[Contender, dict[str, Any]]) -> list[Row]:
    peak = Row(f"{config.memory_turns:,}-turn run: peak RSS", "≤ 1.20x raw")
    peak.raw, peak.sdk, peak.toolrunner = (f"{memory[c]['peak_rss_kib'] / 1024:.1f} MiB" for c in CONTENDERS)
    ratios = {c: memory[c]["peak_rss_kib"] / memory["raw"]["peak_rss_kib"] for c in ("sdk", "toolrunner")}
    peak.sdk_ratio, peak.toolrunner_ratio = f"{ratios['sdk']:.2f}x", f"{ratios['toolrunner']:.2f}x"
    peak.passed = ratios["toolrunner"] <= 1.2
    above = {c: (memory[c]["peak_rss_kib"] - memory[c]["baseline_rss_kib"]) / 1024 for c in CONTENDERS}
    peak.result = "above imports: " + ", ".join(f"{NAMES[c]} {above[c]:.1f}" for c in CONTENDERS) + " MiB"
    peak.details = {"memory": memory, "peak_above_baseline_mib": above}

    repeat = Row(
        f"{config.repeats} runs of {config.repeat_turns} turns in one process",
        "no growth: <= 100 gc objects, <= 2 MiB RSS",
    )
    cells: dict[Contender, str] = {}
    growth: dict[Contender, tuple[float, int]] = {}
    for contender in CONTENDERS:
        rss, objects = memory[contender]["repeat_rss_kib"], memory[contender]["repeat_objects"]
        # From the second run on: the first run may still fill caches (connection pools, schemas).
        growth[contender] = ((rss[-1] - rss[1]) / 1024, objects[-1] - objects[1])
        cells[contender] = f"{growth[contender][0]:+.1f} MiB, {growth[contender][1]:+d} obj"
    repeat.raw, repeat.sdk, repeat.toolrunner = cells["raw"], cells["sdk"], cells["toolrunner"]
    rss_growth, object_growth = growth["toolrunner"]
    # RSS moves by up to about a MiB between runs for every loop (allocator arenas, the fresh
    # client's buffers). A run that kept its history would add about 3 MiB per 200-turn run (the
    # 1,000-turn run holds about 15 MiB), and thousands of objects.
    repeat.passed = rss_growth <= 2.0 and object_growth <= 100
    repeat.result = "after runs 2..last"
    return [peak, repeat]


# -- streaming ------------------------------------------------------------------------------------


def streaming_supported() -> bool:
    """Whether this toolrunner takes ``stream=True`` (the streaming issue has landed)."""
    try:
        ToolRunner(  # pyright: ignore[reportCallIssue, reportUnknownVariableType]
            anthropic.AsyncAnthropic(api_key="sk-ant-bench"),
            model="claude-sonnet-4-6",
            max_tokens=1,
            messages=[],
            stream=True,
            run_tools_eagerly=True,
        )
    except (ParamsError, TypeError):
        return False
    return True


def streaming_row(scenario: str, runs: dict[Contender, list[Run]] | None, tool_seconds: float) -> Row:
    """Seconds from each turn's last tool_use block closing to its tool phase ending."""
    limit = 1.25 * tool_seconds
    row = Row(scenario, f"tool phase ends <= {limit:.2f} s after the last tool_use closes")
    if runs is None:
        row.toolrunner = "n/a (streaming not implemented yet)"
        return row
    after = {c: statistics.median(x for run in runs[c] for x in run.after_close) for c in CONTENDERS}
    row.raw, row.sdk, row.toolrunner = (f"{after[c]:.3f} s after close" for c in CONTENDERS)
    row.sdk_ratio = f"{paired_ratio(runs, 'sdk'):.2f}x"
    row.toolrunner_ratio = f"{paired_ratio(runs, 'toolrunner'):.2f}x"
    row.passed = after["toolrunner"] <= limit
    row.result = "ratios: whole run"
    row.details = {
        "after_close": {c: [run.after_close for run in runs[c]] for c in CONTENDERS},
        "seconds": {c: [run.seconds for run in runs[c]] for c in CONTENDERS},
    }
    return row


# -- output ---------------------------------------------------------------------------------------


def machine() -> dict[str, Any]:
    model = ""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next(
                (line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), ""
            )
    except OSError:
        pass
    commit = subprocess.run(
        ["git", "-C", str(HERE), "describe", "--always", "--dirty"],
        capture_output=True,
        text=True,
        check=False,
    ).stdout.strip()
    return {
        "cpus": os.cpu_count(),
        "cpu_model": model or platform.processor(),
        "platform": platform.platform(),
        "python": platform.python_version(),
        "anthropic": metadata.version("anthropic"),
        "toolrunner_commit": commit or "unknown",
        "toolrunner_path": str(Path(toolrunner.__file__).parent),
        "load_average": os.getloadavg() if hasattr(os, "getloadavg") else None,
    }


def print_table(rows: list[Row]) -> None:
    header = ["scenario", "raw loop", "SDK runner", "toolrunner", "SDK/raw", "toolrunner/raw", "CPU SDK/toolrunner vs raw", "target", "result"]  # fmt: skip
    lines = [
        [
            row.scenario,
            row.raw,
            row.sdk,
            row.toolrunner,
            row.sdk_ratio,
            row.toolrunner_ratio,
            row.cpu_ratio,
            row.target,
            ("PASS" if row.passed else "FAIL" if row.passed is not None else "n/a")
            + (f" ({row.result})" if row.result else ""),
        ]
        for row in rows
    ]
    print_markdown_table(header, lines)


def run_suite(config: Config, *, quick: bool) -> list[Row]:
    short = Conversation(config.short_turns, 1, "noop")
    long = Conversation(config.long_turns, 1, "noop")
    sleeping = Conversation(config.sleep_turns, config.sleep_calls, "sleep", config.sleep)
    sleeping_sync = Conversation(config.sleep_turns, config.sleep_calls, "sleep_sync", config.sleep)
    # The wall targets (0.55 s and 0.6 s for 4 turns of 0.1 s) scale with the ideal, turns x sleep.
    ideal = config.sleep_turns * config.sleep
    streamed = Conversation(
        config.stream_turns,
        config.stream_calls,
        "sleep",
        config.stream_sleep,
        stream=True,
        pace=config.stream_pace,
        tail=config.stream_tail,
    )
    plan = [
        (short, config.short_runs),
        (long, config.long_runs),
        (sleeping, config.sleep_runs),
        (sleeping_sync, config.sleep_runs),
        (streamed, config.stream_runs),
    ]
    requests = sum((c.turns + 1) * runs * len(CONTENDERS) for c, runs in plan)
    requests += len(CONTENDERS) * (3 + config.memory_turns + 1 + config.repeats * (config.repeat_turns + 1))
    rows: list[Row] = []
    with fake_server(max_requests=2 * requests + 100) as port:
        for contender in CONTENDERS:  # warm-up: lazy imports and first-use caches, untimed
            run_once(contender, Conversation(2, 1, "noop"), port)
            run_once(contender, Conversation(1, 2, "sleep_sync", 0.0), port)
        runs = step(
            f"{short.turns} turns x 1 no-op call, {config.short_runs} rounds",
            lambda: interleaved(short, port, config.short_runs),
        )
        rows.append(ratio_row(f"{short.turns} tool turns, 1 no-op call each", runs, 1.05))
        runs = step(
            f"{long.turns} turns x 1 no-op call, {config.long_runs} rounds",
            lambda: interleaved(long, port, config.long_runs),
        )
        rows.append(ratio_row(f"{long.turns} tool turns, 1 no-op call each", runs, 1.05))
        rows.append(
            growth_row(
                f"{long.turns} turns: per-iteration overhead vs raw, first {config.window} → last {config.window}",
                runs,
                config.window,
            )
        )
        label = f"{sleeping.turns} turns x {sleeping.calls} calls"
        runs = step(
            f"{label}, await sleep({config.sleep}), {config.sleep_runs} rounds",
            lambda: interleaved(sleeping, port, config.sleep_runs),
        )
        rows.append(wall_row(f"{label}, each `await sleep({config.sleep:g})`", runs, ideal * 1.375))
        runs = step(
            f"{label}, time.sleep({config.sleep}), {config.sleep_runs} rounds",
            lambda: interleaved(sleeping_sync, port, config.sleep_runs),
        )
        rows.append(wall_row(f"{label}, each `time.sleep({config.sleep:g})` (sync)", runs, ideal * 1.5))
        memory = step(
            f"memory: {config.memory_turns} turns, then {config.repeats} x {config.repeat_turns} turns, one process per contender, at once",
            lambda: measure_memory(config, port),
        )
        rows.extend(memory_rows(config, memory))
        label = f"streamed, {streamed.turns} turns x {streamed.calls} calls of {config.stream_sleep:g} s, eager tools"
        if streaming_supported():
            runs = step(
                f"{label}, {config.stream_runs} rounds",
                lambda: interleaved(streamed, port, config.stream_runs),
            )
            rows.append(streaming_row(label, runs, config.stream_sleep))
        else:
            rows.append(streaming_row(label, None, config.stream_sleep))
    if quick:
        for row in rows:
            row.result = "quick: sizes too small to judge" if row.passed is not None else row.result
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(
        description="Benchmark toolrunner against a raw SDK loop and the SDK's runner."
    )
    parser.add_argument("--quick", action="store_true", help="a tiny configuration that runs in seconds")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed")
    parser.add_argument(
        "--json", type=Path, default=RESULTS, help=f"where to write the results (default {RESULTS})"
    )
    parser.add_argument("--memory-child", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--turns", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--repeat-turns", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--repeats", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.memory_child:
        child_main(args.memory_child, args.port, args.turns, args.repeat_turns, args.repeats)
        return 0

    config = QUICK if args.quick else FULL
    info = machine()
    print(
        f"toolrunner benchmarks{' (quick)' if args.quick else ''}: {info['cpus']} CPUs ({info['cpu_model']}), "
        f"Python {info['python']}, anthropic {info['anthropic']}, toolrunner {info['toolrunner_commit']} "
        f"({info['toolrunner_path']}), "
        f"load average {info['load_average']}"
    )
    start = time.perf_counter()
    rows = run_suite(config, quick=args.quick)
    info["load_average_after"] = os.getloadavg() if hasattr(os, "getloadavg") else None
    print()
    print_table(rows)
    print(
        f"\nMedians of interleaved rounds; ratios are medians of per-round ratios against the raw loop. "
        f"Took {time.perf_counter() - start:.0f} s."
    )
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(
        json.dumps(
            {
                "machine": info,
                "quick": args.quick,
                "config": asdict(config),
                "rows": [asdict(row) for row in rows],
            },
            indent=2,
            default=str,
        )
    )
    print(f"Results: {args.json}")
    missed = [row.scenario for row in rows if row.passed is False]
    return 1 if args.check and missed and not args.quick else 0


if __name__ == "__main__":
    raise SystemExit(main())

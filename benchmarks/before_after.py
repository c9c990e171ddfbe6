"""The runner's CPU per request before and after a change, in one run: this tree's ``toolrunner``
against the one of another commit, each against the plain-dict hand loop.

    python benchmarks/before_after.py --base d1704b3        # 7 interleaved rounds (a few minutes)
    python benchmarks/before_after.py --base HEAD --quick   # tiny sizes, seconds: the smoke test

It is measurement 4 of ``durability.py`` (100 runs at once in one process on one client, no store,
process CPU time per request), with the package taken from two places: the commit's
``toolrunner/`` (``git archive``, into a temporary folder) and this tree's. Each contender runs in a
fresh process, rounds interleave and their order rotates, and every ratio is taken per round
against the hand loop of the same round and the same package, so that a machine that slows down
during the run moves both sides alike. Each ratio comes with the spread of its rounds (lowest and
highest), so that a difference smaller than the noise is seen as such.

It also counts the Python calls a request makes in each loop (``sys.setprofile``'s ``call`` events,
generator resumptions included, on a small run after a warm-up): the same code makes the same
calls, so that figure has no noise. The SDK and the fake make the same calls in both loops, so
toolrunner's extra calls are the runner's own steps, and a change that removes some shows it
exactly, even where the timed ratio cannot tell. It prints a table and asserts nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from io import BytesIO
from pathlib import Path
from typing import Any

import anyio

ROOT = Path(__file__).resolve().parent.parent
CONTENDERS = ("hand", "toolrunner")


def export(revision: str, into: Path) -> Path:
    """The ``toolrunner/`` package of ``revision``, written below ``into``; the folder to put on
    ``PYTHONPATH``."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", revision, "toolrunner"],
        check=True,
        capture_output=True,
    ).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into


def child(contender: str, quick: bool) -> None:
    """One contender, once, in this process: print its CPU seconds per request as JSON."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import durability  # the benchmark's own loops, with the package PYTHONPATH gives

    config = durability.QUICK if quick else durability.FULL
    with tempfile.TemporaryDirectory() as name:
        # A warm-up, as durability.py has: the first requests build the SDK's and pydantic's caches.
        durability.run_at_once(durability.QUICK, contender, Path(name) / "unused.db", None)
        result = durability.run_at_once(config, contender, Path(name) / "unused.db", None)
    import toolrunner

    print(json.dumps({"cpu": result.cpu, "package": str(Path(toolrunner.__file__).parent)}))


def count_calls(contender: str, quick: bool) -> None:
    """One contender, in this process: print the Python calls a request makes, as JSON. The count
    grows with the history (the SDK walks it at every request): compare counts of one size only."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import durability

    runs, turns = (1, 5) if quick else (3, 20)
    calls = 0

    def counted(frame: object, event: str, argument: object) -> None:
        nonlocal calls
        if event == "call":
            calls += 1

    async def main() -> None:
        async with durability.fake_api(turns).async_client() as client:
            await run(client, 0)  # a warm-up: the first requests fill the SDK's and pydantic's caches
            sys.setprofile(counted)
            try:
                for number in range(runs):
                    await run(client, number)
            finally:
                sys.setprofile(None)

    async def run(client: Any, number: int) -> None:
        if contender == "hand":
            await durability.hand_loop(client, turns)
        else:
            await durability.toolrunner_loop(client, turns, None, number)

    anyio.run(main)
    import toolrunner

    print(
        json.dumps({"calls": calls / (runs * (turns + 1)), "package": str(Path(toolrunner.__file__).parent)})
    )


def calls_per_request(package: Path, contender: str, quick: bool) -> float:
    return in_child(package, "--count-calls", contender, quick)["calls"]


def measure(package: Path, contender: str, quick: bool) -> float:
    return in_child(package, "--child", contender, quick)["cpu"]


def in_child(package: Path, mode: str, contender: str, quick: bool) -> dict[str, float]:
    """Run this script as a child in ``mode`` with ``package`` on ``PYTHONPATH``; its figures."""
    environment = {**os.environ, "PYTHONPATH": str(package)}
    command = [sys.executable, __file__, mode, contender, *(["--quick"] if quick else [])]
    output = subprocess.run(command, check=True, capture_output=True, text=True, env=environment).stdout
    answer = json.loads(output.strip().splitlines()[-1])
    where = Path(answer.pop("package")).parent
    if where != package:  # the child must have run the package it was given, not an installed one
        raise SystemExit(f"before_after: the child imported toolrunner from {where}, not {package}")
    return {key: float(value) for key, value in answer.items()}


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--base", help="the commit to compare with (a revision git knows)")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds (default 7)")
    parser.add_argument("--quick", action="store_true", help="tiny sizes that run in seconds")
    parser.add_argument("--child", choices=CONTENDERS, help=argparse.SUPPRESS)
    parser.add_argument("--count-calls", choices=CONTENDERS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.quick)
        return
    if args.count_calls:
        count_calls(args.count_calls, args.quick)
        return
    if not args.base:
        parser.error("--base is required: the commit to compare this tree with (e.g. --base HEAD~3)")
    rounds = 1 if args.quick else args.rounds
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as name:
        packages = {"before": export(args.base, Path(name)), "after": ROOT}
        runs = [(side, contender) for side in packages for contender in CONTENDERS]
        cpu: dict[tuple[str, str], list[float]] = {run: [] for run in runs}
        for number in range(rounds):
            shift = number % len(runs)
            for side, contender in runs[shift:] + runs[:shift]:
                cpu[side, contender].append(measure(packages[side], contender, args.quick))
            print(f"round {number + 1} of {rounds} done", file=sys.stderr)
        calls: dict[str, str] = {}
        for side, package in packages.items():
            hand_calls, runner_calls = (
                calls_per_request(package, contender, args.quick) for contender in CONTENDERS
            )
            calls[side] = f"{hand_calls:.0f} / {runner_calls:.0f} (+{runner_calls - hand_calls:.1f})"
    print(
        f"CPU per request, {'quick sizes' if args.quick else '100 runs at once x 20 turns'}, no store; "
        f"before = {args.base}, after = this tree; load average {os.getloadavg()}"
    )
    print(f"{'':8} {'hand loop':>12} {'toolrunner':>12} {'ratio':>8} {'rounds':>15} {'calls/request':>22}")
    ratios: dict[str, list[float]] = {}
    for side in packages:
        hand, runner = cpu[side, "hand"], cpu[side, "toolrunner"]
        ratios[side] = [mine / base for mine, base in zip(runner, hand, strict=True)]
        spread = f"{min(ratios[side]):.3f}-{max(ratios[side]):.3f}x"
        print(
            f"{side:8} {statistics.median(hand) * 1e6:>10.0f}µs {statistics.median(runner) * 1e6:>10.0f}µs "
            f"{statistics.median(ratios[side]):>7.3f}x {spread:>15} {calls[side]:>22}"
        )
    change = [after / before for after, before in zip(ratios["after"], ratios["before"], strict=True)]
    print(
        f"after/before, toolrunner's ratio to the hand loop: {statistics.median(change):.3f}x "
        f"(medians of per-round ratios over {rounds} rounds; took {time.perf_counter() - start:.0f} s)"
    )


if __name__ == "__main__":
    main()

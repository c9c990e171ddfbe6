"""Memory of one contender, measured in a process of its own (``run.py`` starts one per contender).

Every child imports the same modules (all three contenders), so the figures differ only by what a
run keeps. A child runs one long conversation and reads its peak RSS (``ru_maxrss``), then runs a
shorter one several times and reads, after each run and a full collection, its RSS and the number
of objects the garbage collector tracks: a runner that keeps something per run shows as growth.
"""

from __future__ import annotations

import gc
import json
import os
import resource
import sys
from dataclasses import asdict, dataclass

from _contenders import Contender, Conversation, run_once


@dataclass(frozen=True, slots=True)
class Memory:
    """What one child measured (sizes in KiB)."""

    contender: str
    baseline_rss_kib: int
    """RSS after the imports and a tiny warm-up run, before the long run."""
    peak_rss_kib: int
    """Peak RSS of the process, the long run included."""
    repeat_rss_kib: list[int]
    """RSS after each repeated run (after ``gc.collect()``)."""
    repeat_objects: list[int]
    """Objects tracked by the garbage collector after each repeated run."""
    long_run_seconds: float


def current_rss_kib() -> int:
    """The resident set size now, from /proc (Linux); the peak where /proc is missing."""
    try:
        with open("/proc/self/statm") as statm:
            pages = int(statm.read().split()[1])
        return pages * os.sysconf("SC_PAGE_SIZE") // 1024
    except OSError:
        return peak_rss_kib()


def peak_rss_kib() -> int:
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak // 1024 if sys.platform == "darwin" else peak  # bytes on macOS, KiB on Linux


def measure(contender: Contender, port: int, turns: int, repeat_turns: int, repeats: int) -> Memory:
    run_once(contender, Conversation(2, 1, "noop"), port)  # warm-up: lazy imports, first-use caches
    gc.collect()
    baseline = current_rss_kib()
    long_run = run_once(contender, Conversation(turns, 1, "noop"), port)
    peak = peak_rss_kib()
    rss: list[int] = []
    objects: list[int] = []
    for _ in range(repeats):
        run_once(contender, Conversation(repeat_turns, 1, "noop"), port)
        gc.collect()
        rss.append(current_rss_kib())
        objects.append(len(gc.get_objects()))
    return Memory(contender, baseline, peak, rss, objects, long_run.seconds)


def child_main(contender: Contender, port: int, turns: int, repeat_turns: int, repeats: int) -> None:
    """Print one ``Memory`` as a JSON line: what ``run.py`` reads from the child's stdout."""
    print(json.dumps(asdict(measure(contender, port, turns, repeat_turns, repeats))), flush=True)

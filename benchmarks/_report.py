"""What the benchmark scripts print: a step's progress line, and a table in markdown."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["print_markdown_table", "step"]


def step(label: str, work: Callable[[], Any]) -> Any:
    """Run ``work``, printing ``label`` before and the seconds it took after."""
    start = time.perf_counter()
    print(f"  {label} ...", end="", flush=True)
    value = work()
    print(f" {time.perf_counter() - start:.1f} s", flush=True)
    return value


def print_markdown_table(header: Sequence[str], lines: Sequence[Sequence[str]]) -> None:
    """Print ``header`` and ``lines`` as a markdown table, each column padded to its widest cell."""
    widths = [max(len(cells[i]) for cells in [header, *lines]) for i in range(len(header))]

    def show(cells: Sequence[str]) -> str:
        return "| " + " | ".join(cell.ljust(width) for cell, width in zip(cells, widths, strict=True)) + " |"

    print(show(header))
    print("|" + "|".join("-" * (width + 2) for width in widths) + "|")
    for cells in lines:
        print(show(cells))

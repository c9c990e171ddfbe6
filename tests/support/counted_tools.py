"""A ``look`` tool that counts its runs, for the runner tests that check a call ran once (or again).

``runs`` counts every run; a test module that uses it resets it before each test with the
``fresh_runs`` fixture (tests/conftest.py re-exports it), as
``pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]``. A module's own tools may
count into ``runs`` too.

The model calls each variant ``look``; they differ in what they count and answer, and a module
imports the one its assertions expect under that name (``from ... import look_numbered as look``):

- ``look_numbered`` counts ``runs[q]`` and answers ``found {q} (run {n})``, so a result shows
  which run made it;
- ``look_plain`` counts ``runs[q]`` and answers ``found {q}``;
- ``look_keyed`` counts ``runs[f"look {q}"]`` (beside other tools' ``"pay 5"``, ``"note x"``) and
  answers ``found {q}``.
"""

from __future__ import annotations

from collections import Counter

import pytest

from toolrunner import tool

runs: Counter[str] = Counter()


@pytest.fixture
def fresh_runs() -> None:
    """Zero ``runs`` before the test."""
    runs.clear()


@tool(name="look")
async def look_numbered(q: str) -> str:
    """Look something up."""
    runs[q] += 1
    return f"found {q} (run {runs[q]})"


@tool(name="look")
async def look_plain(q: str) -> str:
    """Look something up."""
    runs[q] += 1
    return f"found {q}"


@tool(name="look")
async def look_keyed(q: str) -> str:
    """Look something up."""
    runs[f"look {q}"] += 1
    return f"found {q}"

"""The live list: a version of the first page of waiting runs, which changes when a run starts or
stops waiting; the inbox's event stream sends it, and the page fetches the list again."""

from __future__ import annotations

import hashlib
import json
from collections.abc import AsyncGenerator, Sequence

import anyio

from .._core.errors import CheckpointError, StateError
from .._stores.protocol import RunStore
from .._stores.runs import RunStatus, RunSummary

__all__ = ["PAGE", "waiting_versions"]

PAGE = 50
"""Runs a page lists."""


async def waiting_versions(
    store: RunStore, interval: float, *, keepalive: float
) -> AsyncGenerator[str | None]:
    """Yields a version of the first page of waiting runs (their ids, and when each was saved)
    at once and each time it changes, looking every ``interval`` seconds; ``None`` after
    ``keepalive`` seconds without a change. A store that fails is asked again at the next look."""
    last: str | None = None
    quiet = 0.0
    while True:
        try:
            page = await store.list_runs(status=RunStatus.AWAITING, limit=PAGE)
        except (CheckpointError, StateError):
            version = last
        else:
            version = _version(page.runs)
        if version != last:
            last, quiet = version, 0.0
            yield version
        elif quiet >= keepalive:
            quiet = 0.0
            yield None
        await anyio.sleep(interval)
        quiet += interval


def _version(runs: Sequence[RunSummary]) -> str:
    text = json.dumps([[run.run_id, run.updated.isoformat()] for run in runs])
    return hashlib.sha256(text.encode(errors="surrogatepass")).hexdigest()[:16]

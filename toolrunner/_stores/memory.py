"""``MemoryCheckpointer``: runs kept in memory, as JSON text, with the summaries a listing reads
(and the leases of the resumers that take runs up)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, cast

from .._core.ids import check_run_id
from .._core.state import RunState
from .leases import TAKEN_OVER, check_lease, check_owner, claimable, kept_on_release, takeable
from .listing import Listing, check_limit, check_time, cursor_after, pruned_statuses, utc
from .protocol import Checkpoint, ListingStore, check_sequence
from .runs import Lease, RunPage, RunStatus, RunSummary, SummaryColumns
from .waiting import Waiters, check_wait, wait_until_claimable

__all__ = ["MemoryCheckpointer"]


@dataclass(frozen=True, slots=True)
class _Saved:
    sequence: int
    text: str
    created: float
    updated: float
    columns: SummaryColumns

    def summary(self, run_id: str, lease: tuple[str, float] | None) -> RunSummary:
        held = None if lease is None else Lease(lease[0], utc(lease[1]))
        return self.columns.summary(run_id, utc(self.created), utc(self.updated), held)


class MemoryCheckpointer(ListingStore):
    """Keeps runs in memory, as JSON text: for tests, and to see what a store receives. It is a
    ``RunStore``: its runs can be listed, deleted and decided as in the other stores.

    Attributes:
        saves: How many saves each run got.
    """

    def __init__(self) -> None:
        self._runs: dict[str, _Saved] = {}
        self.saves: dict[str, int] = {}
        self._leases: dict[str, tuple[str, float]] = {}  # run id: (owner, expires); see _stores.leases
        self._waiters = Waiters()

    def __repr__(self) -> str:
        return "MemoryCheckpointer()"

    async def save(self, checkpoint: Checkpoint) -> None:
        run_id = check_run_id(checkpoint.run_id)
        stored = self._runs.get(run_id)
        refused = check_sequence(run_id, None if stored is None else stored.sequence, checkpoint.sequence)
        if refused is not None:
            raise refused
        state = checkpoint.state
        text, now = state.to_json(), self._now()
        created = now if stored is None else stored.created
        columns = SummaryColumns.of(state)
        self._runs[run_id] = _Saved(checkpoint.sequence, text, created, now, columns)
        self.saves[run_id] = self.saves.get(run_id, 0) + 1
        if columns.status == RunStatus.READY.value:
            self._waiters.wake()

    async def load(self, run_id: str) -> Checkpoint | None:
        stored = self._runs.get(check_run_id(run_id))
        if stored is None:
            return None
        state = RunState.from_json(stored.text)
        return Checkpoint(run_id, state, stored.sequence, len(state.messages), len(state.usage))

    def run_ids(self) -> list[str]:
        """The runs saved here."""
        return list(self._runs)

    async def _list(self, listing: Listing[Any]) -> RunPage:
        start = cast("tuple[float, str] | None", listing.start)
        before, after = listing.updated_before, listing.updated_after
        found = sorted(
            (
                (saved.created, run_id, saved)
                for run_id, saved in self._runs.items()
                if (listing.statuses is None or RunStatus(saved.columns.status) in listing.statuses)
                and (before is None or saved.updated < before.timestamp())
                and (after is None or saved.updated >= after.timestamp())
                and (start is None or (saved.created, run_id) < start)
            ),
            key=lambda item: (item[0], item[1]),
            reverse=True,
        )
        page = found[: listing.limit]
        runs = tuple(saved.summary(run_id, self._leases.get(run_id)) for _, run_id, saved in page)
        more = len(found) > listing.limit
        return RunPage(runs, cursor_after(repr(page[-1][0]), page[-1][1]) if more else None)

    async def get_run(self, run_id: str) -> RunSummary | None:
        stored = self._runs.get(check_run_id(run_id))
        return None if stored is None else stored.summary(run_id, self._leases.get(run_id))

    async def delete_run(self, run_id: str) -> bool:
        self.saves.pop(check_run_id(run_id), None)
        self._leases.pop(run_id, None)
        return self._runs.pop(run_id, None) is not None

    async def prune_runs(
        self,
        *,
        updated_before: datetime,
        status: RunStatus | str | Iterable[RunStatus | str] | None = None,
    ) -> int:
        statuses = pruned_statuses(status)
        before = check_time(updated_before, "updated_before", required=True)
        assert before is not None
        doomed = [
            run_id
            for run_id, saved in self._runs.items()
            if saved.updated < before.timestamp() and RunStatus(saved.columns.status) in statuses
        ]
        for run_id in doomed:
            await self.delete_run(run_id)
        return len(doomed)

    # -- leases (see _stores.leases) ------------------------------------------------------------

    async def lease_runs(self, owner: str, *, lease: float, limit: int = 1) -> tuple[str, ...]:
        owner, seconds, limit = check_owner(owner), check_lease(lease), check_limit(limit)
        now = self._now()
        found = sorted(
            (saved.created, run_id)
            for run_id, saved in self._runs.items()
            if self._claimable(run_id, saved, now)
        )[:limit]
        for _, run_id in found:
            self._leases[run_id] = (owner, now + seconds)
        return tuple(run_id for _, run_id in found)

    async def lease_run(self, run_id: str, owner: str, *, lease: float) -> bool:
        run_id, owner, seconds = check_run_id(run_id), check_owner(owner), check_lease(lease)
        held, now = self._leases.get(run_id, (None, None)), self._now()
        if run_id not in self._runs or not takeable(owner, held[0], held[1], now):
            return False
        self._leases[run_id] = (owner, now + seconds)
        return True

    async def renew_lease(self, run_id: str, owner: str, *, lease: float) -> bool:
        run_id, owner, seconds = check_run_id(run_id), check_owner(owner), check_lease(lease)
        held = self._leases.get(run_id)
        if held is None or held[0] != owner:
            return False
        self._leases[run_id] = (owner, self._now() + seconds)
        return True

    async def release_lease(self, run_id: str, owner: str) -> bool:
        run_id, owner = check_run_id(run_id), check_owner(owner)
        held, saved = self._leases.get(run_id), self._runs.get(run_id)
        if held is None or held[0] != owner or saved is None:
            return False
        if kept_on_release(RunStatus(saved.columns.status)):
            self._leases[run_id] = (owner, min(held[1], self._now()))
            self._waiters.wake()
        else:
            del self._leases[run_id]
        return True

    async def wait_ready(self, *, poll_interval: float = 1.0) -> None:
        check_wait(poll_interval)

        async def look() -> tuple[bool, float | None, float]:
            now = self._now()
            found = any(self._claimable(run_id, saved, now) for run_id, saved in self._runs.items())
            expiries = [
                expires
                for run_id, (_, expires) in self._leases.items()
                if expires > now and RunStatus(self._runs[run_id].columns.status) in TAKEN_OVER
            ]
            return found, min(expiries, default=None), now

        await wait_until_claimable(look, self._waiters, None)  # told by its saves

    def _claimable(self, run_id: str, saved: _Saved, now: float) -> bool:
        owner, expires = self._leases.get(run_id, (None, None))
        return claimable(RunStatus(saved.columns.status), owner, expires, now)

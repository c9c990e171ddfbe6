"""What the SQL stores (``sqlite``, ``postgres``) share: a save as rows, rows as a checkpoint, the
queries of a save, a listing and a prune, written once with ``?`` placeholders, and ``SQLStore``,
the part of a store that runs them.

A run is three tables: ``toolrunner_runs`` holds one row a run (the state's fixed-size part as JSON
text, its sequence, and the summary columns a listing reads), ``toolrunner_messages`` and
``toolrunner_usage`` one row a history message and a request's usage, so that a save writes only
the new ones.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, ClassVar, Protocol, TypeVar, cast

from .._core.errors import CheckpointConflictError, StateError
from .._core.ids import check_run_id
from .._core.state import STATE_VERSION, RunState, message_data, request_usage_data
from .leases import TAKEN_OVER
from .listing import Listing, check_time, cursor_after, pruned_statuses
from .protocol import Checkpoint, ListingStore, check_sequence, store_json
from .runs import Lease, RunPage, RunStatus, RunSummary, SummaryColumns, damaged_summary

__all__ = [
    "CLAIMABLE",
    "HISTORY",
    "NEXT_EXPIRY",
    "SUMMARY",
    "SUMMARY_COLUMNS",
    "TAKE_ONE",
    "Cursor",
    "Dialect",
    "EncodedSave",
    "SQLStore",
    "columns_of",
    "decode",
    "deletions",
    "encode",
    "page_query",
    "prune_filter",
    "read_sequence",
    "read_state",
    "summary_of",
    "summary_values",
    "write_save",
]

T = TypeVar("T")

LENGTHS = "stored_lengths"
"""The header's key for the lengths of the history and the usage the rows hold."""

SUMMARY = (
    "run_id, created, updated, status, end_reason, waiting, turns, cost, failure, lease_owner, lease_expires"
)
"""The columns of ``toolrunner_runs`` that make a ``RunSummary`` (``summary_of``)."""
SUMMARY_COLUMNS = ("status", "end_reason", "waiting", "turns", "cost", "failure")
"""The columns a save writes from the run's ``SummaryColumns`` (``summary_values``)."""

_TAKEN_OVER = ", ".join(f"'{status.value}'" for status in TAKEN_OVER)
CLAIMABLE = (
    f"status IN ({_TAKEN_OVER}) AND (lease_owner IS NULL OR lease_expires <= ?) "
    f"AND (status = '{RunStatus.READY.value}' OR lease_owner IS NOT NULL)"
)
"""``_stores.leases.claimable`` as a WHERE clause over a row of ``toolrunner_runs``, with the time as its
parameter (the contract suite checks that the stores agree with the pure function)."""
NEXT_EXPIRY = (
    f"SELECT min(lease_expires) FROM toolrunner_runs WHERE status IN ({_TAKEN_OVER}) AND lease_owner IS NOT NULL "
    "AND lease_expires > ?"
)
"""The earliest lease still to run out of a run it would make claimable (``_stores.leases.wait_time``)."""
TAKE_ONE = (
    "UPDATE toolrunner_runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ? "
    "AND (lease_owner IS NULL OR lease_owner = ? OR lease_expires IS NULL OR lease_expires <= ?)"
)
"""``lease_run``: the lease of one run, taken when ``_stores.leases.takeable`` says so (the same
predicate in the WHERE clause, so that of owners asking at once one gets it); its parameters are
the owner, the expiry, the run, the owner again and the time now."""


@dataclass(frozen=True, slots=True)
class EncodedSave:
    """A checkpoint as the rows it writes (made on the event loop's thread, where the state lives)."""

    run_id: str
    sequence: int
    header: str
    columns: SummaryColumns
    kept_messages: int
    messages: list[tuple[int, str]]
    kept_usage: int
    usage: list[tuple[int, str]]


def encode(checkpoint: Checkpoint) -> EncodedSave:
    """The rows of a save: the header, the summary, and the messages and usage entries that are new.

    Raises:
        ParamsError: The checkpoint's run id is not one (``_core.ids.check_run_id``).
    """
    check_run_id(checkpoint.run_id)
    state = checkpoint.state
    header = _header(state)
    messages = [
        (position, store_json(message_data(state.messages[position], position)))
        for position in range(checkpoint.kept_messages, len(state.messages))
    ]
    usage = [
        (position, store_json(request_usage_data(state.usage[position])))
        for position in range(checkpoint.kept_usage, len(state.usage))
    ]
    return EncodedSave(
        checkpoint.run_id,
        checkpoint.sequence,
        header,
        SummaryColumns.of(state),
        checkpoint.kept_messages,
        messages,
        checkpoint.kept_usage,
        usage,
    )


_replies: dict[int, tuple[weakref.ref[Any], str]] = {}
"""The JSON text of the replies that states being saved hold, by ``id``, while they live: a turn's
saves (after the reply, before and after each call) all hold the same reply."""


def _header(state: RunState) -> str:
    """The state's fixed-size part as JSON text, with the lengths of the history and the usage (so
    that a load notices rows lost or added)."""
    lengths = [len(state.messages), len(state.usage)]
    reply = state.reply
    if reply is None:
        return store_json({**state.to_dict(history=False), LENGTHS: lengths})
    known = _replies.get(id(reply))
    if known is None or known[0]() is not reply:
        data = state.to_dict(history=False)
        known = weakref.ref(reply, partial(_forget, id(reply))), store_json(data.pop("reply"))
        _replies[id(reply)] = known
    else:
        data = state.replace(reply=None).to_dict(history=False)
        del data["reply"]
    # The reply's text goes in whole: its JSON is written once, however many saves hold it.
    return store_json({**data, LENGTHS: lengths})[:-1] + ',"reply":' + known[1] + "}"


def _forget(key: int, reference: weakref.ref[Any]) -> None:
    known = _replies.get(key)
    if known is not None and known[0] is reference:
        _replies.pop(key, None)


def decode(
    run_id: str, sequence: object, header: str, messages: Sequence[str], usage: Sequence[str], where: str
) -> Checkpoint:
    """A checkpoint from a run's rows (``sequence`` as its column holds it).

    Raises:
        StateError: The rows are damaged, or were changed by hand; the message names the run and ``where``.
    """
    saves = read_sequence(sequence, run_id, where, "loaded")
    state = read_state(header, messages, usage, run_id, where)
    return Checkpoint(run_id, state, saves, len(state.messages), len(state.usage))


def read_sequence(value: object, run_id: str, where: str, doing: str) -> int:
    """A run's ``sequence`` column, checked to be what a save writes there: a whole number from 0
    (SQLite keeps any value in any column; a hand's ``UPDATE`` can write text or a fraction).

    Raises:
        StateError: It is not; the message names the run, ``where``, and what cannot be done
            (``doing``: ``"loaded"``, ``"saved"``).
    """
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    raise StateError(
        f"the saved run {run_id!r} in {where} cannot be {doing}: its sequence column holds {value!r}, which no "
        "save writes there (it was changed by hand); restore the run from a copy, or delete it."
    )


def read_state(
    header: str, messages: Sequence[str], usage: Sequence[str], run_id: str, where: str
) -> RunState:
    try:
        data: object = json.loads(header)
        lengths: object = None
        if isinstance(data, dict):
            lengths = cast("dict[str, object]", data).pop(LENGTHS, None)
        if lengths is not None and lengths != [len(messages), len(usage)]:
            raise ValueError(
                f"the run's history and usage have the lengths {lengths!r}, but the store holds {len(messages)} "
                f"and {len(usage)} rows for it (rows were deleted or added by hand)"
            )
        return RunState.from_dict(
            cast(object, data),
            messages=[json.loads(text) for text in messages],
            usage=[json.loads(text) for text in usage],
        )
    except (ValueError, StateError, RecursionError) as error:  # RecursionError: a row nested too deeply
        raise StateError(f"the saved run {run_id!r} in {where} cannot be loaded: {error}") from error


def summary_of(row: Sequence[Any], time: Callable[[Any], datetime], where: str) -> RunSummary:
    """A summary from the ``SUMMARY`` columns of a row (its lease's too); ``time`` reads the store's
    times. A row that holds what the store does not write (changed by hand) is listed as a failed
    run whose failure names it and ``where`` (``damaged_summary``): one such row does not stop a
    listing."""
    run_id, created, updated, status, end_reason, waiting, turns, cost, failure, owner, expires = row
    problem: str | None = None
    times: list[datetime] = []
    for name, value in (("created", created), ("updated", updated)):
        try:
            times.append(time(value))
        except (ValueError, TypeError, OverflowError, OSError) as error:
            times.append(_EPOCH)
            problem = problem or f"its {name} column holds what a store does not write there ({error})"
    if problem is None:
        columns = SummaryColumns(status, end_reason, waiting, turns, cost, failure)
        try:
            lease = None if owner is None or expires is None else Lease(owner, time(expires))
            return columns.summary(str(run_id), times[0], times[1], lease)
        except (ValueError, TypeError, OverflowError, OSError) as error:
            problem = str(error)
    return damaged_summary(str(run_id), times[0], times[1], problem, where)


_EPOCH = datetime.fromtimestamp(0, UTC)
"""The time a damaged row is listed at when its own cannot be read."""


# -- queries ------------------------------------------------------------------------------------------

INSERT_RUN = (
    f"INSERT INTO toolrunner_runs (sequence, version, state, updated, {', '.join(SUMMARY_COLUMNS)}, run_id, "
    "created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING"
)
"""A new run's row: written only if no run of that id is stored (its first save)."""
UPDATE_RUN = (
    "UPDATE toolrunner_runs SET sequence = ?, version = ?, state = ?, updated = ?, "
    f"{', '.join(f'{name} = ?' for name in SUMMARY_COLUMNS)} WHERE run_id = ? AND sequence = ?"
)
"""A run's row, written only over the save it follows: the sequence check and the write are one
statement."""
HISTORY = (
    (
        "toolrunner_messages",
        "message",
        "SELECT message FROM toolrunner_messages WHERE run_id = ? ORDER BY position",
    ),
    ("toolrunner_usage", "usage", "SELECT usage FROM toolrunner_usage WHERE run_id = ? ORDER BY position"),
)
"""The tables of a run's history messages and requests' usage, their column, and the query of a run's
rows in order."""


class Cursor(Protocol):
    """What ``write_save`` asks of a driver's connection or cursor (``sqlite3``'s, psycopg's):
    ``execute`` answers something whose ``rowcount`` and ``fetchone()`` it reads."""

    def execute(self, sql: Any, parameters: Any, /) -> Any: ...

    def executemany(self, sql: Any, parameters: Any, /) -> Any: ...


def write_save(
    cursor: Cursor, save: EncodedSave, now: object, sql: Callable[[str], str], where: str
) -> CheckpointConflictError | StateError | None:
    """Write one save's rows (in the caller's transaction): the run's row, only over the save it
    follows, then its new messages and usage entries in place of any from their first position on;
    ``now`` is the time as the store's column holds it, ``sql`` makes this module's ``?``
    placeholders the driver's, ``where`` names the store in messages. The refusal of a save that
    does not follow the stored one, or of one over a run whose sequence column is damaged
    (``read_sequence``): nothing of it is written then, and the other saves of the transaction go
    on."""
    run_id = save.run_id
    values = (save.sequence, STATE_VERSION, save.header, now, *summary_values(save.columns))
    if save.sequence == 0:
        written = cursor.execute(sql(INSERT_RUN), (*values, run_id, now))
    else:
        written = cursor.execute(sql(UPDATE_RUN), (*values, run_id, save.sequence - 1))
    if written.rowcount != 1:
        row = cursor.execute(
            sql("SELECT sequence FROM toolrunner_runs WHERE run_id = ?"), (run_id,)
        ).fetchone()
        try:
            stored = None if row is None else read_sequence(row[0], run_id, where, "saved")
        except StateError as error:
            return error
        refusal = check_sequence(run_id, stored, save.sequence)
        assert refusal is not None
        return refusal
    for (table, column, _), kept, rows in zip(
        HISTORY, (save.kept_messages, save.kept_usage), (save.messages, save.usage), strict=True
    ):
        cursor.execute(sql(f"DELETE FROM {table} WHERE run_id = ? AND position >= ?"), (run_id, kept))
        if rows:
            cursor.executemany(
                sql(f"INSERT INTO {table} (run_id, position, {column}) VALUES (?, ?, ?)"),
                [(run_id, position, text) for position, text in rows],
            )
    return None


def summary_values(columns: SummaryColumns) -> tuple[object, ...]:
    """The summary columns' values, in the order of ``SUMMARY_COLUMNS``."""
    return (columns.status, columns.end_reason, columns.waiting, columns.turns, columns.cost, columns.failure)


def columns_of(header: str, messages: Sequence[str], usage: Sequence[str], run_id: str) -> SummaryColumns:
    """The summary columns of a run read from its rows (an upgrade writes them): a run that cannot be
    read is listed as failed, saying why (loading it says the same)."""
    try:
        return SummaryColumns.of(read_state(header, messages, usage, run_id, ""))
    except StateError as error:
        failure = store_json({"type": "StateError", "message": str(error)})
        return SummaryColumns("failed", None, None, 0, None, failure)


def page_query(listing: Listing[Any], time: Callable[[datetime], object]) -> tuple[str, list[object]]:
    """The SELECT of one page of a listing (one row more than its ``limit``: whether there is a next
    page), newest first; ``time`` turns a time into a parameter."""
    where, parameters = _status_filter(listing.statuses)
    if listing.updated_before is not None:
        where.append("updated < ?")
        parameters.append(time(listing.updated_before))
    if listing.updated_after is not None:
        where.append("updated >= ?")
        parameters.append(time(listing.updated_after))
    if listing.start is not None:
        where.append("(created, run_id) < (?, ?)")
        parameters += [listing.start[0], listing.start[1]]
    sql = f"SELECT {SUMMARY} FROM toolrunner_runs"
    if where:
        sql += " WHERE " + " AND ".join(where)
    sql += " ORDER BY created DESC, run_id DESC LIMIT ?"
    return sql, [*parameters, listing.limit + 1]


def prune_filter(
    updated_before: datetime,
    status: RunStatus | str | Iterable[RunStatus | str] | None,
    time: Callable[[datetime], object],
) -> tuple[str, list[object]]:
    """The WHERE clause (and its parameters) of the runs ``prune_runs`` deletes: of the statuses
    named, or of any but those that wait for a person (``pruned_statuses``)."""
    before = check_time(updated_before, "updated_before", required=True)
    assert before is not None
    where, parameters = _status_filter(pruned_statuses(status))
    where.append("updated < ?")
    parameters.append(time(before))
    return " AND ".join(where), parameters


def deletions(where: str) -> tuple[str, ...]:
    """The statements that delete the runs ``where`` selects, in one transaction: their messages and
    usage, then their rows (the last one's row count says how many runs)."""
    return (
        *(
            f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM toolrunner_runs WHERE {where})"
            for table, _, _ in HISTORY
        ),
        f"DELETE FROM toolrunner_runs WHERE {where}",
    )


def _status_filter(statuses: frozenset[RunStatus] | None) -> tuple[list[str], list[object]]:
    if statuses is None:
        return [], []
    if not statuses:
        return ["0 = 1"], []
    ordered = sorted(status.value for status in statuses)
    return [f"status IN ({', '.join('?' for _ in ordered)})"], list[object](ordered)


# -- the stores' shared part --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Dialect:
    """How a SQL store's driver takes and gives what this module's queries hold."""

    sql: Callable[[str], str]
    """This module's SQL text (``?`` placeholders) as the driver takes it."""
    parameter: Callable[[datetime], object]
    """A time as a query's parameter."""
    time: Callable[[Any], datetime]
    """A time column's value as a UTC time."""
    cursor_key: Callable[[str], object]
    """A cursor's creation key as the ``created`` column orders runs (``cursor_seconds``, ``cursor_moment``)."""
    cursor_text: Callable[[Any], str]
    """A ``created`` column's value as a cursor's creation key."""


class SQLStore(ListingStore):
    """What the SQL stores share over their own connections: a page of a listing, a run's summary,
    and deleting runs (one, or a prune), with this module's queries. A store says how its driver
    runs a query (``_fetch``) and a deletion (``_delete``), how it takes and gives times
    (``dialect``), and where its runs are (``_place``)."""

    dialect: ClassVar[Dialect]

    def _place(self) -> str:
        """Where the runs are, as messages name it (never with a password)."""
        raise NotImplementedError

    async def _fetch(
        self, sql: str, parameters: Sequence[object], read: Callable[[list[Any]], T], what: str
    ) -> T:
        """``read`` of the rows a query selects, in a worker thread; ``what`` says what failed."""
        raise NotImplementedError

    async def _delete(self, where: str, parameters: Sequence[object], what: str) -> int:
        """Delete the runs ``where`` selects (``deletions``), in one transaction; how many."""
        raise NotImplementedError

    def _cursor_key(self, text: str) -> object:
        return self.dialect.cursor_key(text)

    async def _list(self, listing: Listing[Any]) -> RunPage:
        sql, parameters = page_query(listing, self.dialect.parameter)
        where, dialect, limit = self._place(), self.dialect, listing.limit

        def read(rows: list[Any]) -> RunPage:
            page = rows[:limit]
            runs = tuple(summary_of(row, dialect.time, where) for row in page)
            more = len(rows) > limit
            return RunPage(
                runs, cursor_after(dialect.cursor_text(page[-1][1]), page[-1][0]) if more else None
            )

        return await self._fetch(sql, parameters, read, "list the runs")

    async def get_run(self, run_id: str) -> RunSummary | None:
        check_run_id(run_id)
        where, time = self._place(), self.dialect.time

        def read(rows: list[Any]) -> RunSummary | None:
            return summary_of(rows[0], time, where) if rows else None

        return await self._fetch(
            f"SELECT {SUMMARY} FROM toolrunner_runs WHERE run_id = ?", [run_id], read, "read the run"
        )

    async def delete_run(self, run_id: str) -> bool:
        check_run_id(run_id)
        return await self._delete("run_id = ?", [run_id], "delete the run") > 0

    async def prune_runs(
        self,
        *,
        updated_before: datetime,
        status: RunStatus | str | Iterable[RunStatus | str] | None = None,
    ) -> int:
        where, parameters = prune_filter(updated_before, status, self.dialect.parameter)
        return await self._delete(where, parameters, "prune the runs")

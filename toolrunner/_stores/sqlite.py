"""``SQLiteCheckpointer``: runs in an SQLite file (the standard library's ``sqlite3``, WAL mode).

The connection is used from worker threads, one at a time. The saves of one event loop that
arrive while a write is under way are written together, in one transaction (``_batching``). Each
run's summary columns are written with its state, in the same statement, so that a listing reads
an index and no state.

A file written by toolrunner 0.1 (its ``toolrunner_runs`` table without the summary columns) is
upgraded in place the first time a store opens it: the columns are added and filled from each
run's state, in one transaction. So is a file written before runs had leases (the summary columns
without ``lease_owner`` and ``lease_expires``): the lease columns are added, and the runs whose
status was written as ``running`` while they were paused are read again (those decided since are
``ready`` now).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Literal, TypeVar

import anyio.to_thread

from .._core.errors import CheckpointConflictError, CheckpointError, StateError
from .._core.ids import check_run_id
from .._core.state import STATE_VERSION
from .group_commit import GroupCommit
from .leases import HANDED_OVER, check_lease, check_owner
from .protocol import Checkpoint, StoreBase, check_sequence, store_json
from .runs import (
    RunPage,
    RunStatus,
    RunSummary,
    SummaryColumns,
    check_limit,
    cursor_after,
    cursor_seconds,
    utc,
)
from .sql import (
    CLAIMABLE,
    NEXT_EXPIRY,
    SUMMARY,
    EncodedSave,
    decode,
    encode,
    listing,
    prune_filter,
    read_state,
    summary_of,
)
from .waiting import Waiters, check_wait, wait_until_claimable

__all__ = ["SQLiteCheckpointer"]

T = TypeVar("T")

_RUNS_0_1 = ["run_id", "sequence", "version", "state", "updated"]
"""The columns of ``toolrunner_runs`` as toolrunner 0.1 made it."""
_ADDED = [
    ("created", "REAL NOT NULL DEFAULT 0"),
    ("status", "TEXT NOT NULL DEFAULT 'running'"),
    ("end_reason", "TEXT"),
    ("waiting", "TEXT"),
    ("turns", "INTEGER NOT NULL DEFAULT 0"),
    ("cost", "TEXT"),
    ("failure", "TEXT"),
]
"""The summary columns, added after the columns of 0.1 (so that an upgraded table is the same)."""
_LEASE_COLUMNS = [("lease_owner", "TEXT"), ("lease_expires", "REAL")]
"""A resumer's lease on the run (``_leases``), added after the summary columns; both or neither."""
_RUNS_SUMMARIES = [*_RUNS_0_1, *(name for name, _ in _ADDED)]
"""The columns of ``toolrunner_runs`` with summaries and without leases."""
_COLUMNS = {
    "toolrunner_runs": [*_RUNS_SUMMARIES, *(name for name, _ in _LEASE_COLUMNS)],
    "toolrunner_messages": ["run_id", "position", "message"],
    "toolrunner_usage": ["run_id", "position", "usage"],
}
_TABLES = f"""
CREATE TABLE IF NOT EXISTS toolrunner_runs (
    run_id TEXT PRIMARY KEY, sequence INTEGER NOT NULL, version INTEGER NOT NULL,
    state TEXT NOT NULL, updated REAL NOT NULL,
    {", ".join(f"{name} {kind}" for name, kind in (*_ADDED, *_LEASE_COLUMNS))}
);
CREATE TABLE IF NOT EXISTS toolrunner_messages (
    run_id TEXT NOT NULL, position INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (run_id, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS toolrunner_usage (
    run_id TEXT NOT NULL, position INTEGER NOT NULL, usage TEXT NOT NULL, PRIMARY KEY (run_id, position)
) WITHOUT ROWID
"""
_INDEXES = """
CREATE INDEX IF NOT EXISTS toolrunner_runs_by_status ON toolrunner_runs (status, created, run_id);
CREATE INDEX IF NOT EXISTS toolrunner_runs_by_created ON toolrunner_runs (created, run_id)
"""
_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""
_SUMMARY_COLUMNS = ("status", "end_reason", "waiting", "turns", "cost", "failure")
_HANDED_OVER = ", ".join(f"'{status.value}'" for status in HANDED_OVER)
_SUMMARY_SET = ", ".join(f"{name} = ?" for name in _SUMMARY_COLUMNS)


class SQLiteCheckpointer(StoreBase):
    """Keeps runs in an SQLite file (the standard library's ``sqlite3``, WAL mode), off the event loop.

    Runs of several runners and processes may share one file. Each save is one transaction that
    writes the state's fixed-size part, its summary, and only the new messages and usage entries;
    saves that many runs make at once share a transaction. It is a ``RunStore``: its runs can be
    listed, deleted, pruned and decided.

    Args:
        path: The database file; created if missing. Its tables are named ``toolrunner_*``.
        synchronous: SQLite's ``synchronous`` setting. ``"NORMAL"`` (the default) loses nothing
            when the process dies (a crash, SIGKILL, an OOM kill); ``"FULL"`` also survives the
            machine losing power, at the cost of a disk flush per save.
        timeout: Seconds to wait for another writer of the file before failing.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        synchronous: Literal["NORMAL", "FULL"] = "NORMAL",
        timeout: float = 10.0,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise ValueError(f"synchronous must be 'NORMAL' or 'FULL', not {synchronous!r}.")
        self.path = Path(path)
        self._synchronous = synchronous
        self._timeout = timeout
        self._lock = threading.Lock()  # one connection, used from worker threads one at a time
        self._connection: sqlite3.Connection | None = None
        self._commits = GroupCommit(self._write, name=f"toolrunner saves to {self.path}")
        self._waiters = Waiters()

    def __repr__(self) -> str:
        return f"SQLiteCheckpointer({str(self.path)!r})"

    async def save(self, checkpoint: Checkpoint) -> None:
        # Encoding happens here, on the event loop's thread, so the state is read where it lives.
        encoded = encode(checkpoint)
        await self._commits.submit(encoded)
        if encoded.columns.status == RunStatus.READY.value:
            self._waiters.wake()  # this process's resumers; other processes' look (wait_ready)

    async def load(self, run_id: str) -> Checkpoint | None:
        check_run_id(run_id)
        return await self._run(lambda connection: self._read(connection, run_id))

    async def list_runs(
        self,
        *,
        status: RunStatus | str | Iterable[RunStatus | str] | None = None,
        updated_before: datetime | None = None,
        updated_after: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> RunPage:
        query = listing(status, updated_before, updated_after, limit, cursor, cursor_seconds)
        sql, parameters = query.query(lambda moment: moment.timestamp())

        def read(connection: sqlite3.Connection) -> RunPage:
            rows = connection.execute(sql, parameters).fetchall()
            page = rows[: query.limit]
            runs = tuple(summary_of(row, utc, repr(str(self.path))) for row in page)
            more = len(rows) > query.limit
            return RunPage(runs, cursor_after(repr(page[-1][1]), page[-1][0]) if more else None)

        return await self._run(read)

    async def get_run(self, run_id: str) -> RunSummary | None:
        check_run_id(run_id)

        def read(connection: sqlite3.Connection) -> RunSummary | None:
            row = connection.execute(
                f"SELECT {SUMMARY} FROM toolrunner_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            return None if row is None else summary_of(row, utc, repr(str(self.path)))

        return await self._run(read)

    async def delete_run(self, run_id: str) -> bool:
        check_run_id(run_id)

        def delete(connection: sqlite3.Connection) -> bool:
            return self._delete(connection, "run_id = ?", [run_id]) > 0

        return await self._run(delete)

    async def prune_runs(
        self,
        *,
        updated_before: datetime,
        status: RunStatus | str | Iterable[RunStatus | str] | None = None,
    ) -> int:
        where, parameters = prune_filter(updated_before, status, lambda moment: moment.timestamp())
        return await self._run(lambda connection: self._delete(connection, where, parameters))

    # -- leases (see _leases) ---------------------------------------------------------------------

    async def lease_runs(self, owner: str, *, lease: float, limit: int = 1) -> tuple[str, ...]:
        owner, seconds, limit = check_owner(owner), check_lease(lease), check_limit(limit)

        def take(connection: sqlite3.Connection) -> tuple[str, ...]:
            now = self._now()
            # One writer at a time: of the resumers asking at once, one takes each run.
            connection.execute("BEGIN IMMEDIATE")
            found = connection.execute(
                f"SELECT run_id FROM toolrunner_runs WHERE {CLAIMABLE} ORDER BY created, run_id LIMIT ?",
                (now, limit),
            ).fetchall()
            connection.executemany(
                "UPDATE toolrunner_runs SET lease_owner = ?, lease_expires = ? WHERE run_id = ?",
                [(owner, now + seconds, run_id) for (run_id,) in found],
            )
            connection.execute("COMMIT")
            return tuple(run_id for (run_id,) in found)

        return await self._run(take)

    async def renew_lease(self, run_id: str, owner: str, *, lease: float) -> bool:
        owner, seconds = check_owner(owner), check_lease(lease)

        def renew(connection: sqlite3.Connection) -> bool:
            return (
                connection.execute(
                    "UPDATE toolrunner_runs SET lease_expires = ? WHERE run_id = ? AND lease_owner = ?",
                    (self._now() + seconds, run_id, owner),
                ).rowcount
                == 1
            )

        return await self._run(renew)

    async def release_lease(self, run_id: str, owner: str) -> bool:
        owner = check_owner(owner)

        def release(connection: sqlite3.Connection) -> bool:
            # _leases.kept_on_release: a running or ready run keeps the lease, run out now.
            return (
                connection.execute(
                    f"UPDATE toolrunner_runs SET lease_expires = CASE WHEN status IN ({_HANDED_OVER}) "
                    "THEN min(lease_expires, ?) END, lease_owner = CASE WHEN status IN "
                    f"({_HANDED_OVER}) THEN lease_owner END WHERE run_id = ? AND lease_owner = ?",
                    (self._now(), run_id, owner),
                ).rowcount
                == 1
            )

        released = await self._run(release)
        if released:
            self._waiters.wake()
        return released

    async def wait_ready(self, *, poll_interval: float = 1.0) -> None:
        check_wait(poll_interval)

        def look(connection: sqlite3.Connection) -> tuple[bool, float | None, float]:
            now = self._now()
            found = connection.execute(
                f"SELECT 1 FROM toolrunner_runs WHERE {CLAIMABLE} LIMIT 1", (now,)
            ).fetchone()
            expiry = connection.execute(NEXT_EXPIRY, (now,)).fetchone()[0]
            return found is not None, None if expiry is None else float(expiry), now

        # Told by this process's saves; another process's, it finds by looking again.
        await wait_until_claimable(lambda: self._run(look), self._waiters, poll_interval)

    def close(self) -> None:
        """Close the connection (the next use opens it again)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # -- in a worker thread -------------------------------------------------------------------

    async def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await anyio.to_thread.run_sync(self._locked, work)

    def _locked(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            connection = self._connect()
            try:
                return work(connection)
            except sqlite3.Error as error:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise self._failed(error, "read or change the runs") from error

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
        self._check_header()
        try:
            connection = sqlite3.connect(
                self.path, timeout=self._timeout, isolation_level=None, check_same_thread=False
            )
            try:
                self._set_up(connection)
            except BaseException:
                connection.close()
                raise
        except sqlite3.DatabaseError as error:
            if error.sqlite_errorcode in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
                raise self._failed(error, "open the store") from error
            if error.sqlite_errorcode == sqlite3.SQLITE_CANTOPEN:
                raise CheckpointError(
                    f"{str(self.path)!r} cannot be opened ({error}); check that its directory exists and that this "
                    "process may write there."
                ) from error
            raise CheckpointError(
                f"{str(self.path)!r} cannot be used as a checkpoint database ({error}); give SQLiteCheckpointer "
                "the path of an SQLite file of its own, or of a new file."
            ) from error
        self._connection = connection
        return connection

    def _check_header(self) -> None:
        """Refuse a file that is not an SQLite database before SQLite opens it (a missing or empty
        file is a new store)."""
        try:
            with open(self.path, "rb") as file:
                header = file.read(len(_HEADER))
        except OSError:
            return  # missing (a new store), or unreadable: opening it says why
        if header and header != _HEADER:
            raise CheckpointError(
                f"{str(self.path)!r} cannot be used as a checkpoint database (it is not an SQLite file; it was left "
                "as it was); give SQLiteCheckpointer the path of an SQLite file of its own, or of a new file."
            )

    def _set_up(self, connection: sqlite3.Connection) -> None:
        """The tables checked to be toolrunner's (or none), then WAL mode, and the tables (made, or
        upgraded from 0.1). The check only reads, so a file that is not toolrunner's is refused as
        it was: nothing that writes (the switch to WAL, which also makes the ``-wal`` and ``-shm``
        files) comes before it. Switching to WAL can find another connection doing the same, and
        SQLite then answers "locked" without waiting: try again until ``timeout``."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                self._schema(connection)  # refuses another program's database, before anything writes
                if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(f"PRAGMA synchronous={self._synchronous}")
                if self._schema(connection) != "current":
                    connection.execute("BEGIN IMMEDIATE")  # waits for other writers, unlike executescript
                    schema = self._schema(connection)  # again, now that no other writer can change it
                    if schema == "missing":
                        for statement in (*_TABLES.split(";"), *_INDEXES.split(";")):
                            connection.execute(statement)
                    elif schema == "0.1":
                        self._upgrade(connection)
                    elif schema == "summaries":
                        self._add_leases(connection)
                    connection.execute("COMMIT")
                return
            except sqlite3.OperationalError as error:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _schema(self, connection: sqlite3.Connection) -> Literal["missing", "0.1", "summaries", "current"]:
        tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if not tables & set(_COLUMNS):
            others = sorted(table for table in tables if not table.startswith("sqlite_"))
            if others:
                raise CheckpointError(
                    f"{str(self.path)!r} is another program's database (its tables are {others[:5]!r}, none of them "
                    "toolrunner's), so it was left as it was: SQLiteCheckpointer switches its file to WAL mode, "
                    "which would change how that program uses it. Give SQLiteCheckpointer a file of its own, or a "
                    "new file."
                )
            return "missing"
        found = {
            table: [row[1] for row in connection.execute(f"PRAGMA table_info({table})")] for table in _COLUMNS
        }
        if found == _COLUMNS:
            return "current"
        if found == {**_COLUMNS, "toolrunner_runs": _RUNS_0_1}:
            return "0.1"
        if found == {**_COLUMNS, "toolrunner_runs": _RUNS_SUMMARIES}:
            return "summaries"
        table, columns = next(
            (table, columns) for table, columns in found.items() if columns != _COLUMNS[table]
        )
        raise CheckpointError(
            f"{str(self.path)!r} has a table {table!r} that toolrunner did not make (its columns are "
            f"{columns!r}); give SQLiteCheckpointer a file of its own, or a new file."
        )

    def _upgrade(self, connection: sqlite3.Connection) -> None:
        """Add the summary columns (and the lease columns) to a 0.1 file and fill them from each
        run's state."""
        for name, kind in (*_ADDED, *_LEASE_COLUMNS):
            connection.execute(f"ALTER TABLE toolrunner_runs ADD COLUMN {name} {kind}")
        runs = connection.execute("SELECT run_id, state, updated FROM toolrunner_runs").fetchall()
        for run_id, header, updated in runs:
            connection.execute(
                f"UPDATE toolrunner_runs SET created = ?, {_SUMMARY_SET} WHERE run_id = ?",
                (updated, *_summary_values(self._columns_of(connection, run_id, header)), run_id),
            )
        for statement in _INDEXES.split(";"):
            connection.execute(statement)

    def _add_leases(self, connection: sqlite3.Connection) -> None:
        """Add the lease columns to a file written before runs had leases, and read again the runs
        written as running while paused: those decided since are ready."""
        for name, kind in _LEASE_COLUMNS:
            connection.execute(f"ALTER TABLE toolrunner_runs ADD COLUMN {name} {kind}")
        runs = connection.execute(
            "SELECT run_id, state FROM toolrunner_runs WHERE status = 'running' AND end_reason = 'awaiting_approval'"
        ).fetchall()
        for run_id, header in runs:
            connection.execute(
                f"UPDATE toolrunner_runs SET {_SUMMARY_SET} WHERE run_id = ?",
                (*_summary_values(self._columns_of(connection, run_id, header)), run_id),
            )

    def _columns_of(self, connection: sqlite3.Connection, run_id: str, header: str) -> SummaryColumns:
        """The summary columns of a run read from its rows (an upgrade's)."""
        messages = connection.execute(
            "SELECT message FROM toolrunner_messages WHERE run_id = ? ORDER BY position", (run_id,)
        ).fetchall()
        usage = connection.execute(
            "SELECT usage FROM toolrunner_usage WHERE run_id = ? ORDER BY position", (run_id,)
        ).fetchall()
        try:
            return SummaryColumns.of(
                read_state(header, [text for (text,) in messages], [text for (text,) in usage], run_id, "")
            )
        except StateError as error:  # listed as failed, with why; loading it says the same
            failure = store_json({"type": "StateError", "message": str(error)})
            return SummaryColumns("failed", None, None, 0, None, failure)

    def _write(self, saves: Sequence[EncodedSave]) -> list[Exception | None]:
        """Write a batch of saves in one transaction: each save's own refusal, or the batch's failure."""
        with self._lock:
            try:
                connection = self._connect()
            except CheckpointError as error:
                return [error] * len(saves)
            now = self._now()
            try:
                connection.execute("BEGIN IMMEDIATE")
                refusals = [self._write_one(connection, save, now) for save in saves]
                connection.execute("COMMIT")
            except sqlite3.Error as error:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                return [self._failed(error, f"save the run {save.run_id!r}") for save in saves]
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise
        return list[Exception | None](refusals)

    def _write_one(
        self, connection: sqlite3.Connection, save: EncodedSave, now: float
    ) -> CheckpointConflictError | None:
        run_id = save.run_id
        values = (save.sequence, STATE_VERSION, save.header, now, *_summary_values(save.columns))
        if save.sequence == 0:
            written = connection.execute(
                f"INSERT INTO toolrunner_runs (sequence, version, state, updated, {', '.join(_SUMMARY_COLUMNS)}, "
                "run_id, created) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (run_id) DO NOTHING",
                (*values, run_id, now),
            )
        else:  # only over the save this one follows: the sequence check and the write are one statement
            written = connection.execute(
                f"UPDATE toolrunner_runs SET sequence = ?, version = ?, state = ?, updated = ?, {_SUMMARY_SET} "
                "WHERE run_id = ? AND sequence = ?",
                (*values, run_id, save.sequence - 1),
            )
        if written.rowcount != 1:
            row = connection.execute(
                "SELECT sequence FROM toolrunner_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            refusal = check_sequence(run_id, None if row is None else int(row[0]), save.sequence)
            assert refusal is not None
            return refusal
        for table, column, kept, rows in (
            ("toolrunner_messages", "message", save.kept_messages, save.messages),
            ("toolrunner_usage", "usage", save.kept_usage, save.usage),
        ):
            connection.execute(f"DELETE FROM {table} WHERE run_id = ? AND position >= ?", (run_id, kept))
            connection.executemany(
                f"INSERT INTO {table} (run_id, position, {column}) VALUES (?, ?, ?)",
                [(run_id, position, text) for position, text in rows],
            )
        return None

    def _read(self, connection: sqlite3.Connection, run_id: str) -> Checkpoint | None:
        connection.execute("BEGIN")  # one snapshot of the three tables
        try:
            row = connection.execute(
                "SELECT sequence, state FROM toolrunner_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                return None
            messages = connection.execute(
                "SELECT message FROM toolrunner_messages WHERE run_id = ? ORDER BY position", (run_id,)
            ).fetchall()
            usage = connection.execute(
                "SELECT usage FROM toolrunner_usage WHERE run_id = ? ORDER BY position", (run_id,)
            ).fetchall()
        finally:
            connection.execute("COMMIT")
        return decode(
            run_id,
            int(row[0]),
            row[1],
            [text for (text,) in messages],
            [text for (text,) in usage],
            repr(str(self.path)),
        )

    def _delete(self, connection: sqlite3.Connection, where: str, parameters: list[object]) -> int:
        connection.execute("BEGIN IMMEDIATE")
        for table in ("toolrunner_messages", "toolrunner_usage"):
            connection.execute(
                f"DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM toolrunner_runs WHERE {where})",
                parameters,
            )
        deleted = connection.execute(f"DELETE FROM toolrunner_runs WHERE {where}", parameters).rowcount
        connection.execute("COMMIT")
        return deleted

    def _failed(self, error: sqlite3.Error, what: str) -> CheckpointError:
        """The project's error for an SQLite failure: what happened, and what to do."""
        path = str(self.path)
        code = getattr(error, "sqlite_errorcode", None)
        if code == sqlite3.SQLITE_FULL:
            return CheckpointError(
                f"could not {what}: {path!r} is full (the disk, or the database's size limit); free some space, "
                "and the run can be saved again: its next save writes what this one did not."
            )
        if code in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED):
            return CheckpointError(
                f"could not {what}: another process held {path!r} locked for longer than timeout={self._timeout}s; "
                "try again, or give SQLiteCheckpointer a longer timeout."
            )
        if code == sqlite3.SQLITE_READONLY:
            return CheckpointError(
                f"could not {what}: {path!r} is read-only; make the file (and its directory) writable."
            )
        return CheckpointError(
            f"could not {what} in {path!r}: {error}; check the file and the disk, then try again."
        )


def _summary_values(columns: SummaryColumns) -> tuple[object, ...]:
    return (columns.status, columns.end_reason, columns.waiting, columns.turns, columns.cost, columns.failure)

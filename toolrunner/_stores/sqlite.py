"""``SQLiteCheckpointer``: runs in an SQLite file (the standard library's ``sqlite3``, WAL mode).

The connection is used from worker threads, one at a time. The saves of one event loop that
arrive while a write is under way are written together, in one transaction (``group_commit``).
Each run's summary columns are written with its state, in the same statement, so that a listing
reads an index and no state. The file's tables are made, checked and upgraded from older forms by
``sqlite_schema``.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import anyio.to_thread

from .._core.errors import CheckpointError
from .._core.ids import check_run_id
from .group_commit import GroupCommit
from .leases import HANDED_OVER, check_lease, check_owner
from .listing import check_limit, cursor_seconds, utc
from .protocol import Checkpoint
from .runs import RunStatus
from .sql import (
    CLAIMABLE,
    NEXT_EXPIRY,
    TAKE_ONE,
    Dialect,
    EncodedSave,
    SQLStore,
    decode,
    deletions,
    encode,
    write_save,
)
from .sqlite_schema import history, set_up
from .waiting import Waiters, check_wait, wait_until_claimable

__all__ = ["SQLiteCheckpointer"]

T = TypeVar("T")

_HEADER = b"SQLite format 3\x00"
"""The first bytes of every SQLite database file."""
_HANDED_OVER = ", ".join(f"'{status.value}'" for status in HANDED_OVER)


class SQLiteCheckpointer(SQLStore):
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

    dialect = Dialect(
        sql=str,
        parameter=lambda moment: moment.timestamp(),
        time=utc,
        cursor_key=cursor_seconds,
        cursor_text=repr,
    )

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

    # -- leases (see _stores.leases) --------------------------------------------------------------

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

    async def lease_run(self, run_id: str, owner: str, *, lease: float) -> bool:
        run_id, owner, seconds = check_run_id(run_id), check_owner(owner), check_lease(lease)

        def take(connection: sqlite3.Connection) -> bool:
            now = self._now()
            return connection.execute(TAKE_ONE, (owner, now + seconds, run_id, owner, now)).rowcount == 1

        return await self._run(take)

    async def renew_lease(self, run_id: str, owner: str, *, lease: float) -> bool:
        run_id, owner, seconds = check_run_id(run_id), check_owner(owner), check_lease(lease)

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
        run_id, owner = check_run_id(run_id), check_owner(owner)

        def release(connection: sqlite3.Connection) -> bool:
            # _stores.leases.kept_on_release: a running or ready run keeps the lease, run out now.
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

    def _place(self) -> str:
        return repr(str(self.path))

    async def _fetch(
        self, sql: str, parameters: Sequence[object], read: Callable[[list[Any]], T], what: str
    ) -> T:
        return await self._run(lambda connection: read(connection.execute(sql, parameters).fetchall()))

    async def _delete(self, where: str, parameters: Sequence[object], what: str) -> int:
        def delete(connection: sqlite3.Connection) -> int:
            connection.execute("BEGIN IMMEDIATE")
            counts = [connection.execute(statement, parameters).rowcount for statement in deletions(where)]
            connection.execute("COMMIT")
            return counts[-1]

        return await self._run(delete)

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
                set_up(connection, self._place(), synchronous=self._synchronous, timeout=self._timeout)
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
                refusals = [write_save(connection, save, now, str, self._place()) for save in saves]
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

    def _read(self, connection: sqlite3.Connection, run_id: str) -> Checkpoint | None:
        connection.execute("BEGIN")  # one snapshot of the three tables
        try:
            row = connection.execute(
                "SELECT sequence, state FROM toolrunner_runs WHERE run_id = ?", (run_id,)
            ).fetchone()
            if row is None:
                return None
            messages, usage = history(connection, run_id)
        finally:
            connection.execute("COMMIT")
        return decode(run_id, row[0], row[1], messages, usage, self._place())

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

"""``PostgresCheckpointer``: runs in PostgreSQL, through psycopg 3 and a pool of its connections.

Runners of many processes and machines share one database. Connections are psycopg's blocking
ones, used from worker threads, as ``SQLiteCheckpointer`` uses its file: psycopg's async
connections work on asyncio only, and a store must serve trio, and the event loop of each
``for`` loop of a ``SyncToolRunner``, alike. The saves of one event loop that arrive while a write
is under way share a transaction (``_stores.group_commit``), in the order of their run ids (so that two
processes' transactions never wait for each other in a cycle).

A save is one statement per table: the run's row is written only over the save it follows
(``UPDATE ... WHERE sequence = ...``), so the check and the write are one, and PostgreSQL's row
lock makes a second writer of one run wait, then find the sequence moved.

A save that makes a run ready notifies ``toolrunner_ready`` (with the schema's name) in its
transaction, and so does a lease given up on a run still to go on: ``wait_ready`` listens on a
connection of its own, in a worker thread (psycopg's async notifies work on asyncio only), and
looks for runs to take up when told, or when the earliest lease runs out.

The tables are made, checked and upgraded from older forms by ``postgres_schema``.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

import anyio.to_thread

from .._core.errors import CheckpointError, ParamsError
from .._core.ids import check_run_id
from .group_commit import GroupCommit
from .leases import HANDED_OVER, check_lease, check_owner, wait_time
from .listing import check_limit, cursor_moment
from .postgres_schema import ROWS, set_up, sql_text
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
from .waiting import check_wait

if TYPE_CHECKING:
    import psycopg
    import psycopg_pool

__all__ = ["PostgresCheckpointer"]

T = TypeVar("T")

_LOAD = ROWS.format(first="sequence", where="run.run_id = %s")
_CHANNEL = "toolrunner_ready"
"""What a save that makes a run ready (and a lease given up on a run still to go on) notifies,
with the schema's name: the channels of a database are shared by its schemas."""
_NOTIFY = f"SELECT pg_notify('{_CHANNEL}', current_schema())"
_HANDED_OVER = ", ".join(f"'{status.value}'" for status in HANDED_OVER)
_TAKE = f"""
WITH taken AS (
    SELECT run_id FROM toolrunner_runs WHERE {CLAIMABLE} ORDER BY created, run_id LIMIT ? FOR UPDATE SKIP LOCKED
)
UPDATE toolrunner_runs AS run SET lease_owner = ?, lease_expires = ?
FROM taken WHERE run.run_id = taken.run_id RETURNING run.run_id, run.created
""".replace("?", "%s")
_TAKE_ONE = TAKE_ONE.replace("?", "%s")
_RENEW = "UPDATE toolrunner_runs SET lease_expires = %s WHERE run_id = %s AND lease_owner = %s"
_RELEASE = f"""
UPDATE toolrunner_runs SET
    lease_expires = CASE WHEN status IN ({_HANDED_OVER}) THEN LEAST(lease_expires, %s) END,
    lease_owner = CASE WHEN status IN ({_HANDED_OVER}) THEN lease_owner END
WHERE run_id = %s AND lease_owner = %s RETURNING status
"""
_LOOK = f"SELECT EXISTS (SELECT 1 FROM toolrunner_runs WHERE {CLAIMABLE}), ({NEXT_EXPIRY})".replace("?", "%s")
_STOP_CHECK = 0.25
"""Seconds between two checks, by a thread that waits for a notification, that it is still waited for."""


class PostgresCheckpointer(SQLStore):
    """Keeps runs in PostgreSQL (psycopg 3, pooled connections), off the event loop; the
    ``[postgres]`` extra installs psycopg.

    Runners of many processes and machines may share the database. Each save is one transaction
    that writes the state's fixed-size part, its summary, and only the new messages and usage
    entries; saves that many runs make at once share a transaction. It is a ``RunStore``: its runs
    can be listed, deleted, pruned and decided. Its tables (``toolrunner_*``) are made in the
    connection's current schema (set one with ``options=-csearch_path=...`` in the URL).

    Args:
        url: A libpq connection string or URL (``postgresql://user:password@host/dbname``).
        min_connections: Connections the pool keeps open.
        max_connections: Connections the pool may open.
        timeout: Seconds to wait for a connection before failing.

    Raises:
        ParamsError: A URL libpq cannot read (the message quotes no part of it: it may hold the
            password).
    """

    def __init__(
        self, url: str, *, min_connections: int = 1, max_connections: int = 4, timeout: float = 10.0
    ) -> None:
        try:
            import psycopg.conninfo
            import psycopg_pool
        except ImportError as error:  # pragma: no cover - the test extra installs them
            raise CheckpointError(
                f"PostgresCheckpointer needs psycopg and psycopg_pool ({error}); install them with "
                "pip install 'claude-toolrunner[postgres]'."
            ) from None
        try:
            parts = psycopg.conninfo.conninfo_to_dict(url)
        except (psycopg.Error, UnicodeError, ValueError):  # UnicodeError: a lone surrogate (from argv)
            raise _unreadable(url) from None
        # What names the database in messages and repr: never the password.
        self._where = f"{parts.get('dbname', '')} on {parts.get('host') or 'localhost'}"
        self._timeout = timeout
        self._url, self._sizes = url, (min_connections, max_connections)
        self._pool_type = psycopg_pool.ConnectionPool
        self._pool = self._new_pool()
        self._lock = threading.Lock()  # guards opening the pool and making the tables
        self._ready = False
        self._commits = GroupCommit(self._write, name="toolrunner saves to PostgreSQL")
        self._listening = threading.Lock()  # one thread waits on the listening connection at a time
        self._listener: psycopg.Connection[Any] | None = None
        self._schema = ""  # the listening connection's schema: the notifications that are this store's
        self._waits: set[threading.Event] = set()  # the waits under way, each told to stop by close()

    dialect = Dialect(
        sql=lambda text: text.replace("?", "%s"),
        parameter=lambda moment: moment,
        time=lambda moment: moment.astimezone(UTC),
        cursor_key=cursor_moment,
        cursor_text=lambda created: created.isoformat(),
    )

    def __repr__(self) -> str:
        return f"PostgresCheckpointer(<{self._where}>)"

    def _new_pool(self) -> psycopg_pool.ConnectionPool[psycopg.Connection[Any]]:
        """A pool, not open yet (a closed pool cannot be opened again: each opening makes a new one)."""
        return self._pool_type(
            self._url,
            min_size=self._sizes[0],
            max_size=self._sizes[1],
            timeout=self._timeout,
            kwargs=self._connection_options(),
            open=False,
            name="toolrunner",
        )

    def _connection_options(self) -> dict[str, Any]:
        """The keyword arguments of each connection (``psycopg.Connection.connect``)."""
        return {"autocommit": True}

    async def save(self, checkpoint: Checkpoint) -> None:
        await self._commits.submit(encode(checkpoint))

    async def load(self, run_id: str) -> Checkpoint | None:
        check_run_id(run_id)

        def read(connection: psycopg.Connection[Any]) -> Checkpoint | None:
            row = connection.execute(_LOAD, (run_id,)).fetchone()
            if row is None:
                return None
            sequence, header, messages, usage = row
            return decode(run_id, sequence, header, messages, usage, self._place())

        return await self._run(read, "load the run")

    # -- leases (see _stores.leases) --------------------------------------------------------------

    async def lease_runs(self, owner: str, *, lease: float, limit: int = 1) -> tuple[str, ...]:
        owner, seconds, limit = check_owner(owner), check_lease(lease), check_limit(limit)

        def take(connection: psycopg.Connection[Any]) -> tuple[str, ...]:
            now = self._now()
            # Rows another resumer is taking (or a save is writing) are skipped, not waited for.
            rows = connection.execute(_TAKE, (_time(now), limit, owner, _time(now + seconds))).fetchall()
            return tuple(run_id for run_id, _ in sorted(rows, key=lambda row: (row[1], row[0])))

        return await self._run(take, "lease runs")

    async def lease_run(self, run_id: str, owner: str, *, lease: float) -> bool:
        run_id, owner, seconds = check_run_id(run_id), check_owner(owner), check_lease(lease)

        def take(connection: psycopg.Connection[Any]) -> bool:
            now = self._now()
            parameters = (owner, _time(now + seconds), run_id, owner, _time(now))
            return connection.execute(_TAKE_ONE, parameters).rowcount == 1

        return await self._run(take, "take the lease")

    async def renew_lease(self, run_id: str, owner: str, *, lease: float) -> bool:
        run_id, owner, seconds = check_run_id(run_id), check_owner(owner), check_lease(lease)

        def renew(connection: psycopg.Connection[Any]) -> bool:
            return connection.execute(_RENEW, (_time(self._now() + seconds), run_id, owner)).rowcount == 1

        return await self._run(renew, "renew the lease")

    async def release_lease(self, run_id: str, owner: str) -> bool:
        run_id, owner = check_run_id(run_id), check_owner(owner)

        def release(connection: psycopg.Connection[Any]) -> bool:
            with connection.transaction():
                row = connection.execute(_RELEASE, (_time(self._now()), run_id, owner)).fetchone()
                if row is not None and row[0] in {status.value for status in HANDED_OVER}:
                    connection.execute(_NOTIFY)  # the run goes to another resumer at once
            return row is not None

        return await self._run(release, "release the lease")

    async def wait_ready(self, *, poll_interval: float = 1.0) -> None:
        check_wait(poll_interval)  # told by the server: no polling
        stop = threading.Event()
        self._waits.add(stop)
        try:
            await anyio.to_thread.run_sync(self._wait_ready, stop, abandon_on_cancel=True)
        finally:
            stop.set()  # a cancelled wait's thread gives the connection up within _STOP_CHECK
            self._waits.discard(stop)

    def close(self) -> None:
        """Close the pool's connections, and the one that listens (the next use opens them again)."""
        with self._lock:
            if self._ready:
                self._pool.close()
                self._pool = self._new_pool()
                self._ready = False
        for stop in list(self._waits):
            stop.set()
        # A wait gives the connection up within _STOP_CHECK once told to stop (unless a query of
        # its hangs: then it drops the connection itself when that fails).
        if self._listening.acquire(timeout=max(1.0, 4 * _STOP_CHECK)):
            try:
                self._drop_listener()
            finally:
                self._listening.release()

    # -- in a worker thread -------------------------------------------------------------------

    def _place(self) -> str:
        return f"PostgreSQL ({self._where})"

    async def _fetch(
        self, sql: str, parameters: Sequence[object], read: Callable[[list[Any]], T], what: str
    ) -> T:
        return await self._run(
            lambda connection: read(
                connection.execute(sql_text(self.dialect.sql(sql)), parameters).fetchall()
            ),
            what,
        )

    async def _delete(self, where: str, parameters: Sequence[object], what: str) -> int:
        def delete(connection: psycopg.Connection[Any]) -> int:
            with connection.transaction():
                statements = deletions(where)
                counts = [
                    connection.execute(sql_text(self.dialect.sql(text)), parameters).rowcount
                    for text in statements
                ]
            return counts[-1]

        return await self._run(delete, what)

    async def _run(self, work: Callable[[psycopg.Connection[Any]], T], what: str) -> T:
        return await anyio.to_thread.run_sync(self._with_connection, work, what)

    def _with_connection(self, work: Callable[[psycopg.Connection[Any]], T], what: str) -> T:
        import psycopg
        import psycopg_pool

        try:
            self._open()
            with self._pool.connection() as connection:
                return work(connection)
        except psycopg_pool.PoolTimeout as error:
            raise CheckpointError(
                f"could not {what}: no connection to PostgreSQL ({self._where}) within {self._timeout}s ({error}); "
                "check that the server is up and reachable, then try again."
            ) from None
        except psycopg.Error as error:
            raise self._failed(error, what) from None

    def _open(self) -> None:
        if self._ready:
            return
        import psycopg

        with self._lock:
            if self._ready:
                return
            # One connection first, outside the pool: it makes the tables, and a server that cannot
            # be reached says why at once (the pool would try again in the background until timeout).
            with psycopg.connect(
                self._url, connect_timeout=max(1, round(self._timeout)), **self._connection_options()
            ) as connection:
                set_up(connection, self._place())
            self._pool.open(wait=False)
            self._ready = True

    def _wait_ready(self, stop: threading.Event) -> None:
        """In a worker thread: look for a run to take up; until there is one, wait for a
        notification of this store's schema, or for the earliest lease to run out, and look
        again. Returns early once ``stop`` is set."""
        import psycopg

        while not self._listening.acquire(timeout=_STOP_CHECK):
            if stop.is_set():
                return
        try:
            connection = self._listen()
            while not stop.is_set():
                now = self._now()
                # Looked at through another connection: a notification that reached the listening
                # one during a query of its own would not reach notifies() after it (psycopg 3.2
                # drops it), and the run it announced would wait for the next one.
                with self._pool.connection() as looking:
                    row = looking.execute(_LOOK, (_time(now), _time(now))).fetchone()
                assert row is not None
                found, expiry = row
                if found:
                    return
                end = time.monotonic() + wait_time(now, None if expiry is None else expiry.timestamp())
                while not stop.is_set() and (left := end - time.monotonic()) > 0:
                    # Read to its end: the generator holds the connection's lock until then.
                    told = list(connection.notifies(timeout=min(left, _STOP_CHECK), stop_after=1))
                    if any(notification.payload == self._schema for notification in told):
                        break
        except psycopg.Error as error:
            self._drop_listener()
            raise self._failed(error, "wait for runs to take up") from None
        finally:
            self._listening.release()

    def _listen(self) -> psycopg.Connection[Any]:
        """The connection that listens for ``_CHANNEL`` (opened, and listening, on first use)."""
        import psycopg

        if self._listener is None or self._listener.closed:
            self._open()  # the tables, made or upgraded
            connection = psycopg.connect(
                self._url, connect_timeout=max(1, round(self._timeout)), **self._connection_options()
            )
            try:
                connection.execute(sql_text(f"LISTEN {_CHANNEL}"))
                row = connection.execute("SELECT current_schema()").fetchone()
                self._schema = "" if row is None else str(row[0])
            except BaseException:
                connection.close()
                raise
            self._listener = connection
        return self._listener

    def _drop_listener(self) -> None:
        listener, self._listener = self._listener, None
        if listener is not None:
            listener.close()

    def _write(self, saves: Sequence[EncodedSave]) -> list[Exception | None]:
        """Write a batch of saves in one transaction: each save's own refusal, or the batch's failure."""
        import psycopg
        import psycopg_pool

        # In run id order (sorted is stable: one run's saves keep theirs), so that two processes'
        # batches lock the rows they share in the same order.
        order = sorted(range(len(saves)), key=lambda index: saves[index].run_id)
        refusals: list[Exception | None] = [None] * len(saves)
        try:
            self._open()
            now = datetime.fromtimestamp(self._now(), UTC)
            with (
                self._pool.connection() as connection,
                connection.transaction(),
                connection.cursor() as cursor,
            ):
                for index in order:
                    refusals[index] = write_save(cursor, saves[index], now, self.dialect.sql, self._place())
                    if refusals[index] is None and saves[index].columns.status == RunStatus.READY.value:
                        cursor.execute(
                            _NOTIFY
                        )  # delivered when the transaction commits, to wait_ready's listeners
        except psycopg_pool.PoolTimeout as error:
            return [
                CheckpointError(
                    f"could not save the run {save.run_id!r}: no connection to PostgreSQL ({self._where}) within "
                    f"{self._timeout}s ({error}); the run can be saved again once the server is reachable."
                )
                for save in saves
            ]
        except psycopg.Error as error:
            return [self._failed(error, f"save the run {save.run_id!r}") for save in saves]
        except CheckpointError as error:
            return [error] * len(saves)
        return refusals

    def _failed(self, error: psycopg.Error, what: str) -> CheckpointError:
        """The project's error for a PostgreSQL failure: what happened, and what to do."""
        import psycopg.errors

        message = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if isinstance(error, psycopg.errors.DiskFull):
            return CheckpointError(
                f"could not {what}: the disk of PostgreSQL ({self._where}) is full ({message}); free some space, and "
                "the run can be saved again: its next save writes what this one did not."
            )
        if isinstance(error, psycopg.OperationalError):
            return CheckpointError(
                f"could not {what}: the connection to PostgreSQL ({self._where}) failed ({message}); check the "
                "server, then try again (a run saves again at its next step)."
            )
        return CheckpointError(
            f"could not {what} in PostgreSQL ({self._where}): {type(error).__name__}: {message}."
        )


def _unreadable(url: str) -> ParamsError:
    """The error for a URL libpq cannot read. Its own message quotes the part it could not read,
    which may be the password (a raw ``%`` in it): this one quotes none of the URL."""
    if re.search(r"%(?![0-9A-Fa-f]{2})", url):
        why = "a '%' in it is not followed by two hex digits"
    else:
        why = "libpq cannot read it"
    return ParamsError(
        f"the PostgreSQL URL cannot be read ({why}); give postgresql://user:password@host/dbname, with "
        "each special character of the user name and password percent-encoded (a '%' as %25, an '@' as "
        "%40: urllib.parse.quote(password, safe=''))."
    )


def _time(seconds: float) -> datetime:
    """A time of the store's clock (seconds since the epoch) as a column holds it."""
    return datetime.fromtimestamp(seconds, UTC)

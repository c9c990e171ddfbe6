"""The tables of an SQLite store: made in a new file, checked to be toolrunner's in any other, and
upgraded in place from the forms older toolrunners wrote, the first time a store opens the file.

A file written by toolrunner 0.1 (its ``toolrunner_runs`` table without the summary columns) gets
the columns, filled from each run's state, in one transaction. So does a file written before runs
had leases (the summary columns without ``lease_owner`` and ``lease_expires``): the lease columns
are added, and the runs whose status was written as ``running`` while they were paused are read
again (those decided since are ``ready`` now).
"""

from __future__ import annotations

import sqlite3
import time
from typing import Literal

from .._core.errors import CheckpointError
from .runs import SummaryColumns
from .sql import HISTORY, SUMMARY_COLUMNS, columns_of, summary_values

__all__ = ["history", "set_up"]

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
"""A resumer's lease on the run (``_stores.leases``), added after the summary columns; both or neither."""
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
_SUMMARY_SET = ", ".join(f"{name} = ?" for name in SUMMARY_COLUMNS)


def set_up(connection: sqlite3.Connection, place: str, *, synchronous: str, timeout: float) -> None:
    """The tables checked to be toolrunner's (or none, in a database no other program claims:
    ``_check_unclaimed``), then WAL mode, and the tables (made, or
    upgraded from 0.1). The check only reads, so a file that is not toolrunner's is refused as
    it was: nothing that writes (the switch to WAL, which also makes the ``-wal`` and ``-shm``
    files) comes before it. Switching to WAL can find another connection doing the same, and
    SQLite then answers "locked" without waiting: try again until ``timeout``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            _schema(connection, place)  # refuses another program's database, before anything writes
            if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                connection.execute("PRAGMA journal_mode=WAL")
            connection.execute(f"PRAGMA synchronous={synchronous}")
            if _schema(connection, place) != "current":
                connection.execute("BEGIN IMMEDIATE")  # waits for other writers, unlike executescript
                schema = _schema(connection, place)  # again, now that no other writer can change it
                if schema == "missing":
                    for statement in (*_TABLES.split(";"), *_INDEXES.split(";")):
                        connection.execute(statement)
                elif schema == "0.1":
                    _upgrade(connection)
                elif schema == "summaries":
                    _add_leases(connection)
                connection.execute("COMMIT")
            return
        except sqlite3.OperationalError as error:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            if "locked" not in str(error) or time.monotonic() > deadline:
                raise
            time.sleep(0.01)


def _schema(connection: sqlite3.Connection, place: str) -> Literal["missing", "0.1", "summaries", "current"]:
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if not tables & set(_COLUMNS):
        _check_unclaimed(connection, place)
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
    table, columns = next((table, columns) for table, columns in found.items() if columns != _COLUMNS[table])
    raise CheckpointError(
        f"{place} has a table {table!r} that toolrunner did not make (its columns are "
        f"{columns!r}); give SQLiteCheckpointer a file of its own, or a new file."
    )


def _check_unclaimed(connection: sqlite3.Connection, place: str) -> None:
    """Refuse a database without toolrunner's tables that another program claims: one that holds
    any object (a table, a view, an index, a trigger) other than SQLite's own, or whose header
    names a program (``application_id``) or a version of its schema (``user_version``). Only reads:
    a database refused is left as it was. The tables are made only in a database no one claims
    (a new file, an empty one, or an empty database)."""
    objects = connection.execute(
        "SELECT type, name FROM sqlite_master WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name"
    ).fetchall()
    if any(kind == "table" and name in _COLUMNS for kind, name in objects):
        # Another connection made toolrunner's tables since the caller listed the tables (each
        # read outside a transaction sees the file as it is then): its own, not another program's.
        # The caller reads the schema again, and checks those tables, before it writes.
        return
    found = [f"the {kind} {name!r}" for kind, name in objects[:5]]
    if len(objects) > 5:
        found.append(f"{len(objects) - 5} more")
    claims: list[str] = []
    if found:
        claims.append(f"it holds {', '.join(found)}, none of them toolrunner's")
    for pragma in ("application_id", "user_version"):
        value = int(connection.execute(f"PRAGMA {pragma}").fetchone()[0])
        if value:
            claims.append(f"its header's {pragma} is {value}")
    if claims:
        raise CheckpointError(
            f"{place} is another program's database ({'; '.join(claims)}), so it was left as it was: "
            "SQLiteCheckpointer makes its tables and switches its file to WAL mode, which would change how that "
            "program uses it. Give SQLiteCheckpointer a file of its own, or a new file."
        )


def _upgrade(connection: sqlite3.Connection) -> None:
    """Add the summary columns (and the lease columns) to a 0.1 file and fill them from each
    run's state."""
    for name, kind in (*_ADDED, *_LEASE_COLUMNS):
        connection.execute(f"ALTER TABLE toolrunner_runs ADD COLUMN {name} {kind}")
    runs = connection.execute("SELECT run_id, state, updated FROM toolrunner_runs").fetchall()
    for run_id, header, updated in runs:
        connection.execute(
            f"UPDATE toolrunner_runs SET created = ?, {_SUMMARY_SET} WHERE run_id = ?",
            (updated, *summary_values(_columns_of(connection, run_id, header)), run_id),
        )
    for statement in _INDEXES.split(";"):
        connection.execute(statement)


def _add_leases(connection: sqlite3.Connection) -> None:
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
            (*summary_values(_columns_of(connection, run_id, header)), run_id),
        )


def _columns_of(connection: sqlite3.Connection, run_id: str, header: str) -> SummaryColumns:
    """The summary columns of a run read from its rows (an upgrade's)."""
    return columns_of(header, *history(connection, run_id), run_id)


def history(connection: sqlite3.Connection, run_id: str) -> tuple[list[str], list[str]]:
    """The JSON text of a run's history messages and requests' usage, in order."""
    messages, usage = ([text for (text,) in connection.execute(query, (run_id,))] for _, _, query in HISTORY)
    return messages, usage

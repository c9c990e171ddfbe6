"""The tables of a PostgreSQL store, in the connection's current schema: made where they are
missing, checked to be toolrunner's where they are not, and upgraded in place from the form older
toolrunners wrote, the first time a store opens them.

Tables made before runs had leases get the lease columns, and the runs written as running while
they were paused are read again (those decided since are ready).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, LiteralString, cast

from .._core.errors import CheckpointError
from .sql import columns_of

if TYPE_CHECKING:
    import psycopg

__all__ = ["ROWS", "set_up", "sql_text"]

_RUNS_SUMMARIES = [
    "run_id", "sequence", "version", "state", "created", "updated",
    "status", "end_reason", "waiting", "turns", "cost", "failure",
]  # fmt: skip
"""The columns of ``toolrunner_runs`` before runs had leases."""
_COLUMNS = {
    "toolrunner_runs": [*_RUNS_SUMMARIES, "lease_owner", "lease_expires"],
    "toolrunner_messages": ["run_id", "position", "message"],
    "toolrunner_usage": ["run_id", "position", "usage"],
}  # fmt: skip
_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolrunner_runs (
    run_id TEXT PRIMARY KEY, sequence BIGINT NOT NULL, version INTEGER NOT NULL, state TEXT NOT NULL,
    created TIMESTAMPTZ NOT NULL, updated TIMESTAMPTZ NOT NULL, status TEXT NOT NULL, end_reason TEXT,
    waiting TEXT, turns INTEGER NOT NULL, cost TEXT, failure TEXT, lease_owner TEXT, lease_expires TIMESTAMPTZ
);
CREATE TABLE IF NOT EXISTS toolrunner_messages (
    run_id TEXT NOT NULL, position INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (run_id, position)
);
CREATE TABLE IF NOT EXISTS toolrunner_usage (
    run_id TEXT NOT NULL, position INTEGER NOT NULL, usage TEXT NOT NULL, PRIMARY KEY (run_id, position)
);
CREATE INDEX IF NOT EXISTS toolrunner_runs_by_status ON toolrunner_runs (status, created, run_id);
CREATE INDEX IF NOT EXISTS toolrunner_runs_by_created ON toolrunner_runs (created, run_id)
"""
_LOCK = 7_231_964_020
"""The advisory lock that serialises the making of the tables (``CREATE ... IF NOT EXISTS`` may
otherwise collide with another process doing the same)."""
ROWS = """
SELECT run.{first}, run.state,
    ARRAY(SELECT message FROM toolrunner_messages WHERE run_id = run.run_id ORDER BY position),
    ARRAY(SELECT usage FROM toolrunner_usage WHERE run_id = run.run_id ORDER BY position)
FROM toolrunner_runs AS run WHERE {where}
"""
"""Runs' rows with their history's, in order: one statement, so one snapshot of the three tables."""
_PAUSED_RUNNING = ROWS.format(
    first="run_id", where="run.status = 'running' AND run.end_reason = 'awaiting_approval'"
)
"""The runs that tables made before leases list as running while they are paused: some are ready."""


def set_up(connection: psycopg.Connection[Any], place: str) -> None:
    """Make the tables that are missing, after checking that those present are toolrunner's
    (and add the lease columns to tables made before runs had them)."""
    with connection.transaction():
        connection.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK,))
        rows = connection.execute(
            "SELECT table_name, column_name FROM information_schema.columns WHERE table_schema = current_schema() "
            "AND table_name = ANY(%s) ORDER BY table_name, ordinal_position",
            (list(_COLUMNS),),
        ).fetchall()
        found: dict[str, list[str]] = {}
        for table, column in rows:
            found.setdefault(table, []).append(column)
        upgrade = found.get("toolrunner_runs") == _RUNS_SUMMARIES
        for table, columns in found.items():
            if columns != _COLUMNS[table] and not (upgrade and table == "toolrunner_runs"):
                raise CheckpointError(
                    f"{place} has a table {table!r} that toolrunner did not make (its columns "
                    f"are {columns!r}); give PostgresCheckpointer a database or schema of its own."
                )
        if upgrade:
            _add_leases(connection)
        if found.keys() != _COLUMNS.keys():
            for statement in _SCHEMA.split(";"):
                connection.execute(sql_text(statement))


def _add_leases(connection: psycopg.Connection[Any]) -> None:
    """Add the lease columns, and read again the runs written as running while paused: those
    decided since are ready (in the transaction of ``set_up``)."""
    connection.execute(
        "ALTER TABLE toolrunner_runs ADD COLUMN lease_owner TEXT, ADD COLUMN lease_expires TIMESTAMPTZ"
    )
    rows = connection.execute(_PAUSED_RUNNING).fetchall()
    for run_id, header, messages, usage in rows:
        columns = columns_of(header, messages, usage, run_id)
        connection.execute(
            "UPDATE toolrunner_runs SET status = %s, waiting = %s, failure = %s WHERE run_id = %s",
            (columns.status, columns.waiting, columns.failure, run_id),
        )


def sql_text(text: str) -> LiteralString:
    """SQL text made here from constants (values go as parameters, never into the text), typed as
    psycopg's ``execute`` wants it."""
    return cast("LiteralString", text)

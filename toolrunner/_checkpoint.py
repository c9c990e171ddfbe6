"""Where runs are saved: the ``Checkpointer`` protocol, and a store in memory and one in SQLite.

A runner with a checkpointer saves its ``RunState`` after each reply, before each tool call starts,
as soon as each finishes, and when the loop ends. A save is a ``Checkpoint``: the state, and how
much of it the store holds already. The history and the per-request usage only grow (but for
``set_messages_params``), so a store need write only their new entries, and a save costs the same
at turn 400 as at turn 10.

Two runners must not drive one run: each save carries the number of saves before it
(``sequence``), and a store refuses a save that does not follow the one it holds.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol, cast, runtime_checkable

import anyio
import anyio.to_thread

from ._errors import CheckpointError, StateError
from ._state import STATE_VERSION, RunState, message_data, request_usage_data
from ._text import sendable_text

__all__ = ["Checkpoint", "Checkpointer", "MemoryCheckpointer", "SQLiteCheckpointer", "Saver"]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One save of a run.

    Attributes:
        run_id: The run's name in the store.
        state: The state to save.
        sequence: How many saves of this run came before this one (0: the run is new, and must
            not exist in the store yet).
        kept_messages: The first ``kept_messages`` messages are as the previous save left them.
        kept_usage: The first ``kept_usage`` entries of ``state.usage`` are as the previous save
            left them.
    """

    run_id: str
    state: RunState
    sequence: int
    kept_messages: int = 0
    kept_usage: int = 0


@runtime_checkable
class Checkpointer(Protocol):
    """A store of runs: what ``ToolRunner(checkpointer=...)`` saves to and ``ToolRunner.resume`` loads from.

    ``save`` must be atomic (all of the checkpoint or nothing) and refuse a checkpoint whose
    ``sequence`` does not follow the stored one (``CheckpointError``): that is how two runners of
    one run are caught. A store may write everything each time (``state.to_json()``) or only what
    ``kept_messages`` and ``kept_usage`` say is new.
    """

    async def save(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` (atomically), unless another runner saved the run since."""
        ...

    async def load(self, run_id: str) -> Checkpoint | None:
        """The run's latest save (``kept_*`` count what the store holds), or ``None``."""
        ...


def _check_sequence(run_id: str, stored: int | None, checkpoint: Checkpoint) -> None:
    if checkpoint.sequence == 0 and stored is not None:
        raise CheckpointError(
            f"a run named {run_id!r} is saved already; resume it with ToolRunner.resume(..., run_id={run_id!r}), "
            "or start the new run under another run_id."
        )
    if checkpoint.sequence > 0 and stored != checkpoint.sequence - 1:
        raise CheckpointError(
            f"the run {run_id!r} was saved by another runner since this one loaded it (save "
            f"{'none' if stored is None else stored + 1} is stored, this is save {checkpoint.sequence + 1}); "
            "only one runner may drive a run at a time, so this one stops here."
        )


class MemoryCheckpointer:
    """Keeps runs in memory, as JSON text: for tests, and to see what a store receives.

    Attributes:
        saves: How many saves each run got.
    """

    def __init__(self) -> None:
        self._runs: dict[str, tuple[int, str]] = {}
        self.saves: dict[str, int] = {}

    async def save(self, checkpoint: Checkpoint) -> None:
        stored = self._runs.get(checkpoint.run_id)
        _check_sequence(checkpoint.run_id, None if stored is None else stored[0], checkpoint)
        self._runs[checkpoint.run_id] = (checkpoint.sequence, checkpoint.state.to_json())
        self.saves[checkpoint.run_id] = self.saves.get(checkpoint.run_id, 0) + 1

    async def load(self, run_id: str) -> Checkpoint | None:
        stored = self._runs.get(run_id)
        if stored is None:
            return None
        state = RunState.from_json(stored[1])
        return Checkpoint(run_id, state, stored[0], len(state.messages), len(state.usage))

    def run_ids(self) -> list[str]:
        """The runs saved here."""
        return list(self._runs)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS toolrunner_runs (
    run_id TEXT PRIMARY KEY, sequence INTEGER NOT NULL, version INTEGER NOT NULL,
    state TEXT NOT NULL, updated REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS toolrunner_messages (
    run_id TEXT NOT NULL, position INTEGER NOT NULL, message TEXT NOT NULL, PRIMARY KEY (run_id, position)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS toolrunner_usage (
    run_id TEXT NOT NULL, position INTEGER NOT NULL, usage TEXT NOT NULL, PRIMARY KEY (run_id, position)
) WITHOUT ROWID;
"""
_TABLES = {"toolrunner_runs", "toolrunner_messages", "toolrunner_usage"}
_COLUMNS = {
    "toolrunner_runs": ["run_id", "sequence", "version", "state", "updated"],
    "toolrunner_messages": ["run_id", "position", "message"],
    "toolrunner_usage": ["run_id", "position", "usage"],
}
_LENGTHS = "stored_lengths"
"""The header's key for the lengths of the history and the usage the rows hold."""


class SQLiteCheckpointer:
    """Keeps runs in an SQLite file (the standard library's ``sqlite3``, WAL mode), off the event loop.

    Runs of several runners and processes may share one file. Each save is one transaction that
    writes the state's fixed-size part and only the new messages and usage entries.

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

    def __repr__(self) -> str:
        return f"SQLiteCheckpointer({str(self.path)!r})"

    async def save(self, checkpoint: Checkpoint) -> None:
        # Encoding happens here, on the event loop's thread, so the state is read where it lives.
        state = checkpoint.state
        # How long the history and the usage are, so that a load notices rows lost or added.
        header = _json({**state.to_dict(history=False), _LENGTHS: [len(state.messages), len(state.usage)]})
        messages = [
            (position, _json(message_data(state.messages[position], position)))
            for position in range(checkpoint.kept_messages, len(state.messages))
        ]
        usage = [
            (position, _json(request_usage_data(state.usage[position])))
            for position in range(checkpoint.kept_usage, len(state.usage))
        ]
        await anyio.to_thread.run_sync(self._write, checkpoint, header, messages, usage)

    async def load(self, run_id: str) -> Checkpoint | None:
        return await anyio.to_thread.run_sync(self._read, run_id)

    def close(self) -> None:
        """Close the connection (the next use opens it again)."""
        with self._lock:
            if self._connection is not None:
                self._connection.close()
                self._connection = None

    # -- in a worker thread -------------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        if self._connection is not None:
            return self._connection
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
            raise CheckpointError(
                f"{str(self.path)!r} cannot be used as a checkpoint database ({error}); give SQLiteCheckpointer "
                "the path of an SQLite file of its own, or of a new file."
            ) from error
        self._connection = connection
        return connection

    def _set_up(self, connection: sqlite3.Connection) -> None:
        """WAL mode and the tables. Switching to WAL can find another connection doing the same,
        and SQLite then answers "locked" without waiting: try again until ``timeout``."""
        deadline = time.monotonic() + self._timeout
        while True:
            try:
                if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
                    connection.execute("PRAGMA journal_mode=WAL")
                connection.execute(f"PRAGMA synchronous={self._synchronous}")
                tables = {
                    row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")
                }
                if not tables >= _TABLES:
                    connection.execute("BEGIN IMMEDIATE")  # waits for other writers, unlike executescript
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            connection.execute(statement)
                    connection.execute("COMMIT")
                for table, expected in _COLUMNS.items():
                    columns = [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]
                    if columns != expected:
                        raise CheckpointError(
                            f"{str(self.path)!r} has a table {table!r} that toolrunner did not make (its columns are "
                            f"{columns!r}); give SQLiteCheckpointer a file of its own, or a new file."
                        )
                return
            except sqlite3.OperationalError as error:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                if "locked" not in str(error) or time.monotonic() > deadline:
                    raise
                time.sleep(0.01)

    def _write(
        self,
        checkpoint: Checkpoint,
        header: str,
        messages: list[tuple[int, str]],
        usage: list[tuple[int, str]],
    ) -> None:
        run_id = checkpoint.run_id
        with self._lock:
            connection = self._connect()
            try:
                connection.execute("BEGIN IMMEDIATE")
                row = connection.execute(
                    "SELECT sequence FROM toolrunner_runs WHERE run_id = ?", (run_id,)
                ).fetchone()
                _check_sequence(run_id, None if row is None else int(row[0]), checkpoint)
                connection.execute(
                    "INSERT INTO toolrunner_runs (run_id, sequence, version, state, updated) VALUES (?, ?, ?, ?, ?) "
                    "ON CONFLICT (run_id) DO UPDATE SET sequence = excluded.sequence, version = excluded.version, "
                    "state = excluded.state, updated = excluded.updated",
                    (run_id, checkpoint.sequence, STATE_VERSION, header, time.time()),
                )
                for table, kept, rows in (
                    ("toolrunner_messages", checkpoint.kept_messages, messages),
                    ("toolrunner_usage", checkpoint.kept_usage, usage),
                ):
                    column = "message" if table == "toolrunner_messages" else "usage"
                    connection.execute(
                        f"DELETE FROM {table} WHERE run_id = ? AND position >= ?", (run_id, kept)
                    )
                    connection.executemany(
                        f"INSERT INTO {table} (run_id, position, {column}) VALUES (?, ?, ?)",
                        [(run_id, position, text) for position, text in rows],
                    )
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:
                    connection.execute("ROLLBACK")
                raise

    def _read(self, run_id: str) -> Checkpoint | None:
        with self._lock:
            connection = self._connect()
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
        try:
            header: object = json.loads(row[1])
            lengths: object = None
            if isinstance(header, dict):
                lengths = cast("dict[str, object]", header).pop(_LENGTHS, None)
            if lengths is not None and lengths != [len(messages), len(usage)]:
                raise ValueError(
                    f"the run's history and usage have the lengths {lengths!r}, but the file holds {len(messages)} "
                    f"and {len(usage)} rows for it (rows were deleted or added by hand)"
                )
            state = RunState.from_dict(
                cast(object, header),
                messages=[json.loads(text) for (text,) in messages],
                usage=[json.loads(text) for (text,) in usage],
            )
        except (ValueError, StateError, RecursionError) as error:  # RecursionError: a row nested too deeply
            raise StateError(
                f"the saved run {run_id!r} in {str(self.path)!r} cannot be loaded: {error}"
            ) from error
        return Checkpoint(run_id, state, int(row[0]), len(state.messages), len(state.usage))


def _json(value: object) -> str:
    """``value`` as JSON text SQLite can store as UTF-8. A lone surrogate (a tool's input can hold
    one, as ``os.listdir`` gives them) is written as a ``\\udcXX`` escape, which reads back as the
    same string."""
    text = json.dumps(value, ensure_ascii=False)
    return text if sendable_text(text) is text else json.dumps(value)


class Saver:
    """Saves one runner's states to its checkpointer: one save at a time, only when the state
    changed, and only the history and usage entries the store does not hold."""

    def __init__(self, checkpointer: Checkpointer, run_id: str, *, loaded: Checkpoint | None = None) -> None:
        self._checkpointer = checkpointer
        self._run_id = run_id
        self._lock = anyio.Lock()
        self._saved: RunState | None = None if loaded is None else loaded.state
        self._sequence = 0 if loaded is None else loaded.sequence + 1
        self._kept_messages = 0 if loaded is None else loaded.kept_messages
        self._kept_usage = 0 if loaded is None else loaded.kept_usage
        # Incremented when the history is replaced rather than appended to: the store's copy of it
        # is then no longer a prefix of the state's.
        self._epoch = 0
        self._saved_epoch = 0
        self._refused: CheckpointError | None = None  # once refused, this runner saves no more

    def derived(self, before: RunState, after: RunState) -> None:
        """``after`` follows from ``before`` by a pure transition (a finished turn's append, from a
        journal that holds every result): if ``before`` is saved, resuming from it reaches
        ``after`` again, so ``after`` counts as saved; the next save writes what it added."""
        if self._saved is before:
            self._saved = after

    def history_replaced(self) -> None:
        """The history was replaced (``set_messages_params``): the next save writes all of it."""
        self._epoch += 1

    async def save(self, current: Callable[[], RunState]) -> None:
        """Save the state ``current()`` gives once the previous save is done, if it changed."""
        async with self._lock:
            if self._refused is not None:
                raise self._refused
            state, epoch = current(), self._epoch
            if state is self._saved:
                return
            same_history = epoch == self._saved_epoch
            checkpoint = Checkpoint(
                self._run_id,
                state,
                self._sequence,
                kept_messages=min(self._kept_messages, len(state.messages)) if same_history else 0,
                kept_usage=min(self._kept_usage, len(state.usage)),
            )
            try:
                await self._checkpointer.save(checkpoint)
            except CheckpointError as error:
                self._refused = error
                raise
            self._saved, self._saved_epoch, self._sequence = state, epoch, self._sequence + 1
            self._kept_messages, self._kept_usage = len(state.messages), len(state.usage)

"""What only ``SQLiteCheckpointer`` does: upgrading a file that toolrunner 0.1 wrote, in place; the
project's errors for a full disk (and a run that goes on once there is room), a locked file and a
read-only one; and the indexes a listing reads.

The contract every store keeps is in ``test_store_contract.py``.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.helpers import MODEL, USER, results_of
from tests.support.stores import look, paid, pay
from toolrunner import (
    CallStatus,
    CheckpointError,
    Phase,
    RunStatus,
    SQLiteCheckpointer,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

RELEASE_0_1 = Path(__file__).parents[1] / "fixtures" / "stores" / "release-0.1.db"
"""Three runs saved by toolrunner 0.1.0 (``make_release_0_1_store.py``): finished, waiting for a
decision on ``pay(amount=120)``, and stopped after its first turn."""


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


def columns(path: Path, table: str) -> list[str]:
    with sqlite3.connect(path) as connection:
        return [row[1] for row in connection.execute(f"PRAGMA table_info({table})")]


# -- the upgrade of a 0.1 file ---------------------------------------------------------------------


@pytest.fixture
def old_file(tmp_path: Path) -> Path:
    path = tmp_path / "runs.db"
    shutil.copy(RELEASE_0_1, path)
    return path


async def test_a_file_written_by_release_0_1_is_upgraded_in_place_and_its_runs_listed(old_file: Path) -> None:
    assert "status" not in columns(old_file, "toolrunner_runs")
    with sqlite3.connect(old_file) as connection:
        updated = dict(connection.execute("SELECT run_id, updated FROM toolrunner_runs").fetchall())
    store = SQLiteCheckpointer(old_file)
    try:
        page = await store.list_runs()
        summaries = {summary.run_id: summary for summary in page.runs}
        assert {run_id: summary.status for run_id, summary in summaries.items()} == {
            "finished": RunStatus.FINISHED,
            "waiting": RunStatus.AWAITING,
            "running": RunStatus.RUNNING,
        }
        waiting = summaries["waiting"]
        assert [(call.id, call.name, call.input) for call in waiting.waiting] == [
            ("toolu_pay", "pay", {"amount": 120})
        ]
        assert waiting.end_reason == "awaiting_approval"
        assert summaries["finished"].turns == 2
        for run_id, summary in summaries.items():  # 0.1 kept no creation time: the last save's stands in
            assert summary.created == summary.updated
            assert summary.updated.timestamp() == pytest.approx(updated[run_id], abs=1e-6)
        assert [summary.run_id for summary in (await store.list_runs(status="awaiting")).runs] == ["waiting"]
    finally:
        store.close()
    assert columns(old_file, "toolrunner_runs")[-9:] == [
        "created",
        "status",
        "end_reason",
        "waiting",
        "turns",
        "cost",
        "failure",
        "lease_owner",
        "lease_expires",
    ]
    with sqlite3.connect(old_file) as connection:
        indexes = {
            row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type = 'index'")
        }
    assert {"toolrunner_runs_by_status", "toolrunner_runs_by_created"} <= indexes


async def test_the_runs_of_an_upgraded_file_are_decided_and_resumed(old_file: Path) -> None:
    store = SQLiteCheckpointer(old_file)
    try:
        record = await store.approve_call("waiting", "toolu_pay", by="ada")
        assert record.status is CallStatus.APPROVED
        fake = FakeMessagesAPI([text_reply("Paid."), text_reply("Done.")])
        waiting = await ToolRunner.resume(
            fake.async_client(), checkpointer=store, run_id="waiting", tools=[look, pay]
        )
        await waiting.until_done()
        assert paid == [120]
        running = await ToolRunner.resume(
            fake.async_client(), checkpointer=store, run_id="running", tools=[look, pay]
        )
        await running.until_done()
        assert running.state.end_reason == "model"
        statuses = {summary.run_id: summary.status for summary in (await store.list_runs()).runs}
        assert set(statuses.values()) == {RunStatus.FINISHED}
    finally:
        store.close()


async def test_stores_opening_an_old_file_at_once_upgrade_it_once(old_file: Path) -> None:
    stores = [SQLiteCheckpointer(old_file) for _ in range(4)]
    found: list[int] = []

    async def count(store: SQLiteCheckpointer) -> None:
        found.append(len((await store.list_runs()).runs))

    try:
        async with anyio.create_task_group() as group:
            for store in stores:
                group.start_soon(count, store)
    finally:
        for store in stores:
            store.close()
    assert found == [3, 3, 3, 3]
    assert columns(old_file, "toolrunner_runs").count("status") == 1


async def test_a_damaged_run_of_an_old_file_is_listed_as_failed_with_the_reason(old_file: Path) -> None:
    with sqlite3.connect(old_file) as connection:
        connection.execute("UPDATE toolrunner_runs SET state = '{\"version\": 4}' WHERE run_id = 'running'")
    store = SQLiteCheckpointer(old_file)
    try:
        summary = await store.get_run("running")
        assert summary is not None
        assert summary.status is RunStatus.FAILED
        assert summary.failure is not None
        assert "cannot be loaded" in summary.failure["message"]
        assert summary.failure["type"] == "StateError"
    finally:
        store.close()


async def test_a_file_with_a_table_of_another_shape_is_refused_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE toolrunner_runs (run_id TEXT, sequence INTEGER)")
    store = SQLiteCheckpointer(path)
    with pytest.raises(CheckpointError, match="has a table 'toolrunner_runs' that toolrunner did not make"):
        await store.list_runs()
    assert columns(path, "toolrunner_runs") == ["run_id", "sequence"]


def other_programs_files() -> dict[str, Callable[[Path], object]]:
    """Files that are not toolrunner's, each made by a function of its path."""

    def database(statements: list[str]) -> Callable[[Path], None]:
        def make(path: Path) -> None:
            connection = sqlite3.connect(path)
            for statement in statements:
                connection.execute(statement)
            connection.commit()
            connection.close()

        return make

    return {
        "another program's database": database(["CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"]),
        "another program's database in WAL mode": database(
            ["PRAGMA journal_mode=WAL", "CREATE TABLE notes (body TEXT)", "INSERT INTO notes VALUES ('hi')"]
        ),
        "a toolrunner table of another shape": database(
            ["CREATE TABLE toolrunner_runs (run_id TEXT, sequence INTEGER)", "CREATE TABLE notes (body TEXT)"]
        ),
        "another program's views, and no table": database(["CREATE VIEW answer AS SELECT 42 AS value"]),
        "another program's view and its trigger": database(
            [
                "CREATE VIEW notes AS SELECT 'hi' AS body",
                "CREATE TRIGGER keep INSTEAD OF INSERT ON notes BEGIN SELECT RAISE(IGNORE); END",
            ]
        ),
        "another program's application_id": database(["PRAGMA application_id = 1296388936"]),
        "another program's user_version": database(["PRAGMA user_version = 7"]),
        "a text file": lambda path: path.write_text("my notes, not a database " * 100),
        "a file of three bytes": lambda path: path.write_bytes(b"abc"),
    }


@pytest.mark.parametrize("kind", list(other_programs_files()))
async def test_a_file_that_is_not_toolrunners_is_refused_before_anything_touches_it(
    tmp_path: Path, kind: str
) -> None:
    path = tmp_path / "their.db"
    other_programs_files()[kind](path)
    before, listing = path.read_bytes(), sorted(os.listdir(tmp_path))
    store = SQLiteCheckpointer(path)
    for use in (store.list_runs, lambda: store.load("r"), lambda: store.get_run("r")):
        with pytest.raises(CheckpointError, match=r"another program's database|cannot be used|did not make"):
            await use()
    if "another program's" in kind:  # says what claims the file
        with pytest.raises(
            CheckpointError, match=r"is another program's database \((it holds the|its header's)"
        ):
            await store.list_runs()
    runner = ToolRunner(
        FakeMessagesAPI([text_reply("Hi.")]).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        checkpointer=store,
        run_id="r",
    )
    with pytest.raises(CheckpointError):
        await runner.until_done()
    store.close()
    assert path.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == listing


async def test_a_file_toolrunner_made_stays_its_own_with_objects_added_to_it(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    await store.list_runs()
    store.close()
    with sqlite3.connect(tmp_path / "runs.db") as connection:
        connection.execute(
            "CREATE VIEW waiting AS SELECT run_id FROM toolrunner_runs WHERE status = 'awaiting'"
        )
        connection.execute("CREATE INDEX by_updated ON toolrunner_runs (updated)")
        connection.execute("PRAGMA user_version = 3")
    connection.close()
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    assert (await store.list_runs()).runs == ()
    store.close()


async def test_an_empty_file_or_an_empty_database_becomes_a_store(tmp_path: Path) -> None:
    (tmp_path / "empty.db").write_bytes(b"")
    with sqlite3.connect(tmp_path / "blank.db") as connection:
        connection.execute("CREATE TABLE scratch (x)")
        connection.execute("DROP TABLE scratch")  # a database with no object, and nothing in its header
    connection.close()
    assert (tmp_path / "blank.db").read_bytes().startswith(b"SQLite format 3\x00")
    for name in ("empty.db", "blank.db"):
        store = SQLiteCheckpointer(tmp_path / name)
        assert (await store.list_runs()).runs == ()
        store.close()


# -- failures of the file -----------------------------------------------------------------------


@tool
async def big(part: int) -> str:
    """Return a large result."""
    return f"part {part}: " + "x" * 20_000


def page_limit(monkeypatch: pytest.MonkeyPatch) -> Callable[[int | None], None]:
    """What fills the disk: ``limit(pages)`` caps the database file (SQLite's ``max_page_count``)
    for the connections opened from then on; ``limit(None)`` lifts the cap."""
    pages: list[int | None] = [None]
    connect = sqlite3.connect

    def capped(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        connection = connect(*args, **kwargs)
        if pages[0] is not None:
            connection.execute(f"PRAGMA max_page_count = {pages[0]}")
        return connection

    monkeypatch.setattr(sqlite3, "connect", capped)

    def limit(value: int | None) -> None:
        pages[0] = value

    return limit


async def test_a_full_disk_is_named_and_the_run_saves_again_once_there_is_room(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    limit = page_limit(monkeypatch)
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)
    script = [
        tool_reply(tool_call("big", {"part": 1}, id="toolu_1")),
        tool_reply(tool_call("big", {"part": 2}, id="toolu_2")),
        text_reply("Done."),
    ]
    fake = FakeMessagesAPI(script)
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[big],
        checkpointer=store,
        run_id="r",
    )
    async for _ in runner:
        break  # the first reply is saved
    with sqlite3.connect(path) as connection:
        full = connection.execute("PRAGMA page_count").fetchone()[0]
    limit(full)
    store.close()  # the next use opens the file again, now full
    with pytest.raises(CheckpointError) as raised:
        await runner.until_done()
    message = str(raised.value)
    assert f"{str(path)!r} is full" in message
    assert "free some space, and the run can be saved again" in message
    limit(None)
    store.close()
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert runner.state.phase is Phase.DONE
    assert [result[0] for message in runner.messages[2::2] for result in results_of(message)] == [
        "toolu_1",
        "toolu_2",
    ]
    loaded = await store.load("r")
    assert loaded is not None
    assert loaded.state.phase is Phase.DONE
    assert len(loaded.state.messages) == len(runner.messages)
    store.close()


async def test_a_file_locked_by_another_process_for_too_long_is_named(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path, timeout=0.05)
    fake = FakeMessagesAPI([text_reply("Hi.")])
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], checkpointer=store, run_id="r"
    )
    await store.list_runs()  # the tables exist
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(CheckpointError, match=r"held .*runs\.db' locked for longer than timeout=0\.05s"):
            await runner.until_done()
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await runner.until_done()  # the lock is gone: the run saves, and goes on
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.status is RunStatus.FINISHED
    store.close()


# -- the indexes a listing reads -----------------------------------------------------------------


def test_listing_the_waiting_runs_reads_the_status_index(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    anyio.run(SQLiteCheckpointer(path).list_runs)
    with sqlite3.connect(path) as connection:
        plan = connection.execute(
            "EXPLAIN QUERY PLAN SELECT run_id FROM toolrunner_runs WHERE status IN (?) ORDER BY created DESC, "
            "run_id DESC LIMIT 51",
            ("awaiting",),
        ).fetchall()
    details = " ".join(str(row[-1]) for row in plan)
    assert "toolrunner_runs_by_status" in details
    assert "TEMP B-TREE" not in details  # read in order from the index, not sorted


class _StaleFirstListing(sqlite3.Connection):
    """A connection whose first listing of the tables is as it was before another connection made
    toolrunner's tables: what two stores opening one new file at once can see, between the two
    reads of ``sqlite_master`` that the check of an unclaimed file makes."""

    listings = 0

    def execute(self, sql: str, parameters: Any = (), /) -> sqlite3.Cursor:
        if sql == "SELECT name FROM sqlite_master WHERE type='table'":
            type(self).listings += 1
            if type(self).listings == 1:
                return super().execute("SELECT name FROM sqlite_master WHERE 0")
        return super().execute(sql, parameters)


def test_tables_another_store_made_meanwhile_are_not_another_programs(tmp_path: Path) -> None:
    """Found by CI: several runners opening one new file at once. One store's tables, made between
    another's two reads of the file's schema, were taken for another program's database."""
    from toolrunner._stores.sqlite_schema import set_up

    path = tmp_path / "runs.db"
    made = sqlite3.connect(path, isolation_level=None)
    set_up(made, str(path), synchronous="NORMAL", timeout=5)  # the other store: its tables, committed
    made.close()
    _StaleFirstListing.listings = 0
    stale = sqlite3.connect(path, isolation_level=None, factory=_StaleFirstListing)
    try:
        set_up(stale, str(path), synchronous="NORMAL", timeout=5)
        assert _StaleFirstListing.listings >= 2  # the stale listing was read, then a true one
        tables = {row[0] for row in stale.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        assert {"toolrunner_runs", "toolrunner_messages", "toolrunner_usage"} <= tables
    finally:
        stale.close()

"""The promises at a store's edges, kept at every way in: the runner, the store's methods, the
command line and the inbox, on every store (``store``: memory, SQLite, PostgreSQL).

- who decided (``by=``) and a run's id follow one rule each (``toolrunner._core.ids``), checked before
  anything is saved;
- a listing's cursor that decodes but that the store cannot use is a ``ParamsError`` (exit 2, a
  400 page);
- a time too close to the ends of the calendar is refused before a listing or a prune acts;
- a damaged summary row is listed as a failed run that names itself, and the listing goes on;
- a prune by age alone keeps the runs that wait for a person.
"""

from __future__ import annotations

import base64
import dataclasses
import io
import json
import re
import sqlite3
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import anyio.to_thread
import pytest

from tests.support.helpers import MODEL
from tests.support.inbox_helpers import TOKEN, Person
from tests.support.stores import SQL_KINDS, USER, finished_run, paid, paused_run, save_changed
from toolrunner import (
    ApprovalError,
    Checkpoint,
    ParamsError,
    PostgresCheckpointer,
    RunState,
    RunStatus,
    RunStore,
    SQLiteCheckpointer,
    StateError,
    SyncToolRunner,
    ToolRunner,
)
from toolrunner._ops.cli import ExitCode, run
from toolrunner.inbox import create_app
from toolrunner.inbox._live import waiting_versions
from toolrunner.testing import FakeMessagesAPI, text_reply

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


def url_of(store: RunStore) -> str | None:
    """The URL the command line reaches ``store`` by (``None``: a store in this process's memory)."""
    if isinstance(store, SQLiteCheckpointer):
        return str(store.path)
    if isinstance(store, PostgresCheckpointer):
        return store._url  # pyright: ignore[reportPrivateUsage]
    return None


async def cli(store: RunStore, *argv: str) -> tuple[int, str, str]:
    """The command line on ``store`` (in a worker thread: it runs an event loop of its own)."""
    url = url_of(store)
    assert url is not None
    out, err = io.StringIO(), io.StringIO()
    code = await anyio.to_thread.run_sync(lambda: run([*argv, "--store", url], out, err))
    return code, out.getvalue(), err.getvalue()


sql_stores = pytest.mark.parametrize("store", SQL_KINDS, indirect=True)
"""The command line reaches a store by its URL: its tests take the SQL stores (a MemoryCheckpointer
has none)."""


async def still_waits(store: RunStore, run_id: str, call_id: str, sequence: int) -> None:
    """The call waits as it did, and nothing was saved since (the store's sequence did not move)."""
    loaded = await store.load(run_id)
    assert loaded is not None
    assert loaded.sequence == sequence
    record = loaded.state.calls[call_id]
    assert (record.decision, record.decided_by) == (None, None)
    summary = await store.get_run(run_id)
    assert summary is not None
    assert [call.id for call in summary.waiting] == [call_id]


# -- who decided ---------------------------------------------------------------------------------------

BAD_BY: list[Any] = [
    4711,  # a user id from a web app: saved, it made every later load of the run fail
    True,
    b"ada",
    "",
    "   ",
    "a" * 257,
    "ada\x00",
    "ada\nbob",
    "\x1b[2Jada",
    "ada\u2028",
    "caf\udce9",
]


@pytest.mark.parametrize("by", BAD_BY, ids=repr)
async def test_a_decider_that_is_not_a_name_is_refused_by_the_store_before_anything_is_saved(
    store: RunStore, by: Any
) -> None:
    [call] = await paused_run(store, "r", 120)
    loaded = await store.load("r")
    assert loaded is not None
    for decide in (
        lambda: store.approve_call("r", call, by=by),
        lambda: store.approve_call("r", call, input={"amount": 5}, by=by),
        lambda: store.deny_call("r", call, "No.", by=by),
        lambda: store.answer_call("r", call, "done elsewhere", by=by),
    ):
        with pytest.raises(ApprovalError, match="Nothing was decided"):
            await decide()
        await still_waits(store, "r", call, loaded.sequence)
    record = await store.approve_call("r", call, by="a" * 256)  # the longest name there is
    assert record.decided_by == "a" * 256


@pytest.mark.parametrize("by", BAD_BY, ids=repr)
async def test_the_runner_refuses_the_same_deciders_as_the_store(store: RunStore, by: Any) -> None:
    [call] = await paused_run(store, "r", 120)
    from tests.support.stores import look, pay

    runner = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=[pay, look],
    )
    for decide in (
        lambda: runner.approve(call, by=by),
        lambda: runner.deny(call, "No.", by=by),
        lambda: runner.answer(call, "done", by=by),
    ):
        with pytest.raises(ApprovalError, match="Nothing was decided"):
            decide()
    assert [waiting.id for waiting in runner.pending_approvals] == [call]


async def test_the_other_arguments_of_a_decision_are_checked_before_the_run_is_read(store: RunStore) -> None:
    [call] = await paused_run(store, "r", 120)
    loaded = await store.load("r")
    assert loaded is not None
    with pytest.raises(ApprovalError, match=r"is_error= takes True or False, not 'no'"):
        await store.answer_call("r", call, "done", is_error="no")  # pyright: ignore[reportArgumentType]
    with pytest.raises(ApprovalError, match=r"tool_use_id must be the id of a waiting call, as a str"):
        await store.approve_call("r", ["toolu_1"])  # pyright: ignore[reportArgumentType]
    with pytest.raises(ApprovalError, match=r"tool_use_id must be the id of a waiting call"):
        await store.deny_call("r", "")
    with pytest.raises(ApprovalError, match=r"needs a reason the model can read, not 3"):
        await store.deny_call("r", call, 3)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ParamsError, match=r"run_id must be a str"):
        await store.approve_call(42, call)  # pyright: ignore[reportArgumentType]
    await still_waits(store, "r", call, loaded.sequence)


@sql_stores
async def test_the_command_line_refuses_a_decider_that_is_not_a_name_before_reading_the_run(
    store: RunStore,
) -> None:
    [call] = await paused_run(store, "r", 120)
    loaded = await store.load("r")
    assert loaded is not None
    for by in ["", "  ", "a" * 257, "ada\nbob", "caf\udce9"]:
        for command in (["approve"], ["deny", "--reason", "No."], ["answer", "done"]):
            code, out, err = await cli(store, "runs", command[0], "r", call, *command[1:], "--by", by)
            assert code == ExitCode.USAGE, err
            assert out == ""
            assert err.startswith("toolrunner: --by ")
            assert err.count("\n") == 1
    await still_waits(store, "r", call, loaded.sequence)
    code, _, err = await cli(store, "runs", "approve", "r", call, "--by", "ada")
    assert code == ExitCode.OK, err


# -- run ids ---------------------------------------------------------------------------------------------

BAD_RUN_IDS: list[Any] = [
    "order\x00-42",  # saved by no PostgreSQL: every save of the run failed
    "order\n42",
    "order\t42",
    "\x1b]0;pwned\x07",
    "order\x85",
    "order\u2029",
    "caf\udce9",
    "",
    "r" * 513,
    42,
    None,
]


@pytest.mark.parametrize("run_id", [value for value in BAD_RUN_IDS if value is not None], ids=repr)
async def test_a_run_id_no_store_can_keep_is_refused_when_the_runner_is_made(
    store: RunStore, run_id: Any
) -> None:
    fake = FakeMessagesAPI([text_reply("Hi.")])
    with pytest.raises(ParamsError, match="run_id"):
        ToolRunner(
            fake.async_client(),
            model=MODEL,
            max_tokens=64,
            messages=[USER],
            checkpointer=store,
            run_id=run_id,
        )
    with pytest.raises(ParamsError, match="run_id"):
        SyncToolRunner(
            fake.client(), model=MODEL, max_tokens=64, messages=[USER], checkpointer=store, run_id=run_id
        )
    with pytest.raises(ParamsError, match="run_id"):
        await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id=run_id)
    assert fake.requests == []
    longest = "r" * 512
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], checkpointer=store, run_id=longest
    )
    await runner.until_done()
    assert (await store.get_run(longest)) is not None


@pytest.mark.parametrize("run_id", BAD_RUN_IDS, ids=repr)
async def test_every_method_of_a_store_refuses_a_run_id_no_store_can_keep(
    store: RunStore, run_id: Any
) -> None:
    await paused_run(store, "r", 120)
    with pytest.raises(ParamsError, match="run_id"):
        await store.save(Checkpoint(run_id, RunState(params={"model": MODEL}), 0))
    for method in (store.load, store.get_run, store.delete_run):
        with pytest.raises(ParamsError, match="run_id"):
            await method(run_id)
    with pytest.raises(ParamsError, match="run_id"):
        await store.approve_call(run_id, "r_pay0")
    with pytest.raises(ParamsError, match="run_id"):
        await store.deny_call(run_id, "r_pay0")
    with pytest.raises(ParamsError, match="run_id"):
        await store.answer_call(run_id, "r_pay0", "done")
    with pytest.raises(ParamsError, match="run_id"):
        await store.renew_lease(run_id, "a", lease=60)
    with pytest.raises(ParamsError, match="run_id"):
        await store.release_lease(run_id, "a")
    assert [summary.run_id for summary in (await store.list_runs()).runs] == ["r"]


@sql_stores
async def test_the_command_line_refuses_a_run_id_no_store_can_keep_and_deletes_nothing(
    store: RunStore,
) -> None:
    await finished_run(store, "good")
    for command in (
        ["show", "order\n42"],
        ["approve", "order\n42", "toolu_1"],
        ["deny", "order\n42", "toolu_1"],
        ["answer", "order\n42", "toolu_1", "done"],
        ["delete", "good", "order\n42"],
        ["delete", "good", "r" * 513],
    ):
        code, out, err = await cli(store, "runs", *command)
        assert code == ExitCode.USAGE, (command, err)
        assert out == ""
        assert "\\n42" in err or "513 characters" in err
    assert (await store.get_run("good")) is not None


async def test_the_inbox_refuses_a_run_id_no_store_can_keep_with_a_400_page(store: RunStore) -> None:
    [call] = await paused_run(store, "r", 120)
    async with Person(create_app(store, token=TOKEN)) as ada:
        await ada.log_in("ada")
        for run_id in ["order\x00-42", "order\n42", "r" * 513]:
            page = await ada.get("/run", id=run_id)
            assert page.status_code == 400, page.text
            assert "run_id" in page.text
        await ada.get("/run", id="r")
        for run_id in ["order\x00-42", ""]:
            response = await ada.post("/run/approve", {"run": run_id, "call": call}, csrf=True)
            assert response.status_code == 400, response.text
        assert (await ada.get("/run", id="")).status_code == 400
    summary = await store.get_run("r")
    assert summary is not None
    assert [waiting.id for waiting in summary.waiting] == [call]


# -- cursors ---------------------------------------------------------------------------------------------


def forged_cursor(created: object, run_id: object) -> str:
    """A cursor as a listing writes one, holding anything (text as its JSON escapes)."""
    return base64.urlsafe_b64encode(json.dumps([created, run_id]).encode()).decode().rstrip("=")


def foreign_cursors(store: RunStore) -> list[str]:
    """Cursors that decode, but hold what this store cannot page from: another store's key (SQLite's
    seconds on PostgreSQL, PostgreSQL's time elsewhere), a key that is no time, a run id no store
    can be asked for."""
    other = "1750000000.25" if isinstance(store, PostgresCheckpointer) else "2025-06-15T14:08:40.250000+00:00"
    return [
        forged_cursor(other, "r"),
        forged_cursor("not a time", "r"),
        forged_cursor("nan", "r"),
        forged_cursor("2025-06-15T14:08:40", "r"),  # no time zone
        forged_cursor("1750000000.25", "r\x00"),
        forged_cursor("1750000000.25", "caf\udce9"),
        forged_cursor("1750000000.25", 7),
    ]


async def test_a_cursor_that_decodes_but_is_not_this_stores_is_a_params_error(store: RunStore) -> None:
    for number in range(3):
        await finished_run(store, f"run-{number}")
    page = await store.list_runs(limit=2)
    assert page.cursor is not None
    assert [summary.run_id for summary in (await store.list_runs(limit=2, cursor=page.cursor)).runs] == [
        "run-0"
    ]
    for cursor in foreign_cursors(store):
        with pytest.raises(ParamsError, match="is not a cursor of this store's listing"):
            await store.list_runs(cursor=cursor)
        with pytest.raises(ParamsError, match="is not a cursor of this store's listing"):
            await store.list_runs(status="finished", cursor=cursor)


async def test_a_cursor_is_a_position_in_the_listing_order_that_any_store_of_its_kind_takes(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What api.md says of a cursor: not signed, so another file's (of the same kind) is taken as a
    position, and the page starts after it."""
    from tests.support.stores import Clock

    first, second = SQLiteCheckpointer(tmp_path / "a.db"), SQLiteCheckpointer(tmp_path / "b.db")
    clock = Clock()
    for store in (first, second):
        monkeypatch.setattr(store, "_now", clock)
    try:
        for number in range(3):
            clock.now += 1
            await finished_run(first, f"run-{number}")
            await finished_run(second, f"run-{number}")
        page = await first.list_runs(limit=1)  # run-2: the page after starts before its creation
        assert page.cursor is not None
        assert [run.run_id for run in (await second.list_runs(cursor=page.cursor)).runs] == ["run-1", "run-0"]
    finally:
        first.close()
        second.close()


async def test_a_foreign_cursor_is_a_usage_error_on_the_command_line_and_a_400_page_in_the_inbox(
    store: RunStore,
) -> None:
    await paused_run(store, "r", 120)
    for cursor in foreign_cursors(store):
        if url_of(store) is not None:
            code, out, err = await cli(store, "runs", "list", "--cursor", cursor)
            assert code == ExitCode.USAGE, err
            assert out == ""
            assert err.startswith("toolrunner: ")
            assert "is not a cursor of this store's listing" in err
            assert "Traceback" not in err
        async with Person(create_app(store, token=TOKEN)) as ada:
            await ada.log_in("ada")
            for path in ("/", "/fragments/waiting", "/runs"):
                response = await ada.get(path, cursor=cursor)
                assert response.status_code == 400, (path, response.text)
                assert "is not a cursor of this store" in response.text


# -- times at the ends of the calendar -----------------------------------------------------------------

EDGES = [
    datetime(1, 1, 1, tzinfo=timezone(timedelta(hours=1))),  # the year 0 in UTC
    datetime(9999, 12, 31, 23, 59, 59, tzinfo=timezone(timedelta(hours=-1))),  # the year 10000 in UTC
]


async def test_a_time_beyond_utcs_calendar_is_refused_before_anything_is_read_or_deleted(
    store: RunStore,
) -> None:
    await finished_run(store, "done")
    for edge in EDGES:
        with pytest.raises(ParamsError, match="is not a time in UTC's years 1 to 9999"):
            await store.prune_runs(updated_before=edge, status="finished")
        with pytest.raises(ParamsError, match=r"updated_after .* is not a time in UTC's years 1 to 9999"):
            await store.list_runs(updated_after=edge)
        with pytest.raises(ParamsError, match=r"updated_before .* is not a time in UTC's years 1 to 9999"):
            await store.list_runs(updated_before=edge)
    assert (await store.get_run("done")) is not None
    assert (await store.prune_runs(updated_before=datetime(1, 1, 1, tzinfo=UTC))) == 0
    assert [
        run.run_id for run in (await store.list_runs(updated_before=datetime.max.replace(tzinfo=UTC))).runs
    ] == ["done"]


@sql_stores
async def test_the_command_line_refuses_such_a_time_with_exit_2_and_deletes_nothing(store: RunStore) -> None:
    await finished_run(store, "done")
    for edge in ["0001-01-01T00:00:00+01:00", "9999-12-31T23:59:59-01:00"]:
        for command in (
            ["prune", "--older-than", edge],
            ["prune", "--older-than", edge, "--status", "finished", "--dry-run"],
            ["list", "--updated-before", edge],
            ["list", "--updated-after", edge],
        ):
            code, out, err = await cli(store, "runs", *command)
            assert code == ExitCode.USAGE, (command, err)
            assert out == ""
            assert (
                err
                == f"toolrunner: {command[1]} {edge} is not a time in UTC's years 1 to 9999; give a time within them.\n"
            )
    assert (await store.get_run("done")) is not None
    code, out, err = await cli(
        store, "runs", "prune", "--older-than", "9999-12-31T23:59:59+00:00", "--status", "finished"
    )
    assert code == ExitCode.OK, err
    assert out == "Deleted 1 run (finished) last saved before 9999-12-31 23:59:59 UTC.\n"


# -- a damaged summary row ---------------------------------------------------------------------------------


def damage(store: RunStore, run_id: str, assignment: str) -> None:
    """Change a run's summary row by hand (``assignment``: SQL, ``waiting = 'x'``)."""
    if isinstance(store, SQLiteCheckpointer):
        with sqlite3.connect(store.path) as connection:
            connection.execute(f"UPDATE toolrunner_runs SET {assignment} WHERE run_id = ?", (run_id,))
        connection.close()
        return
    import psycopg

    assert isinstance(store, PostgresCheckpointer)
    with psycopg.connect(store._url, autocommit=True) as connection:  # pyright: ignore[reportPrivateUsage]
        connection.execute(f"UPDATE toolrunner_runs SET {assignment} WHERE run_id = %s", (run_id,))  # pyright: ignore


DAMAGES = [
    ("waiting", 'waiting = \'[{"id": "x", not json\''),
    ("waiting", "waiting = '[1, 2]'"),
    ("waiting", 'waiting = \'{"id": "x"}\''),
    ("failure", "failure = '[\"APIError\"]'"),
    ("status", "status = 'paused'"),
    ("cost", "cost = 'a lot'"),
    ("cost", "end_reason = NULL, cost = 'NaN'"),
]


@sql_stores
@pytest.mark.parametrize(("column", "assignment"), DAMAGES, ids=[assignment for _, assignment in DAMAGES])
async def test_a_damaged_summary_row_is_listed_as_a_failed_run_that_names_itself(
    store: RunStore, column: str, assignment: str
) -> None:
    [call] = await paused_run(store, "hurt", 120)
    await finished_run(store, "fine")
    await paused_run(store, "waits", 80)
    await anyio.to_thread.run_sync(lambda: damage(store, "hurt", assignment))
    listings = [(await store.list_runs()).runs]
    if column != "status":  # listed where its status column places it: as waiting, shown failed
        listings.append((await store.list_runs(status="awaiting")).runs)
    for listed in listings:
        [hurt] = [summary for summary in listed if summary.run_id == "hurt"]
        assert {summary.run_id for summary in listed} >= {"hurt", "waits"}
        assert hurt.status is RunStatus.FAILED
        assert hurt.failure is not None
        assert hurt.failure["type"] == "StateError"
        assert hurt.failure["message"].startswith("the summary of the saved run 'hurt' in ")
        assert f"is damaged: its {column} column" in hurt.failure["message"]
        assert await store.get_run("hurt") == hurt
    loaded = await store.load("hurt")  # the state is whole: the run resumes, and its next save mends the row
    assert loaded is not None
    code, out, err = await cli(store, "runs", "list")
    assert code == ExitCode.OK, err
    assert re.search(r"^hurt +failed ", out, re.MULTILINE)
    assert "StateError: the summary of the saved run 'hurt'" in out
    code, out, err = await cli(store, "runs", "show", "hurt")
    assert code == ExitCode.OK, err
    assert "failed: StateError: the summary of the saved run 'hurt' in " in out
    code, out, err = await cli(store, "runs", "list", "--json")
    assert code == ExitCode.OK, err
    async with Person(create_app(store, token=TOKEN)) as ada:
        await ada.log_in("ada")
        for path in ("/", "/fragments/waiting", "/runs?status=awaiting&status=failed", "/run?id=hurt"):
            page = await ada.get(path)
            assert page.status_code == 200, page.text
            if column == "status" and path != "/run?id=hurt":
                continue  # its status is no status: no tab's filter lists it
            assert "the summary of the saved run &#39;hurt&#39;" in page.text
    versions = waiting_versions(store, 0.0, keepalive=60.0)
    assert await versions.__anext__() is not None  # the live list goes on
    await versions.aclose()
    await save_changed(store, "hurt", lambda state: state)
    mended = await store.get_run("hurt")
    assert mended is not None
    assert (mended.status, [waiting.id for waiting in mended.waiting]) == (RunStatus.AWAITING, [call])


# -- a damaged sequence column -------------------------------------------------------------------------------

SEQUENCE_DAMAGES = [
    ("sqlite", "sequence = 'x'"),
    ("sqlite", "sequence = 1.5"),
    ("sqlite", "sequence = X'07'"),
    ("sqlite", "sequence = -1"),
    ("postgres", "sequence = -1"),
]


@pytest.mark.parametrize(
    ("store", "assignment"),
    SEQUENCE_DAMAGES,
    ids=[f"{kind}: {change}" for kind, change in SEQUENCE_DAMAGES],
    indirect=["store"],
)
async def test_a_damaged_sequence_column_is_a_state_error_that_names_the_run(
    store: RunStore, assignment: str
) -> None:
    [call] = await paused_run(store, "hurt", 120)
    await finished_run(store, "fine")
    loaded = await store.load("hurt")
    assert loaded is not None
    await anyio.to_thread.run_sync(lambda: damage(store, "hurt", assignment))
    message = (
        r"the saved run 'hurt' in .* cannot be loaded: its sequence column holds .*, which no save writes"
    )
    with pytest.raises(StateError, match=message):
        await store.load("hurt")
    with pytest.raises(StateError, match=message):
        await store.approve_call("hurt", call)
    with pytest.raises(
        StateError, match=r"the saved run 'hurt' in .* cannot be saved: its sequence column holds"
    ):
        await store.save(dataclasses.replace(loaded, sequence=loaded.sequence + 1))
    assert (await store.load("fine")) is not None  # the other runs load, list and save as they did
    assert {run.run_id for run in (await store.list_runs()).runs} == {"hurt", "fine"}
    await save_changed(store, "fine", lambda state: state)


# -- a prune by age keeps the runs that wait for a person ------------------------------------------------


async def four_old_runs(store: RunStore, monkeypatch: pytest.MonkeyPatch) -> None:
    """Runs last saved 60 days before now: one waits for a decision, one finished, one stopped
    mid-run, one failed; and one saved now."""
    from tests.support.stores import Clock, running_run

    clock = Clock(NOW - 60 * 86_400)
    monkeypatch.setattr(store, "_now", clock)
    await paused_run(store, "waits", 120)
    await finished_run(store, "done")
    await running_run(store, "stopped")
    await finished_run(store, "broke")
    await save_changed(
        store, "broke", lambda state: state.replace(failure={"type": "APIError", "message": "down"})
    )
    clock.now = NOW
    await finished_run(store, "fresh")


NOW = 1_750_000_000.0


async def test_a_prune_by_age_alone_keeps_the_runs_that_wait_for_a_person(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await four_old_runs(store, monkeypatch)
    month_ago = datetime.fromtimestamp(NOW - 30 * 86_400, UTC)
    assert await store.prune_runs(updated_before=month_ago) == 3
    assert sorted(run.run_id for run in (await store.list_runs()).runs) == ["fresh", "waits"]
    assert await store.prune_runs(updated_before=month_ago) == 0
    assert await store.prune_runs(updated_before=month_ago, status=["finished", "failed"]) == 0
    assert await store.prune_runs(updated_before=month_ago, status=[]) == 0
    assert await store.prune_runs(updated_before=month_ago, status="awaiting") == 1  # asked for: it goes
    assert [run.run_id for run in (await store.list_runs()).runs] == ["fresh"]


@sql_stores
async def test_the_command_line_says_which_waiting_runs_a_prune_keeps_and_how_to_include_them(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await four_old_runs(store, monkeypatch)

    async def command(*argv: str) -> str:
        out, err = io.StringIO(), io.StringIO()
        code = await anyio.to_thread.run_sync(
            lambda: run([*argv, "--store", str(url_of(store))], out, err, now=lambda: NOW)
        )
        assert code == ExitCode.OK, err.getvalue()
        return out.getvalue()

    dry = (await command("runs", "prune", "--older-than", "30d", "--dry-run")).splitlines()
    assert dry[0] == "Would delete 3 runs last saved before 2025-05-16 15:06:40 UTC."
    assert sorted(line.split()[0] for line in dry[2:5]) == ["broke", "done", "stopped"]
    assert dry[6] == (
        "Would keep 1 run that waits for a decision or to go on after one (awaiting, ready), however old: a prune "
        "deletes such runs only when --status names their status (--status awaiting --status ready)."
    )
    assert dry[8].split()[:2] == ["waits", "awaiting"]
    data = json.loads(await command("runs", "prune", "--older-than", "30d", "--dry-run", "--json"))
    assert sorted(data["would_delete"]) == ["broke", "done", "stopped"]
    assert data["kept"] == ["waits"]
    assert sorted(run.run_id for run in (await store.list_runs()).runs) == [
        "broke",
        "done",
        "fresh",
        "stopped",
        "waits",
    ]
    assert (await command("runs", "prune", "--older-than", "30d")).splitlines() == [
        "Deleted 3 runs last saved before 2025-05-16 15:06:40 UTC.",
        "Kept 1 run that waits for a decision or to go on after one (awaiting, ready), however old: a prune "
        "deletes such runs only when --status names their status (--status awaiting --status ready).",
    ]
    assert json.loads(await command("runs", "prune", "--older-than", "30d", "--json"))["kept"] == 1
    assert (await command("runs", "prune", "--older-than", "30d", "--status", "awaiting")) == (
        "Deleted 1 run (awaiting) last saved before 2025-05-16 15:06:40 UTC.\n"
    )
    assert [run.run_id for run in (await store.list_runs()).runs] == ["fresh"]

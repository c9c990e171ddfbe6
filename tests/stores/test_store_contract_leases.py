"""The contract every store keeps, continued (``test_store_contract.py``): what a resumer asks of
it. Runs decided in full are ``ready``; a lease is taken, renewed and given up on a run's row
without a save (the run's sequence does not move); each store takes up exactly the runs
``_stores.leases.claimable`` names, oldest first, each to one taker of many at once; ``wait_ready``
returns when a save makes a run ready (through this store object or another: SQLite looks, PostgreSQL
is told), when a lease is given up, and when one runs out. The lease of one named run (``lease_run``,
what a web ``Agent`` takes while it drives the run) goes to an owner exactly when
``_stores.leases.takeable`` says, whatever the run's status, and to one of many asking at once.

Run on each store by the ``store`` fixture; the upgrades of tables made before leases are at the
end, per store.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from tests.support.stores import Clock, look, paid, paused_run, pay, save_changed
from toolrunner import (
    Lease,
    ParamsError,
    Phase,
    PostgresCheckpointer,
    RunState,
    RunStatus,
    RunStore,
    SQLiteCheckpointer,
    ToolRunner,
)
from toolrunner._stores.leases import claimable, takeable
from toolrunner.testing import FakeMessagesAPI, text_reply

pytestmark = pytest.mark.anyio

GUARD = 20  # seconds; reached only when a wait that should return hangs


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


def twin(store: RunStore, postgres: pytest.FixtureRequest) -> RunStore:
    """Another store object over the same runs (another process would have one): a new
    connection to the same file or database; the same object for memory."""
    if isinstance(store, SQLiteCheckpointer):
        return SQLiteCheckpointer(store.path)
    if isinstance(store, PostgresCheckpointer):
        return PostgresCheckpointer(store._url)  # pyright: ignore[reportPrivateUsage] - the same database
    return store


def close(store: RunStore) -> None:
    if isinstance(store, SQLiteCheckpointer | PostgresCheckpointer):
        store.close()


async def ready_run(store: RunStore, run_id: str) -> None:
    """A run paused for ``pay``, approved through the store: ready."""
    [call] = await paused_run(store, run_id, 120)
    await store.approve_call(run_id, call, by="ada")


async def test_a_run_decided_in_full_is_ready_and_leased_to_one_resumer_without_a_save(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(1_000.0)
    monkeypatch.setattr(store, "_now", clock)
    first, second = await paused_run(store, "r", 120, 80)
    await store.approve_call("r", first, by="ada")
    assert await store.lease_runs("resumer-a", lease=30) == ()  # a call still waits
    await store.deny_call("r", second, "No.", by="ada")
    summary = await store.get_run("r")
    assert summary is not None
    assert (summary.status, summary.lease) == (RunStatus.READY, None)
    before = await store.load("r")
    assert before is not None

    assert await store.lease_runs("resumer-a", lease=30) == ("r",)
    assert await store.lease_runs("resumer-b", lease=30) == ()  # held
    leased = await store.get_run("r")
    assert leased is not None
    assert leased.lease == Lease("resumer-a", at(1_030.0))
    assert leased.status is RunStatus.READY
    assert (await store.list_runs(status="ready")).runs == (leased,)
    clock.now = 1_020.0
    assert await store.renew_lease("r", "resumer-a", lease=30) is True
    assert await store.renew_lease("r", "resumer-b", lease=30) is False
    assert await store.renew_lease("nothing", "resumer-a", lease=30) is False
    renewed = await store.get_run("r")
    assert renewed is not None
    assert renewed.lease == Lease("resumer-a", at(1_050.0))
    after = await store.load("r")
    assert after is not None
    assert after.sequence == before.sequence  # leases are no saves: a runner's next save still follows
    assert after.state.to_dict() == before.state.to_dict()


async def test_a_lease_given_up_on_a_run_still_to_go_on_goes_to_the_next_resumer_at_once(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(1_000.0)
    monkeypatch.setattr(store, "_now", clock)
    await ready_run(store, "r")
    assert await store.lease_runs("a", lease=30) == ("r",)
    assert await store.release_lease("r", "b") is False  # not b's
    assert await store.release_lease("r", "a") is True
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.lease == Lease("a", at(1_000.0))  # kept, run out: who held it last
    assert await store.lease_runs("b", lease=30) == ("r",)
    assert await store.release_lease("r", "a") is False  # a holds it no more

    # Once the run goes on and pauses or ends, giving the lease up drops it.
    runner = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=[pay, look],
    )
    await runner.until_done()
    assert await store.release_lease("r", "b") is True
    done = await store.get_run("r")
    assert done is not None
    assert (done.status, done.lease) == (RunStatus.FINISHED, None)

    # A failed run's lease is dropped too: given up, it is failed for good (kept, it is tried again).
    await ready_run(store, "f")
    assert await store.lease_runs("c", lease=30) == ("f",)
    await save_changed(
        store, "f", lambda state: state.replace(failure={"type": "ValueError", "message": "no"})
    )
    assert await store.release_lease("f", "c") is True
    failed = await store.get_run("f")
    assert failed is not None
    assert (failed.status, failed.lease) == (RunStatus.FAILED, None)
    assert await store.lease_runs("d", lease=30) == ()


STATUSES = ["ready", "running", "awaiting", "finished", "failed"]
LEASES = ["run out", "held", "none"]  # the order the runs are created in


def to_status(status: str, paused: RunState, ready: RunState) -> Callable[[RunState], RunState]:
    """A change that puts a run (saved ready) in ``status``."""
    changes: dict[str, Callable[[RunState], RunState]] = {
        "ready": lambda state: state,
        "running": lambda state: state.replace(phase=Phase.WITH_BODY, end_reason=None),  # a runner took it up
        "awaiting": lambda state: paused,
        "finished": lambda state: state.replace(phase=Phase.DONE, end_reason="model"),
        "failed": lambda state: state.replace(failure={"type": "APIError", "message": "overloaded"}),
    }
    return changes[status]


async def test_each_store_takes_up_exactly_the_runs_claimable_names(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every status with no lease, a lease run out, and a lease held: the runs taken up are those
    the pure ``claimable`` names, oldest first, and a second taker finds none left."""
    clock = Clock(1_000.0)
    monkeypatch.setattr(store, "_now", clock)
    cases = [(status, lease) for lease in LEASES for status in STATUSES]
    states: dict[str, tuple[RunState, RunState]] = {}
    for status, lease in cases:  # created in this order: leases to run out first, then held, then none
        run_id = f"{status}-{lease.replace(' ', '-')}"
        clock.now += 1
        [call] = await paused_run(store, run_id, 120)
        paused = await store.load(run_id)
        await store.approve_call(run_id, call, by="ada")
        ready = await store.load(run_id)
        assert paused is not None
        assert ready is not None
        states[run_id] = paused.state, ready.state
    count = len(STATUSES)
    assert len(await store.lease_runs("old", lease=10, limit=count)) == count  # the oldest: "run out"
    assert len(await store.lease_runs("holder", lease=1_000, limit=count)) == count  # then "held"
    for status, lease in cases:
        run_id = f"{status}-{lease.replace(' ', '-')}"
        await save_changed(store, run_id, to_status(status, *states[run_id]))
    clock.now += 100  # the leases of "old" run out; "holder"'s hold

    expected: list[str] = []
    for status, lease in cases:
        run_id = f"{status}-{lease.replace(' ', '-')}"
        summary = await store.get_run(run_id)
        assert summary is not None
        assert summary.status.value == status
        owner = {"none": None, "run out": "old", "held": "holder"}[lease]
        assert (None if summary.lease is None else summary.lease.owner) == owner
        expires = None if summary.lease is None else summary.lease.expires.timestamp()
        if claimable(summary.status, owner, expires, clock.now):
            expected.append(run_id)
    assert expected == ["ready-run-out", "running-run-out", "failed-run-out", "ready-none"]  # the rule
    assert await store.lease_runs("new", lease=30, limit=2) == tuple(expected[:2])  # oldest first
    assert await store.lease_runs("new", lease=30, limit=50) == tuple(expected[2:])
    assert await store.lease_runs("other", lease=30, limit=50) == ()


async def test_of_many_takers_at_once_each_run_goes_to_one(
    store: RunStore, request: pytest.FixtureRequest
) -> None:
    for number in range(6):
        await ready_run(store, f"r{number}")
    other = twin(store, request)
    taken: dict[str, list[str]] = {}

    async def take(owner: str, source: RunStore) -> None:
        while found := await source.lease_runs(owner, lease=60):
            for run_id in found:
                taken.setdefault(run_id, []).append(owner)

    try:
        async with anyio.create_task_group() as group:
            for number in range(4):
                group.start_soon(take, f"taker-{number}", store if number % 2 else other)
    finally:
        if other is not store:
            close(other)
    assert sorted(taken) == [f"r{number}" for number in range(6)]
    assert all(len(owners) == 1 for owners in taken.values()), taken


async def test_one_run_s_lease_is_taken_exactly_when_takeable_says_whatever_its_status(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(1_000.0)
    monkeypatch.setattr(store, "_now", clock)
    [call] = await paused_run(store, "r", 120)  # awaiting: no resumer would take it up
    assert await store.lease_run("nothing", "a", lease=30) is False  # no such run
    before = await store.load("r")
    cases = [  # (who asks, the lease it finds as (owner, expiry) or None, when)
        ("a", None, 1_000.0),
        ("b", ("a", 1_030.0), 1_010.0),  # held by another: no
        ("a", ("a", 1_030.0), 1_020.0),  # its own: renewed
        ("b", ("a", 1_050.0), 1_050.0),  # run out (at the very time): taken over
        ("a", ("b", 1_080.0), 1_079.0),
    ]
    for owner, found, now in cases:
        clock.now = now
        summary = await store.get_run("r")
        assert summary is not None
        held = None if summary.lease is None else (summary.lease.owner, summary.lease.expires.timestamp())
        assert held == found
        expected = takeable(owner, *(found or (None, None)), now)
        assert await store.lease_run("r", owner, lease=30) is expected
        after = await store.get_run("r")
        assert after is not None
        assert after.lease == (Lease(owner, at(now + 30)) if expected else summary.lease)
    outcomes = [takeable(owner, *(found or (None, None)), now) for owner, found, now in cases]
    assert outcomes == [True, False, True, True, False]  # the rule
    loaded = await store.load("r")
    assert before is not None
    assert loaded is not None
    assert loaded.sequence == before.sequence  # a lease is no save

    # A run that ended or is ready is taken too, and a lease so taken is given up as any other.
    await store.approve_call("r", call, by="ada")
    clock.now = 2_000.0
    assert await store.lease_run("r", "c", lease=30) is True
    assert await store.lease_runs("resumer", lease=30) == ()  # held: no resumer takes it up
    assert await store.release_lease("r", "c") is True
    assert await store.lease_runs("resumer", lease=30) == ("r",)  # ready, given up: at once


async def test_of_many_asking_for_one_run_s_lease_at_once_one_gets_it(
    store: RunStore, request: pytest.FixtureRequest
) -> None:
    await ready_run(store, "r")
    other = twin(store, request)
    got: list[str] = []

    async def take(owner: str, source: RunStore) -> None:
        if await source.lease_run("r", owner, lease=60):
            got.append(owner)

    try:
        async with anyio.create_task_group() as group:
            for number in range(6):
                group.start_soon(take, f"taker-{number}", store if number % 2 else other)
    finally:
        if other is not store:
            close(other)
    assert len(got) == 1, got
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.lease is not None
    assert summary.lease.owner == got[0]


async def test_a_deleted_run_takes_its_lease_along(store: RunStore) -> None:
    await ready_run(store, "r")
    assert await store.lease_runs("a", lease=60) == ("r",)
    assert await store.delete_run("r")
    assert await store.renew_lease("r", "a", lease=60) is False
    await ready_run(store, "r")  # a new run under the name: nobody's
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.lease is None
    assert await store.lease_runs("b", lease=60) == ("r",)


async def test_the_arguments_of_leases_are_checked(store: RunStore) -> None:
    for lease in (0, -1, math.nan, math.inf, True, "30"):
        with pytest.raises(ParamsError, match="lease must be a number of seconds above 0"):
            await store.lease_runs("a", lease=lease)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ParamsError, match="lease must be a number of seconds above 0"):
        await store.renew_lease("r", "a", lease=0)
    with pytest.raises(ParamsError, match="lease must be a number of seconds above 0"):
        await store.lease_run("r", "a", lease=math.inf)
    for owner in ("", "  ", None):
        with pytest.raises(ParamsError, match="a lease's owner must be a non-empty string"):
            await store.lease_runs(owner, lease=1)  # pyright: ignore[reportArgumentType]
    for owner in ("a\n", "a\x00b", "\x1b[2Ja", "a\u2028", "caf\udce9"):
        for asked in (
            store.lease_runs(owner, lease=1),
            store.renew_lease("r", owner, lease=1),
            store.release_lease("r", owner),
            store.lease_run("r", owner, lease=1),
        ):
            with pytest.raises(
                ParamsError,
                match=r"a lease's owner .* holds (a control character|a line separator|lone surrogates)",
            ):
                await asked
    with pytest.raises(ParamsError, match="limit must be an int from 1 to 1000"):
        await store.lease_runs("a", lease=1, limit=0)
    with pytest.raises(ParamsError, match="poll_interval must be a number of seconds above 0"):
        await store.wait_ready(poll_interval=0)


# -- waiting -----------------------------------------------------------------------------------------


async def test_waiting_returns_at_once_while_a_run_is_there_to_take_up(store: RunStore) -> None:
    await ready_run(store, "r")
    with anyio.fail_after(GUARD):
        await store.wait_ready()
    assert await store.lease_runs("a", lease=60) == ("r",)
    with anyio.move_on_after(0.2) as scope:  # nothing left: it waits (until cancelled)
        await store.wait_ready(poll_interval=0.05)
    assert scope.cancelled_caught


async def test_waiting_returns_when_a_save_makes_a_run_ready_here_or_in_another_process(
    store: RunStore, request: pytest.FixtureRequest
) -> None:
    [first] = await paused_run(store, "here", 120)
    [second] = await paused_run(store, "there", 80)
    other = twin(store, request)  # decides as another process would: SQLite looks, PostgreSQL is told
    try:
        await wait_while_deciding(store, store, "here", first)
        await wait_while_deciding(store, other, "there", second)
    finally:
        if other is not store:
            close(other)


async def wait_while_deciding(store: RunStore, deciding: RunStore, run_id: str, call: str) -> None:
    """``store.wait_ready()`` returns once ``deciding`` approves the call that keeps the run waiting."""
    waiting = anyio.Event()
    returned: list[str] = []

    async def wait() -> None:
        waiting.set()
        await store.wait_ready(poll_interval=0.05)
        returned.append("ready")

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(wait)
            await waiting.wait()
            await anyio.sleep(0.1)  # let the wait look first and find nothing (not asserted)
            assert returned == []
            await deciding.approve_call(run_id, call, by="ada")
    assert returned == ["ready"]
    assert await store.lease_runs("a", lease=60) == (run_id,)


async def test_waiting_returns_when_a_lease_is_given_up_or_runs_out(store: RunStore) -> None:
    await ready_run(store, "r")
    assert await store.lease_runs("a", lease=60) == ("r",)

    async def give_up() -> None:
        await anyio.sleep(0.1)
        await store.release_lease("r", "a")

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(give_up)
            await store.wait_ready(poll_interval=60)  # told, not looking
    assert await store.lease_runs("b", lease=0.3) == ("r",)
    with anyio.fail_after(GUARD):
        await store.wait_ready(poll_interval=60)  # b's lease runs out: the store knows when
    assert await store.lease_runs("c", lease=60) == ("r",)


# -- the upgrade of tables made before leases ---------------------------------------------------------


async def test_an_sqlite_file_made_before_leases_gets_them_and_its_decided_runs_are_ready(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)
    await ready_run(store, "decided")
    await paused_run(store, "waiting", 80)
    store.close()
    with sqlite3.connect(path) as connection:  # as toolrunner wrote it before this version
        connection.execute("ALTER TABLE toolrunner_runs DROP COLUMN lease_owner")
        connection.execute("ALTER TABLE toolrunner_runs DROP COLUMN lease_expires")
        connection.execute("UPDATE toolrunner_runs SET status = 'running' WHERE run_id = 'decided'")
    again = SQLiteCheckpointer(path)
    try:
        statuses = {summary.run_id: summary.status for summary in (await again.list_runs()).runs}
        assert statuses == {"decided": RunStatus.READY, "waiting": RunStatus.AWAITING}
        assert await again.lease_runs("a", lease=60) == ("decided",)
    finally:
        again.close()


async def test_a_postgresql_schema_made_before_leases_gets_them_and_its_decided_runs_are_ready(
    postgres_url: str,
) -> None:
    import psycopg

    store = PostgresCheckpointer(postgres_url)
    await ready_run(store, "decided")
    await paused_run(store, "waiting", 80)
    store.close()
    with psycopg.connect(postgres_url, autocommit=True) as connection:
        connection.execute("ALTER TABLE toolrunner_runs DROP COLUMN lease_owner, DROP COLUMN lease_expires")
        connection.execute("UPDATE toolrunner_runs SET status = 'running' WHERE run_id = 'decided'")
    again = PostgresCheckpointer(postgres_url)
    try:
        statuses = {summary.run_id: summary.status for summary in (await again.list_runs()).runs}
        assert statuses == {"decided": RunStatus.READY, "waiting": RunStatus.AWAITING}
        assert await again.lease_runs("a", lease=60) == ("decided",)
    finally:
        again.close()

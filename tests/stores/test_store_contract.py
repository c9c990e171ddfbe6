"""The contract every store keeps, run on each: ``MemoryCheckpointer``, ``SQLiteCheckpointer`` and
``PostgresCheckpointer`` (on a real server). Saving and loading, refusing a save that does not
follow the stored one, listing with filters and pages, deleting and pruning, and deciding a
waiting call through the store, alone and two deciders at once.

The crash tests (SIGKILL, on the stores a process can die with) are in ``test_crash_resume.py``;
the store-specific ones in ``test_sqlite_store.py`` and ``test_postgres_store.py``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from decimal import Decimal

import anyio
import pytest

from tests.support.helpers import results_of
from tests.support.stores import (
    Clock,
    finished_run,
    look,
    paid,
    paused_run,
    pay,
    runner,
    running_run,
    save_changed,
)
from toolrunner import (
    ApprovalError,
    AwaitingApprovalError,
    CallStatus,
    Checkpoint,
    CheckpointConflictError,
    CheckpointError,
    ParamsError,
    Phase,
    RunState,
    RunStatus,
    RunStore,
    ToolInputError,
    ToolRunner,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


def at(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC)


# -- saving and loading ---------------------------------------------------------------------------


async def test_a_run_saved_at_every_step_loads_as_it_was(store: RunStore) -> None:
    await finished_run(store, "r")
    loaded = await store.load("r")
    assert loaded is not None
    assert loaded.state.phase is Phase.DONE
    assert loaded.state.end_reason == "model"
    assert len(loaded.state.messages) == 4
    assert loaded.kept_messages == 4
    assert loaded.kept_usage == 2
    assert loaded.sequence > 2
    assert await store.load("nothing") is None


async def test_a_save_that_does_not_follow_the_stored_one_is_refused(store: RunStore) -> None:
    await finished_run(store, "r")
    loaded = await store.load("r")
    assert loaded is not None
    with pytest.raises(CheckpointConflictError, match="saved already"):
        await store.save(Checkpoint("r", loaded.state, 0))
    with pytest.raises(CheckpointConflictError, match="saved by another runner"):
        await store.save(Checkpoint("r", loaded.state, loaded.sequence))  # a save that repeats the last
    with pytest.raises(CheckpointConflictError, match="saved by another runner"):
        await store.save(Checkpoint("r", loaded.state, loaded.sequence + 2))
    again = await store.load("r")
    assert again is not None
    assert again.sequence == loaded.sequence
    await store.save(
        Checkpoint("r", loaded.state, loaded.sequence + 1, loaded.kept_messages, loaded.kept_usage)
    )


async def test_a_runner_whose_run_was_deleted_is_told_so_at_its_next_save(store: RunStore) -> None:
    await running_run(store, "r")
    again = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Done.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=[pay, look],
    )
    assert await store.delete_run("r")
    with pytest.raises(CheckpointConflictError, match="deleted from the store"):
        await again.until_done()


async def test_a_store_keeps_only_the_new_messages_and_still_loads_them_all(store: RunStore) -> None:
    await finished_run(store, "r")
    loaded = await store.load("r")
    assert loaded is not None
    state = loaded.state.replace(messages=(*loaded.state.messages, {"role": "user", "content": "More?"}))
    await store.save(Checkpoint("r", state, loaded.sequence + 1, kept_messages=4, kept_usage=2))
    again = await store.load("r")
    assert again is not None
    assert len(again.state.messages) == 5
    assert again.state.messages[-1] == {"role": "user", "content": "More?"}
    # A history replaced (kept_messages=0) is written anew.
    short = state.replace(messages=state.messages[:1])
    await store.save(Checkpoint("r", short, again.sequence + 1, kept_messages=0, kept_usage=2))
    last = await store.load("r")
    assert last is not None
    assert len(last.state.messages) == 1


async def test_many_runs_saving_at_once_each_keep_their_own_state(store: RunStore) -> None:
    async with anyio.create_task_group() as group:
        for number in range(12):
            group.start_soon(finished_run, store, f"run-{number}")
    for number in range(12):
        loaded = await store.load(f"run-{number}")
        assert loaded is not None
        assert loaded.state.phase is Phase.DONE
        assert results_of(loaded.state.messages[2]) == [(f"run-{number}_look", "found x", False)]


# -- summaries and listing ---------------------------------------------------------------------


def failing(state: RunState) -> RunState:
    return state.replace(failure={"type": "APIError", "message": "overloaded"})


async def test_each_run_is_listed_with_its_status_and_summary(store: RunStore) -> None:
    await finished_run(store, "done")
    waiting_ids = await paused_run(store, "waiting", 120, 80)
    await running_run(store, "running")
    await running_run(store, "failed")
    await save_changed(store, "failed", failing)

    page = await store.list_runs()
    assert page.cursor is None
    summaries = {summary.run_id: summary for summary in page.runs}
    assert {run_id: summary.status for run_id, summary in summaries.items()} == {
        "done": RunStatus.FINISHED,
        "waiting": RunStatus.AWAITING,
        "running": RunStatus.RUNNING,
        "failed": RunStatus.FAILED,
    }
    done, waiting, failed = summaries["done"], summaries["waiting"], summaries["failed"]
    assert done.end_reason == "model"
    assert done.turns == 2
    assert done.waiting == ()
    assert isinstance(done.cost, Decimal)
    assert done.cost > 0
    assert done.created <= done.updated
    assert done.created.tzinfo is not None
    assert waiting.end_reason == "awaiting_approval"
    assert [(call.id, call.name, call.input) for call in waiting.waiting] == [
        (waiting_ids[0], "pay", {"amount": 120}),
        (waiting_ids[1], "pay", {"amount": 80}),
    ]
    assert failed.failure == {"type": "APIError", "message": "overloaded"}
    assert failed.end_reason is None
    assert await store.get_run("waiting") == waiting
    assert await store.get_run("nothing") is None


async def test_a_waiting_call_or_a_failure_holding_a_lone_surrogate_is_saved_listed_and_decided(
    store: RunStore,
) -> None:
    """A tool's input may hold a lone surrogate (a file name that is not UTF-8, as ``os.listdir``
    gives it). The call is the reply's as the history keeps it (U+FFFD), live, in the summary and
    once loaded, so it can be decided through the store and runs once the run is resumed (a call
    keeping the surrogate matched no call of the loaded reply, and could not be decided); an edited
    input and a failure keep theirs exactly in the summary columns (on SQLite and PostgreSQL every
    save failed with UnicodeEncodeError)."""
    name = "caf\udce9.txt"
    script = [tool_reply(tool_call("pay", {"amount": 5, "to": name}, id="p")), text_reply("Paid.")]
    with pytest.raises(AwaitingApprovalError):
        await runner(store, "r", script).until_done()
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.status is RunStatus.AWAITING
    as_kept = {"amount": 5, "to": "caf\ufffd.txt"}
    assert [(call.id, call.input) for call in summary.waiting] == [("p", as_kept)]
    assert (await store.list_runs(status="awaiting")).runs == (summary,)
    loaded = await store.load("r")
    assert loaded is not None
    assert loaded.state.calls["p"].call.input == as_kept
    await store.approve_call("r", "p", input={"amount": 6, "to": name}, by="ada")
    assert (await store.get_run("r")) is not None
    resumed = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="r",
        tools=[pay, look],
    )
    await resumed.until_done()
    assert paid == [6]

    await running_run(store, "failed")
    failure = {"type": "FileNotFoundError", "message": f"no file {name}"}
    await save_changed(store, "failed", lambda state: state.replace(failure=failure))
    failed = await store.get_run("failed")
    assert failed is not None
    assert failed.failure == failure


async def test_a_listing_filters_by_status_and_by_when_runs_were_saved(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(1_000.0)
    monkeypatch.setattr(store, "_now", clock)
    await finished_run(store, "old-done")
    clock.now = 2_000.0
    await paused_run(store, "old-waiting")
    clock.now = 3_000.0
    await finished_run(store, "new-done")
    await paused_run(store, "new-waiting")

    async def ids(**filters: object) -> list[str]:
        return [summary.run_id for summary in (await store.list_runs(**filters)).runs]  # pyright: ignore[reportArgumentType]

    assert await ids() == ["new-waiting", "new-done", "old-waiting", "old-done"]  # newest first
    assert await ids(status="awaiting") == ["new-waiting", "old-waiting"]
    assert await ids(status=RunStatus.AWAITING) == ["new-waiting", "old-waiting"]
    assert await ids(status=["finished", RunStatus.AWAITING]) == [
        "new-waiting",
        "new-done",
        "old-waiting",
        "old-done",
    ]
    assert await ids(status=[]) == []
    assert await ids(updated_before=at(2_500.0)) == ["old-waiting", "old-done"]
    assert await ids(updated_after=at(2_000.0)) == ["new-waiting", "new-done", "old-waiting"]
    assert await ids(updated_after=at(1_500.0), updated_before=at(2_500.0), status="awaiting") == [
        "old-waiting"
    ]
    summary = await store.get_run("old-done")
    assert summary is not None
    assert summary.updated == at(1_000.0)


async def test_a_listing_comes_in_pages_that_a_cursor_walks_through(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(store, "_now", clock)
    for number in range(7):
        clock.now += 1 if number != 3 else 0  # two runs created at the same time: the run id breaks the tie
        await finished_run(store, f"run-{number}")
    seen: list[str] = []
    cursor: str | None = None
    pages = 0
    while True:
        page = await store.list_runs(limit=3, cursor=cursor)
        pages += 1
        seen += [summary.run_id for summary in page.runs]
        if page.cursor is None:
            break
        cursor = page.cursor
    assert pages == 3
    assert seen == [f"run-{number}" for number in reversed(range(7))]
    # A run created after the listing started is not in its later pages, and none is listed twice.
    first = await store.list_runs(limit=3)
    clock.now += 10
    await finished_run(store, "late")
    second = await store.list_runs(limit=3, cursor=first.cursor)
    assert [summary.run_id for summary in second.runs] == ["run-3", "run-2", "run-1"]


async def test_a_listing_refuses_arguments_it_cannot_use(store: RunStore) -> None:
    with pytest.raises(ParamsError, match="'waiting' is not a run status"):
        await store.list_runs(status="waiting")
    with pytest.raises(ParamsError, match="status takes a RunStatus, a status's name, or several of them"):
        await store.list_runs(status=5)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ParamsError, match="status takes a RunStatus, a status's name, or several of them"):
        await store.prune_runs(updated_before=datetime.now(UTC), status=5)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ParamsError, match="timezone-aware"):
        await store.list_runs(updated_before=datetime(2025, 1, 1))  # a naive time: the mistake under test
    with pytest.raises(ParamsError, match="limit"):
        await store.list_runs(limit=0)
    with pytest.raises(ParamsError, match="not a cursor"):
        await store.list_runs(cursor="garbage!")


# -- deleting and pruning --------------------------------------------------------------------------


async def test_a_run_deleted_is_gone(store: RunStore) -> None:
    await finished_run(store, "r")
    await finished_run(store, "other")
    assert await store.delete_run("r") is True
    assert await store.delete_run("r") is False
    assert await store.load("r") is None
    assert await store.get_run("r") is None
    assert [summary.run_id for summary in (await store.list_runs()).runs] == ["other"]
    await finished_run(store, "r")  # the name is free again
    loaded = await store.load("r")
    assert loaded is not None
    assert len(loaded.state.messages) == 4


async def test_pruning_deletes_the_runs_older_than_a_time_of_the_statuses_given(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock(1_000.0)
    monkeypatch.setattr(store, "_now", clock)
    await finished_run(store, "old-done")
    await paused_run(store, "old-waiting")
    clock.now = 5_000.0
    await finished_run(store, "new-done")
    assert await store.prune_runs(updated_before=at(2_000.0), status="finished") == 1
    assert {summary.run_id for summary in (await store.list_runs()).runs} == {"old-waiting", "new-done"}
    assert await store.load("old-done") is None
    # By age alone, a run that waits for a person is kept (PRUNE_KEEPS), however old: only asked for.
    assert await store.prune_runs(updated_before=at(2_000.0)) == 0
    assert await store.prune_runs(updated_before=at(2_000.0), status="awaiting") == 1
    assert [summary.run_id for summary in (await store.list_runs()).runs] == ["new-done"]
    with pytest.raises(ParamsError, match="timezone-aware"):
        await store.prune_runs(updated_before=None)  # pyright: ignore[reportArgumentType]


# -- deciding through the store ------------------------------------------------------------------------


async def resume(store: RunStore, run_id: str, *replies: object) -> ToolRunner:
    fake = FakeMessagesAPI(list(replies) or [text_reply("Paid.")])  # pyright: ignore[reportArgumentType]
    return await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id=run_id, tools=[pay, look])


async def test_a_call_approved_through_the_store_runs_when_the_run_is_resumed(store: RunStore) -> None:
    [call] = await paused_run(store, "r", 120)
    record = await store.approve_call("r", call, by="ada")
    assert record.status is CallStatus.APPROVED
    assert record.decision == "approved"
    assert record.decided_by == "ada"
    assert record.decided_at is not None
    assert datetime.fromisoformat(record.decided_at).tzinfo is not None
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.status is RunStatus.READY  # decided: it goes on once a runner takes it up
    assert summary.waiting == ()
    assert [run.run_id for run in (await store.list_runs(status="ready")).runs] == ["r"]
    runner = await resume(store, "r")
    await runner.until_done()
    assert paid == [120]
    assert runner.state.phase is Phase.DONE
    assert results_of(runner.messages[2]) == [(call, "paid 120 to ACME", False)]


async def test_an_edited_input_is_checked_against_the_saved_schema_and_runs(store: RunStore) -> None:
    [call] = await paused_run(store, "r", 120)
    with pytest.raises(ToolInputError, match="amount: 'lots' is not of type 'integer'"):
        await store.approve_call("r", call, input={"amount": "lots"})
    with pytest.raises(ToolInputError, match="'amount' is a required property"):
        await store.approve_call("r", call, input={"to": "Bob"})
    with pytest.raises(ToolInputError, match="must be a JSON object"):
        await store.approve_call("r", call, input=[1, 2])
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.status is RunStatus.AWAITING  # nothing was decided
    record = await store.approve_call("r", call, input={"amount": 100, "to": "Bob"}, by="ada")
    assert record.approved_input == {"amount": 100, "to": "Bob"}
    runner = await resume(store, "r")
    await runner.until_done()
    assert paid == [100]
    assert results_of(runner.messages[2]) == [(call, "paid 100 to Bob", False)]


async def test_an_edited_input_is_refused_when_no_schema_was_saved_with_the_call(store: RunStore) -> None:
    [call] = await paused_run(store, "r", 120, schema=False)
    with pytest.raises(ToolInputError, match="without its tool's input schema"):
        await store.approve_call("r", call, input={"amount": 100})
    await store.approve_call("r", call)  # as it is: no check needed
    runner = await resume(store, "r")
    await runner.until_done()
    assert paid == [120]


async def test_a_call_denied_or_answered_through_the_store_gets_that_result(store: RunStore) -> None:
    first, second, third = await paused_run(store, "r", 1, 2, 3)
    await store.deny_call("r", first, "Over the limit; ask the user.", by="ada")
    await store.deny_call("r", second)
    await store.answer_call("r", third, {"paid": 3, "by": "hand"}, by="bob")
    runner = await resume(store, "r")
    await runner.until_done()
    assert paid == []
    [(_, denied, denied_error), (_, default, default_error), (_, answer, answer_error)] = results_of(
        runner.messages[2]
    )
    assert (denied, denied_error) == ("Over the limit; ask the user.", True)
    assert default_error
    assert "A person denied this call to 'pay'" in str(default)
    assert (answer, answer_error) == ('{"paid": 3, "by": "hand"}', False)
    with pytest.raises(ApprovalError, match="needs a reason"):
        await store.deny_call("r", first, " ")


async def test_a_call_decided_already_cannot_be_decided_again_and_says_by_whom(store: RunStore) -> None:
    first, second = await paused_run(store, "r", 1, 2)
    record = await store.deny_call("r", first, "No.", by="ada")
    with pytest.raises(ApprovalError, match=re.escape(f"was denied by 'ada' at {record.decided_at};")):
        await store.approve_call("r", first, by="bob")
    with pytest.raises(
        ApprovalError, match=r"no call 'nope' waiting for a decision; the calls that wait are \["
    ):
        await store.approve_call("r", "nope")
    with pytest.raises(CheckpointError, match="no saved run named 'ghost'"):
        await store.approve_call("ghost", first)
    await store.approve_call("r", second)
    runner = await resume(store, "r")
    await runner.until_done()
    # the turn went on: the run's audit still says who decided, a call no one decided waits nowhere
    with pytest.raises(ApprovalError, match=re.escape(f"was denied by 'ada' at {record.decided_at};")):
        await store.approve_call("r", first, by="bob")
    with pytest.raises(ApprovalError, match=r"'r' was approved at [^;]+; it cannot be decided again"):
        await store.approve_call("r", second)
    with pytest.raises(ApprovalError, match="no call of the run 'r' waits for a decision"):
        await store.approve_call("r", "nope")


async def test_of_two_deciders_at_once_one_wins_and_the_other_is_told_who(
    store: RunStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    [call] = await paused_run(store, "r", 120)
    both_loaded = anyio.Event()
    loads: list[int] = []
    load = store.load

    async def load_together(run_id: str) -> Checkpoint | None:
        """Both deciders read the run before either saves its decision."""
        loaded = await load(run_id)
        loads.append(1)
        if len(loads) == 2:
            both_loaded.set()
        await both_loaded.wait()
        return loaded

    monkeypatch.setattr(store, "load", load_together)
    outcomes: dict[str, str] = {}

    async def decide(who: str) -> None:
        try:
            if who == "ada":
                await store.approve_call("r", call, by=who)
            else:
                await store.deny_call("r", call, "No.", by=who)
            outcomes[who] = "won"
        except ApprovalError as error:
            outcomes[who] = str(error)

    async with anyio.create_task_group() as group:
        group.start_soon(decide, "ada")
        group.start_soon(decide, "bob")
    [winner] = [who for who, outcome in outcomes.items() if outcome == "won"]
    [loser] = [outcome for outcome in outcomes.values() if outcome != "won"]
    assert f"by {winner!r}" in loser
    assert "cannot be decided again" in loser
    monkeypatch.undo()
    runner = await resume(store, "r")
    await runner.until_done()
    assert paid == ([120] if winner == "ada" else [])


async def test_a_decision_is_a_save_so_a_runner_holding_the_run_sees_its_sequence_move(
    store: RunStore,
) -> None:
    # (tests/runner/test_live_decisions.py: how a runner holding the run takes the decisions over)
    fake = FakeMessagesAPI([text_reply("unused")])
    [call] = await paused_run(store, "r", 120)
    held = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=[pay, look])
    before = await store.load("r")
    await store.approve_call("r", call, by="ada")
    after = await store.load("r")
    assert before is not None
    assert after is not None
    assert after.sequence == before.sequence + 1
    assert after.state.calls[call].decided_by == "ada"
    # The runner that loaded the run before the decision cannot save over it: its own decision
    # on the call is dropped, and it goes on with the store's.
    held.deny(call, "No.")
    with pytest.raises(ApprovalError, match="dropped"):
        await held.until_done()
    assert paid == []
    await held.until_done()
    assert paid == [120]

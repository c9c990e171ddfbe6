"""``Resumer`` in one process, on asyncio and trio: a decided run goes on by itself, once, with the
app's tools; many runs, ``concurrency`` at a time; two resumers share the runs; a run that pauses
again is given back; failures are recorded in the run and stop nothing; a resumer stopped mid-run
hands the run over (its started call is answered as interrupted, not run again); a resumer that
lost its lease stops driving the run.

The same across processes, with SIGKILL, is in ``test_resumer_processes.py``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import anthropic
import anyio
import pytest

from tests.stores.test_store_contract_leases import close, twin
from tests.support.helpers import MODEL
from tests.support.stores import Clock, paid, paused_run, running_run
from toolrunner import (
    CheckpointConflictError,
    CheckpointError,
    LoopFinished,
    MemoryCheckpointer,
    ParamsError,
    Resumer,
    RunnerEvent,
    RunStatus,
    RunStore,
    ToolRunner,
    ToolRunnerError,
    tool,
)
from toolrunner._ops.resumer import transient
from toolrunner.testing import (
    FakeMessagesAPI,
    ScriptEntry,
    disconnect,
    fault,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

GUARD = 20  # seconds; reached only when something hangs


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


class App:
    """The app's side: its tools and its factory, which counts the runs it resumes."""

    def __init__(self, *replies: ScriptEntry, pay: Any = None) -> None:
        self.replies: list[ScriptEntry] = list(replies) or [text_reply("Paid.")]
        self.pay = pay  # the app's own pay tool, instead of tests.support.stores.pay
        self.resumed: Counter[str] = Counter()
        self.ended: dict[str, anyio.Event] = {}

    def finished(self, run_id: str) -> anyio.Event:
        return self.ended.setdefault(run_id, anyio.Event())

    async def factory(self, run_id: str, store: RunStore) -> ToolRunner:
        from tests.support.stores import look, pay

        self.resumed[run_id] += 1
        ended = self.finished(run_id)

        def on_event(event: RunnerEvent) -> None:
            if isinstance(event, LoopFinished) and event.reason != "awaiting_approval":
                ended.set()

        return await ToolRunner.resume(
            FakeMessagesAPI(self.replies).async_client(),
            checkpointer=store,
            run_id=run_id,
            tools=[self.pay or pay, look],
            on_event=on_event,
        )


async def ready_run(store: RunStore, run_id: str, amount: int = 120) -> None:
    [call] = await paused_run(store, run_id, amount)
    await store.approve_call(run_id, call, by="ada")


async def test_a_run_decided_through_the_store_goes_on_by_itself_once(
    store: RunStore, request: pytest.FixtureRequest
) -> None:
    app = App()
    [first] = await paused_run(store, "order-1", 120)
    [second] = await paused_run(store, "order-2", 80)
    other = twin(store, request)  # decisions from another process (a CLI, the inbox)
    resumer = Resumer(store, app.factory, poll_interval=0.05)
    try:
        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as group:
                await group.start(resumer.run)
                await store.approve_call("order-1", first, by="ada")
                await app.finished("order-1").wait()
                await other.approve_call("order-2", second, by="bob")
                await app.finished("order-2").wait()
                resumer.stop()  # run() returns once the runs in hand are done
    finally:
        if other is not store:
            close(other)
    assert sorted(paid) == [80, 120]
    assert app.resumed == {"order-1": 1, "order-2": 1}
    for run_id in ("order-1", "order-2"):
        summary = await store.get_run(run_id)
        assert summary is not None
        assert (summary.status, summary.end_reason, summary.lease) == (RunStatus.FINISHED, "model", None)
    assert resumer.in_hand == frozenset()


async def test_two_resumers_share_the_runs_and_each_goes_on_once(
    store: RunStore, request: pytest.FixtureRequest
) -> None:
    app = App()
    runs = [f"order-{number}" for number in range(6)]
    for number, run_id in enumerate(runs):
        await ready_run(store, run_id, amount=number + 1)
    other = twin(store, request)
    try:
        with anyio.fail_after(GUARD):
            async with anyio.create_task_group() as group:
                one = Resumer(store, app.factory, concurrency=2, poll_interval=0.05, owner="one")
                two = Resumer(other, app.factory, concurrency=2, poll_interval=0.05, owner="two")
                for resumer in (one, two):
                    group.start_soon(resumer.run)
                for run_id in runs:
                    await app.finished(run_id).wait()
                one.stop()
                two.stop()
    finally:
        if other is not store:
            close(other)
    assert sorted(paid) == [1, 2, 3, 4, 5, 6]  # each call ran once
    assert app.resumed == dict.fromkeys(runs, 1)
    assert {summary.status for summary in (await store.list_runs()).runs} == {RunStatus.FINISHED}


async def test_runs_go_on_concurrency_at_a_time() -> None:
    store = MemoryCheckpointer()
    active: list[str] = []
    most: list[int] = []
    both = [anyio.Event(), anyio.Event()]

    @tool(requires_approval=True)
    async def pay(amount: int, to: str = "ACME") -> str:
        """Pay."""
        active.append(str(amount))
        most.append(len(active))
        pair = both[(amount - 1) // 2]
        if len(active) == 2:
            pair.set()
        await pair.wait()  # two at a time go through; one at a time would hang here
        active.remove(str(amount))
        return "paid"

    for amount in (1, 2, 3, 4):
        await ready_run(store, f"r{amount}", amount)
    app = App(pay=pay)
    with anyio.fail_after(GUARD):
        taken = await Resumer(store, app.factory, concurrency=2).resume_ready()
    assert sorted(taken) == ["r1", "r2", "r3", "r4"]
    assert max(most) == 2
    assert await Resumer(store, app.factory).resume_ready() == ()  # nothing left


async def test_a_run_that_pauses_again_is_given_back_and_goes_on_once_decided_again() -> None:
    store = MemoryCheckpointer()
    await ready_run(store, "r")
    app = App(tool_reply(tool_call("pay", {"amount": 5}, id="again")), text_reply("Paid twice."))
    resumer = Resumer(store, app.factory)
    assert await resumer.resume_ready() == ("r",)
    summary = await store.get_run("r")
    assert summary is not None
    assert (summary.status, summary.lease, [call.id for call in summary.waiting]) == (
        RunStatus.AWAITING,
        None,
        ["again"],
    )
    assert await resumer.resume_ready() == ()  # it waits for a person
    await store.approve_call("r", "again", by="ada")
    app.replies = [text_reply("Paid twice.")]
    assert await resumer.resume_ready() == ("r",)
    assert paid == [120, 5]
    done = await store.get_run("r")
    assert done is not None
    assert done.status is RunStatus.FINISHED


async def test_failures_are_recorded_in_their_runs_and_stop_nothing() -> None:
    store = MemoryCheckpointer()
    for run_id in ("broken-factory", "wrong-thing", "api-down", "fine"):
        await ready_run(store, run_id)
    app = App()

    async def factory(run_id: str, store: RunStore) -> Any:
        if run_id == "broken-factory":
            raise RuntimeError("no client for you")
        if run_id == "wrong-thing":
            return "a runner, honest"
        if run_id == "api-down":
            app.replies = [fault(400, message="prompt is too long")]  # does not pass by itself
        else:
            app.replies = [text_reply("Paid.")]
        return await app.factory(run_id, store)

    with anyio.fail_after(GUARD):
        taken = await Resumer(store, factory, concurrency=1).resume_ready()
    assert sorted(taken) == ["api-down", "broken-factory", "fine", "wrong-thing"]
    summaries = {summary.run_id: summary for summary in (await store.list_runs()).runs}
    assert summaries["fine"].status is RunStatus.FINISHED
    failures = {run_id: summary.failure for run_id, summary in summaries.items() if run_id != "fine"}
    assert failures["broken-factory"] == {"type": "RuntimeError", "message": "no client for you"}
    wrong = failures["wrong-thing"]
    assert wrong is not None
    assert wrong["type"] == "ParamsError"
    assert (
        "the factory gave 'str' for the run 'wrong-thing'; it must return the ToolRunner" in wrong["message"]
    )
    down = failures["api-down"]
    assert down is not None
    assert "prompt is too long" in down["message"]
    for run_id in failures:
        assert summaries[run_id].status is RunStatus.FAILED
        assert summaries[run_id].lease is None
    assert await Resumer(store, factory).resume_ready() == ()  # failed runs are not taken up again


async def test_a_run_failed_by_an_error_that_may_pass_is_tried_again_once_the_lease_runs_out() -> None:
    store = MemoryCheckpointer()
    await ready_run(store, "r")
    app = App(fault(529, message="Overloaded"))
    failed = anyio.Event()
    factory = app.factory

    async def factory_telling(run_id: str, store: RunStore) -> ToolRunner:
        if app.resumed[run_id] == 1:  # the second try: the service is back
            app.replies = [text_reply("Paid.")]
            summary = await store.get_run(run_id)
            assert summary is not None
            assert summary.status is RunStatus.FAILED  # meanwhile, with the error
            assert summary.failure is not None
            assert "Overloaded" in summary.failure["message"]
            failed.set()
        return await factory(run_id, store)

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            resumer = Resumer(
                store, factory_telling, lease=0.3, poll_interval=60
            )  # woken when the lease runs out
            await group.start(resumer.run)
            await app.finished("r").wait()
            resumer.stop()
    assert failed.is_set()
    assert app.resumed == {"r": 2}
    assert paid == [120]  # the call ran once: the second try sent the request again
    summary = await store.get_run("r")
    assert summary is not None
    assert (summary.status, summary.failure, summary.lease) == (RunStatus.FINISHED, None, None)


async def test_errors_that_may_pass_are_told_from_those_that_do_not() -> None:
    fake = FakeMessagesAPI([fault(529), fault(429), fault(500), disconnect(), fault(400), fault(401)])
    client = fake.async_client()
    errors: list[Exception] = []
    for _ in range(6):
        try:
            await client.messages.create(
                model=MODEL, max_tokens=8, messages=[{"role": "user", "content": "Hi"}]
            )
        except anthropic.APIError as error:
            errors.append(error)
    assert [transient(error) for error in errors] == [True, True, True, True, False, False]
    assert transient(CheckpointError("the disk is full"))
    assert not transient(CheckpointConflictError("another runner went on with it"))
    assert not transient(RuntimeError("a bug"))


async def test_the_runs_of_an_apps_own_runners_are_never_taken() -> None:
    store = MemoryCheckpointer()
    await running_run(store, "mine")  # an app's runner stopped mid-run (or drives it now)
    await paused_run(store, "waits", 120)
    assert await Resumer(store, App().factory).resume_ready() == ()


async def test_a_resumer_stopped_mid_call_hands_the_run_over_and_the_call_is_not_run_again() -> None:
    store = MemoryCheckpointer()
    await ready_run(store, "r")
    started = anyio.Event()
    starts: list[int] = []

    @tool(requires_approval=True)
    async def pay(amount: int, to: str = "ACME") -> str:
        """Pay."""
        starts.append(amount)
        started.set()
        await anyio.sleep_forever()  # a payment that takes long: the shutdown comes first
        raise AssertionError("unreachable")

    first = App(pay=pay)
    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            await group.start(Resumer(store, first.factory, owner="first").run)
            await started.wait()
            group.cancel_scope.cancel()  # a shutdown: the run stops where it is
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.status is RunStatus.RUNNING
    assert summary.lease is not None
    assert summary.lease.owner == "first"  # given up, run out: the next resumer takes it at once

    second = App(pay=pay)
    with anyio.fail_after(GUARD):
        assert await Resumer(store, second.factory, owner="second").resume_ready() == ("r",)
    assert starts == [120]  # not run again: it may have paid
    loaded = await store.load("r")
    assert loaded is not None
    [result] = loaded.state.messages[2]["content"]
    assert result["is_error"] is True
    assert "interrupted" in str(result["content"])
    done = await store.get_run("r")
    assert done is not None
    assert (done.status, done.lease) == (RunStatus.FINISHED, None)


async def test_stop_takes_no_more_runs_and_lets_the_runs_in_hand_end_first() -> None:
    store = MemoryCheckpointer()
    await ready_run(store, "first")
    started, release = anyio.Event(), anyio.Event()

    @tool(requires_approval=True)
    async def pay(amount: int, to: str = "ACME") -> str:
        """Pay."""
        started.set()
        await release.wait()
        return "paid"

    resumer = Resumer(store, App(pay=pay).factory)
    returned: list[str] = []

    async def serve() -> None:
        await resumer.run()
        returned.append("run() returned")

    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(serve)
            await started.wait()
            resumer.stop()
            await ready_run(store, "second")  # ready after stop(): left for another resumer
            await anyio.sleep(0.05)  # run() would return here if it did not wait for "first" (not asserted)
            assert returned == []
            release.set()
    assert returned == ["run() returned"]
    statuses = {summary.run_id: summary.status for summary in (await store.list_runs()).runs}
    assert statuses == {"first": RunStatus.FINISHED, "second": RunStatus.READY}


async def test_runs_claimed_as_the_resumer_is_cancelled_are_handed_over_at_once(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The store grants the leases, and the resumer is cancelled before it hears the answer: the
    runs go to the next resumer at once, not once their leases have run out."""
    store = MemoryCheckpointer()
    await ready_run(store, "r")
    claimed, answer = anyio.Event(), anyio.Event()
    lease_runs = store.lease_runs

    async def slow_answer(owner: str, *, lease: float, limit: int = 1) -> tuple[str, ...]:
        taken = await lease_runs(owner, lease=lease, limit=limit)  # written in the store
        claimed.set()
        await answer.wait()  # the answer is on its way back when the shutdown comes
        return taken

    monkeypatch.setattr(store, "lease_runs", slow_answer)
    app = App()
    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(Resumer(store, app.factory, owner="cancelled").run)
            await claimed.wait()
            group.cancel_scope.cancel()
            answer.set()
    monkeypatch.undo()
    with anyio.fail_after(GUARD):
        assert await Resumer(store, app.factory, owner="next").resume_ready() == ("r",)
    assert paid == [120]
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.status is RunStatus.FINISHED


async def test_a_resumer_that_lost_its_lease_stops_driving_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    store = MemoryCheckpointer()
    clock = Clock(1_000.0)
    monkeypatch.setattr(store, "_now", clock)
    await ready_run(store, "r")
    started, stopped = anyio.Event(), anyio.Event()

    @tool(requires_approval=True)
    async def pay(amount: int, to: str = "ACME") -> str:
        """Pay."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            stopped.set()
        raise AssertionError("unreachable")

    resumer = Resumer(store, App(pay=pay).factory, lease=0.3, owner="stalled")
    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:
            group.start_soon(resumer.run)
            await started.wait()
            clock.now += 60  # the resumer stalled past its lease, as the store sees it
            assert await store.lease_runs("other", lease=60) == ("r",)  # taken over
            await stopped.wait()  # at its next renewal, it learns, and stops the call
            resumer.stop()
    summary = await store.get_run("r")
    assert summary is not None
    assert summary.lease is not None
    assert summary.lease.owner == "other"  # not given up by the resumer that lost it


async def test_a_resumer_serves_once_at_a_time_and_checks_its_arguments() -> None:
    store = MemoryCheckpointer()
    app = App()
    with pytest.raises(ParamsError, match="concurrency must be an int of 1 or more"):
        Resumer(store, app.factory, concurrency=0)
    with pytest.raises(ParamsError, match="lease must be a number of seconds above 0"):
        Resumer(store, app.factory, lease=-1)
    with pytest.raises(ParamsError, match="poll_interval must be a number of seconds above 0"):
        Resumer(store, app.factory, poll_interval=0)
    with pytest.raises(ParamsError, match="owner must be a non-empty string"):
        Resumer(store, app.factory, owner="")
    with pytest.raises(ParamsError, match=r"a lease's owner 'a\\n' holds a control character"):
        Resumer(store, app.factory, owner="a\n")
    with pytest.raises(ParamsError, match="factory must be an async function"):
        Resumer(store, None)  # pyright: ignore[reportArgumentType]
    resumer = Resumer(store, app.factory)
    assert resumer.owner.count(":") == 2
    async with anyio.create_task_group() as group:
        await group.start(resumer.run)
        with pytest.raises(ToolRunnerError, match="is serving already"):
            await resumer.resume_ready()
        resumer.stop()

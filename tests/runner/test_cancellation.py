"""Cancellation at each await point of an iteration, on asyncio and trio.

After each cancellation we check the same three things: no task or worker thread of the runner is
still running, the history holds no half-appended results, and the runner resumes to the end a
run without cancellation reaches (or closes cleanly). The property test in test_properties.py
cancels at generated points; these tests name each point and each way to cancel.

Streaming (``stream=True``) is a separate issue; cancelling while a stream is read is not covered
here.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anthropic
import anyio
import pytest

from tests.support.reliability_helpers import (
    LeakCheck,
    pairing_problems,
    plain,
    skeleton,
    worker_threads_idle,
)
from toolrunner import MemoryCheckpointer, SQLiteCheckpointer, ToolRunner, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

MODEL = "claude-sonnet-4-6"
USER = {"role": "user", "content": "Pay both invoices."}
GUARD = 10  # seconds; only reached when something hangs, i.e. on failure

charges: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset() -> None:
    charges.clear()


@tool
async def pay(invoice: str) -> str:
    """Pay an invoice.

    Args:
        invoice: The invoice number.
    """
    charges[invoice] += 1
    return f"paid {invoice}"


def pay_both() -> list[ScriptEntry]:
    return [
        tool_reply(
            tool_call("pay", {"invoice": "A"}, id="tu_a"), tool_call("pay", {"invoice": "B"}, id="tu_b")
        ),
        text_reply("Both paid."),
    ]


def slow_payer(calls: int) -> tuple[Any, threading.Barrier, threading.Event]:
    """A sync tool ``pay_slowly`` for ``calls`` calls at once: each waits until all started (the
    barrier, which the test passes too), then until ``release`` is set; charges once and answers."""
    started = threading.Barrier(calls + 1, timeout=GUARD)  # the calls and the test
    release = threading.Event()

    @tool
    def pay_slowly(invoice: str) -> str:
        """Pay an invoice, slowly."""
        started.wait()
        release.wait(GUARD)
        charges[invoice] += 1
        return f"paid {invoice}"

    return pay_slowly, started, release


async def cancelled_while_tools_run(
    runner: ToolRunner, started: threading.Barrier | threading.Event, release: threading.Event
) -> anyio.CancelScope:
    """``runner.until_done()`` in a cancel scope cancelled once the tools started (``started``),
    after which ``release`` lets them finish (the runner waits for them); the scope."""
    with anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:

            async def cancel_when_running() -> None:
                await anyio.to_thread.run_sync(started.wait)
                scope.cancel()
                release.set()

            group.start_soon(cancel_when_running)
            await runner.until_done()
    return scope


def runner_for(
    client: anthropic.AsyncAnthropic | anthropic.Anthropic, *tools: Any, **options: Any
) -> ToolRunner:
    return ToolRunner(
        client, model=MODEL, max_tokens=64, messages=[USER], tools=list(tools) or [pay], **options
    )


async def reference_history(script: Sequence[ScriptEntry], *tools: Any) -> list[Any]:
    """The history a run without cancellation ends with."""
    async with FakeMessagesAPI(script).async_client() as client:
        runner = runner_for(client, *tools)
        await runner.until_done()
        history = skeleton(runner.messages)
    charges.clear()
    return history


def quick_tool(name: str) -> Any:
    """A tool that answers at once, under ``name``: for reference runs of gated tools."""

    @tool(name=name)
    async def quick(invoice: str) -> str:
        """Pay at once."""
        return f"paid {invoice}"

    return quick


async def assert_clean(runner: ToolRunner, leaks: LeakCheck) -> None:
    """No task or busy worker thread left, and a whole history (at most waiting for results)."""
    await leaks.assert_none_new()
    assert worker_threads_idle()
    assert not pairing_problems(runner.messages, allow_trailing=True)


# -- during the request ------------------------------------------------------------------------------


async def test_cancelled_during_the_request_sends_it_again_on_resume() -> None:
    expected = await reference_history(pay_both())
    arrived = anyio.Event()
    script = pay_both()

    async def respond(request: RecordedRequest) -> ScriptEntry:
        if request.index == 0:
            arrived.set()
            await anyio.sleep_forever()
        return script.pop(0)

    fake = FakeMessagesAPI(responder=respond)
    async with fake.async_client() as client:
        runner = runner_for(client)
        leaks = await LeakCheck.start()
        async with anyio.create_task_group() as group:

            async def cancel_when_sent() -> None:
                await arrived.wait()
                group.cancel_scope.cancel()

            group.start_soon(cancel_when_sent)
            await runner.until_done()
        await assert_clean(runner, leaks)
        assert runner.requests_sent == 0
        assert runner.last_message is None
        assert skeleton(runner.messages) == skeleton([USER])
        with anyio.fail_after(GUARD):
            await runner.until_done()
    assert skeleton(runner.messages) == expected
    assert fake.requests[0].body == fake.requests[1].body  # the same request, sent again
    assert charges == {"A": 1, "B": 1}


async def test_cancelled_during_a_sync_clients_request_waits_for_it_and_keeps_the_reply() -> None:
    """A sync client's request runs in a worker thread, which cannot be interrupted: cancellation
    takes effect when the request returns. The reply it got is kept, so it is not asked for twice."""
    expected = await reference_history(pay_both())
    release = threading.Event()
    arrived = threading.Event()
    script = pay_both()

    def respond(request: RecordedRequest) -> ScriptEntry:
        if request.index == 0:
            arrived.set()
            release.wait(GUARD)
        return script.pop(0)

    fake = FakeMessagesAPI(responder=respond)
    with fake.client() as client:
        runner = runner_for(client)
        leaks = await LeakCheck.start()
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:

                async def cancel_then_release() -> None:
                    await anyio.to_thread.run_sync(arrived.wait, GUARD)
                    scope.cancel()
                    release.set()

                group.start_soon(cancel_then_release)
                await runner.until_done()
        assert scope.cancelled_caught
        await assert_clean(runner, leaks)
        assert runner.requests_sent >= 1  # the reply that arrived after the cancel was kept
        with anyio.fail_after(GUARD):
            await runner.until_done()
    assert skeleton(runner.messages) == expected
    assert len(fake.requests) == 2  # so no request was sent twice
    assert charges == {"A": 1, "B": 1}


# -- while tools run --------------------------------------------------------------------------------


async def test_move_on_after_while_sync_tools_run_waits_for_them_and_keeps_their_results() -> None:
    pay_slowly, started, release = slow_payer(calls=2)

    script = [
        tool_reply(
            tool_call("pay_slowly", {"invoice": "A"}, id="tu_a"),
            tool_call("pay_slowly", {"invoice": "B"}, id="tu_b"),
        ),
        text_reply("Both paid."),
    ]
    expected = await reference_history(script, quick_tool("pay_slowly"))
    fake = FakeMessagesAPI(script)
    async with fake.async_client() as client:
        runner = runner_for(client, pay_slowly)
        leaks = await LeakCheck.start()
        release.clear()
        await cancelled_while_tools_run(runner, started, release)
        await assert_clean(runner, leaks)
        assert charges == {"A": 1, "B": 1}
        # Cancellation lands at the next checkpoint: before the appends (asyncio), or, where the
        # in-process fake offers none (trio), the loop may have run on to its end.
        assert skeleton(runner.messages) in (skeleton([USER]), expected)
        with anyio.fail_after(GUARD):
            await runner.until_done()
    assert skeleton(runner.messages) == expected
    assert charges == {"A": 1, "B": 1}  # the finished calls were not run again


@pytest.mark.parametrize("calls", [1, 2])
@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_results_waited_for_after_a_cancellation_are_saved_and_a_resume_from_the_store_gets_them(
    store: str, calls: int, tmp_path: Path
) -> None:
    """The sync tools ran to their end after the cancellation (each in its thread), so their
    results are saved before the cancellation goes on: a run resumed from the store (as a new
    process would) hands the model those results, not an "interrupted" answer, and runs nothing
    again. Before, the save after each result was cancelled at its first await."""
    pay_slowly, started, release = slow_payer(calls)

    invoices = "AB"[:calls]
    script = [
        tool_reply(*(tool_call("pay_slowly", {"invoice": name}, id=f"tu_{name}") for name in invoices)),
        text_reply("Paid."),
    ]
    checkpointer = MemoryCheckpointer() if store == "memory" else SQLiteCheckpointer(tmp_path / "runs.db")
    fake = FakeMessagesAPI(script)
    async with fake.async_client() as client:
        runner = runner_for(client, pay_slowly, checkpointer=checkpointer, run_id="pay")
        scope = await cancelled_while_tools_run(runner, started, release)
        assert scope.cancelled_caught
        assert charges == dict.fromkeys(invoices, 1)
        if store == "sqlite":  # the store as a new process finds it: a new connection
            checkpointer = SQLiteCheckpointer(tmp_path / "runs.db")
        resumed = await ToolRunner.resume(client, checkpointer=checkpointer, run_id="pay", tools=[pay_slowly])
        with anyio.fail_after(GUARD):
            await resumed.until_done()
    assert charges == dict.fromkeys(invoices, 1)  # nothing ran again
    answered = [(block["tool_use_id"], block["content"]) for block in resumed.messages[2]["content"]]
    assert answered == [(f"tu_{name}", f"paid {name}") for name in invoices]


@pytest.mark.parametrize(
    "anyio_backend", ["asyncio"]
)  # asyncio's own cancellation, which a shield does not stop
@pytest.mark.parametrize("store", [None, "memory"])
@pytest.mark.parametrize("how", ["task.cancel()", "asyncio.timeout"])
async def test_asyncios_own_cancellation_while_a_sync_tool_runs_waits_for_it_and_keeps_its_result(
    how: str, store: str | None
) -> None:
    """``task.cancel()`` and ``asyncio.timeout`` reach through the shield that holds anyio's cancel
    scopes off a sync tool's thread. The runner holds such a cancellation back until the tool
    finished, keeps its result (journaled, and saved with a store), then raises it: the caller
    gets its ``CancelledError`` or ``TimeoutError``, and the call never runs again (before, it ran
    twice without a store, and was answered "interrupted" with one)."""
    pay_slowly, started, release = slow_payer(calls=1)
    checkpointer = None if store is None else MemoryCheckpointer()
    saving: dict[str, Any] = {} if checkpointer is None else {"checkpointer": checkpointer, "run_id": "pay"}
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("pay_slowly", {"invoice": "A"}, id="tu_a")), text_reply("Paid.")]
    )
    async with fake.async_client() as client:
        runner = runner_for(client, pay_slowly, **saving)

        async def cancel_while_it_runs(cancel: Callable[[], object]) -> None:
            await anyio.to_thread.run_sync(started.wait, GUARD)
            cancel()
            for _ in range(5):  # the cancellation reaches the runner's task (a few turns of the loop)
                await asyncio.sleep(0)
            release.set()

        if how == "task.cancel()":
            task = asyncio.ensure_future(runner.until_done())
            helper = asyncio.ensure_future(cancel_while_it_runs(task.cancel))
            with pytest.raises(asyncio.CancelledError):
                await task
            await helper
        else:
            deadline = asyncio.timeout(None)
            helper = asyncio.ensure_future(
                cancel_while_it_runs(lambda: deadline.reschedule(asyncio.get_running_loop().time()))
            )
            with pytest.raises(TimeoutError):
                async with deadline:
                    await runner.until_done()
            await helper
        assert charges == {"A": 1}
        if checkpointer is not None:  # the result was saved before the cancellation went on
            runner = await ToolRunner.resume(
                client, checkpointer=checkpointer, run_id="pay", tools=[pay_slowly]
            )
        with anyio.fail_after(GUARD):
            await runner.until_done()
    assert charges == {"A": 1}  # not run again
    assert runner.messages[2]["content"][0]["content"] == "paid A"


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_a_second_asyncio_cancellation_while_one_is_held_goes_on_at_once() -> None:
    """The way out of a held cancellation (a second Ctrl-C under ``asyncio.run`` cancels every task
    as it shuts down): the task ends at once, while the tool still runs in its thread."""
    pay_slowly, started, release = slow_payer(calls=1)
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("pay_slowly", {"invoice": "A"}, id="tu_a")), text_reply("Paid.")]
    )
    try:
        async with fake.async_client() as client:
            task = asyncio.ensure_future(runner_for(client, pay_slowly).until_done())
            await anyio.to_thread.run_sync(started.wait, GUARD)
            task.cancel()
            for _ in range(5):  # the first reaches the runner, which holds it
                await asyncio.sleep(0)
            assert not task.done()
            task.cancel()
            await asyncio.wait({task}, timeout=GUARD)  # (a guard that never cancels: a hang fails)
            assert task.cancelled()
            assert charges == {}  # the tool still runs
    finally:
        release.set()

    def charged() -> bool:  # the tool ends in its thread, before the next test starts
        deadline = time.monotonic() + GUARD
        while not charges and time.monotonic() < deadline:
            time.sleep(0.001)
        return bool(charges)

    assert await anyio.to_thread.run_sync(charged)


@pytest.mark.parametrize("anyio_backend", ["asyncio"])
async def test_asyncios_own_cancellation_before_a_worker_thread_took_the_call_goes_on_at_once() -> None:
    """Every worker thread busy (the limiter's one token held): the call waits for a thread, and a
    ``task.cancel()`` then stops it at once, since the tool never began; the call runs, once, when
    the runner is iterated again."""
    limiter = anyio.to_thread.current_default_thread_limiter()
    tokens = limiter.total_tokens
    busy, free = threading.Event(), threading.Event()
    ran: list[str] = []

    @tool
    def charge_card(invoice: str) -> str:
        """Charge the card for an invoice."""
        ran.append(invoice)
        return f"charged {invoice}"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("charge_card", {"invoice": "A"}, id="tu_a")), text_reply("Paid.")]
    )
    limiter.total_tokens = 1
    try:
        holder = asyncio.ensure_future(anyio.to_thread.run_sync(lambda: (busy.set(), free.wait(GUARD))))
        await anyio.to_thread.run_sync(busy.wait, GUARD, limiter=anyio.CapacityLimiter(1))
        async with fake.async_client() as client:
            runner = runner_for(client, charge_card)
            task = asyncio.ensure_future(runner.until_done())
            for _ in range(20):  # the run reaches its call, which waits for a thread
                await asyncio.sleep(0)
            task.cancel()
            await asyncio.wait({task}, timeout=GUARD)  # (a guard that never cancels: a hang fails)
            assert task.cancelled()
            assert ran == []  # it never began
            free.set()
            await holder
            with anyio.fail_after(GUARD):
                await runner.until_done()
    finally:
        free.set()
        limiter.total_tokens = tokens
    assert ran == ["A"]
    assert runner.messages[2]["content"][0]["content"] == "charged A"


async def test_a_sync_tool_with_a_timeout_is_waited_for_on_outer_cancellation_and_not_run_again() -> None:
    """Only the tool's own timeout abandons its thread; an outer cancellation waits for the call,
    keeps its result, and resuming does not run it again (no second charge)."""
    started = threading.Event()
    release = threading.Event()

    @tool(timeout=GUARD)
    def charge_card(invoice: str) -> str:
        """Charge the card for an invoice."""
        started.set()
        release.wait(GUARD)
        charges[invoice] += 1
        return f"charged {invoice}"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("charge_card", {"invoice": "A"}, id="tu_a")), text_reply("Paid.")]
    )
    async with fake.async_client() as client:
        runner = runner_for(client, charge_card)
        leaks = await LeakCheck.start()
        with anyio.CancelScope() as scope, anyio.fail_after(GUARD / 2):
            async with anyio.create_task_group() as group:

                async def cancel_when_running() -> None:
                    await anyio.to_thread.run_sync(started.wait, GUARD)
                    scope.cancel()
                    release.set()

                group.start_soon(cancel_when_running)
                await runner.until_done()
        await assert_clean(runner, leaks)
        assert charges == {"A": 1}
        with anyio.fail_after(GUARD):
            await runner.until_done()
    assert charges == {"A": 1}
    assert [role for role, _ in skeleton(runner.messages)] == ["user", "assistant", "user", "assistant"]


async def test_cancelling_async_tools_appends_nothing_and_resume_reruns_only_unfinished_calls() -> None:
    expected = await reference_history(pay_both())
    gate = anyio.Event()
    runs: Counter[str] = Counter()

    @tool(name="pay")
    async def pay_gated(invoice: str) -> str:
        """Pay an invoice once the gate opens (B waits)."""
        runs[invoice] += 1
        if invoice == "B":
            await gate.wait()
        charges[invoice] += 1
        return f"paid {invoice}"

    fake = FakeMessagesAPI(pay_both())
    async with fake.async_client() as client:
        runner = runner_for(client, pay_gated)
        leaks = await LeakCheck.start()
        with anyio.move_on_after(0.05) as scope:
            await runner.until_done()
        assert scope.cancelled_caught
        await assert_clean(runner, leaks)
        assert skeleton(runner.messages) == skeleton([USER])
        gate.set()
        with anyio.fail_after(GUARD):
            await runner.until_done()
    assert skeleton(runner.messages) == expected
    assert runs == {"A": 1, "B": 2}  # B was cut off and ran again; A had finished
    assert charges == {"A": 1, "B": 1}


# -- inside the body -----------------------------------------------------------------------------------


async def cancel_in_body(runner: ToolRunner, body: Callable[[], Awaitable[Any]]) -> None:
    with anyio.CancelScope() as scope:
        async for _ in runner:
            scope.cancel()
            await body()
            raise AssertionError("the body should have been cancelled")
    assert scope.cancelled_caught


@pytest.mark.parametrize("then", ["resume", "close"])
async def test_cancelled_inside_the_body_the_reply_waits_for_resume_or_close(then: str) -> None:
    expected = await reference_history(pay_both())
    fake = FakeMessagesAPI(pay_both())
    async with fake.async_client() as client:
        runner = runner_for(client)
        leaks = await LeakCheck.start()
        await cancel_in_body(runner, anyio.sleep_forever)
        await assert_clean(runner, leaks)
        assert skeleton(runner.messages) == skeleton([USER])
        assert runner.requests_sent == 1
        if then == "resume":
            await runner.until_done()
            assert skeleton(runner.messages) == expected
            assert charges == {"A": 1, "B": 1}
        else:
            runner.close()
            assert [m async for m in runner] == []
            assert [role for role, _ in skeleton(runner.messages)] == ["user", "assistant"]
            assert charges == {}
    assert not fake.unused or then == "close"


async def test_cancelled_inside_generate_tool_response_in_the_body_keeps_finished_results() -> None:
    expected = await reference_history(pay_both())
    gate = anyio.Event()
    runs: Counter[str] = Counter()

    @tool(name="pay")
    async def pay_gated(invoice: str) -> str:
        """Pay; B waits for the gate."""
        runs[invoice] += 1
        if invoice == "B":
            await gate.wait()
        charges[invoice] += 1
        return f"paid {invoice}"

    fake = FakeMessagesAPI(pay_both())
    async with fake.async_client() as client:
        runner = runner_for(client, pay_gated)
        leaks = await LeakCheck.start()
        async for _ in runner:
            with anyio.move_on_after(0.05):
                await runner.generate_tool_response()
            await assert_clean(runner, leaks)
            assert skeleton(runner.messages) == skeleton([USER])  # it never changes the history
            gate.set()
            break
        await runner.until_done()
    assert skeleton(runner.messages) == expected
    assert runs == {"A": 1, "B": 2}
    assert charges == {"A": 1, "B": 1}


async def test_a_cancelled_caller_does_not_cancel_the_others_sharing_its_run() -> None:
    gate = anyio.Event()

    @tool(name="pay")
    async def pay_gated(invoice: str) -> str:
        """Pay once the gate opens."""
        await gate.wait()
        charges[invoice] += 1
        return f"paid {invoice}"

    fake = FakeMessagesAPI(pay_both())
    async with fake.async_client() as client:
        runner = runner_for(client, pay_gated)
        async for _ in runner:
            break  # the body holds the reply; its calls are pending
        answers: list[Any] = []
        impatient_scope = anyio.CancelScope()

        async def patient() -> None:
            answers.append(plain(await runner.generate_tool_response()))

        async def impatient() -> None:
            with impatient_scope:
                await runner.generate_tool_response()

        async with anyio.create_task_group() as group:
            group.start_soon(impatient)  # first: it starts the run the others wait on
            await anyio.sleep(0.01)
            group.start_soon(patient)
            group.start_soon(patient)
            await anyio.sleep(0.01)
            impatient_scope.cancel()
            await anyio.sleep(0.01)
            gate.set()
        assert len(answers) == 2
        assert answers[0] == answers[1]
        await runner.until_done()
    assert charges == {"A": 1, "B": 1}


# -- close() from another task ----------------------------------------------------------------------------


async def test_close_from_another_task_during_the_request_ends_the_loop_with_that_reply() -> None:
    arrived = anyio.Event()
    gate = anyio.Event()
    script = [
        tool_reply(tool_call("pay", {"invoice": "A"}, id="tu_a")),
        tool_reply(tool_call("pay", {"invoice": "B"}, id="tu_b")),
        text_reply("Both paid."),
    ]

    async def respond(request: RecordedRequest) -> ScriptEntry:
        if request.index == 0:
            arrived.set()
            await gate.wait()
        return script.pop(0)

    fake = FakeMessagesAPI(responder=respond)
    async with fake.async_client() as client:
        runner = runner_for(client)
        async with anyio.create_task_group() as group:

            async def stop_button() -> None:
                await arrived.wait()
                runner.close()
                gate.set()

            group.start_soon(stop_button)
            with anyio.fail_after(GUARD):
                await runner.until_done()
    assert len(fake.requests) == 1
    assert charges == {}
    assert runner.finished
    assert not pairing_problems(runner.messages, allow_trailing=True)


async def test_close_from_another_task_while_tools_run_ends_the_loop_with_a_whole_history() -> None:
    started = anyio.Event()
    gate = anyio.Event()

    @tool(name="pay")
    async def pay_gated(invoice: str) -> str:
        """Pay once the gate opens."""
        started.set()
        await gate.wait()
        charges[invoice] += 1
        return f"paid {invoice}"

    fake = FakeMessagesAPI(pay_both())
    async with fake.async_client() as client:
        runner = runner_for(client, pay_gated)
        async with anyio.create_task_group() as group:

            async def stop_button() -> None:
                await started.wait()
                runner.close()
                gate.set()

            group.start_soon(stop_button)
            with anyio.fail_after(GUARD):
                await runner.until_done()
    assert len(fake.requests) == 1
    assert runner.finished
    assert sum(role == "assistant" for role, _ in skeleton(runner.messages)) == 1
    assert not pairing_problems(runner.messages, allow_trailing=True)


# -- leaving runner.events() early ----------------------------------------------------------------------


async def test_leaving_the_events_block_early_cancels_the_loop_and_it_resumes() -> None:
    expected = await reference_history(pay_both())
    fake = FakeMessagesAPI(pay_both())
    async with fake.async_client() as client:
        runner = runner_for(client)
        leaks = await LeakCheck.start()
        async with runner.events() as events:
            async for event in events:
                if type(event).__name__ == "MessageFinished":
                    break  # leave while the reply's calls are about to run
        await assert_clean(runner, leaks)
        await runner.until_done()
    assert skeleton(runner.messages) == expected
    assert all(count == 1 for count in charges.values())


# -- Ctrl-C in the blocking front end -----------------------------------------------------------------

CTRL_C_SCRIPT = """
import json, signal, sys, tempfile, threading
from pathlib import Path
from toolrunner import SQLiteCheckpointer, SyncToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

runs = []
handled = threading.Event()

def on_ctrl_c(signum, frame):
    handled.set()
    raise KeyboardInterrupt  # what Python's own SIGINT handler does

signal.signal(signal.SIGINT, on_ctrl_c)

@tool
def charge(invoice: str) -> str:
    '''Charge an invoice; the first call is interrupted by Ctrl-C while it runs.'''
    runs.append(invoice)
    if len(runs) == 1:
        # Ctrl-C: a real SIGINT to the main thread, which waits in the loop for the next reply and
        # is interrupted in that wait. The call returns only once the main thread has taken the
        # interrupt: a state, not a time (the timeout only keeps a broken run from hanging).
        signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
        handled.wait(timeout=30)
    return "charged " + invoice

fake = FakeMessagesAPI([tool_reply(tool_call("charge", {"invoice": "A"}, id="tu_a")), text_reply("Done.")])
# With a store, the run goes on from it, as a new process would (the store is a new connection).
database = Path(tempfile.mkdtemp()) / "runs.db" if sys.argv[2] == "store" else None
saving = {} if database is None else {"checkpointer": SQLiteCheckpointer(database), "run_id": "pay"}
runner = SyncToolRunner(fake.client(), model="claude-sonnet-4-6", max_tokens=64,
                        messages=[{"role": "user", "content": "Pay."}], tools=[charge], **saving)
before = set(threading.enumerate())
interrupted = False
try:
    if sys.argv[1] == "with":  # the loop inside the runner's block, which the interrupt leaves
        with runner:
            for _ in runner:
                pass
    else:
        for _ in runner:
            pass
except KeyboardInterrupt:
    interrupted = True
roles_after = [m["role"] for m in runner.messages]
left = [t.name for t in threading.enumerate() if t not in before and not t.name.startswith("AnyIO worker")]
if database is not None:
    runner = SyncToolRunner.resume(fake.client(), checkpointer=SQLiteCheckpointer(database), run_id="pay",
                                   tools=[charge])
runner.until_done()
print(json.dumps({"handled": handled.is_set(), "interrupted": interrupted, "roles_after": roles_after,
                  "left": left, "runs": runs, "requests": len(fake.requests),
                  "roles_end": [m["role"] for m in runner.messages],
                  "result": runner.messages[2]["content"][0]["content"]}))
"""


def run_script(script: str, *args: str) -> dict[str, Any]:
    """Run ``script`` in a subprocess (a KeyboardInterrupt that escaped would stop the whole test
    session): what it printed last, which must be all it wrote (no traceback on stderr either)."""
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", script, *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # nothing printed behind the caller's back (an event loop's dying words)
    outcome: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return outcome


@pytest.mark.skipif(
    sys.platform == "win32", reason="signal.pthread_kill, which sends the SIGINT, is POSIX only"
)
@pytest.mark.parametrize("store", ["no store", "store"])
@pytest.mark.parametrize("where", ["for", "with"])
def test_ctrl_c_in_a_sync_runner_loop_leaves_a_whole_history_and_it_resumes(where: str, store: str) -> None:
    """Ctrl-C while a sync tool runs, in a ``for`` loop, and in one inside ``with runner:`` (whose
    exit must not take the interrupt into the event loop, nor leave the runner before the call
    stopped). With a store, the run goes on from the store: the call finished, so its result was
    saved although the step was cancelled, and the model gets it, not an "interrupted" answer."""
    outcome = run_script(CTRL_C_SCRIPT, where, store)
    assert outcome["handled"]  # the main thread took the SIGINT while the tool ran
    assert outcome["interrupted"]  # and the for loop ended in a KeyboardInterrupt
    assert outcome["roles_after"] in (["user"], ["user", "assistant", "user"])  # whole turns only
    assert outcome["left"] == []  # the portal's thread ended with the loop
    assert outcome["runs"] == ["A"]  # the call finished, so resuming did not run it again
    assert outcome["requests"] == 2
    assert outcome["roles_end"] == ["user", "assistant", "user", "assistant"]
    assert outcome["result"] == "charged A"


CTRL_C_THRICE_SCRIPT = """
import json, signal, sys, threading, time
from toolrunner import SyncToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

runs = []
handled = []
main = threading.main_thread()

def on_ctrl_c(signum, frame):
    handled.append(signum)
    raise KeyboardInterrupt

signal.signal(signal.SIGINT, on_ctrl_c)

def waits(*calls):
    '''Whether the main thread is blocked in ``calls`` (innermost first, then its callers), as its
    frames say: the state to press the next Ctrl-C in.'''
    frame, names = sys._current_frames().get(main.ident), []
    while frame is not None and len(names) < len(calls):
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return tuple(names) == calls

def leaving_the_loop():
    '''Whether the main thread waits for the loop's thread as the ``for`` loop is left.'''
    frame, names = sys._current_frames().get(main.ident), []
    while frame is not None:
        names.append(frame.f_code.co_name)
        frame = frame.f_back
    return bool(names) and names[0] in ("wait", "_wait_for_tstate_lock") and "_iterate" in names and "_step" not in names

def ctrl_c_when(ready):
    deadline = time.monotonic() + 30  # only reached when something is broken
    while not ready() and time.monotonic() < deadline:
        time.sleep(0.001)
    count = len(handled)
    signal.pthread_kill(main.ident, signal.SIGINT)
    while len(handled) == count and time.monotonic() < deadline:
        time.sleep(0.001)

release = threading.Event()

@tool
def charge(invoice: str) -> str:
    '''Charge an invoice; Ctrl-C is pressed three times while the first call runs.'''
    runs.append(invoice)
    if len(runs) == 1:
        ctrl_c_when(lambda: waits("wait", "result", "_step"))  # 1: the wait for the step: it is cancelled
        ctrl_c_when(lambda: waits("wait", "wait", "_step"))  # 2: the wait for it to stop: it stops behind
        ctrl_c_when(leaving_the_loop)  # 3: the wait for the loop's thread as the loop is left: it escapes
        release.wait(timeout=30)  # still running when the caller tries again
    return "charged " + invoice

fake = FakeMessagesAPI([tool_reply(tool_call("charge", {"invoice": "A"}, id="tu_a")), text_reply("Done.")])
runner = SyncToolRunner(fake.client(), model="claude-sonnet-4-6", max_tokens=64,
                        messages=[{"role": "user", "content": "Pay."}], tools=[charge])
interrupted = False
try:
    for _ in runner:
        pass
except KeyboardInterrupt:
    interrupted = True
running = not release.is_set()
# The tool ends once the retry waits for the step to stop (Event.wait in _step), which it must do,
# not fail; a retry that does not wait fails while the tool still runs.
def release_when_the_retry_waits():
    deadline = time.monotonic() + 30
    while not waits("wait", "wait", "_step") and time.monotonic() < deadline:
        time.sleep(0.001)
    release.set()

threading.Thread(target=release_when_the_retry_waits, daemon=True).start()
retried = None
try:
    runner.until_done()
except Exception as error:
    retried = type(error).__name__ + ": " + str(error)
release.set()
print(json.dumps({"interrupted": interrupted, "presses": len(handled), "running": running, "retried": retried,
                  "runs": runs, "roles": [m["role"] for m in runner.messages]}))
"""


@pytest.mark.skipif(
    sys.platform == "win32", reason="signal.pthread_kill, which sends the SIGINT, is POSIX only"
)
def test_after_ctrl_c_pressed_three_times_a_retry_waits_for_the_step_still_stopping() -> None:
    """Ctrl-C three times while a sync tool runs: the third escapes while the step still stops
    (its tool runs on in its thread). Trying again at once (a REPL's next line) waits for that step
    to end and goes on, instead of failing with "already advancing in another task"; the call
    does not run again."""
    outcome = run_script(CTRL_C_THRICE_SCRIPT)
    assert outcome["interrupted"]
    assert outcome["presses"] == 3
    assert outcome["running"]  # the tool still ran when the caller tried again
    assert outcome["retried"] is None
    assert outcome["runs"] == ["A"]
    assert outcome["roles"] == ["user", "assistant", "user", "assistant"]


TOOL_INTERRUPTS_SCRIPT = """
import json, sys
import anyio
from toolrunner import SyncToolRunner, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

runs = []

@tool
def charge(invoice: str) -> str:
    '''Charge an invoice; the first call raises the interrupt itself.'''
    runs.append(invoice)
    if runs.count(invoice) == 1:
        raise ERROR
    return "charged " + invoice

@tool
async def look(invoice: str) -> str:
    '''Look an invoice up (a call beside the one that is interrupted).'''
    runs.append("look " + invoice)
    return "found " + invoice

where, calls = sys.argv[1], [tool_call("charge", {"invoice": "A"}, id="tu_a")]
if sys.argv[2] == "2":
    calls.append(tool_call("look", {"invoice": "B"}, id="tu_b"))
fake = FakeMessagesAPI([tool_reply(*calls), text_reply("Done.")])
options = dict(model="claude-sonnet-4-6", max_tokens=64, messages=[{"role": "user", "content": "Pay."}],
               tools=[charge, look])
caught = None
if where in ("asyncio", "trio"):  # the loop goes on after the interrupt, in the same event loop
    async def main():
        global caught, roles_after
        async with fake.async_client() as client:
            runner = ToolRunner(client, **options)
            try:
                await runner.until_done()
            except BaseException as error:
                caught = type(error).__name__
            roles_after = [m["role"] for m in runner.messages]
            await runner.until_done()
        return runner
    runner = anyio.run(main, backend=where)
else:
    runner = SyncToolRunner(fake.client(), **options)
    try:
        if where == "with":
            with runner:
                runner.until_done()
        else:
            runner.until_done()
    except BaseException as error:
        caught = type(error).__name__
    roles_after = [m["role"] for m in runner.messages]
    runner.until_done()
print(json.dumps({"caught": caught, "roles_after": roles_after, "runs": sorted(runs), "requests": len(fake.requests),
                  "end_reason": runner.end_reason, "roles_end": [m["role"] for m in runner.messages]}))
"""


@pytest.mark.parametrize("calls", [1, 2])
@pytest.mark.parametrize("where", ["for", "with", "asyncio", "trio"])
@pytest.mark.parametrize("error", ["KeyboardInterrupt", "SystemExit"])
def test_a_tools_interrupt_reaches_the_caller_as_itself_and_the_run_resumes(
    where: str, error: str, calls: int
) -> None:
    """On asyncio, an interrupt that leaves a task stops its event loop: the runner raises it in the
    task that iterates (with several calls, once the others stopped), the blocking front end in the
    caller's thread, as itself; nothing is appended, and the run goes on when iterated again."""
    outcome = run_script(TOOL_INTERRUPTS_SCRIPT.replace("ERROR", error), where, str(calls))
    assert outcome["caught"] == error
    assert outcome["roles_after"] == ["user"]  # nothing appended: the reply's turn did not finish
    # The interrupted call never finished, so the run ran it again; its sibling ran once or, if it
    # was cut off before it finished (no store: nothing was saved), again.
    assert outcome["runs"][:2] == ["A", "A"]
    assert outcome["runs"][2:] in ([], ["look B"], ["look B", "look B"])
    assert (calls == 2) == bool(outcome["runs"][2:])
    assert outcome["requests"] == 2
    assert outcome["end_reason"] == "model"
    assert outcome["roles_end"] == ["user", "assistant", "user", "assistant"]

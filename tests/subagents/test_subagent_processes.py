"""Sub-agents across processes (issue 30's "Done when"), with the app of
``tests/support/subagent_app.py``, whose tools write ``start``/``finish`` lines to a ledger file.

- Three processes, on SQLite and on PostgreSQL: an app's runner (on trio), whose coordinator hands
  work to two specialists in one reply, ends ``awaiting_approval``: one specialist finished, the
  other's call waits, with its path. A person logs in to the inbox (``toolrunner inbox``, served),
  sees the path and the specialist's conversation, and approves the call with the run page's form;
  a resumer (``toolrunner resume``, on asyncio) takes the run up and ends it. Each tool ran once,
  the resumed run heard from the store who decided (the person who logged in, through the store),
  and the answer and the usage are the whole tree's.
- SIGKILL inside a sub-run's tools (on asyncio), then a new process resumes the run from the store
  (on trio), on SQLite: no finished call (the parent's, the sub-run's) runs again, the call that was
  cut short is answered as interrupted, and the idempotent one runs again.

Each process costs an interpreter start, which is most of these tests' time: the processes start
side by side (the inbox and the resumer while the app's runner runs; the resuming process while
the doomed one runs, waiting for a line to go on), and each scenario runs on one event loop each.
Processes are coordinated by files and by the store: nothing waits for a time.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tests.operations.test_resumer_processes import (
    GUARD,
    Resumers,
    all_finished,
    place as place,
    summaries,
    url as url,
    wait_for,
)
from tests.stores.test_store_processes import ROOT, environment
from tests.support import subagent_app
from tests.support.inbox_browser import served_inbox
from tests.support.inbox_helpers import TOKEN, Person
from toolrunner import CallStatus, RunState, ToolRunner, open_store

APP = [sys.executable, "-W", "error", "-m", "tests.support.subagent_app"]


@pytest.fixture
def resumers(url: str, place: Path) -> Iterator[Resumers]:
    processes = Resumers(url, place, app="tests.support.subagent_app:factory")
    try:
        yield processes
    finally:
        processes.close()


def app(place: Path, *argv: str, stdin: int | None = None) -> subprocess.Popen[str]:
    """``python -m tests.support.subagent_app ARGV``, its directory ``place``."""
    return subprocess.Popen(
        [*APP, *argv],
        cwd=ROOT,
        env={**environment(), "RESUMER_TEST_DIR": str(place)},
        stdin=stdin,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def ended(process: subprocess.Popen[str]) -> str:
    """What ``process`` printed, once it exited well."""
    out, err = process.communicate(timeout=GUARD)
    assert process.returncode == 0, err
    return out


def ledger(place: Path) -> Counter[str]:
    """The ledger's lines, counted."""
    path = place / "ledger.txt"
    return Counter(path.read_text().splitlines() if path.exists() else [])


def made(url: str) -> None:
    """Make the store at ``url`` (its tables), as a deployed app's exists before its inbox serves it."""
    store = open_store(url)
    try:
        anyio.run(lambda: store.list_runs(limit=1))
    finally:
        getattr(store, "close", lambda: None)()


def saved(url: str, run_id: str) -> RunState:
    store = open_store(url)
    try:
        loaded = anyio.run(store.load, run_id)
    finally:
        getattr(store, "close", lambda: None)()
    assert loaded is not None
    return loaded.state


def test_a_coordinator_paused_in_a_specialist_is_decided_in_the_inbox_and_a_resumer_ends_it(
    url: str, place: Path, resumers: Resumers
) -> None:
    made(url)
    runner = app(place, "start", url, "office", "trio")  # process 1: the app's runner
    resumers.spawn("resumer")  # process 3, which takes the run up once it is decided
    with served_inbox(url, token=TOKEN, log=place / "inbox.log") as inbox:  # process 2
        paused = json.loads(ended(runner))
        assert paused == {
            "end_reason": "awaiting_approval",
            "waiting": [{"id": "toolu_pay", "name": "pay", "path": ["toolu_payer", "payer"]}],
        }
        assert ledger(place) == {"start toolu_lookup": 1, "finish toolu_lookup": 1}  # the researcher finished
        [waiting] = summaries(url)["office"].waiting
        assert (waiting.id, waiting.path) == ("toolu_pay", ("toolu_payer", "payer"))

        async def ada_approves() -> None:
            async with Person(base_url=inbox) as ada:
                assert (await ada.log_in("ada")).status_code == 303
                assert '<tr data-run="office">' in (await ada.get("/")).text
                assert (await ada.get("/run", id="office")).status_code == 200
                assert '<p class="path">In a sub-agent\'s run: toolu_payer → payer</p>' in ada.last
                assert 'id="call-toolu_pay"' in ada.last
                conversation = ada.last.split('<details class="sub-run">', 1)[1].split("</details>", 1)[0]
                assert subagent_app.PAY_TASK in conversation  # the payer's task, and its reply
                assert "I pay 40 EUR." in conversation
                approved = await ada.post("/run/approve", {"run": "office", "call": "toolu_pay"}, csrf=True)
                assert approved.status_code == 303

        anyio.run(ada_approves)
    process = resumers.processes["resumer"]
    wait_for(lambda: all_finished(url, ["office"]) or process.poll() is not None)
    assert all_finished(url, ["office"]), resumers.log("resumer")
    assert resumers.stop("resumer") == 0
    assert "Traceback" not in resumers.log("resumer")
    assert resumers.taken_up() == {"office": ["resumer"]}

    assert ledger(place) == {  # each tool ran once: the researcher's not again, the payer's once approved
        "start toolu_lookup": 1,
        "finish toolu_lookup": 1,
        "start toolu_pay": 1,
        "finish toolu_pay": 1,
        "decided toolu_payer payer toolu_pay approved by ada via store": 1,  # as the resumed run heard it
    }
    state = saved(url, "office")
    assert state.end_reason == "model"
    assert [(block["tool_use_id"], block["content"]) for block in state.messages[2]["content"]] == [
        ("toolu_research", "Done (Paris: 20 C, sunny)."),
        ("toolu_payer", "Done (paid 40 EUR)."),
    ]
    assert (
        state.messages[-1]["content"][0]["text"] == "Done (Done (Paris: 20 C, sunny).; Done (paid 40 EUR).)."
    )

    async def figures() -> ToolRunner:
        store = open_store(url)
        try:
            return await ToolRunner.resume(
                subagent_app.client(),
                checkpointer=store,
                run_id="office",
                tools=[subagent_app.researcher, subagent_app.payer],
            )
        finally:
            getattr(store, "close", lambda: None)()

    finished = anyio.run(figures)
    assert (finished.usage.total.input_tokens, finished.usage.total.output_tokens) == (200, 20)
    tree = finished.tree_usage
    assert (len(tree.requests), tree.total.input_tokens, tree.total.output_tokens) == (6, 300, 30)
    listed = summaries(url)["office"]
    assert (listed.turns, listed.cost) == (6, tree.cost)  # the tree's: its requests and its cost
    by_agent = finished.usage_by_agent()
    assert {path: usage.total.input_tokens for path, usage in by_agent.items()} == {
        (): 200,
        ("researcher",): 40,
        ("payer",): 60,
    }


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_sigkill_inside_a_sub_runs_tools_then_a_new_process_runs_no_finished_call_twice(
    url: str, place: Path
) -> None:
    resumed = app(place, "resume-errands", url, "trio", stdin=subprocess.PIPE)  # imports meanwhile
    doomed = app(place, "errands", url, "asyncio")
    try:

        def inside_both() -> bool:
            if not ((place / "inside-toolu_charge").exists() and (place / "inside-toolu_fetch").exists()):
                return False
            record = saved(url, subagent_app.ERRANDS).calls["toolu_note_parent"]
            return record.status is CallStatus.FINISHED  # the parent's own call, saved finished

        wait_for(lambda: inside_both() or doomed.poll() is not None)
        assert doomed.poll() is None, doomed.communicate()[1]
        cut = saved(url, subagent_app.ERRANDS).calls["toolu_worker"]
        assert cut.status is CallStatus.STARTED
        assert cut.sub_run is not None
        assert cut.sub_run.state.calls["toolu_charge"].status is CallStatus.STARTED
        doomed.send_signal(signal.SIGKILL)
        doomed.communicate(timeout=GUARD)
        assert doomed.returncode == -signal.SIGKILL
        assert ledger(place) == {
            "start toolu_note_parent": 1,
            "finish toolu_note_parent": 1,
            "start toolu_note_first": 1,
            "finish toolu_note_first": 1,
            "start toolu_charge": 1,
            "start toolu_fetch": 1,
        }
        out, err = resumed.communicate("go\n", timeout=GUARD)
        assert resumed.returncode == 0, err
    finally:
        for process in (doomed, resumed):
            if process.poll() is None:
                process.kill()
                process.wait()
    assert json.loads(out) == {"end_reason": "model"}

    assert ledger(place) == {  # no finished call ran again, at either level; nor the charge cut short
        "start toolu_note_parent": 1,
        "finish toolu_note_parent": 1,
        "start toolu_note_first": 1,
        "finish toolu_note_first": 1,
        "start toolu_charge": 1,
        "start toolu_fetch": 2,  # idempotent: it ran again
        "finish toolu_fetch": 1,
    }
    state = saved(url, subagent_app.ERRANDS)
    assert state.end_reason == "model"
    [parent_note, worker_answer] = state.messages[2]["content"]
    assert (parent_note["tool_use_id"], parent_note["content"]) == (
        "toolu_note_parent",
        "noted errands begun",
    )
    assert worker_answer["tool_use_id"] == "toolu_worker"
    assert not worker_answer.get("is_error")
    answer = worker_answer["content"]
    assert answer.startswith("Done (error: ")  # what the worker's model read of its last calls
    assert "interrupted" in answer  # the charge, cut short: it may or may not have charged
    assert answer.endswith("; fetched order-7).")

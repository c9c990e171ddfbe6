"""The decided run goes on by itself, across processes, on SQLite and on PostgreSQL: resumers are
``toolrunner resume --app tests.support.resumer_app:factory`` processes, a person decides through
``toolrunner runs approve|deny`` processes, and the app's tool records each start in a ledger file
(``tests/support/resumer_app.py``).

- Two resumers and a person deciding through the command line (three processes): every run goes
  on exactly once
  (each taken up once, by one resumer), none is left behind, no tool runs twice, and SIGTERM stops
  both cleanly.
- A resumer stopped with SIGTERM while a call of its run outlasts the grace: the run is handed
  over at once (its lease run out), and the next resumer answers the call as interrupted.
- A resumer killed with SIGKILL inside a tool of one run and inside a request of another (after
  that run's tool finished, between two saves): another resumer takes both over once the lease
  runs out and ends them; the tool that was cut short is answered as interrupted, the one that
  finished is answered from the journal: neither runs again.

Processes are coordinated by files (the tool and the fake API write a marker where they hang) and
by the store; no assertion depends on a time.
"""

from __future__ import annotations

import re
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import anyio
import pytest

from tests.stores.test_store_processes import ROOT, environment
from tests.support import resumer_app
from tests.support.stores import KINDS
from toolrunner import Resumer, RunStatus, RunSummary, open_store

GUARD = 60.0  # seconds; reached only when a process hangs
RESUME = [sys.executable, "-W", "error", "-m", "toolrunner", "resume", "--poll-interval", "0.1"]


@pytest.fixture(params=[kind for kind in KINDS if kind != "memory"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("postgres_url"))


@pytest.fixture
def place(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The app's directory of ledger and markers (``$RESUMER_TEST_DIR``)."""
    directory = tmp_path / "app"
    directory.mkdir()
    monkeypatch.setenv("RESUMER_TEST_DIR", str(directory))
    return directory


class Resumers:
    """``toolrunner resume --app app`` processes, each logging to a file of its own."""

    def __init__(self, url: str, place: Path, app: str = "tests.support.resumer_app:factory") -> None:
        self.url, self.place, self.app = url, place, app
        self.processes: dict[str, subprocess.Popen[bytes]] = {}

    def start(self, *names: str, options: tuple[str, ...] = ()) -> None:
        """Start a resumer of each name, and wait until each serves."""
        for name in names:
            self.spawn(name, options)
        for name in names:
            process = self.processes[name]
            wait_for(lambda: " serves; stop it with SIGTERM" in self.log(name) or process.poll() is not None)  # noqa: B023 - called at once
            assert process.poll() is None, self.log(name)

    def spawn(self, name: str, options: tuple[str, ...] = ()) -> None:
        """Start a resumer of that name, without waiting until it serves."""
        log = (self.place / f"{name}.log").open("wb")
        process = subprocess.Popen(
            [*RESUME, "--app", self.app, "--store", self.url, *options],
            cwd=ROOT,
            env={**environment(), "RESUMER_TEST_DIR": str(self.place)},
            stdout=subprocess.DEVNULL,
            stderr=log,
        )
        log.close()
        self.processes[name] = process

    def log(self, name: str) -> str:
        return (self.place / f"{name}.log").read_text()

    def taken_up(self) -> dict[str, list[str]]:
        """Each run taken up, by the resumers that took it up, in their logs."""
        taken: dict[str, list[str]] = {}
        for name in self.processes:
            for run_id in re.findall(r"takes up the run '([^']+)'", self.log(name)):
                taken.setdefault(run_id, []).append(name)
        return taken

    def stop(self, name: str) -> int:
        process = self.processes[name]
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        return process.wait(GUARD)

    def close(self) -> None:
        for process in self.processes.values():
            if process.poll() is None:
                process.kill()
                process.wait()


@pytest.fixture
def resumers(url: str, place: Path) -> Iterator[Resumers]:
    processes = Resumers(url, place)
    try:
        yield processes
    finally:
        processes.close()


def wait_for(condition: Callable[[], bool]) -> None:
    """Until ``condition()`` holds; a test that waits longer than ``GUARD`` fails (something hangs)."""
    deadline = time.monotonic() + GUARD
    while not condition():
        assert time.monotonic() < deadline, "gave up waiting: a process hangs"
        time.sleep(0.05)


DECIDE = """
import sys
from toolrunner._ops.cli import main  # what `toolrunner` and `python -m toolrunner` run

url, *decisions = sys.argv[1:]
for decision in decisions:
    command, run_id, call = decision.split()
    code = main(["runs", command, run_id, call, "--by", "ops", "--store", url])
    if code:
        sys.exit(code)
"""


def decide_at_the_command_line(url: str, *decisions: str) -> subprocess.Popen[str]:
    """A person at a shell: ``toolrunner runs approve|deny RUN CALL`` for each decision, one after
    the other, in one process of their own (one process, not one each: each start imports the SDK)."""
    return subprocess.Popen(
        [sys.executable, "-W", "error", "-c", DECIDE, url, *decisions],
        cwd=ROOT,
        env=environment(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def approve(url: str, run_id: str, call: str) -> None:
    store = open_store(url)
    try:
        anyio.run(lambda: store.approve_call(run_id, call, by="ops"))
    finally:
        getattr(store, "close", lambda: None)()


def summaries(url: str) -> dict[str, RunSummary]:
    store = open_store(url)
    try:
        return {summary.run_id: summary for summary in anyio.run(lambda: store.list_runs(limit=100)).runs}
    finally:
        getattr(store, "close", lambda: None)()


def all_finished(url: str, runs: list[str]) -> bool:
    found = summaries(url)
    return all(run_id in found and found[run_id].status is RunStatus.FINISHED for run_id in runs)


def results(url: str, run_id: str) -> list[tuple[str, bool]]:
    """The run's tool results: their text, and whether each is an error."""
    store = open_store(url)
    try:
        loaded = anyio.run(store.load, run_id)
    finally:
        getattr(store, "close", lambda: None)()
    assert loaded is not None
    return [
        (str(block["content"]), bool(block.get("is_error")))
        for block in loaded.state.messages[2]["content"]
        if block["type"] == "tool_result"
    ]


def ledger(place: Path) -> list[str]:
    path = place / "ledger.txt"
    return sorted(path.read_text().splitlines()) if path.exists() else []


def test_two_resumers_and_a_person_at_the_command_line_every_run_goes_on_once(
    url: str, place: Path, resumers: Resumers
) -> None:
    runs = {f"order-{number}": number + 1 for number in range(4)}
    for run_id, amount in runs.items():
        anyio.run(resumer_app.start, url, run_id, amount)
    # A person decides, run after run (the last is denied), while the resumers start.
    decisions = [f"{'deny' if run_id == 'order-3' else 'approve'} {run_id} {run_id}-pay" for run_id in runs]
    person = decide_at_the_command_line(url, *decisions)
    try:
        resumers.start("one", "two")
        out, err = person.communicate(timeout=GUARD)
    finally:
        if person.poll() is None:
            person.kill()
            person.wait()
    assert person.returncode == 0, err
    assert out.count("The run is ready: it goes on when a resumer takes it up") == len(runs)
    wait_for(lambda: all_finished(url, list(runs)))
    assert resumers.stop("one") == 0
    assert resumers.stop("two") == 0

    assert ledger(place) == ["pay 1", "pay 2", "pay 3"]  # each approved call ran once; the denied one never
    taken = resumers.taken_up()
    assert sorted(taken) == sorted(runs)
    assert all(len(by) == 1 for by in taken.values()), taken  # each run taken up once, by one resumer
    found = summaries(url)
    assert {run_id: (found[run_id].status, found[run_id].lease) for run_id in runs} == dict.fromkeys(
        runs, (RunStatus.FINISHED, None)
    )
    assert results(url, "order-0") == [("paid 1", False)]
    [(denied, is_error)] = results(url, "order-3")
    assert is_error
    assert "A person denied this call" in denied
    for name in ("one", "two"):
        assert "got SIGTERM: it takes no more runs up" in resumers.log(name)
        assert re.search(r"\S+ stopped\n", resumers.log(name))
        assert "Traceback" not in resumers.log(name)


def test_a_resumer_killed_mid_run_loses_its_runs_to_another_that_ends_them_running_nothing_twice(
    url: str, place: Path, resumers: Resumers
) -> None:
    anyio.run(resumer_app.start, url, "in-tool", 1)
    anyio.run(resumer_app.start, url, "in-request", 2)
    (place / "hang-tool-1").touch()  # the first start of pay(1) never returns
    (place / "hang-request-in-request").touch()  # the first request of "in-request" never returns
    resumers.start("doomed", options=("--lease", "2"))
    doomed = resumers.processes["doomed"]
    for run_id in ("in-tool", "in-request"):
        approve(url, run_id, f"{run_id}-pay")
    # Inside pay(1); and inside the request after pay(2) finished (its result saved, the reply not).
    wait_for(lambda: (place / "inside-1").exists() and (place / "requesting-in-request").exists())
    doomed.send_signal(signal.SIGKILL)
    assert doomed.wait(GUARD) == -signal.SIGKILL
    running = summaries(url)
    for run_id in ("in-tool", "in-request"):
        lease = running[run_id].lease
        assert running[run_id].status is RunStatus.RUNNING
        assert lease is not None
        assert re.search(r"^\S+:\d+:[0-9a-f]+$", lease.owner), lease  # the dead resumer's

    resumers.start("survivor", options=("--lease", "2"))  # takes both over once the dead one's leases run out
    wait_for(lambda: all_finished(url, ["in-tool", "in-request"]))
    assert resumers.stop("survivor") == 0

    assert ledger(place) == ["pay 1", "pay 2"]  # neither ran twice
    [(cut_short, is_error)] = results(url, "in-tool")
    assert is_error
    assert "interrupted" in cut_short  # it may or may not have paid: the model is told so
    assert results(url, "in-request") == [("paid 2", False)]  # answered from the journal
    assert resumers.taken_up() == {"in-tool": ["doomed", "survivor"], "in-request": ["doomed", "survivor"]}
    found = summaries(url)
    assert all(found[run_id].lease is None for run_id in ("in-tool", "in-request"))


@pytest.mark.parametrize("url", ["sqlite"], indirect=True)
def test_a_resumer_stopped_with_sigterm_mid_call_hands_the_run_over_at_once(
    url: str, place: Path, resumers: Resumers
) -> None:
    anyio.run(resumer_app.start, url, "slow", 1)
    (place / "hang-tool-1").touch()  # pay(1) outlasts the grace
    resumers.start("stopped", options=("--grace", "0.5"))
    approve(url, "slow", "slow-pay")
    wait_for(lambda: (place / "inside-1").exists())
    assert resumers.stop("stopped") == 0
    log = resumers.log("stopped")
    assert "got SIGTERM: it takes no more runs up; the 1 in hand have 0.5s to end or pause" in log
    handed = summaries(url)["slow"]
    assert handed.status is RunStatus.RUNNING
    assert handed.lease is not None
    assert handed.lease.owner in log
    assert handed.lease.expires <= datetime.now(UTC)  # run out: the next resumer takes it at once

    store = open_store(url)
    try:
        taken = anyio.run(Resumer(store, resumer_app.factory).resume_ready)
    finally:
        getattr(store, "close", lambda: None)()
    assert taken == ("slow",)
    assert ledger(place) == ["pay 1"]
    [(cut_short, is_error)] = results(url, "slow")
    assert is_error
    assert "interrupted" in cut_short

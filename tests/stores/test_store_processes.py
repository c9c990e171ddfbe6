"""Runs shared by processes through a store, on SQLite and on PostgreSQL (``tests/support/store_worker.py``).

- One process starts a run that pauses for approval; a second decides through the command line,
  knowing nothing of the app; a third resumes the run and finishes it.
- Two workers resume one run at once: exactly one goes on, the other is refused with a clear error
  before it runs anything, and nothing runs twice.

Nothing waits for a time: the two workers load the run, say so, and wait for a line from the test,
which sends it once both have loaded (a barrier across processes).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import anyio
import pytest

from tests.support.stores import KINDS
from toolrunner import RunStatus, RunSummary, open_store

ROOT = Path(__file__).resolve().parents[2]
GUARD = 120  # seconds; reached only when a process hangs


@pytest.fixture(params=[kind for kind in KINDS if kind != "memory"])
def url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each store that processes can share: an SQLite file, and PostgreSQL."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path / 'runs.db'}"
    return str(request.getfixturevalue("postgres_url"))


def environment() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def python(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-W", "error", *argv],
        cwd=ROOT,
        env=environment(),
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )


def summary(url: str) -> RunSummary:
    store = open_store(url)
    try:
        found = anyio.run(store.get_run, "order-7")
    finally:
        close(store)
    assert found is not None
    return found


def close(store: object) -> None:
    closing = getattr(store, "close", None)
    if callable(closing):
        closing()


def worker(command: str, url: str, ledger: Path, *options: str) -> list[str]:
    return [
        sys.executable,
        "-W",
        "error",
        "-m",
        "tests.support.store_worker",
        command,
        url,
        "order-7",
        str(ledger),
        *options,
    ]


def test_one_process_pauses_a_second_decides_through_the_cli_a_third_finishes(
    url: str, tmp_path: Path
) -> None:
    ledger = tmp_path / "ledger.txt"
    started = python(*worker("start", url, ledger)[3:])
    assert started.returncode == 0, started.stderr
    assert started.stdout.split() == ["awaiting_approval", "toolu_pay"]

    listed = python("-m", "toolrunner", "runs", "list", "--status", "awaiting", "--store", url)
    assert listed.returncode == 0, listed.stderr
    assert "order-7  awaiting  1" in listed.stdout
    assert 'toolu_pay: pay {"amount": 120}' in listed.stdout
    decided = python(
        "-m", "toolrunner", "runs", "approve", "order-7", "toolu_pay", "--by", "ops", "--store", url
    )
    assert decided.returncode == 0, decided.stderr
    again = python("-m", "toolrunner", "runs", "deny", "order-7", "toolu_pay", "--by", "bob", "--store", url)
    assert again.returncode == 4
    assert "was approved by 'ops' at" in again.stderr
    assert not ledger.exists()  # deciding ran nothing

    resumed = python(*worker("resume", url, ledger)[3:])
    assert resumed.returncode == 0, resumed.stderr
    decision, final = resumed.stdout.splitlines()
    assert decision.startswith("toolu_pay approved by ops at 2")
    assert final == "Paid."
    assert ledger.read_text() == "paid 120\n"
    assert summary(url).status is RunStatus.FINISHED


def test_of_two_workers_that_go_on_with_one_run_at_once_exactly_one_does(url: str, tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.txt"
    assert python(*worker("start", url, ledger)[3:]).returncode == 0
    assert (
        python("-m", "toolrunner", "runs", "approve", "order-7", "toolu_pay", "--store", url).returncode == 0
    )

    workers = [
        subprocess.Popen(
            worker("resume", url, ledger, "--barrier"),
            cwd=ROOT,
            env=environment(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    try:
        for process in workers:  # both have loaded the run (the same save of it) ...
            assert process.stdout is not None
            lines = [process.stdout.readline(), process.stdout.readline()]
            assert lines[1] == "loaded\n", lines
        for process in workers:  # ... before either goes on
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        outcomes = [(process.wait(GUARD), *process.communicate()) for process in workers]
    finally:
        for process in workers:
            if process.poll() is None:
                process.kill()
                process.wait()
    codes = sorted(code for code, _, _ in outcomes)
    assert codes == [0, 3], outcomes
    [refused] = [error for code, _, error in outcomes if code == 3]
    assert "was saved by another runner since this one loaded it" in refused
    assert "only one runner may drive a run at a time" in refused
    assert ledger.read_text() == "paid 120\n"  # the call ran once
    assert summary(url).status is RunStatus.FINISHED

"""Crash tests: a worker process SIGKILLs itself at a chosen point, and a new process resumes the run,
on each store a process can die with: SQLite, and PostgreSQL (a real server, ``postgres_server.py``).

The worker (``tests/support/crash_worker.py``) drives a checkpointed run of a three-turn conversation with
parallel calls (sync and async tools, idempotent and not) against a fake whose answers follow from
the request alone, and its tools write ``start``/``finish`` lines to a ledger file. A worker is
killed during a request, right after a save, before any SQL statement of a save (of one that
appends a turn's results, say), or inside a call while it runs once some of its siblings have
finished; a second worker resumes from the store (and may be killed in turn), and a last one
finishes the run. Each scenario runs plain (``stream=False``) and eager (``stream=True,
run_tools_eagerly=True``, where a worker can also be killed between two events of a streaming
reply, and the idempotent calls start while their reply streams).

After each crash the test reads what the store holds, and at the end it checks:

- the final history is one the service accepts (tool_use/tool_result pairing), ending the run;
- no call whose result was saved before a crash ever started again (ledger); a call saved in the
  journal of a reply that was still streaming does not count: the reply is requested again, and
  its calls with it, so such a call must be idempotent (only those start early with a
  checkpointer), and it runs again;
- a call of a non-idempotent tool never started twice, and one that a crash interrupted (saved as
  started, not finished) is answered with the "interrupted ... may or may not have taken effect"
  error;
- a call of an idempotent tool that a crash interrupted ran again, and has its normal result;
- every other call has its normal result, and the history has the skeleton of an uninterrupted
  run (the same messages, blocks and ids), but for the interrupted calls' ``is_error``.

Workers are forked from a server that imported everything once (see ``crash_worker.py``), so a
crash costs milliseconds; one test starts plain ``python`` subprocesses instead. Nothing waits for
a time: the test waits for processes to exit and then reads their files.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

import anyio
import pytest
from hypothesis import event, given, settings, strategies as st

from tests.support._hypothesis_profiles import PROFILE, property_settings
from tests.support.crash_worker import CALLS, IDEMPOTENT, RUN_ID, Job, KillPoint, StoreKind, expected_result
from tests.support.postgres_server import new_schema
from tests.support.reliability_helpers import Skeleton, pairing_problems, plain, skeleton
from toolrunner import CallStatus, Phase, PostgresCheckpointer, RunState, SQLiteCheckpointer

ROOT = Path(__file__).resolve().parents[2]
BACKENDS = ["asyncio", "trio"]
MODES = [False, True]  # eager: stream=True, run_tools_eagerly=True
MODE_IDS = ["plain", "eager"]
GUARD = 120  # seconds for a plain subprocess; only reached when a worker hangs (it stops itself at 60)
KILLED = -signal.SIGKILL

STORES: list[StoreKind] = ["sqlite", "postgres"]
"""The stores a process can die with (``MemoryCheckpointer`` dies with it: it has no crash to test)."""

# Each example forks two or three workers (tens of milliseconds each): a modest count keeps this file
# to a couple of minutes in CI; HYPOTHESIS_PROFILE=thorough explores many more kill points. The
# PostgreSQL store's statements are the SQLite store's, so fewer examples suffice to cover them.
EXAMPLES = {"ci": 50, "thorough": 1_000, "dev": 5}[PROFILE]
crash_settings = settings(property_settings, max_examples=EXAMPLES)
POSTGRES_EXAMPLES = {"ci": 8, "thorough": 300, "dev": 3}[PROFILE]
postgres_crash_settings = settings(property_settings, max_examples=POSTGRES_EXAMPLES)

CALL_IDS = sorted(CALLS)


def idempotent(call: str) -> bool:
    return CALLS[call][0] in IDEMPOTENT


# -- running workers -----------------------------------------------------------------------------


def _env() -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


class Workers:
    """The fork server of ``crash_worker.py``: ``run(job)`` forks a worker and returns its exit status."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-W", "error", "-m", "tests.support.crash_worker", "serve"],
            cwd=ROOT,
            env=_env(),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def run(self, job: Job) -> int:
        process = self._process
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.write(job.to_json() + "\n")
        process.stdin.flush()
        line = process.stdout.readline()  # the worker has exited
        if not line:
            raise AssertionError(f"the crash-worker server exited with status {process.wait()}")
        return int(line)

    def close(self) -> None:
        process = self._process
        assert process.stdin is not None
        assert process.stdout is not None
        process.stdin.close()  # the server ends when its stdin does
        process.wait(GUARD)
        process.stdout.close()


@pytest.fixture(scope="module")
def workers() -> Iterator[Workers]:
    server = Workers()
    yield server
    server.close()


def run_subprocess(job: Job) -> int:
    """Run a worker as a plain ``python`` process (no fork server); its output goes to its log."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-m", "tests.support.crash_worker", "run", job.to_json()],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=GUARD,
        check=False,
    )
    job.log.write_text(done.stdout + done.stderr)
    return done.returncode


# -- one scenario -----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Crash:
    """What a killed worker left: its kill point, the ledger's length, and the store's state."""

    point: KillPoint
    ledger: int
    saved: RunState | None


@dataclass(frozen=True, slots=True)
class Outcome:
    crashes: list[Crash]
    ledger: list[str]
    final: RunState


def read_ledger(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


@dataclass(frozen=True, slots=True)
class Place:
    """Where a scenario's files and run live: its directory (the ledger, the logs), and its store:
    ``runs.db`` there, or a schema of its own on the PostgreSQL server at ``url``."""

    directory: Path
    store: StoreKind = "sqlite"
    url: str | None = None

    def job(self, backend: str, number: int, kill: KillPoint | None = None, eager: bool = False) -> Job:
        return Job(backend, str(self.directory), number, kill, eager, self.store, self.url)


@pytest.fixture(params=STORES)
def place(request: pytest.FixtureRequest, tmp_path: Path) -> Place:
    """Each store a process can die with: SQLite, and PostgreSQL on the session's server."""
    if request.param == "sqlite":
        return Place(tmp_path)
    return Place(tmp_path, "postgres", request.getfixturevalue("postgres_url"))


def load(job: Job) -> RunState | None:
    """The state the store holds, read the way a resuming process reads it."""
    if job.store == "sqlite":
        store: SQLiteCheckpointer | PostgresCheckpointer = SQLiteCheckpointer(job.database)
    else:
        assert job.url is not None
        store = PostgresCheckpointer(job.url)
    try:
        checkpoint = anyio.run(store.load, RUN_ID)
    finally:
        store.close()
    return None if checkpoint is None else checkpoint.state


def crash_and_resume(
    run: Callable[[Job], int],
    place: Place,
    kills: Sequence[KillPoint | None],
    backends: Sequence[str],
    *,
    eager: bool = False,
) -> Outcome:
    """Run a worker per kill point (each resuming what the last left), then one to the end; a
    worker whose kill point is never reached ends the run itself. ``backends`` cycles over workers."""
    crashes: list[Crash] = []
    job = place.job(backends[0], 0, eager=eager)
    for number, kill in enumerate([*kills, None]):
        job = place.job(backends[number % len(backends)], number, kill, eager)
        before = len(read_ledger(job.ledger))
        status = run(job)
        ledger = read_ledger(job.ledger)
        log = job.log.read_text() if job.log.exists() else "(no log)"
        killed = [line for line in ledger[before:] if line.startswith("kill ")]
        if status == KILLED:
            assert killed == [f"kill {kill}"], (
                f"worker {number} was killed, but not at {kill}: {killed}\n{log}"
            )
            assert kill is not None
            crashes.append(Crash(kill, len(ledger), load(job)))
            continue
        assert status == 0, f"worker {number} (kill point {kill}) exited with {status}:\n{log}"
        assert not killed, f"worker {number} wrote {killed} but was not killed:\n{log}"
        break
    final = load(job)
    assert final is not None, "the run was never saved"
    return Outcome(crashes, read_ledger(job.ledger), final)


# -- the checks -------------------------------------------------------------------------------------


def _text(content: object) -> str:
    if isinstance(content, str):
        return content
    blocks = cast("list[dict[str, Any]]", content or [])
    return "".join(str(block.get("text", "")) for block in blocks)


def results(messages: Sequence[object]) -> dict[str, tuple[str, bool]]:
    """(text, is_error) of every tool_result of a history, by tool_use id."""
    found: dict[str, tuple[str, bool]] = {}
    for message in cast("list[dict[str, Any]]", plain(list(messages))):
        content = message["content"]
        if message["role"] != "user" or isinstance(content, str):
            continue
        for block in cast("list[dict[str, Any]]", content):
            if block["type"] == "tool_result":
                found[block["tool_use_id"]] = (_text(block.get("content")), bool(block.get("is_error")))
    return found


def saved_calls(state: RunState | None) -> tuple[set[str], set[str]]:
    """The calls a saved state holds finished (answered in the history or the journal), and those
    it holds started only. A reply still streaming is requested again on resuming, and what its
    calls (started early) gave is dropped with it: they count as started only."""
    if state is None:
        return set(), set()
    finished = set(results(state.messages))
    started: set[str] = set()
    streaming = state.phase is Phase.STREAMING
    for call, record in state.calls.items():
        (finished if record.status is CallStatus.FINISHED and not streaming else started).add(call)
    return finished, started


def started_early(state: RunState | None) -> set[str]:
    """The calls a saved state holds in the journal of a reply still streaming."""
    return set(state.calls) if state is not None and state.phase is Phase.STREAMING else set()


def starts(lines: Sequence[str]) -> Counter[str]:
    return Counter(line.split()[1] for line in lines if line.startswith("start "))


def check(outcome: Outcome, reference: Sequence[Skeleton]) -> set[str]:
    """Every check of the module docstring; returns the calls answered as interrupted."""
    final = outcome.final
    assert final.phase is Phase.DONE
    assert final.end_reason == "model"
    problems = pairing_problems(final.messages)
    assert not problems, problems
    ledger = outcome.ledger

    interrupted: set[str] = set()  # calls of non-idempotent tools that a crash interrupted
    for crash in outcome.crashes:
        early = sorted(call for call in started_early(crash.saved) if not idempotent(call))
        assert not early, (
            f"at the crash at {crash.point}, the store held {early} (not idempotent) in the journal of "
            "a reply still streaming: they started early, and the reply will be requested again"
        )
        finished, started = saved_calls(crash.saved)
        later = starts(ledger[crash.ledger :])
        again = sorted(call for call in finished if later[call])
        assert not again, (
            f"after the crash at {crash.point}, {again} started again though their results were saved"
        )
        for call in started:
            if idempotent(call):
                assert later[call], (
                    f"{call} (idempotent) was interrupted at {crash.point} and never ran again"
                )
            else:
                assert not later[call], f"{call} was interrupted at {crash.point} and started again"
                interrupted.add(call)

    twice = sorted(call for call, count in starts(ledger).items() if count > 1 and not idempotent(call))
    assert not twice, f"calls of non-idempotent tools started more than once: {twice}"

    answered = results(final.messages)
    assert sorted(answered) == CALL_IDS
    finishes = {line.split()[1] for line in ledger if line.startswith("finish ")}
    for call, (text, is_error) in answered.items():
        if call in interrupted:
            assert is_error, (call, text)
            assert "was interrupted" in text, text
            assert "may or may not have taken effect" in text, text
        else:
            assert (text, is_error) == (expected_result(call), False), (call, text)
            assert call in finishes, f"{call} has a normal result but its tool never finished"

    expected = [
        (
            role,
            tuple(
                _as_error(block) if block[0] == "tool_result" and block[1] in interrupted else block
                for block in blocks
            ),
        )
        for role, blocks in reference
    ]
    assert skeleton(final.messages) == expected
    return interrupted


def _as_error(block: tuple[Any, ...]) -> tuple[Any, ...]:
    return (block[0], block[1], True)


# -- the reference run ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Reference:
    skeleton: list[Skeleton]
    counts: dict[str, int]
    problems: list[str]

    def last_event(self, reply: int) -> int:
        """The number of a reply's last event (``message_stop``), counted from 0 in a new process
        (an eager run's)."""
        return sum(self.counts[f"events of reply {number}"] for number in range(reply + 1)) - 1


References = Mapping[tuple[str, bool], Reference]


@pytest.fixture(scope="module")
def references(workers: Workers) -> References:
    """An uninterrupted run on each backend, plain and eager: its history, and how many events of
    each kind it had."""
    found: dict[tuple[str, bool], Reference] = {}
    for backend in BACKENDS:
        for eager in MODES:
            with tempfile.TemporaryDirectory() as name:
                job = Job(backend, name, 0, eager=eager)
                status = workers.run(job)
                assert status == 0, job.log.read_text()
                final = load(job)
                assert final is not None
                found[backend, eager] = Reference(
                    skeleton(final.messages), _counts(job), pairing_problems(final.messages)
                )
    return found


def _counts(job: Job) -> dict[str, int]:
    return cast("dict[str, int]", json.loads(job.counts.read_text()))


@pytest.mark.parametrize("eager", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("backend", BACKENDS)
def test_the_uninterrupted_run_runs_every_call_once_and_counts_every_kind_of_kill_point(
    references: References, backend: str, eager: bool
) -> None:
    reference = references[backend, eager]
    assert reference.problems == []
    counts = reference.counts
    assert counts["request"] == 4
    assert counts["append"] == 3  # one save appends each tool turn's results
    # before and after each request, and around the calls (concurrent calls may share a save)
    assert counts["write"] == counts["save"] > 2 * counts["request"] + 3
    assert all(counts[f"tool {call}"] == 1 for call in CALLS)
    assert all(counts[f"save {call}"] >= 1 for call in CALLS)
    roles = [role for role, _ in reference.skeleton]
    assert roles == ["user", "assistant", "user", "assistant", "user", "assistant", "user", "assistant"]
    early = {key.split()[1] for key in counts if key.startswith("streaming ")}
    if not eager:
        assert "event" not in counts
        assert not early
        return
    assert counts["streams"] == counts["request"]
    assert counts["event"] == sum(counts[f"events of reply {number}"] for number in range(4))
    # The idempotent calls start while their reply streams (read, in the middle of turn 1, has
    # events left to run in); the others never do, with a checkpointer.
    assert "t1_read" in early, counts
    assert early <= {call for call in CALLS if idempotent(call)}, f"started while streaming: {early}"
    assert reference.skeleton == references[backend, False].skeleton


# -- named kill points --------------------------------------------------------------------------------

eager_modes = pytest.mark.parametrize("eager", MODES, ids=MODE_IDS)


@eager_modes
@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_during_a_request_the_next_process_sends_it_again(
    workers: Workers, references: References, backend: str, eager: bool, place: Place
) -> None:
    outcome = crash_and_resume(workers.run, place, [KillPoint("request", 1)], [backend], eager=eager)
    [crash] = outcome.crashes
    saved = crash.saved
    assert saved is not None
    # Turn 0 as its last call's result left it: the reply, every call finished. Appending them
    # follows from that, so it is written with the next save that has news (after the next reply).
    assert saved.phase is Phase.WITH_BODY
    assert len(saved.messages) == 1
    assert saved.calls
    assert {record.status for record in saved.calls.values()} == {CallStatus.FINISHED}
    assert check(outcome, references[backend, eager].skeleton) == set()
    assert set(starts(outcome.ledger).values()) == {1}  # nothing ran twice


@eager_modes
@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_right_after_a_calls_result_is_saved_it_is_answered_from_the_journal(
    workers: Workers, references: References, backend: str, eager: bool, place: Place
) -> None:
    kills = [KillPoint("save", 0, "t0_charge")]
    outcome = crash_and_resume(workers.run, place, kills, [backend], eager=eager)
    [crash] = outcome.crashes
    assert crash.saved is not None
    assert crash.saved.calls["t0_charge"].status is CallStatus.FINISHED
    assert check(outcome, references[backend, eager].skeleton) == set()
    assert starts(outcome.ledger)["t0_charge"] == 1


@eager_modes
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize(
    ("call", "after"),
    [("t1_charge", 2), ("t1_read", 1), ("t2_email", 0)],
    ids=["charge-after-email-and-read", "read-after-one-sibling", "email-alone"],
)
def test_killed_inside_a_running_call_after_siblings_finished(
    workers: Workers,
    references: References,
    backend: str,
    eager: bool,
    call: str,
    after: int,
    place: Place,
) -> None:
    kills = [KillPoint("tool", call=call, after=after)]
    outcome = crash_and_resume(workers.run, place, kills, [backend], eager=eager)
    [crash] = outcome.crashes
    finished, started = saved_calls(crash.saved)
    assert call in started
    siblings = {other for other in CALLS if other[:2] == call[:2] and other != call}
    assert len(finished & siblings) >= after  # "after A finished, while B runs"
    interrupted = check(outcome, references[backend, eager].skeleton)
    if idempotent(call):
        assert call not in interrupted
        assert starts(outcome.ledger)[call] == 2  # it ran again
    else:
        assert call in interrupted
        assert starts(outcome.ledger)[call] == 1
    for sibling in finished & siblings:
        assert starts(outcome.ledger)[sibling] == 1


@eager_modes
@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_while_a_turns_results_are_appended_the_save_is_all_or_nothing(
    workers: Workers, references: References, backend: str, eager: bool, place: Place
) -> None:
    outcome = crash_and_resume(workers.run, place, [KillPoint("append", 0)], [backend], eager=eager)
    [crash] = outcome.crashes
    # The save was cut before its COMMIT: the store holds the one before, whose journal has both
    # results and whose history does not have them yet.
    assert crash.saved is not None
    assert len(crash.saved.messages) == 1
    assert {call for call, record in crash.saved.calls.items() if record.status is CallStatus.FINISHED} == {
        "t0_charge",
        "t0_fetch",
    }
    assert check(outcome, references[backend, eager].skeleton) == set()
    assert set(starts(outcome.ledger).values()) == {1}


@eager_modes
@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_again_while_resuming_the_interrupted_call_stays_answered_as_interrupted(
    workers: Workers, references: References, backend: str, eager: bool, place: Place
) -> None:
    kills = [KillPoint("tool", call="t1_charge", after=2), KillPoint("append", 0)]
    outcome = crash_and_resume(workers.run, place, kills, [backend], eager=eager)
    assert [crash.point for crash in outcome.crashes] == kills
    assert check(outcome, references[backend, eager].skeleton) == {"t1_charge"}
    assert starts(outcome.ledger)["t1_charge"] == 1


def test_a_plain_subprocess_crashes_on_trio_and_resumes_on_asyncio(
    references: References, place: Place
) -> None:
    """Without the fork server: every worker starts a new interpreter (and the saved state does not
    depend on the backend that wrote it)."""
    kills = [KillPoint("tool", call="t0_charge", after=1)]
    outcome = crash_and_resume(run_subprocess, place, kills, ["trio", "asyncio"])
    assert len(outcome.crashes) == 1
    assert check(outcome, references["asyncio", False].skeleton) == {"t0_charge"}


# -- named kill points of eager runs ------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_as_a_reply_ends_streaming_only_its_idempotent_call_had_started(
    workers: Workers, references: References, backend: str, place: Place
) -> None:
    """Killed before turn 1's message_stop: email and charge wait for the reply to be whole and
    saved, so they had not started; read may have, and runs again with the reply requested again."""
    reference = references[backend, True]
    kills = [KillPoint("event", reference.last_event(1))]
    outcome = crash_and_resume(workers.run, place, kills, [backend], eager=True)
    [crash] = outcome.crashes
    before = starts(outcome.ledger[: crash.ledger])
    assert not before.keys() & {"t1_email", "t1_charge"}, f"started before the reply was whole: {before}"
    assert started_early(crash.saved) <= {"t1_read"}
    assert check(outcome, reference.skeleton) == set()
    assert starts(outcome.ledger)["t1_email"] == starts(outcome.ledger)["t1_charge"] == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_killed_inside_a_call_started_early_it_runs_again_with_its_reply(
    workers: Workers, references: References, backend: str, place: Place
) -> None:
    """fetch, turn 0's second call, starts as its block closes and is killed at once; charge, the
    first call, had not started: it waits for the reply, and the reply for fetch."""
    kills = [KillPoint("tool", call="t0_fetch")]
    outcome = crash_and_resume(workers.run, place, kills, [backend], eager=True)
    [crash] = outcome.crashes
    assert starts(outcome.ledger[: crash.ledger]) == {"t0_fetch": 1}
    assert crash.saved is not None
    assert crash.saved.calls["t0_fetch"].status is CallStatus.STARTED
    assert check(outcome, references[backend, True].skeleton) == set()
    assert starts(outcome.ledger)["t0_fetch"] == 2
    assert starts(outcome.ledger)["t0_charge"] == 1


# -- generated kill points --------------------------------------------------------------------------


def kill_points(counts: Mapping[str, int]) -> st.SearchStrategy[KillPoint]:
    """Kill points an uninterrupted run reaches (a resumed run reaches fewer)."""

    def ordinal(kind: str) -> st.SearchStrategy[int]:
        return st.integers(0, counts[kind] - 1)

    def nth(kind: str) -> st.SearchStrategy[KillPoint]:
        return st.builds(KillPoint, st.just(kind), ordinal(kind))

    # A save's write has about ten statements (more with many new messages, and the first one
    # also creates the tables); None: before its COMMIT.
    statements = st.none() | st.integers(0, 16)

    points = [
        nth("request"),
        nth("save"),
        st.builds(KillPoint, st.just("write"), ordinal("write"), statement=statements),
        st.builds(KillPoint, st.just("append"), ordinal("append"), statement=statements),
        st.builds(KillPoint, st.just("save"), st.just(0), st.sampled_from(CALL_IDS)),
        st.builds(KillPoint, st.just("tool"), st.just(0), st.sampled_from(CALL_IDS), st.integers(0, 2)),
    ]
    if counts.get("event"):  # an eager run: between two events of a streaming reply
        points.append(nth("event"))
    return st.one_of(points)


def any_kill_point(
    workers: Workers,
    reference: Reference,
    new_place: Callable[[Path], Place],
    backend: str,
    eager: bool,
    data: st.DataObject,
) -> None:
    first = data.draw(kill_points(reference.counts), label="first kill point")
    second = data.draw(st.none() | kill_points(reference.counts), label="second kill point, while resuming")
    kills = [first] if second is None else [first, second]
    with tempfile.TemporaryDirectory() as name:
        outcome = crash_and_resume(workers.run, new_place(Path(name)), kills, [backend], eager=eager)
        interrupted = check(outcome, reference.skeleton)
    event(f"crashes: {len(outcome.crashes)}")
    event(f"interrupted calls: {len(interrupted)}")
    event(f"kill points: {', '.join(point.kind for point in kills)}")


@pytest.mark.parametrize("eager", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("backend", BACKENDS)
@given(data=st.data())
@crash_settings
def test_any_kill_point_then_resume_ends_the_run_as_without_the_crash(
    workers: Workers, references: References, backend: str, eager: bool, data: st.DataObject
) -> None:
    any_kill_point(workers, references[backend, eager], Place, backend, eager, data)


@pytest.mark.parametrize("eager", MODES, ids=MODE_IDS)
@pytest.mark.parametrize("backend", BACKENDS)
@given(data=st.data())
@postgres_crash_settings
def test_any_kill_point_then_resume_ends_the_run_as_without_the_crash_on_postgres(
    workers: Workers,
    references: References,
    postgres_server: str,
    backend: str,
    eager: bool,
    data: st.DataObject,
) -> None:
    def new_place(directory: Path) -> Place:
        return Place(directory, "postgres", new_schema(postgres_server))

    any_kill_point(workers, references[backend, eager], new_place, backend, eager, data)

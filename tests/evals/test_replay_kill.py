"""``replay_runs`` survives SIGKILL mid-way: six recorded runs replayed two at a time by a worker
process that kills itself (after its third run is reported, or while a request is out), then by a
second worker to the end, with the replays saved in the records' store or in another one. Every run
is replayed once in all: the replays that ended before the kill send nothing again, a request is
sent again at most once per replay (one answered, but its reply not yet saved at the kill), and no
recorded tool ever runs.

The worker and its conversation are ``tests/support/replay_worker.py``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path

import anyio
import pytest

from tests.support.replay_worker import LEDGER_VARIABLE, REPLAY, Job, Kill, order_ids, record

ROOT = Path(__file__).resolve().parents[2]
RUNS = 6
TIMEOUT = 120  # seconds per worker; a worker that takes this long is hung


def worker(job: Job) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    env.pop("ANTHROPIC_API_KEY", None)
    return subprocess.run(
        [sys.executable, "-m", "tests.support.replay_worker", job.to_json()],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )


@pytest.mark.parametrize(
    ("kill", "into"),
    [(Kill("progress", 3), "runs.db"), (Kill("request", 7), "replays.db")],
    ids=["after the third run, into the records' store", "while the eighth request is out, into another"],
)
def test_a_replay_killed_mid_way_goes_on_and_runs_nothing_twice(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kill: Kill, into: str
) -> None:
    ledger = tmp_path / "ledger.txt"
    monkeypatch.setenv(LEDGER_VARIABLE, str(ledger))
    runs = tuple(anyio.run(record, tmp_path / "runs.db", RUNS))
    recorded = ledger.read_text().splitlines()
    assert recorded == [f"tool {name} {number}" for number in range(RUNS) for name in ("lookup", "notify")]

    first = worker(Job(str(tmp_path), 1, runs, kill, into))
    assert first.returncode == -signal.SIGKILL, first.stderr
    second = worker(Job(str(tmp_path), 2, runs, None, into))
    assert second.returncode == 0, second.stderr

    lines = ledger.read_text().splitlines()[len(recorded) :]
    assert f"kill {kill.kind} {kill.n}" in lines
    assert not [line for line in lines if line.startswith(("RAN", "tool"))], "a recorded tool ran again"

    report = json.loads((tmp_path / "report-2.json").read_text())
    assert [run["source_id"] for run in report["runs"]] == list(order_ids(RUNS))
    for run in report["runs"]:
        assert run["status"] == "replayed", run
        assert run["replay_id"] == REPLAY.replay_id(run["source_id"])
        comparison = run["comparison"]
        assert comparison["first_divergent_turn"] is None  # the same calls, answered from the journal
        assert comparison["final_answer_changed"] is True  # the brief prompt's answer
        assert [call["answered"] for turn in run["replayed"]["turns"] for call in turn["calls"]] == [
            "journal",
            "journal",
        ]

    requests = [line.split()[1:] for line in lines if line.startswith("request ")]
    finished_first = {
        REPLAY.replay_id(words[2]) for words in (line.split() for line in lines) if words[:2] == ["done", "1"]
    }
    assert finished_first, "the first worker reported no run before its kill"
    sent_again = {replay_id for worker_, replay_id, _ in requests if worker_ == "2"}
    assert not finished_first & sent_again, "a replay that had ended sent a request again"

    sent = Counter((replay_id, turn) for _, replay_id, turn in requests)
    assert {(replay_id, turn) for replay_id, turn in sent} == {
        (REPLAY.replay_id(run_id), str(turn)) for run_id in order_ids(RUNS) for turn in range(3)
    }, "every replay sent each of its three requests"
    repeated = Counter(replay_id for (replay_id, _), count in sent.items() if count > 1)
    assert all(count <= 2 for count in sent.values()), sent
    assert all(count == 1 for count in repeated.values()), repeated  # at most one request a replay again

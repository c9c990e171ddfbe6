"""Recorded runs to replay, the change they are replayed with, and the worker process of the replay
kill test (``tests/evals/test_replay_kill.py``); the command-line tests
(``tests/operations/test_replay_command.py``) replay the same runs with ``--replay
tests.support.replay_worker:REPLAY``.

Each recorded run is a conversation about one order, over two tool turns:

    turn 0: lookup(order)             turn 1: notify(order)             turn 2: the final answer

from a fake Messages API whose answer is a pure function of the request (its number of assistant
messages, its first user message's order, and its system prompt: with ``BRIEF`` in it, the final
answer is another text), so a new process goes on with the same conversation.

The recorded tools append ``tool <name> <order>`` to the ledger; the replay's tools of the same
names append ``RAN <name> <order>`` and fail (a replay must answer every call from the journal).
The fake appends ``request <worker> <replay id> <turn>`` for each request it answers, the worker
``done <worker> <source id> <status>`` for each run it reports, and ``kill <point>`` just before it
SIGKILLs itself. Each line is one ``O_APPEND`` write: whole or absent after SIGKILL.

    python -m tests.support.replay_worker JOB_JSON
"""

from __future__ import annotations

import json
import os
import re
import signal
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal, NoReturn

import anyio

from toolrunner import SQLiteCheckpointer, ToolRunner, tool
from toolrunner.evals import Replay, RunReplay, replay_runs
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    fault,
    text_reply,
    tool_call,
    tool_reply,
)

__all__ = [
    "BARE",
    "BRIEF",
    "LEDGER_VARIABLE",
    "MODEL",
    "REPLAY",
    "Job",
    "Kill",
    "order_ids",
    "record",
    "respond",
]

MODEL = "claude-sonnet-4-6"
SYSTEM = "You are the shop's assistant."
BRIEF = "Answer in one short sentence."
LEDGER_VARIABLE = "REPLAY_TEST_LEDGER"
"""The environment variable naming the ledger the tools and the fake append to."""
NAME = "brief"
GUARD = 60  # seconds; a worker still running then is hung: SIGALRM ends it (only on failure)


def _write(line: str) -> None:
    path = os.environ.get(LEDGER_VARIABLE)
    if path:
        descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, f"{line}\n".encode())
        finally:
            os.close(descriptor)


# -- the recorded runs -----------------------------------------------------------------------------


@tool
def lookup(order: str) -> str:
    """Look an order up.

    Args:
        order: The order's number.
    """
    _write(f"tool lookup {order}")
    return f"Order {order}: delivered damaged."


@tool
def notify(order: str) -> str:
    """Tell the customer (this acts: it sends an email).

    Args:
        order: The order's number.
    """
    _write(f"tool notify {order}")
    return f"Customer of order {order} notified."


def order_ids(count: int) -> list[str]:
    """The recorded runs' ids."""
    return [f"order-{number}" for number in range(count)]


def respond(request: RecordedRequest) -> ScriptEntry:
    """The reply follows from the request alone (see the module docstring)."""
    turn = sum(1 for message in request.messages if message.get("role") == "assistant")
    first = str(request.messages[0].get("content"))
    found = re.search(r"Order (\d+)", first)
    if found is None:
        return fault(400, message=f"the replay test's conversations are about an order, not {first!r}.")
    order = found.group(1)
    if turn == 0:
        return tool_reply(tool_call("lookup", {"order": order}, id=f"toolu_lookup_{order}"), text="Looking.")
    if turn == 1:
        return tool_reply(tool_call("notify", {"order": order}, id=f"toolu_notify_{order}"), text="Telling.")
    if turn == 2:
        brief = BRIEF in str(request.body.get("system", ""))
        return text_reply(
            f"Order {order}: refunded." if brief else f"Order {order} arrived damaged; I told the customer."
        )
    return fault(400, message=f"the replay test's conversations have 3 replies; this is request {turn + 1}.")


async def record(path: Path, count: int) -> list[str]:
    """Record ``count`` runs in the SQLite store at ``path``; their ids."""
    fake = FakeMessagesAPI(responder=respond)
    store = SQLiteCheckpointer(path)
    try:
        async with fake.async_client() as client:
            for run_id, number in zip(order_ids(count), range(count), strict=True):
                runner = ToolRunner(
                    client,
                    model=MODEL,
                    max_tokens=1024,
                    system=SYSTEM,
                    messages=[{"role": "user", "content": f"Order {number} arrived broken."}],
                    tools=[lookup, notify],
                    checkpointer=store,
                    run_id=run_id,
                )
                await runner.until_done()
    finally:
        store.close()
    return order_ids(count)


# -- the change ----------------------------------------------------------------------------------


@tool(name="lookup")
def lookup_again(order: str) -> str:
    """Look an order up.

    Args:
        order: The order's number.
    """
    _write(f"RAN lookup {order}")
    raise AssertionError("a replay ran the recorded tool lookup: it must answer from the journal")


@tool(name="notify")
def notify_again(order: str) -> str:
    """Tell the customer (this acts: it sends an email).

    Args:
        order: The order's number.
    """
    _write(f"RAN notify {order}")
    raise AssertionError("a replay ran the recorded tool notify: it must answer from the journal")


REPLAY = Replay(name=NAME, params={"system": f"{SYSTEM} {BRIEF}"}, tools=[lookup_again, notify_again])
"""The change: a system prompt asking for brief answers."""


BARE = Replay(name="bare", params={"system": f"{SYSTEM} {BRIEF}"})
"""A change without the tools: the records' are code (a saved run keeps their names), so each
replay fails."""


def make_replay() -> Replay:
    """``REPLAY``, from a function (as ``--replay module:function`` takes it)."""
    return REPLAY


# -- the worker ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Kill:
    """Where a worker kills itself: in ``on_progress`` told of its ``n``-th run (from 1), or in the
    fake while its ``n``-th request (from 0) is out."""

    kind: Literal["progress", "request"]
    n: int


@dataclass(frozen=True, slots=True)
class Job:
    """One worker: its directory (``runs.db``, ``ledger.txt``), its number (it writes
    ``report-<number>.json`` when it ends), where it kills itself, the recorded runs, and the store
    the replays go to (``runs.db``: the same one)."""

    directory: str
    number: int
    runs: tuple[str, ...]
    kill: Kill | None = None
    into: str = "runs.db"

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        kill = data.pop("kill")
        runs = tuple(data.pop("runs"))
        return cls(**data, runs=runs, kill=None if kill is None else Kill(**kill))


def _kill(point: Kill) -> NoReturn:
    _write(f"kill {point.kind} {point.n}")
    os.kill(os.getpid(), signal.SIGKILL)
    raise AssertionError("SIGKILL did not stop the process")  # not reached


async def work(job: Job) -> None:
    directory = Path(job.directory)
    requests = 0

    def answer(request: RecordedRequest) -> ScriptEntry:
        nonlocal requests
        if job.kill is not None and job.kill.kind == "request" and requests == job.kill.n:
            _kill(job.kill)
        requests += 1
        turn = sum(1 for message in request.messages if message.get("role") == "assistant")
        entry = respond(request)
        found = re.search(r"Order (\d+)", str(request.messages[0].get("content")))
        source = f"order-{found.group(1) if found else '?'}"
        _write(f"request {job.number} {REPLAY.replay_id(source)} {turn}")
        return entry

    def progress(done: int, total: int, run: RunReplay) -> None:
        _write(f"done {job.number} {run.source_id} {run.status}")
        if job.kill is not None and job.kill.kind == "progress" and done == job.kill.n:
            _kill(job.kill)

    fake = FakeMessagesAPI(responder=answer)
    store = SQLiteCheckpointer(directory / "runs.db")
    into = store if job.into == "runs.db" else SQLiteCheckpointer(directory / job.into)
    try:
        async with fake.async_client() as client:
            report = await replay_runs(
                client, REPLAY, store=store, runs=job.runs, into=into, max_concurrency=2, on_progress=progress
            )
    finally:
        store.close()
        if into is not store:
            into.close()
    (directory / f"report-{job.number}.json").write_text(report.to_json(), encoding="utf-8")


def main() -> None:
    job = Job.from_json(sys.argv[1])
    os.environ[LEDGER_VARIABLE] = str(Path(job.directory) / "ledger.txt")
    signal.alarm(GUARD)
    anyio.run(work, job)


if __name__ == "__main__":
    main()

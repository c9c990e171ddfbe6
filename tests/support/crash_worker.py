"""The worker process of the crash tests (``tests/properties/test_crash_resume.py``).

A worker drives one checkpointed run of a fixed conversation and SIGKILLs its own process at a
given point. Started again on the same directory, it resumes the saved run (or starts it, when
nothing was saved yet) and runs it to the end, unless its own kill point stops it first.

    python -m tests.support.crash_worker run JOB_JSON   # one worker, as a plain subprocess
    python -m tests.support.crash_worker serve          # a fork server: one JSON job a line on stdin,
                                                # one exit status a line on stdout

The server imports everything once and forks a child per job, so a job costs a fork instead of an
interpreter start; a child shares nothing with earlier jobs but the imported modules (no event
loop, no connection, no run), and its run state comes only from the files, as after a crash.

The conversation comes from a fake Messages API whose answer is a pure function of the request
(how many assistant messages it holds), so a new process goes on with the same conversation:

    turn 0: charge(A) async + fetch(X) async, idempotent
    turn 1: email(B) sync + read(Y) sync, idempotent + charge(C) async
    turn 2: email(D), alone (it runs inline, without a task group)
    turn 3: "All done."

Every tool appends ``start <id>`` when it begins and ``finish <id>`` when it ends to the ledger,
one ``O_APPEND`` write a line, so a line is whole or absent after SIGKILL; just before killing
itself the worker appends ``kill <point>``.

A job runs the conversation one of two ways: plain (``stream=False``), or eager (``stream=True,
run_tools_eagerly=True`` inside ``async with runner:``), where the fake's transport hands the runner
one SSE event at a time, yielding to the event loop before each as a network read does and waiting
for the saves under way, so that a call started early is saved, and runs, while the rest of its
reply streams. With the checkpointer, only the
idempotent tools (fetch, read) may start early; charge and email wait for the reply to be saved.
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sqlite3
import sys
import threading
import traceback
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn, cast

import anthropic
import anyio
import anyio.lowlevel
import anyio.to_thread
import httpx2
import psycopg

from toolrunner import (
    CallStatus,
    Checkpoint,
    Phase,
    PostgresCheckpointer,
    SQLiteCheckpointer,
    ToolContext,
    ToolRunner,
    tool,
)
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
    "CALLS",
    "IDEMPOTENT",
    "RUN_ID",
    "Job",
    "KillPoint",
    "StoreKind",
    "Tripping",
    "Tripwire",
    "expected_result",
    "run",
    "serve",
]

RUN_ID = "crash-test"
MODEL = "claude-sonnet-4-6"
GUARD = 60  # seconds; a worker still running then is hung: SIGALRM ends it (only on failure)

TURNS: tuple[tuple[tuple[str, str, str], ...], ...] = (
    (("t0_charge", "charge", "A"), ("t0_fetch", "fetch", "X")),
    (("t1_email", "email", "B"), ("t1_read", "read", "Y"), ("t1_charge", "charge", "C")),
    (("t2_email", "email", "D"),),
)
"""Each tool turn's calls: (tool_use id, tool, argument)."""
CALLS: dict[str, tuple[str, str]] = {id_: (name, value) for turn in TURNS for id_, name, value in turn}
"""Every call of the conversation: its tool and argument, by tool_use id."""
SIBLINGS: dict[str, frozenset[str]] = {
    id_: frozenset(other for other, _, _ in turn if other != id_) for turn in TURNS for id_, _, _ in turn
}
IDEMPOTENT = frozenset({"fetch", "read"})
"""The tools marked ``@tool(idempotent=True)``."""
_VERBS = {"charge": "charged", "fetch": "fetched", "email": "emailed", "read": "read"}

SCRIPT: tuple[ScriptEntry, ...] = (
    *(
        tool_reply(
            *(tool_call(name, {"value": value}, id=id_) for id_, name, value in turn), text=f"Turn {n}."
        )
        for n, turn in enumerate(TURNS)
    ),
    text_reply("All done."),
)


def expected_result(call_id: str) -> str:
    """What the call's tool returns when it runs to the end."""
    name, value = CALLS[call_id]
    return f"{_VERBS[name]} {value}"


# -- the job --------------------------------------------------------------------------------------

Kind = Literal["request", "event", "save", "write", "append", "tool"]
StoreKind = Literal["sqlite", "postgres"]


@dataclass(frozen=True, slots=True)
class KillPoint:
    """Where a worker kills itself; events are counted from 0 within one process.

    - ``request``: in the fake's responder, while the n-th request is out;
    - ``event``: while a reply streams (eager jobs only), before the transport hands the runner the
      n-th SSE event (counted over all the replies), once it has read the ones before;
    - ``save``: right after the n-th checkpoint save completed; with ``call``, the n-th save whose
      journal holds that call finished;
    - ``write``: inside the n-th save's SQLite transaction, before its SQL statement number
      ``statement`` (counted from 0; the first save also creates the tables), or with
      ``statement=None`` before its COMMIT, once all its rows are written; when the save has fewer
      statements, right after it;
    - ``append``: the same, in the n-th save that appends a turn's tool results to the history;
    - ``tool``: inside the call ``call`` while it runs, once ``after`` of its siblings have
      finished and their results are saved (as many as it has, if fewer).
    """

    kind: Kind
    n: int = 0
    call: str | None = None
    after: int = 0
    statement: int | None = None

    def __str__(self) -> str:
        if self.kind == "tool":
            return f"tool {self.call} after {self.after}"
        if self.kind in ("write", "append"):
            where = "COMMIT" if self.statement is None else f"statement {self.statement}"
            return f"{self.kind} {self.n} before {where}"
        return f"{self.kind} {self.n}" + (f" {self.call}" if self.call else "")


@dataclass(frozen=True, slots=True)
class Job:
    """One worker: its backend, its directory (``runs.db``, ``ledger.txt``), where it kills itself,
    its number (it writes ``worker-<number>.log`` and, when it ends, ``counts-<number>.json``),
    whether it streams with eager tools (see the module docstring), and its store: ``"sqlite"``
    (``runs.db`` in the directory) or ``"postgres"`` (the database at ``url``)."""

    backend: str
    directory: str
    number: int
    kill: KillPoint | None = None
    eager: bool = False
    store: StoreKind = "sqlite"
    url: str | None = None

    def to_json(self) -> str:
        return json.dumps(asdict(self))

    @classmethod
    def from_json(cls, text: str) -> Job:
        data = json.loads(text)
        kill = data.pop("kill")
        return cls(**data, kill=None if kill is None else KillPoint(**kill))

    @property
    def database(self) -> Path:
        return Path(self.directory) / "runs.db"

    @property
    def ledger(self) -> Path:
        return Path(self.directory) / "ledger.txt"

    @property
    def log(self) -> Path:
        return Path(self.directory) / f"worker-{self.number}.log"

    @property
    def counts(self) -> Path:
        return Path(self.directory) / f"counts-{self.number}.json"


# -- the kill points ------------------------------------------------------------------------------


class Tripwire:
    """Counts this process's events and kills the process at its kill point.

    It also follows the saved journal, so that a call can wait until its siblings' results are
    saved (``wait_for_siblings``): sync tools wait in their worker thread, async tools in one. And
    it counts, as ``streaming <id>``, the saves that hold a call in the journal of a reply still
    streaming (a call started early), as ``streams`` the replies streamed, and as ``events of reply
    <n>`` the events of the n-th reply this process streamed.
    """

    def __init__(self, job: Job) -> None:
        self.point = job.kill
        self.counts: Counter[str] = Counter()
        self._ledger = os.open(job.ledger, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self._lock = threading.Lock()
        self._saved = threading.Condition()
        self._finished: frozenset[str] = frozenset()  # calls the latest save holds finished
        self._saving = 0  # saves under way (on the event loop's thread only)
        self._idle: anyio.Event | None = None  # set when they are done

    def write(self, line: str) -> None:
        """Append a line to the ledger: one write, so it is whole or absent after SIGKILL."""
        os.write(self._ledger, f"{line}\n".encode())

    def passing(self, kind: Kind, call: str | None = None) -> bool:
        """Count an event (of one call, when ``call`` is given); whether it is the kill point."""
        key = kind if call is None else f"{kind} {call}"
        with self._lock:
            number = self.counts[key]
            self.counts[key] += 1
        point = self.point
        return point is not None and (point.kind, point.call, point.n) == (kind, call, number)

    def note(self, key: str) -> None:
        """Count something that is no kill point (what the test wants to know of a run)."""
        with self._lock:
            self.counts[key] += 1

    def kill(self) -> NoReturn:
        self.write(f"kill {self.point}")
        os.kill(os.getpid(), signal.SIGKILL)
        raise AssertionError("SIGKILL did not stop the process")  # not reached

    def saved(self, checkpoint: Checkpoint) -> None:
        """A save completed: note which calls its journal holds finished."""
        state = checkpoint.state
        finished = frozenset(
            id_ for id_, record in state.calls.items() if record.status is CallStatus.FINISHED
        )
        if state.phase is Phase.STREAMING:
            with self._lock:
                self.counts.update(f"streaming {id_}" for id_ in state.calls)
        with self._saved:
            self._finished = finished
            self._saved.notify_all()

    def save_started(self) -> None:
        self._saving += 1

    def save_ended(self) -> None:
        self._saving -= 1
        if not self._saving and self._idle is not None:
            self._idle.set()
            self._idle = None

    async def saves_done(self) -> None:
        """Wait until no save is under way."""
        while self._saving:
            if self._idle is None:
                self._idle = anyio.Event()
            await self._idle.wait()

    def wait_for_siblings(self, call: str, count: int) -> None:
        """Block until ``count`` siblings of ``call`` (at most all of them) are saved finished."""
        siblings = SIBLINGS[call]
        count = min(count, len(siblings))
        with self._saved:
            self._saved.wait_for(lambda: len(self._finished & siblings) >= count)


_tripwire: Tripwire | None = None  # one job per process


def tripwire() -> Tripwire:
    assert _tripwire is not None, "the tools and the fake run only inside a worker"
    return _tripwire


class Tripping:
    """The ``save``, ``write`` and ``append`` kill points, around a store's ``save``; the store
    reports each SQL statement of its transaction (``before``, and ``after`` its last one)."""

    _UNTIL_COMMIT = -1

    def __init__(self, wire: Tripwire) -> None:
        self._wire = wire
        self._cut: int | None = None  # kill before this statement of the save under way
        self._statements = 0
        self._wrote_run = False
        self._last = ""  # the save's last statement (for the stores that report no COMMIT)

    async def tripping_save(
        self, checkpoint: Checkpoint, save: Callable[[Checkpoint], Awaitable[None]]
    ) -> None:
        wire = self._wire
        appends = any(
            _holds_results(message) for message in checkpoint.state.messages[checkpoint.kept_messages :]
        )
        write = wire.passing("write")
        append = appends and wire.passing("append")
        cut: int | None = None
        if write or append:
            assert wire.point is not None
            cut = self._UNTIL_COMMIT if wire.point.statement is None else wire.point.statement
        new_usage = len(checkpoint.state.usage) > checkpoint.kept_usage
        self._last = "INSERT INTO toolrunner_usage" if new_usage else "DELETE FROM toolrunner_usage"
        self._cut, self._statements, self._wrote_run = cut, 0, False
        wire.save_started()
        try:
            await save(checkpoint)
        finally:
            self._cut = None
            wire.save_ended()
        wire.saved(checkpoint)
        if cut is not None or wire.passing("save"):  # a write cut the save had no statement for
            wire.kill()
        for id_, record in checkpoint.state.calls.items():
            if record.status is CallStatus.FINISHED and wire.passing("save", id_):
                wire.kill()

    def before(self, statement: str) -> None:
        """Runs in the worker thread, before each statement of the store's connection."""
        cut = self._cut
        if cut is None:
            return
        if cut == self._UNTIL_COMMIT:
            # The save's own COMMIT follows its write of the run's row (a first save also commits
            # the tables before that).
            if statement.startswith(("INSERT INTO toolrunner_runs", "UPDATE toolrunner_runs")):
                self._wrote_run = True
            elif statement.startswith("COMMIT") and self._wrote_run:
                self._wire.kill()
            return
        if self._statements == cut:
            self._wire.kill()
        self._statements += 1

    def after(self, statement: str) -> None:
        """After a statement, for a store whose COMMIT the worker does not see: the save's last
        statement done, its COMMIT is next."""
        if self._cut == self._UNTIL_COMMIT and self._wrote_run and statement.startswith(self._last):
            self._wire.kill()


class TrippingSQLite(SQLiteCheckpointer):
    """The SQLite store with the kill points; SQLite's trace callback reports each statement."""

    def __init__(self, path: Path, wire: Tripwire) -> None:
        super().__init__(path)
        self._tripping = Tripping(wire)

    async def save(self, checkpoint: Checkpoint) -> None:
        await self._tripping.tripping_save(checkpoint, super().save)

    def _connect(self) -> sqlite3.Connection:
        connection = super()._connect()
        connection.set_trace_callback(self._tripping.before)
        return connection


class TrippingPostgres(PostgresCheckpointer):
    """The PostgreSQL store with the kill points; its connections' cursors report each statement
    (the transaction's COMMIT is psycopg's own: the kill before it comes after the last statement)."""

    def __init__(self, url: str, wire: Tripwire) -> None:
        self._tripping = Tripping(wire)
        super().__init__(url, max_connections=2)

    async def save(self, checkpoint: Checkpoint) -> None:
        await self._tripping.tripping_save(checkpoint, super().save)

    def _connection_options(self) -> dict[str, Any]:
        tripping = self._tripping

        class ReportingCursor(psycopg.Cursor[Any]):
            def execute(self, query: Any, params: Any = None, **options: Any) -> Any:
                tripping.before(_text(query))
                done = super().execute(query, params, **options)
                tripping.after(_text(query))
                return done

            def executemany(self, query: Any, params_seq: Any, **options: Any) -> None:
                tripping.before(_text(query))
                super().executemany(query, params_seq, **options)
                tripping.after(_text(query))

        return {**super()._connection_options(), "cursor_factory": ReportingCursor}


def _text(query: object) -> str:
    return query.decode() if isinstance(query, bytes) else str(query)


def _holds_results(message: object) -> bool:
    if not isinstance(message, dict):
        return False
    data = cast("dict[str, object]", message)
    content = data.get("content")
    if data.get("role") != "user" or not isinstance(content, list):
        return False
    return any(
        isinstance(block, dict) and cast("dict[str, object]", block).get("type") == "tool_result"
        for block in cast("list[object]", content)
    )


# -- the tools and the fake -----------------------------------------------------------------------


def _begin(context: ToolContext) -> str:
    call = context.call.id
    tripwire().write(f"start {call}")
    return call


def _end(call: str) -> str:
    tripwire().write(f"finish {call}")
    return expected_result(call)


def _sync_body(context: ToolContext) -> str:
    call = _begin(context)
    wire = tripwire()
    if wire.passing("tool", call):
        assert wire.point is not None
        wire.wait_for_siblings(call, wire.point.after)
        wire.kill()
    return _end(call)


async def _async_body(context: ToolContext) -> str:
    call = _begin(context)
    wire = tripwire()
    if wire.passing("tool", call):
        assert wire.point is not None
        if (
            wire.point.after
        ):  # no thread hop otherwise: the loop would go on (a reply streaming) before the kill
            await anyio.to_thread.run_sync(wire.wait_for_siblings, call, wire.point.after)
        wire.kill()
    await anyio.lowlevel.checkpoint()  # an async tool that does yield to the loop
    return _end(call)


@tool
async def charge(value: str, context: ToolContext) -> str:
    """Charge a card (not idempotent).

    Args:
        value: The order.
    """
    return await _async_body(context)


@tool(idempotent=True)
async def fetch(value: str, context: ToolContext) -> str:
    """Fetch a page (idempotent).

    Args:
        value: The page.
    """
    return await _async_body(context)


@tool
def email(value: str, context: ToolContext) -> str:
    """Send an email (not idempotent).

    Args:
        value: The address.
    """
    return _sync_body(context)


@tool(idempotent=True)
def read(value: str, context: ToolContext) -> str:
    """Read a file (idempotent).

    Args:
        value: The file.
    """
    return _sync_body(context)


TOOLS = [charge, fetch, email, read]


def respond(request: RecordedRequest) -> ScriptEntry:
    """The reply to a request follows from the request alone: its number of assistant messages."""
    wire = tripwire()
    if wire.passing("request"):
        wire.kill()
    turn = sum(1 for message in request.messages if message.get("role") == "assistant")
    if turn < len(SCRIPT):
        return SCRIPT[turn]
    return fault(
        400, message=f"the crash test's conversation has {len(SCRIPT)} replies; this is request {turn + 1}."
    )


class TrippingTransport(httpx2.AsyncBaseTransport):
    """The fake's transport, with the ``event`` kill points in the streams it answers."""

    def __init__(self, fake: FakeMessagesAPI, wire: Tripwire) -> None:
        self._inner = fake.async_transport()
        self._wire = wire

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self._inner.handle_async_request(request)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return response
        stream = cast("httpx2.AsyncByteStream", response.stream)
        wire = self._wire
        reply = wire.counts["streams"]
        wire.note("streams")
        return httpx2.Response(
            response.status_code, headers=response.headers, stream=_TrippingEvents(stream, wire, reply)
        )


class _TrippingEvents(httpx2.AsyncByteStream):
    """The fake's events (one SSE event a chunk), each after a yield to the loop, as from a socket,
    and once the saves under way are done: as if the network were slower than the disk, so that a
    call started early has its start saved before the next event, and the reply is still streaming
    when it is (the ``streaming <id>`` counts)."""

    def __init__(self, inner: httpx2.AsyncByteStream, wire: Tripwire, reply: int) -> None:
        self._inner = inner
        self._wire = wire
        self._reply = reply

    async def __aiter__(self) -> AsyncIterator[bytes]:
        wire = self._wire
        async for chunk in self._inner:
            await anyio.lowlevel.checkpoint()
            await wire.saves_done()
            if wire.passing("event"):
                wire.kill()
            wire.note(f"events of reply {self._reply}")
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


# -- running a job --------------------------------------------------------------------------------


def _client(job: Job, wire: Tripwire) -> anthropic.AsyncAnthropic:
    fake = FakeMessagesAPI(responder=respond)
    if not job.eager:
        return fake.async_client()
    transport = TrippingTransport(fake, wire)
    return anthropic.AsyncAnthropic(
        api_key="sk-ant-fake-key",
        base_url="https://api.anthropic.com",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=transport),
    )


async def drive(job: Job, wire: Tripwire) -> None:
    store: TrippingSQLite | TrippingPostgres
    if job.store == "sqlite":
        store = TrippingSQLite(job.database, wire)
    else:
        assert job.url is not None
        store = TrippingPostgres(job.url, wire)
    try:
        async with _client(job, wire) as client:
            if await store.load(RUN_ID) is None:  # nothing saved yet (or a first save that was cut short)
                runner = ToolRunner(
                    client,
                    stream=job.eager,
                    run_tools_eagerly=job.eager,
                    model=MODEL,
                    max_tokens=256,
                    messages=[{"role": "user", "content": "Run the errands."}],
                    tools=TOOLS,
                    checkpointer=store,
                    run_id=RUN_ID,
                )
            else:
                runner = await ToolRunner.resume(
                    client,
                    stream=job.eager,
                    run_tools_eagerly=job.eager,
                    checkpointer=store,
                    run_id=RUN_ID,
                    tools=TOOLS,
                )
            if job.eager:
                async with runner:  # eager tools run in the runner's task group
                    await runner.until_done()
            else:
                await runner.until_done()
    finally:
        store.close()


def run(job: Job) -> None:
    """Run one job in this process (which it may kill); write its counts when it ends."""
    global _tripwire
    signal.alarm(GUARD)
    wire = _tripwire = Tripwire(job)
    anyio.run(drive, job, wire, backend=job.backend)
    job.counts.write_text(json.dumps(dict(wire.counts)))


def _child(job: Job) -> NoReturn:
    """In a forked child: run the job with its output in its log, and never return to the server."""
    code = 1
    try:
        log = os.open(job.log, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(log, 1)
        os.dup2(log, 2)
        run(job)
        code = 0
    except BaseException:
        traceback.print_exc()
    finally:
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)


def serve() -> None:
    """Fork a child per job line on stdin; print each child's exit status (``-9``: SIGKILL)."""
    for backend in ("_asyncio", "_trio"):  # imported once here rather than in every child
        importlib.import_module(f"anyio._backends.{backend}")
    for line in sys.stdin:
        job = Job.from_json(line)
        sys.stdout.flush()
        pid = os.fork()
        if pid == 0:
            _child(job)
        _, status = os.waitpid(pid, 0)
        print(os.waitstatus_to_exitcode(status), flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        serve()
    elif sys.argv[1:2] == ["run"] and len(sys.argv) == 3:
        run(Job.from_json(sys.argv[2]))
    else:
        raise SystemExit("usage: python -m tests.support.crash_worker serve | run JOB_JSON")

"""Two replicas of one web app: two ``Agent``s, each with its own store object over one SQLite file
or one PostgreSQL schema (the session's real server), as two processes behind a load balancer
with no sticky sessions. The replica that drives a run holds its lease; a request that reaches
the other one follows the run from the store to its end (no conflict, the tool run once); a
decision sent to the other one goes through the store and the run goes on there; two replicas
deciding one call: one wins, the other is told who did; and a replica whose process died (its
task group cancelled, its lease never given up) loses the run to the other once the lease has run
out."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.stores import SQL_KINDS
from tests.support.web_server import MODEL, conversation, look, paid, pay
from toolrunner import PostgresCheckpointer, RunStore, SQLiteCheckpointer, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply
from toolrunner.web import Agent, agui_app, ui_message_stream_app

pytestmark = pytest.mark.anyio

ASK = [{"id": "u1", "role": "user", "content": "Pay Ada 3."}]
APPROVE = [{"interruptId": "pay-1", "status": "resolved", "payload": {"approved": True}}]
GUARD = 30  # seconds; reached only when something that should happen does not

Opener = Callable[[], RunStore]


@pytest.fixture(params=SQL_KINDS)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """A new store object over the same SQLite file or PostgreSQL schema at each call (one per
    replica); each is closed at the end."""
    url = str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else None
    opened: list[SQLiteCheckpointer | PostgresCheckpointer] = []

    def open_() -> RunStore:
        store = SQLiteCheckpointer(tmp_path / "runs.db") if url is None else PostgresCheckpointer(url)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


class Gate:
    """A tool that blocks until the test opens the gate (``opened``), counting its runs."""

    def __init__(self) -> None:
        self.started = anyio.Event()
        self.opened = anyio.Event()
        self.runs = 0

        @tool
        async def wait(what: str) -> str:
            """Wait for something."""
            self.runs += 1
            self.started.set()
            await self.opened.wait()
            return f"{what} came"

        self.tool = wait


def replica(fake: FakeMessagesAPI, store: RunStore, owner: str, *tools: Any, lease: float = 10.0) -> Agent:
    return Agent(
        fake.async_client(),
        store=store,
        tools=[look, pay, *tools],
        model=MODEL,
        max_tokens=256,
        owner=owner,
        lease=lease,
        poll_interval=0.02,
    )


def waiting_script() -> FakeMessagesAPI:
    return FakeMessagesAPI(
        [
            tool_reply(tool_call("wait", {"what": "the parcel"}, id="w1"), text="Waiting."),
            text_reply("It came."),
        ]
    )


def http(app: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test")


def events(text: str) -> list[dict[str, Any]]:
    lines = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def body(run: str, **fields: Any) -> dict[str, Any]:
    return {"threadId": "t1", "runId": run, "messages": [], **fields}


async def held_by(store: RunStore, run_id: str, owner: str) -> None:
    """Wait until ``owner`` holds the run's lease (a new run is leased from its first save)."""
    with anyio.fail_after(GUARD):
        while True:
            summary = await store.get_run(run_id)
            if summary is not None and summary.lease is not None and summary.lease.owner == owner:
                return
            await anyio.sleep(0.01)


async def following(agent: Agent, run_id: str) -> None:
    """Wait until ``agent`` follows (or drives) the run for a request."""
    with anyio.fail_after(GUARD):
        while True:
            session = agent._sessions.get(run_id)  # pyright: ignore[reportPrivateUsage]
            if session is not None and session.running:
                return
            await anyio.sleep(0.01)


async def test_a_reload_on_the_other_replica_follows_the_run_to_its_end(open_store: Opener) -> None:
    gate, fake = Gate(), waiting_script()
    a, b = replica(fake, open_store(), "a", gate.tool), replica(fake, open_store(), "b", gate.tool)
    answers: dict[str, list[dict[str, Any]]] = {}

    async def post(name: str, client: httpx2.AsyncClient, run: str) -> None:
        answers[name] = events((await client.post("/", json=body(run, messages=ASK))).text)

    async with a, b, http(agui_app(a)) as on_a, http(agui_app(b)) as on_b:
        async with anyio.create_task_group() as group:
            group.start_soon(post, "a", on_a, "r1")
            await gate.started.wait()
            await held_by(b.store, "t1", "a")
            group.start_soon(post, "b", on_b, "r2")  # a reload that the balancer sends to b
            await following(b, "t1")
            gate.opened.set()
        view = await b.view("t1")

    assert gate.runs == 1  # nothing ran twice
    for name in ("a", "b"):
        kinds = [event["type"] for event in answers[name]]
        assert "RUN_ERROR" not in kinds, answers[name]
        assert answers[name][-1]["type"] == "RUN_FINISHED"
        assert answers[name][-1]["result"] == "It came."
        # why it ended, driven (a) or followed from the store (b): the state's last reply says
        assert answers[name][-1]["metadata"]["endReason"] == "model"
        assert answers[name][-1]["metadata"]["stopReason"] == "end_turn"
        results = [event["content"] for event in answers[name] if event["type"] == "TOOL_CALL_RESULT"]
        assert results == ["the parcel came"]
    # b has whole replies: each text in one piece, from the start of the turn
    texts = [event["delta"] for event in answers["b"] if event["type"] == "TEXT_MESSAGE_CONTENT"]
    assert texts == ["Waiting.", "It came."]
    assert view is not None
    assert view.running is False
    summary = await b.store.get_run("t1")
    assert summary is not None
    assert (summary.status.value, summary.lease) == ("finished", None)  # a gave its lease up


async def test_the_ai_sdk_stream_reconnects_to_the_other_replica(open_store: Opener) -> None:
    gate, fake = Gate(), waiting_script()
    a, b = replica(fake, open_store(), "a", gate.tool), replica(fake, open_store(), "b", gate.tool)
    ask = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Pay Ada 3."}]}
    answers: dict[str, list[dict[str, Any]]] = {}

    async def send() -> None:
        answers["a"] = events((await on_a.post("/", json={"id": "c1", "messages": [ask]})).text)

    async def reconnect() -> None:
        answer = await on_b.get("/c1/stream", params={"after": "3"})  # a's number: not b's
        answers["b"] = events(answer.text)

    async with (
        a,
        b,
        http(ui_message_stream_app(a)) as on_a,
        http(ui_message_stream_app(b)) as on_b,
        anyio.create_task_group() as group,
    ):
        group.start_soon(send)
        await gate.started.wait()
        await held_by(b.store, "c1", "a")
        group.start_soon(reconnect)
        await following(b, "c1")
        gate.opened.set()
    assert gate.runs == 1
    assert answers["b"][-1] == {"type": "finish", "finishReason": "stop"}
    outputs = [chunk for chunk in answers["b"] if chunk["type"] == "tool-output-available"]
    assert outputs == [{"type": "tool-output-available", "toolCallId": "w1", "output": "the parcel came"}]
    assert not [chunk for chunk in answers["b"] if chunk["type"] == "error"]


async def test_a_decision_sent_to_the_other_replica_goes_on_there(open_store: Opener) -> None:
    paid.clear()
    fake = conversation()
    a, b = replica(fake, open_store(), "a"), replica(fake, open_store(), "b")
    async with a, b, http(agui_app(a)) as on_a, http(agui_app(b)) as on_b:
        first = events((await on_a.post("/", json=body("r1", messages=ASK))).text)
        assert first[-1]["outcome"]["interrupts"][0]["toolCallId"] == "pay-1"
        done = events(
            (await on_b.post("/", json=body("r2", resume=APPROVE), headers={"X-Decided-By": "ann"})).text
        )
        again = await on_a.post("/", json=body("r3", resume=APPROVE), headers={"X-Decided-By": "bob"})
    assert done[-1]["result"] == "Ada is paid."
    assert [event["content"] for event in done if event["type"] == "TOOL_CALL_RESULT"] == ["paid 3"]
    assert again.status_code == 409
    assert "ann" in again.json()["error"]  # who decided first
    assert paid == [3]


async def test_two_replicas_deciding_one_call_one_wins(open_store: Opener) -> None:
    paid.clear()
    fake = conversation()
    a, b = replica(fake, open_store(), "a"), replica(fake, open_store(), "b")
    answers: dict[str, httpx2.Response] = {}

    async def decide(name: str, client: httpx2.AsyncClient) -> None:
        answers[name] = await client.post(
            "/", json=body(f"d-{name}", resume=APPROVE), headers={"X-Decided-By": name}
        )

    async with a, b, http(agui_app(a)) as on_a, http(agui_app(b)) as on_b:
        await on_a.post("/", json=body("r1", messages=ASK))
        async with anyio.create_task_group() as group:
            group.start_soon(decide, "ann", on_a)
            group.start_soon(decide, "bob", on_b)
    statuses = sorted(answer.status_code for answer in answers.values())
    assert statuses == [200, 409]
    [won] = [name for name, answer in answers.items() if answer.status_code == 200]
    [lost] = [answer for answer in answers.values() if answer.status_code == 409]
    assert won in lost.json()["error"]
    assert events(answers[won].text)[-1]["result"] == "Ada is paid."
    assert paid == [3]


async def test_a_replica_that_died_loses_its_run_to_the_other_once_the_lease_runs_out(
    open_store: Opener, monkeypatch: pytest.MonkeyPatch
) -> None:
    gate, fake = Gate(), waiting_script()
    a = replica(fake, open_store(), "a", gate.tool, lease=1.0)
    b = replica(fake, open_store(), "b", gate.tool)
    dead = anyio.CancelScope()

    async def given_up(run_id: str, owner: str) -> bool:
        return False  # a process that died gives nothing up

    async def serve_a() -> None:
        with dead:
            async with a, http(agui_app(a)) as on_a:
                await on_a.post("/", json=body("r1", messages=ASK))

    async with anyio.create_task_group() as group:
        group.start_soon(serve_a)
        await gate.started.wait()
        await held_by(b.store, "t1", "a")
        monkeypatch.setattr(a.store, "release_lease", given_up)
        dead.cancel()  # a's process dies mid-tool: its run is running, under a's lease
    summary = await b.store.get_run("t1")
    assert summary is not None
    assert summary.status.value == "running"
    assert summary.lease is not None
    assert summary.lease.owner == "a"

    async with b, http(agui_app(b)) as on_b:
        going = events((await on_b.post("/", json=body("r2", messages=ASK))).text)
    assert going[-1]["type"] == "RUN_FINISHED", going
    assert going[-1]["result"] == "It came."
    assert gate.runs == 1  # the call that started on a is answered as interrupted, not run again
    [result] = [event for event in going if event["type"] == "TOOL_CALL_RESULT"]
    assert result["toolCallId"] == "w1"
    done = await b.store.get_run("t1")
    assert done is not None
    assert (done.status.value, done.lease) == ("finished", None)


def test_an_agent_s_owner_lease_and_poll_interval_are_checked() -> None:
    from toolrunner import MemoryCheckpointer, ParamsError

    fake = waiting_script()
    cases: list[tuple[str, Any, str]] = [
        ("owner", "a\n", "a lease's owner"),
        ("owner", "", "a lease's owner must be a non-empty string"),
        ("lease", 0, "lease must be a number of seconds above 0"),
        ("poll_interval", -1, "poll_interval must be a number of seconds above 0"),
    ]
    for field, value, match in cases:
        given: dict[str, Any] = {field: value}
        with pytest.raises(ParamsError, match=match):
            Agent(
                fake.async_client(), store=MemoryCheckpointer(), tools=[], model=MODEL, max_tokens=8,
                **given,
            )  # fmt: skip
    made = Agent(fake.async_client(), store=MemoryCheckpointer(), tools=[], model=MODEL, max_tokens=8)
    other = Agent(fake.async_client(), store=MemoryCheckpointer(), tools=[], model=MODEL, max_tokens=8)
    assert made.owner != other.owner  # each its own name in the leases

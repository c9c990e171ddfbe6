"""The web endpoints on durable stores (SQLite on a file, PostgreSQL on the session's embedded
server): a conversation that pauses on an approval outlives its process's ``Agent`` (a server
restart): a new ``Agent`` on a new store object over the same file or database shows the waiting
call from the store and takes the decision through the protocol to the run's end, with who
decided; and a client that disconnects mid-stream loses nothing."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.stores import SQL_KINDS
from tests.support.web_server import conversation, make_agent, served
from toolrunner import PostgresCheckpointer, RunStore, SQLiteCheckpointer
from toolrunner.web import Agent, agui_app, ui_message_stream_app

pytestmark = pytest.mark.anyio

ASK = [{"id": "u1", "role": "user", "content": "Pay Ada 3."}]
APPROVE = [{"interruptId": "pay-1", "status": "resolved", "payload": {"approved": True}}]
CHAT_ASK = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Pay Ada 3."}]}

Opener = Callable[[], RunStore]


@pytest.fixture(params=SQL_KINDS)
def open_store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Opener]:
    """Opens a new store object on the same SQLite file or PostgreSQL schema at each call (as a
    process that starts again does); each is closed at the end."""
    url = str(request.getfixturevalue("postgres_url")) if request.param == "postgres" else None
    opened: list[SQLiteCheckpointer | PostgresCheckpointer] = []

    def open_() -> RunStore:
        store = SQLiteCheckpointer(tmp_path / "runs.db") if url is None else PostgresCheckpointer(url)
        opened.append(store)
        return store

    yield open_
    for store in opened:
        store.close()


def events(text: str) -> list[dict[str, Any]]:
    lines = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def http(app: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test")


def body(run: str, **fields: Any) -> dict[str, Any]:
    return {"threadId": "t1", "runId": run, "messages": [], **fields}


async def test_agui_a_paused_conversation_outlives_a_restart(open_store: Opener) -> None:
    fake = conversation()  # one script across both processes: the second reads on from the pause
    before = make_agent(fake, open_store())
    async with before, http(agui_app(before)) as client:
        first = events((await client.post("/", json=body("r1", messages=ASK))).text)
    assert first[-1]["outcome"]["interrupts"][0]["toolCallId"] == "pay-1"

    after = make_agent(fake, open_store())  # the server starts again: a new agent, a new store object
    async with after, http(agui_app(after)) as client:
        reload = events((await client.post("/", json=body("r2", messages=ASK))).text)
        done = events(
            (await client.post("/", json=body("r3", resume=APPROVE), headers={"X-Decided-By": "ann"})).text
        )
    assert [event["type"] for event in reload] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    snapshot = reload[1]["messages"]
    assert [message["role"] for message in snapshot] == ["user", "assistant", "tool", "assistant"]
    assert snapshot[2]["content"] == "Ada: account 7"
    assert snapshot[-1]["toolCalls"][0]["id"] == "pay-1"
    assert [interrupt["id"] for interrupt in reload[-1]["outcome"]["interrupts"]] == ["pay-1"]
    # the decision goes on to the end; the results sent before the restart are not sent again
    assert [event["content"] for event in done if event["type"] == "TOOL_CALL_RESULT"] == ["paid 3"]
    assert done[-1]["outcome"] == {"type": "success"}
    assert done[-1]["result"] == "Ada is paid."
    await assert_ended_with(open_store(), "t1", by="ann")


async def test_the_ai_sdk_stream_a_paused_chat_outlives_a_restart(open_store: Opener) -> None:
    fake = conversation()
    before = make_agent(fake, open_store())
    async with before, http(ui_message_stream_app(before)) as client:
        first = events((await client.post("/", json={"id": "c1", "messages": [CHAT_ASK]})).text)
    assert first[-1] == {"type": "finish", "finishReason": "tool-calls"}

    after = make_agent(fake, open_store())
    async with after, http(ui_message_stream_app(after)) as client:
        gone = await client.get("/c1/stream")  # nothing runs in the new process
        reload = (await client.get("/c1/messages")).json()
        assistant = reload["messages"][-1]
        [waiting] = [part for part in assistant["parts"] if part["type"] == "tool-pay"]
        answered = {**waiting, "state": "approval-responded", "approval": {"id": "pay-1", "approved": True}}
        parts = [answered if part is waiting else part for part in assistant["parts"]]
        done = events(
            (
                await client.post(
                    "/",
                    json={"id": "c1", "messages": [CHAT_ASK, {**assistant, "parts": parts}]},
                    headers={"X-Decided-By": "ann"},
                )
            ).text
        )
    assert gone.status_code == 204
    assert reload["running"] is False
    assert (waiting["state"], waiting["input"]) == ("approval-requested", {"amount": 3})
    looked = next(part for part in assistant["parts"] if part["type"] == "tool-look")
    assert (looked["state"], looked["output"]) == ("output-available", "Ada: account 7")
    outputs = [chunk for chunk in done if chunk["type"].startswith("tool-output")]
    assert outputs == [{"type": "tool-output-available", "toolCallId": "pay-1", "output": "paid 3"}]
    assert "".join(chunk["delta"] for chunk in done if chunk["type"] == "text-delta") == "Ada is paid."
    assert done[-1] == {"type": "finish", "finishReason": "stop"}
    await assert_ended_with(open_store(), "c1", by="ann")


async def assert_ended_with(store: RunStore, run_id: str, *, by: str) -> None:
    """The run as a store object opened afterwards reads it: ended by the model, ``pay-1``
    approved by ``by``."""
    loaded = await store.load(run_id)
    assert loaded is not None
    assert [(record.call.id, record.decision, record.by) for record in loaded.state.decisions] == [
        ("pay-1", "approved", by)
    ]
    assert loaded.state.end_reason == "model"


def test_a_client_that_disconnects_mid_stream_loses_nothing_on_sqlite(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)
    agent: Agent = make_agent(conversation(delay=0.05), store)
    again: list[dict[str, Any]] = []
    with served(agui_app(agent)) as url, httpx2.Client(base_url=url, timeout=30) as client:
        with client.stream("POST", "/", json=body("r1", messages=ASK)) as answer:
            for line in answer.iter_lines():
                if "TEXT_MESSAGE_CONTENT" in line:
                    break  # the client goes away mid-text
        for _ in range(600):  # a bound: the run pauses on its own
            again = events(client.post("/", json=body("r2")).text)
            if again[-1].get("outcome", {}).get("type") == "interrupt":
                break
            anyio.run(anyio.sleep, 0.05)
        done = events(client.post("/", json=body("r3", resume=APPROVE), headers={"X-Decided-By": "ann"}).text)
    store.close()
    assert again[-1]["outcome"]["interrupts"][0]["toolCallId"] == "pay-1"
    assert done[-1]["result"] == "Ada is paid."
    reopened = SQLiteCheckpointer(path)  # what the file holds, read afresh
    try:
        anyio.run(lambda: assert_ended_with(reopened, "t1", by="ann"))
    finally:
        reopened.close()


async def test_a_run_cut_off_mid_run_goes_on_at_the_next_request(tmp_path: Path) -> None:
    """A server that stopped while a run ran (no pause): its store has the run as running. The next
    request for the conversation, bringing nothing new, takes it up where it was saved, rather than
    telling the client it ended."""
    from tests.support.web_server import MODEL, look, pay
    from toolrunner import ToolRunner

    fake = conversation()
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    cut = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=256, messages=[{"role": "user", "content": "Pay Ada 3."}],
        tools=[look, pay], checkpointer=store, run_id="t1",
    )  # fmt: skip
    async for _ in cut:
        break  # the process stops with the first reply saved: look-1 asked for, not run
    assert (await store.get_run("t1")).status.value == "running"  # type: ignore[union-attr]
    after = make_agent(fake, SQLiteCheckpointer(tmp_path / "runs.db"))
    async with after, http(agui_app(after)) as client:
        going = events((await client.post("/", json=body("r2", messages=ASK))).text)
    assert [event["content"] for event in going if event["type"] == "TOOL_CALL_RESULT"] == ["Ada: account 7"]
    assert [interrupt["id"] for interrupt in going[-1]["outcome"]["interrupts"]] == ["pay-1"]
    store.close()

"""Requests both apps must refuse, or take whole: a request with several decisions takes all of
them or none, a malformed approval is no decision, a conversation id that cannot name a run is a
422, who decides is read as the client wrote it (percent-encoded UTF-8) and checked before
anything is written, a second decider is told who decided first, and a run's error reaches the
client as its type only (an outside audit found each of these)."""

from __future__ import annotations

import json
import logging
from collections.abc import AsyncIterator
from typing import Any, cast
from urllib.parse import quote

import httpx2
import pytest

from tests.support.web_server import conversation, make_agent, paid
from toolrunner import MemoryCheckpointer, RunStatus
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply
from toolrunner.web import Agent, agui_app, ui_message_stream_app

pytestmark = pytest.mark.anyio

ASK = [{"id": "u1", "role": "user", "content": "Pay Ada 3."}]


def events(text: str) -> list[dict[str, Any]]:
    lines = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def agui(thread: str = "t1", run: str = "r1", **fields: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": ASK, **fields}


def resolved(call: str, approved: bool = True) -> dict[str, Any]:
    return {"interruptId": call, "status": "resolved", "payload": {"approved": approved}}


def http(app: Any) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test")


async def paused(agent: Agent, client: httpx2.AsyncClient) -> None:
    """The conversation of ``conversation()`` on thread t1, paused on pay-1."""
    assert events((await client.post("/", json=agui())).text)[-1]["outcome"]["type"] == "interrupt"
    summary = await agent.store.get_run("t1")
    assert summary is not None
    assert summary.status is RunStatus.AWAITING


@pytest.mark.parametrize(
    ("resume", "status", "says"),
    [
        ([resolved("pay-1"), resolved("zz", False)], 409, "'zz' cannot be decided"),
        ([resolved("pay-1"), resolved("pay-1", False)], 422, "decides the call 'pay-1' twice"),
    ],
)
async def test_a_request_one_of_whose_decisions_is_refused_decides_nothing(
    resume: list[dict[str, Any]], status: int, says: str
) -> None:
    agent = make_agent(conversation())
    before = len(paid)
    async with agent, http(agui_app(agent)) as client:
        await paused(agent, client)
        answer = await client.post("/", json=agui(run="r2", resume=resume), headers={"X-Decided-By": "ada"})
        assert answer.status_code == status
        assert says in answer.json()["error"]
        assert "nothing was decided" in answer.json()["error"]
        summary = await agent.store.get_run("t1")
        assert summary is not None
        assert summary.status is RunStatus.AWAITING  # the approval before the bad entry was not written
        assert [call.id for call in summary.waiting] == ["pay-1"]
        denied = await client.post("/", json=agui(run="r3", resume=[resolved("pay-1", False)]))
    assert events(denied.text)[-1]["type"] == "RUN_FINISHED"
    assert paid[before:] == []  # denied at last: never paid


async def test_a_second_decider_is_told_who_decided_first_after_the_run_went_on() -> None:
    agent = make_agent(conversation())
    async with agent, http(agui_app(agent)) as client:
        await paused(agent, client)
        await client.post(
            "/", json=agui(run="r2", resume=[resolved("pay-1")]), headers={"X-Decided-By": "ada"}
        )
        late = await client.post(
            "/", json=agui(run="r3", resume=[resolved("pay-1", False)]), headers={"X-Decided-By": "bob"}
        )
    assert late.status_code == 409
    assert "'pay-1' of run 't1' was approved by 'ada' at" in late.json()["error"]


@pytest.mark.parametrize("thread", ["", "\x00", "x" * 513, "a\u202eb"])
async def test_a_thread_id_that_cannot_name_a_run_is_422(thread: str) -> None:
    agent = make_agent(conversation())
    async with agent, http(agui_app(agent)) as client:
        answer = await client.post("/", json=agui(thread=thread))
    assert answer.status_code == 422
    assert "cannot name a run" in answer.json()["error"]


async def test_a_chat_id_that_cannot_name_a_run_or_a_url_segment_is_422() -> None:
    agent = make_agent(conversation())
    ask = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Pay Ada 3."}]}
    async with agent, http(ui_message_stream_app(agent)) as client:
        empty = await client.post("/", json={"id": "", "messages": [ask]})
        slash = await client.post("/", json={"id": "a/b", "messages": [ask]})
        nul = await client.get("/%00/messages")
    assert [empty.status_code, slash.status_code, nul.status_code] == [422, 422, 422]
    assert "no '/'" in slash.json()["error"]
    assert "cannot name a run" in nul.json()["error"]


@pytest.mark.parametrize(
    "approval",
    [
        {"id": "pay-1", "approved": "yes"},
        {"id": "pay-1"},
        {"id": "zz", "approved": True},
        {"id": "pay-1", "approved": False, "reason": 5},
        "yes",
    ],
)
async def test_a_malformed_ai_sdk_approval_is_422_and_no_decision(approval: object) -> None:
    agent = make_agent(conversation())
    ask = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Pay Ada 3."}]}
    async with agent, http(ui_message_stream_app(agent)) as client:
        await client.post("/", json={"id": "c1", "messages": [ask]})
        part = {
            "type": "tool-pay",
            "toolCallId": "pay-1",
            "state": "approval-responded",
            "approval": approval,
        }
        assistant = {"id": "a1", "role": "assistant", "parts": [part]}
        answer = await client.post("/", json={"id": "c1", "messages": [ask, assistant]})
        summary = await agent.store.get_run("c1")
    assert answer.status_code == 422
    assert "nothing was decided" in answer.json()["error"]
    assert summary is not None
    assert summary.status is RunStatus.AWAITING


@pytest.mark.parametrize(
    ("header", "recorded"),
    [
        (quote("山田 花子"), "山田 花子"),
        ("José".encode(), "José"),  # raw UTF-8, as a non-browser client may send it
        ("ada", "ada"),
    ],
)
async def test_who_decides_is_read_as_percent_encoded_utf_8(header: str | bytes, recorded: str) -> None:
    agent = make_agent(conversation())
    async with agent, http(agui_app(agent)) as client:
        await paused(agent, client)
        answer = await client.post(
            "/",
            json=agui(run="r2", resume=[resolved("pay-1")]),
            headers=cast("Any", {"X-Decided-By": header}),
        )
        assert answer.status_code == 200
        loaded = await agent.store.load("t1")
    assert loaded is not None
    assert [record.by for record in loaded.state.decisions] == [recorded]


@pytest.mark.parametrize(("header", "says"), [("%FF", "not UTF-8"), (quote("a\x1bb"), "control character")])
async def test_who_decides_is_refused_with_400_before_anything_is_written(header: str, says: str) -> None:
    agent = make_agent(conversation())
    async with agent, http(agui_app(agent)) as client:
        await paused(agent, client)
        answer = await client.post(
            "/", json=agui(run="r2", resume=[resolved("pay-1")]), headers={"X-Decided-By": header}
        )
        summary = await agent.store.get_run("t1")
    assert answer.status_code == 400
    assert says in answer.json()["error"]
    assert summary is not None
    assert summary.status is RunStatus.AWAITING


class LeakyStore(MemoryCheckpointer):
    """A store whose saves fail with a message holding its URL's password, as a driver's may."""

    async def save(self, *args: Any, **kwargs: Any) -> Any:
        raise OSError("could not connect to postgresql://app:hunter2-SECRET@db:5432/runs")


async def test_a_run_s_error_reaches_the_client_as_its_type_and_the_log_whole(
    caplog: pytest.LogCaptureFixture,
) -> None:
    def leaky() -> Agent:
        fake = FakeMessagesAPI([tool_reply(tool_call("look", {"name": "Ada"})), text_reply("Done.")])
        return make_agent(fake, LeakyStore())

    with caplog.at_level(logging.ERROR, logger="toolrunner.web"):
        async with (agent := leaky()), http(agui_app(agent)) as client:
            sent = events((await client.post("/", json=agui())).text)
        async with (agent := leaky()), http(ui_message_stream_app(agent)) as client:
            ask = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Hi."}]}
            chunks = events((await client.post("/", json={"id": "c1", "messages": [ask]})).text)
    [error] = [event for event in sent if event["type"] == "RUN_ERROR"]
    [part] = [chunk for chunk in chunks if chunk["type"] == "error"]
    for shown in (error["message"], part["errorText"]):
        assert "hunter2" not in shown
        assert "(OSError)" in shown
    assert "hunter2-SECRET" in caplog.text  # the server's log has it whole


@pytest.mark.parametrize("make", [agui_app, ui_message_stream_app])
@pytest.mark.parametrize("chunked", [False, True])
async def test_a_body_over_max_body_is_413_and_not_read(make: Any, chunked: bool) -> None:
    agent = make_agent(conversation())
    big = json.dumps(agui(messages=[{"id": "u1", "role": "user", "content": "x" * 5000}])).encode()

    async def pieces() -> AsyncIterator[bytes]:  # no content-length: counted as it comes
        for start in range(0, len(big), 1000):
            yield big[start : start + 1000]

    async with agent, http(make(agent, max_body=4096)) as client:
        headers = {"content-type": "application/json"}
        answer = await client.post("/", content=pieces() if chunked else big, headers=headers)
        assert await agent.store.get_run("t1") is None
    assert answer.status_code == 413
    assert "larger than 4096 bytes" in answer.json()["error"]


@pytest.mark.parametrize("limit", [0, -1, 1.5, True, "1"])
def test_max_body_is_a_positive_int(limit: object) -> None:
    agent = make_agent(conversation())
    for make in (agui_app, ui_message_stream_app):
        with pytest.raises(ValueError, match="max_body="):
            make(agent, max_body=limit)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]

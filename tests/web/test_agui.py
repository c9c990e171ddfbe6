"""``agui_app`` through httpx's ASGI transport (and uvicorn for a client that disconnects): the
events of a conversation with a tool and an approval, reconnects, and bad input."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest

from tests.support.web_server import conversation, hold, holding, make_agent, released, served
from toolrunner import MemoryCheckpointer
from toolrunner.web import Agent, agui_app

pytestmark = pytest.mark.anyio


def events(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[len("data: ") :]) for line in text.splitlines() if line.startswith("data: ")]


def body(thread: str = "t1", run: str = "r1", **fields: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": [], **fields}


ASK = [{"id": "u1", "role": "user", "content": "Pay Ada 3."}]
APPROVE = [{"interruptId": "pay-1", "status": "resolved", "payload": {"approved": True}}]


async def client(agent: Agent) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=agui_app(agent)), base_url="http://test")


async def test_a_conversation_streams_text_calls_results_and_pauses_on_an_interrupt() -> None:
    agent = make_agent(conversation())
    async with agent, await client(agent) as http:
        first = events((await http.post("/", json=body(messages=ASK))).text)
        second = events(
            (await http.post("/", json=body(run="r2", resume=APPROVE), headers={"X-Decided-By": "ann"})).text
        )
    kinds = [event["type"] for event in first]
    assert kinds[0] == "RUN_STARTED"
    assert kinds[-1] == "RUN_FINISHED"
    assert (
        kinds.index("TEXT_MESSAGE_START")
        < kinds.index("TEXT_MESSAGE_CONTENT")
        < kinds.index("TEXT_MESSAGE_END")
    )
    args = "".join(
        event["delta"]
        for event in first
        if event["type"] == "TOOL_CALL_ARGS" and event["toolCallId"] == "pay-1"
    )
    assert json.loads(args) == {"amount": 3}
    assert [event["content"] for event in first if event["type"] == "TOOL_CALL_RESULT"] == ["Ada: account 7"]
    [interrupt] = first[-1]["outcome"]["interrupts"]
    assert (interrupt["id"], interrupt["toolCallId"], interrupt["reason"]) == (
        "pay-1",
        "pay-1",
        "tool_approval",
    )
    assert [event["content"] for event in second if event["type"] == "TOOL_CALL_RESULT"] == ["paid 3"]
    assert second[-1]["outcome"] == {"type": "success"}
    assert second[-1]["result"] == "Ada is paid."
    loaded = await agent.store.load("t1")
    assert loaded is not None
    assert [record.by for record in loaded.state.decisions] == ["ann"]


async def test_a_reload_sees_where_the_run_stands() -> None:
    agent = make_agent(conversation())
    async with agent, await client(agent) as http:
        await http.post("/", json=body(messages=ASK))
        again = events((await http.post("/", json=body(run="r2", messages=ASK))).text)
    kinds = [event["type"] for event in again]
    assert kinds == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert [message["role"] for message in again[1]["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert again[1]["messages"][-1]["toolCalls"][0]["id"] == "pay-1"  # the call that waits, held apart
    assert again[-1]["outcome"]["interrupts"][0]["toolCallId"] == "pay-1"


async def test_each_event_carries_its_number_and_a_reconnect_inside_a_call_starts_at_its_start() -> None:
    agent = make_agent(conversation())
    async with agent, await client(agent) as http:
        first = events((await http.post("/", json=body(messages=ASK))).text)
        numbers = [event["metadata"]["index"] for event in first[1:]]
        assert numbers == sorted(set(numbers))  # RUN_STARTED aside, each numbered, in order
        inside = next(event for event in first if event["type"] == "TOOL_CALL_ARGS")
        after = {"after": inside["metadata"]["index"]}
        again = events((await http.post("/", json=body(run="r2", forwardedProps=after))).text)
    start = next(event for event in first if event["type"] == "TOOL_CALL_START")
    assert again[1] == start  # the call's start again, then the rest
    assert again[2:-1] == first[first.index(start) + 1 : -1]
    assert again[-1] == {**first[-1], "runId": "r2"}


async def test_two_clients_deciding_the_same_call_one_wins_the_other_is_told() -> None:
    agent = make_agent(conversation())
    async with agent, await client(agent) as http:
        await http.post("/", json=body(messages=ASK))
        await agent.store.approve_call("t1", "pay-1", by="bob")  # another tab, through the store
        late = await http.post("/", json=body(run="r2", resume=APPROVE), headers={"X-Decided-By": "ann"})
    assert late.status_code == 409
    assert "bob" in late.json()["error"]


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b"{not json", "Invalid JSON"),
        (b'{"threadId": "t1"}', "runId"),
        (
            json.dumps(body(resume=[{"interruptId": "pay-1", "status": "resolved", "payload": 3}])).encode(),
            "approved",
        ),
    ],
)
async def test_a_malformed_body_is_422_with_what_is_wrong(content: bytes, says: str) -> None:
    agent = make_agent(conversation())
    async with agent, await client(agent) as http:
        if b"resume" in content:
            await http.post("/", json=body(messages=ASK))
        answer = await http.post("/", content=content, headers={"content-type": "application/json"})
    assert answer.status_code == 422
    assert says in answer.json()["error"]


@pytest.mark.parametrize("after", [-1, True, "3", 1.5, {"x": 1}])
async def test_forwarded_after_is_a_non_negative_integer_else_422(after: object) -> None:
    agent = make_agent(conversation())
    async with agent, await client(agent) as http:
        await http.post("/", json=body(messages=ASK))
        answer = await http.post("/", json=body(run="r2", forwardedProps={"after": after}))
    assert answer.status_code == 422
    assert "forwardedProps.after" in answer.json()["error"]


async def test_an_unknown_thread_cannot_be_continued() -> None:
    agent = make_agent(conversation())
    async with agent, await client(agent) as http:
        decided = await http.post("/", json=body(thread="nobody", resume=APPROVE))
        followed = await http.post("/", json=body(thread="nobody"))
    assert decided.status_code == 404
    assert "nobody" in decided.json()["error"]
    assert followed.status_code == 404


def test_a_client_that_disconnects_mid_stream_loses_nothing() -> None:
    store = MemoryCheckpointer()
    agent = make_agent(conversation(delay=0.05), store)
    again: list[dict[str, Any]] = []
    with served(agui_app(agent)) as url, httpx2.Client(base_url=url, timeout=30) as http:
        with http.stream("POST", "/", json=body(messages=ASK)) as answer:
            for line in answer.iter_lines():
                if "TEXT_MESSAGE_CONTENT" in line:
                    break  # the client goes away mid-text
        # it comes back: the run went on meanwhile, and the reconnect sees it stand paused
        for _ in range(600):  # a bound: the run pauses on its own
            again = events(http.post("/", json=body(run="r2")).text)
            if again[-1].get("outcome", {}).get("type") == "interrupt":
                break
            anyio.run(anyio.sleep, 0.05)
    assert again[-1]["outcome"]["interrupts"][0]["toolCallId"] == "pay-1"
    summary = anyio.run(store.get_run, "t1")
    assert summary is not None
    assert [call.id for call in summary.waiting] == ["pay-1"]


def test_a_stream_says_it_is_alive_while_a_tool_runs() -> None:
    agent = make_agent(holding(), tools=[hold])
    kinds: list[str] = []
    with (
        served(agui_app(agent, keep_alive=0.01)) as url,
        httpx2.Client(base_url=url, timeout=30) as http,
        http.stream("POST", "/", json=body(messages=ASK)) as answer,
    ):
        for line in answer.iter_lines():
            if line == ": keep-alive":
                released.set()  # the tool ends once the stream said it is alive
            kinds += [json.loads(line[len("data: ") :])["type"]] if line.startswith("data: ") else []
    assert released.is_set()
    assert kinds[-1] == "RUN_FINISHED"

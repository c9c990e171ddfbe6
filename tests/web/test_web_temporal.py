"""``TemporalAgent``: the AG-UI and AI SDK endpoints driving workflow runs on Temporal's
time-skipping test server, a worker in this process on the fake Messages API: a conversation with
a tool and an approval, the decision taken in the workflow with who decided, reconnects, and a
second decider told who was first. The official clients in node and the example pages in a
browser go through the same conversation on a ``TemporalAgent`` too, in the tests they share with
``Agent`` (the ``backend`` fixture: tests/web/test_agui_node.py, test_ui_stream_node.py,
test_web_browser.py)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from temporalio.testing import WorkflowEnvironment

from tests.web.backends import serving
from toolrunner.temporal import get_run
from toolrunner.web import agui_app, ui_message_stream_app

pytestmark = pytest.mark.anyio

ASK = [{"id": "u1", "role": "user", "content": "Pay Ada 3."}]
APPROVE = [{"interruptId": "pay-1", "status": "resolved", "payload": {"approved": True}}]


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # Temporal's SDK runs on asyncio only (the ``temporal_env`` of conftest.py)


def events(text: str) -> list[dict[str, Any]]:
    lines = [line[len("data: ") :] for line in text.splitlines() if line.startswith("data: ")]
    return [json.loads(line) for line in lines if line != "[DONE]"]


def body(thread: str, run: str, **fields: Any) -> dict[str, Any]:
    return {"threadId": thread, "runId": run, "messages": [], **fields}


async def test_agui_runs_a_conversation_with_an_approval_on_a_workflow(
    temporal_env: WorkflowEnvironment,
) -> None:
    worker, agent = serving(temporal_env)
    app = agui_app(agent)
    async with (
        worker,
        agent,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as http,
    ):
        first = events((await http.post("/", json=body("wt1", "r1", messages=ASK))).text)
        again = events((await http.post("/", json=body("wt1", "r2", messages=ASK))).text)
        second = events(
            (
                await http.post("/", json=body("wt1", "r3", resume=APPROVE), headers={"X-Decided-By": "ann"})
            ).text
        )
        late = await http.post("/", json=body("wt1", "r4", resume=APPROVE), headers={"X-Decided-By": "bob"})
        state = await get_run(temporal_env.client, "wt1").state()
    kinds = [event["type"] for event in first]
    assert kinds[0] == "RUN_STARTED"
    assert kinds[-1] == "RUN_FINISHED"
    assert [event["delta"] for event in first if event["type"] == "TEXT_MESSAGE_CONTENT"] == ["Let me look."]
    args = {event["toolCallId"]: event["delta"] for event in first if event["type"] == "TOOL_CALL_ARGS"}
    assert {id: json.loads(delta) for id, delta in args.items()} == {
        "look-1": {"name": "Ada"},
        "pay-1": {"amount": 3},
    }
    assert [event["content"] for event in first if event["type"] == "TOOL_CALL_RESULT"] == ["Ada: account 7"]
    [interrupt] = first[-1]["outcome"]["interrupts"]
    assert (interrupt["id"], interrupt["reason"]) == ("pay-1", "tool_approval")
    # a reconnect (a reload, a second tab) sees the call that waits
    assert [event["type"] for event in again] == ["RUN_STARTED", "MESSAGES_SNAPSHOT", "RUN_FINISHED"]
    assert again[1]["messages"][-1]["toolCalls"][0]["id"] == "pay-1"
    assert [i["id"] for i in again[-1]["outcome"]["interrupts"]] == ["pay-1"]
    # the decision, through the protocol, is the workflow's, with who decided
    assert [event["content"] for event in second if event["type"] == "TOOL_CALL_RESULT"] == ["paid 3"]
    assert second[-1]["outcome"] == {"type": "success"}
    assert second[-1]["result"] == "Ada is paid."
    assert [(record.call.id, record.decision, record.by) for record in state.decisions] == [
        ("pay-1", "approved", "ann")
    ]
    assert state.end_reason == "model"
    assert late.status_code == 409
    assert "'ann'" in late.json()["error"]


async def test_agui_refuses_decisions_on_a_run_temporal_does_not_have(
    temporal_env: WorkflowEnvironment,
) -> None:
    worker, agent = serving(temporal_env)
    app = agui_app(agent)
    async with (
        worker,
        agent,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as http,
    ):
        answer = await http.post("/", json=body("nowhere", "r1", resume=APPROVE))
    assert answer.status_code == 404


async def test_the_ai_sdk_stream_runs_a_conversation_with_an_approval_on_a_workflow(
    temporal_env: WorkflowEnvironment,
) -> None:
    worker, agent = serving(temporal_env)
    app = ui_message_stream_app(agent)
    ask = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Pay Ada 3."}]}
    async with (
        worker,
        agent,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as http,
    ):
        first = events((await http.post("/", json={"id": "wc1", "messages": [ask]})).text)
        reload = (await http.get("/wc1/messages")).json()
        waiting = [part for part in reload["messages"][-1]["parts"] if part["type"] == "tool-pay"]
        responded = {
            **waiting[0],
            "state": "approval-responded",
            "approval": {"id": "pay-1", "approved": True},
        }
        assistant = {**reload["messages"][-1], "parts": [responded]}
        second = events(
            (
                await http.post(
                    "/", json={"id": "wc1", "messages": [ask, assistant]}, headers={"X-Decided-By": "ann"}
                )
            ).text
        )
        state = await get_run(temporal_env.client, "wc1").state()
    kinds = [chunk["type"] for chunk in first]
    assert kinds[0] == "start"
    assert kinds[-1] == "finish"
    assert {"type": "tool-approval-request", "approvalId": "pay-1", "toolCallId": "pay-1"} in first
    assert first[-1]["finishReason"] == "tool-calls"
    assert reload["running"] is False
    assert waiting[0]["state"] == "approval-requested"
    assert {"type": "tool-output-available", "toolCallId": "pay-1", "output": "paid 3"} in second
    assert [chunk["delta"] for chunk in second if chunk["type"] == "text-delta"] == ["Ada is paid."]
    assert second[-1] == {"type": "finish", "finishReason": "stop"}
    assert [(record.decision, record.by) for record in state.decisions] == [("approved", "ann")]

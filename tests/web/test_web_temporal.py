"""``TemporalAgent``: the AG-UI and AI SDK endpoints driving workflow runs on Temporal's
time-skipping test server, a worker in this process on the fake Messages API: a conversation with
a tool and an approval, the decision taken in the workflow with who decided, reconnects, and a
second decider told who was first; and the official AG-UI client (``HttpAgent``) through the same
conversation against the app on uvicorn."""

from __future__ import annotations

import gc
import itertools
import json
import socket
from collections.abc import AsyncIterator
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest
import uvicorn
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Worker

from tests.support.web_server import MODEL, ROOT, conversation, look, pay, run_node
from toolrunner.temporal import MemoryPayloadStore, create_worker, get_run, start_test_environment
from toolrunner.web import TemporalAgent, agui_app, ui_message_stream_app

pytestmark = pytest.mark.anyio

ASK = [{"id": "u1", "role": "user", "content": "Pay Ada 3."}]
APPROVE = [{"interruptId": "pay-1", "status": "resolved", "payload": {"approved": True}}]
queues = itertools.count()


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"  # Temporal's SDK runs on asyncio only


@pytest.fixture(scope="module")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    env = await start_test_environment()
    yield env
    await env.shutdown()
    del env
    gc.collect()  # temporalio/sdk-python#300, as tests/temporal/conftest.py says


def serving(env: WorkflowEnvironment) -> tuple[Worker, TemporalAgent]:
    """A worker of a task queue of its own on the scripted conversation, and the agent over it."""
    queue = f"web-{next(queues)}"
    store = MemoryPayloadStore()
    worker = create_worker(
        env.client,
        task_queue=queue,
        tools=[look, pay],
        anthropic_client=conversation().async_client(),
        store=store,
    )
    agent = TemporalAgent(
        env.client, task_queue=queue, store=store, tools=[look, pay], model=MODEL, max_tokens=256
    )
    return worker, agent


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


async def test_httpagent_runs_a_conversation_with_an_approval_on_a_workflow(
    temporal_env: WorkflowEnvironment,
) -> None:
    """The official AG-UI client (``tests/web/agui_client.mjs``: ``@ag-ui/client``'s ``HttpAgent``,
    every event parsed and checked by it) against ``agui_app(TemporalAgent(...))`` on uvicorn, in
    this loop with the worker: the conversation pauses on an interrupt, the approval goes through
    ``resume`` to the workflow, with who decided, and the run ends."""
    worker, agent = serving(temporal_env)
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(agui_app(agent), log_level="warning", lifespan="on"))
    script = ROOT / "tests" / "web" / "agui_client.mjs"
    output = ""
    async with worker:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [listening])
            for _ in range(1000):  # a bound, not a measurement: the server says when it listens
                if server.started:
                    break
                await anyio.sleep(0.01)
            assert server.started, "uvicorn did not start"
            try:  # node in a thread: this loop serves its requests meanwhile
                output = await anyio.to_thread.run_sync(run_node, script, f"http://127.0.0.1:{port}/")
            finally:
                server.should_exit = True
        state = await get_run(temporal_env.client, "node-thread").state()  # the worker answers it
    listening.close()
    seen = json.loads(output.strip().splitlines()[-1])["seen"]
    assert seen.count("RUN_STARTED") == 2
    assert seen[-1] == "RUN_FINISHED"
    assert {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT"} <= set(seen)
    assert [(record.call.id, record.decision, record.by) for record in state.decisions] == [
        ("pay-1", "approved", "node")
    ]
    assert state.end_reason == "model"

"""The official AG-UI client against the endpoint: ``tests/web/agui_client.mjs`` runs
``@ag-ui/client``'s ``HttpAgent`` (package.json pins it; ``npm ci`` installs it) through a
conversation with a tool and an approval, against ``agui_app`` on uvicorn, the fake Messages API
behind it. The script asserts that every event parsed and the end state; this test, that the run
ended in the store as the client saw, with who decided."""

from __future__ import annotations

import json

import anyio

from tests.support.web_server import ROOT, conversation, make_agent, run_node, served
from toolrunner import MemoryCheckpointer
from toolrunner.testing import FakeMessagesAPI, tool_call, truncated_tool_reply
from toolrunner.web import agui_app


def test_httpagent_runs_a_conversation_with_a_tool_and_an_approval() -> None:
    store = MemoryCheckpointer()
    with served(
        agui_app(make_agent(conversation(delay=0.01), store), keep_alive=0.001)
    ) as url:  # keep-alives too
        output = run_node(ROOT / "tests" / "web" / "agui_client.mjs", url + "/")
    seen = json.loads(output.strip().splitlines()[-1])["seen"]
    assert seen.count("RUN_STARTED") == 2
    assert seen[-1] == "RUN_FINISHED"
    assert {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT"} <= set(seen)

    loaded = anyio.run(store.load, "node-thread")
    assert loaded is not None
    assert [(record.call.id, record.by, record.via) for record in loaded.state.decisions] == [
        ("pay-1", "node", "store")
    ]
    assert loaded.state.end_reason == "model"


def test_httpagent_takes_a_reply_cut_off_inside_a_calls_input() -> None:
    fake = FakeMessagesAPI([truncated_tool_reply(tool_call("pay", {"amount": 3}, id="pay-1"))])
    with served(agui_app(make_agent(fake))) as url:
        output = run_node(ROOT / "tests" / "web" / "agui_client.mjs", url + "/", "--cut")
    seen = json.loads(output.strip().splitlines()[-1])
    assert seen["kinds"][-3:] == ["TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    assert seen["metadata"]["stopReason"] == "max_tokens"

"""The official AG-UI client against the endpoint: ``tests/web/agui_client.mjs`` runs
``@ag-ui/client``'s ``HttpAgent`` (package.json pins it; ``npm ci`` installs it) through a
conversation with a tool and an approval, against ``agui_app`` on uvicorn, the fake Messages API
behind it, over each agent (``backend``: an ``Agent`` on a store, a ``TemporalAgent`` on
Temporal's test server). The script asserts that every event parsed and the end state; this test,
that the run ended as the client saw, with who decided."""

from __future__ import annotations

import json
from functools import partial

from tests.support.web_server import ROOT, conversation, run_node
from tests.web.backends import Backend
from toolrunner.testing import FakeMessagesAPI, tool_call, truncated_tool_reply
from toolrunner.web import agui_app


def test_httpagent_runs_a_conversation_with_a_tool_and_an_approval(backend: Backend) -> None:
    app_of = partial(agui_app, keep_alive=0.001)  # keep-alives too
    with backend.served(app_of, conversation(delay=0.01)) as url:
        output = run_node(ROOT / "tests" / "web" / "agui_client.mjs", url + "/")
    seen = json.loads(output.strip().splitlines()[-1])["seen"]
    assert seen.count("RUN_STARTED") == 2
    assert seen[-1] == "RUN_FINISHED"
    assert {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS", "TOOL_CALL_RESULT"} <= set(seen)

    state = backend.state("node-thread")
    assert [(record.call.id, record.by, record.via) for record in state.decisions] == [
        ("pay-1", "node", backend.via)
    ]
    assert state.end_reason == "model"


def test_httpagent_takes_a_reply_cut_off_inside_a_calls_input(backend: Backend) -> None:
    fake = FakeMessagesAPI([truncated_tool_reply(tool_call("pay", {"amount": 3}, id="pay-1"))])
    with backend.served(agui_app, fake) as url:
        output = run_node(ROOT / "tests" / "web" / "agui_client.mjs", url + "/", "--cut")
    seen = json.loads(output.strip().splitlines()[-1])
    assert seen["kinds"][-3:] == ["TOOL_CALL_ARGS", "TOOL_CALL_END", "RUN_FINISHED"]
    assert seen["metadata"]["stopReason"] == "max_tokens"
    assert seen["metadata"]["endReason"] == "model"

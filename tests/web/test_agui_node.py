"""The official AG-UI client against the endpoint: ``tests/web/agui_client.mjs`` runs
``@ag-ui/client``'s ``HttpAgent`` (package.json pins it; ``npm ci`` installs it) through a
conversation with a tool and an approval, against ``agui_app`` on uvicorn, the fake Messages API
behind it, over each agent (``backend``: an ``Agent`` on a store, a ``TemporalAgent`` on
Temporal's test server). The script asserts that every event parsed and the end state; this test,
that the run ended as the client saw, with who decided."""

from __future__ import annotations

import json

from tests.support.web_server import ROOT, conversation, run_node
from tests.web.backends import Backend
from toolrunner.web import agui_app


def test_httpagent_runs_a_conversation_with_a_tool_and_an_approval(backend: Backend) -> None:
    with backend.served(agui_app, conversation()) as url:
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

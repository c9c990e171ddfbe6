"""The example pages' clients (``toolrunner/web/static/agui.js``, ``chat.js``: plain ES modules, no
bundle) against the official ones, in node (``tests/web/page_clients.mjs``): the event and part
names they read are the installed packages', and each folds a conversation with a tool and an
approval, decided after a reload, into what ``@ag-ui/client``'s ``HttpAgent`` and the ``ai``
package's reader make of it, over each agent (``backend``: an ``Agent`` on a store, a
``TemporalAgent`` on Temporal's test server)."""

from __future__ import annotations

import json

from tests.support.web_server import ROOT, chunk_types, run_node, twice
from tests.web.backends import Backend
from toolrunner.web import agui_app, ui_message_stream_app
from toolrunner.web._ui_stream import PARTS

SCRIPT = ROOT / "tests" / "web" / "page_clients.mjs"


def test_the_agui_page_client_ends_where_httpagent_does(backend: Backend) -> None:
    with backend.served(agui_app, twice()) as url:
        output = run_node(SCRIPT, "agui", url + "/")
    assert "TOOL_CALL_RESULT" in json.loads(output.strip().splitlines()[-1])["events"]
    for thread in ("official", "page"):
        decisions = backend.state(thread).decisions
        assert [(record.call.id, record.by) for record in decisions] == [("pay-1", "node")]


def test_the_chat_page_client_ends_where_the_sdks_reader_does(backend: Backend) -> None:
    with backend.served(ui_message_stream_app, twice()) as url:
        output = run_node(SCRIPT, "chat", url + "/")
    parts = set(json.loads(output.strip().splitlines()[-1])["parts"])
    assert parts == set(PARTS)
    assert parts <= chunk_types()
    decisions = backend.state("page").decisions
    assert [(record.call.id, record.by) for record in decisions] == [("pay-1", "node")]

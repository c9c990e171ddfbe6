"""The example pages' clients (``toolrunner/web/static/agui.js``, ``chat.js``: plain ES modules, no
bundle) against the official ones, in node (``tests/web/page_clients.mjs``): the event and part
names they read are the installed packages', and each folds a conversation with a tool and an
approval, decided after a reload, into what ``@ag-ui/client``'s ``HttpAgent`` and the ``ai``
package's reader make of it."""

from __future__ import annotations

import json

import anyio

from tests.support.web_server import ROOT, chunk_types, make_agent, run_node, served, twice
from toolrunner import MemoryCheckpointer
from toolrunner.web import agui_app, ui_message_stream_app
from toolrunner.web._ui_stream import PARTS

SCRIPT = ROOT / "tests" / "web" / "page_clients.mjs"


def test_the_agui_page_client_ends_where_httpagent_does() -> None:
    store = MemoryCheckpointer()
    with served(agui_app(make_agent(twice(), store))) as url:
        output = run_node(SCRIPT, "agui", url + "/")
    assert "TOOL_CALL_RESULT" in json.loads(output.strip().splitlines()[-1])["events"]
    for thread in ("official", "page"):
        loaded = anyio.run(store.load, thread)
        assert loaded is not None
        assert [(record.call.id, record.by) for record in loaded.state.decisions] == [("pay-1", "node")]


def test_the_chat_page_client_ends_where_the_sdks_reader_does() -> None:
    store = MemoryCheckpointer()
    with served(ui_message_stream_app(make_agent(twice(), store))) as url:
        output = run_node(SCRIPT, "chat", url + "/")
    parts = set(json.loads(output.strip().splitlines()[-1])["parts"])
    assert parts == set(PARTS)
    assert parts <= chunk_types()
    loaded = anyio.run(store.load, "page")
    assert loaded is not None
    assert [(record.call.id, record.by) for record in loaded.state.decisions] == [("pay-1", "node")]

"""The AI SDK's UI message stream against the installed ``ai`` package (package.json pins it;
``npm ci`` installs it): the part types ``PARTS`` names are those of its ``UIMessageChunk`` type,
every part the encoder makes parses with its schema, and its own reader (``readUIMessageStream``)
folds a conversation with a tool and an approval into the right message, over each agent
(``backend``: an ``Agent`` on a store, a ``TemporalAgent`` on Temporal's test server)."""

from __future__ import annotations

import json
from functools import partial
from pathlib import Path

from tests.support.web_server import ROOT, chunk_types, conversation, run_node
from tests.web.backends import Backend
from toolrunner.testing import FakeMessagesAPI, tool_call, truncated_tool_reply
from toolrunner.web import ui_message_stream_app
from toolrunner.web._events import (
    ApprovalWanted,
    RunError,
    RunFinished,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallCut,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
)
from toolrunner.web._ui_stream import PARTS, encode, part

SCRIPT = ROOT / "tests" / "web" / "ui_stream_client.mjs"


def test_the_part_types_are_the_installed_sdks() -> None:
    run_node(SCRIPT, "--check", "/dev/null")  # installs node_modules/ when missing
    assert set(PARTS) <= chunk_types(), sorted(set(PARTS) - chunk_types())


def test_every_part_the_encoder_makes_parses(tmp_path: Path) -> None:
    events = [
        TextStart("t"),
        TextDelta("t", "hi"),
        TextEnd("t"),
        ToolCallStart("c", "pay", "m"),
        ToolCallArgs("c", '{"amount":3}'),
        ToolCallEnd("c", "pay", {"amount": 3}),
        ToolCallCut("c", "pay", '{"amount": '),
        ApprovalWanted("c", "pay", {"amount": 3}),
        ToolResult("c", "paid 3"),
        ToolResult("d", "failed", is_error=True),
        ToolResult("e", "no", is_error=True, denied=True),
        RunError("broke", "APIError"),
        RunFinished("model"),
    ]
    chunks = [part("start"), *(chunk for event in events for chunk in encode(event))]
    stream = tmp_path / "stream.sse"
    stream.write_text("".join(f"data: {json.dumps(chunk)}\n\n" for chunk in chunks) + "data: [DONE]\n\n")
    types = json.loads(run_node(SCRIPT, "--check", str(stream)).strip().splitlines()[-1])["types"]
    assert types == [chunk["type"] for chunk in chunks]
    assert set(types) == set(PARTS)


def test_the_sdks_reader_follows_a_conversation_with_a_tool_and_an_approval(backend: Backend) -> None:
    app_of = partial(ui_message_stream_app, keep_alive=0.001)  # keep-alives too
    with backend.served(app_of, conversation(delay=0.01)) as url:
        output = run_node(SCRIPT, url + "/")
    types = json.loads(output.strip().splitlines()[-1])["types"]
    assert "tool-approval-request" in types
    assert types.count("finish") == 2
    state = backend.state("node-chat")
    assert [(record.call.id, record.decision, record.by, record.via) for record in state.decisions] == [
        ("pay-1", "approved", "node", backend.via)
    ]
    assert state.end_reason == "model"


def test_the_sdks_reader_ends_a_call_the_reply_cut_off_and_finishes_with_length(backend: Backend) -> None:
    fake = FakeMessagesAPI([truncated_tool_reply(tool_call("pay", {"amount": 3}, id="pay-1"))])
    with backend.served(ui_message_stream_app, fake) as url:
        output = run_node(SCRIPT, url + "/", "--cut")
    seen = json.loads(output.strip().splitlines()[-1])
    assert seen["types"][-2:] == ["tool-input-error", "finish"]
    assert seen["finishes"] == ["length"]

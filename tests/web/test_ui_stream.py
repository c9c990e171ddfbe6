"""``ui_message_stream_app`` through httpx's ASGI transport: what its reconnect takes."""

from __future__ import annotations

import json

import httpx2
import pytest

from tests.support.web_server import conversation, make_agent
from toolrunner.testing import FakeMessagesAPI, message_reply
from toolrunner.web import ui_message_stream_app

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    "query",
    ["after=-1", "after=abc", "after=1.5", "after=", "after=%20%201", "after=\u0661", "after=1&after=3"],
)
async def test_a_reconnect_takes_after_as_ascii_digits_given_once_else_422(query: str) -> None:
    agent = make_agent(conversation())
    app = ui_message_stream_app(agent)
    async with (
        agent,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as http,
    ):
        answer = await http.get(f"/c1/stream?{query}")
    assert answer.status_code == 422
    assert "after=" in answer.json()["error"]


@pytest.mark.parametrize(
    ("stop_reason", "finish"), [("end_turn", "stop"), ("max_tokens", "length"), ("refusal", "content-filter")]
)
async def test_the_finish_says_why_the_model_stopped(stop_reason: str, finish: str) -> None:
    agent = make_agent(
        FakeMessagesAPI([message_reply([{"type": "text", "text": "So"}], stop_reason=stop_reason)])
    )
    app = ui_message_stream_app(agent)
    ask = {"id": "c1", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Go."}]}]}
    async with (
        agent,
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://test") as http,
    ):
        answer = await http.post("/", json=ask)
    parts = [json.loads(line[6:]) for line in answer.text.splitlines() if line.startswith("data: {")]
    assert parts[-1] == {"type": "finish", "finishReason": finish}

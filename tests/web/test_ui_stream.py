"""``ui_message_stream_app`` through httpx's ASGI transport: what its reconnect takes."""

from __future__ import annotations

import json

import httpx2
import pytest

from tests.support.web_server import conversation, hold, holding, make_agent, released, served
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


def test_a_stream_says_it_is_alive_while_a_tool_runs() -> None:
    agent = make_agent(holding(), tools=[hold])
    ask = {"id": "c1", "messages": [{"id": "u1", "role": "user", "parts": [{"type": "text", "text": "Go."}]}]}
    lines: list[str] = []
    with (
        served(ui_message_stream_app(agent, keep_alive=0.01)) as url,
        httpx2.Client(base_url=url, timeout=30) as http,
        http.stream("POST", "/", json=ask) as answer,
    ):
        for line in answer.iter_lines():
            if line == ": keep-alive":
                released.set()  # the tool ends once the stream said it is alive
            lines.append(line)
    assert released.is_set()
    assert [line for line in lines if line][-1] == "data: [DONE]"

"""``ui_message_stream_app`` through httpx's ASGI transport: what its reconnect takes."""

from __future__ import annotations

import httpx2
import pytest

from tests.support.web_server import conversation, make_agent
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

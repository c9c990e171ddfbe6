"""Replies kept in the history as plain data send exactly what the SDK sends for its models."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pydantic
import pytest
from anthropic.types import Message, MessageParam
from anthropic.types.beta import BetaMessage

from toolrunner._core.messages import reply_param
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded" / "python-sdk" / "tool_runner"


def recorded_replies() -> list[dict[str, Any]]:
    replies: list[dict[str, Any]] = []
    for path in sorted(RECORDED.glob("*.json")):
        for exchange in json.loads(path.read_text()):
            body = exchange["response"]["body"]
            if exchange["response"]["status_code"] == 200 and isinstance(body, dict) and "content" in body:
                replies.append(body)  # pyright: ignore[reportUnknownArgumentType]
    return replies


def sent_messages(*histories: list[Any]) -> list[Any]:
    """The ``messages`` of one request per history, as the SDK serialized them."""
    fake = FakeMessagesAPI([text_reply("ok") for _ in histories], validate=False)
    with fake.client() as client:
        for history in histories:
            client.messages.create(model="claude-sonnet-4-6", max_tokens=10, messages=history)
    return [request.body["messages"] for request in fake.requests]


@pytest.mark.parametrize("kind", [Message, BetaMessage])
def test_recorded_replies_send_the_same_json(kind: type[Message] | type[BetaMessage]) -> None:
    replies = [kind.model_validate(body) for body in recorded_replies()]
    assert replies
    question = {"role": "user", "content": "Hi"}
    as_models = [question, *(reply.to_param() for reply in replies)]
    as_data = [question, *(reply_param(reply) for reply in replies)]
    models_json, data_json = sent_messages(as_models, as_data)
    assert json.dumps(models_json) == json.dumps(data_json)


async def test_a_streamed_reply_sends_the_same_json() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "x"}), text="Looking.")])
    async with (
        fake.async_client() as client,
        client.messages.stream(
            model="claude-sonnet-4-6", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        ) as stream,
    ):
        reply = await stream.get_final_message()  # ParsedTextBlock: parsed_output is not sent
    question = {"role": "user", "content": "Hi"}
    models_json, data_json = sent_messages([question, reply.to_param()], [question, reply_param(reply)])
    assert json.dumps(models_json) == json.dumps(data_json)


def test_a_parsed_reply_leaves_out_its_parsed_output() -> None:
    class Point(pydantic.BaseModel):
        x: int
        y: int

    fake = FakeMessagesAPI([text_reply('{"x": 1, "y": 2}')], validate=False)
    question: MessageParam = {"role": "user", "content": "Where?"}
    with fake.client() as client:
        reply = client.messages.parse(
            model="claude-sonnet-4-6", max_tokens=10, messages=[question], output_format=Point
        )
    block = reply.content[0]
    assert block.type == "text"
    assert block.parsed_output == Point(x=1, y=2)
    models_json, data_json = sent_messages([question, reply.to_param()], [question, reply_param(reply)])
    assert json.dumps(models_json) == json.dumps(data_json)

"""Streamed replies: the service's SSE order, and the same Message as without streaming."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from anthropic.types import RawMessageStreamEvent

from toolrunner.testing import (
    FakeMessagesAPI,
    ScriptedReply,
    _transport,
    message_reply,
    text_reply,
    tool_call,
    tool_reply,
)

USER: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
RECORDED = (
    Path(__file__).parent.parent / "fixtures" / "recorded" / "python-sdk" / "sse" / "tool_use_response.txt"
)

REPLIES: dict[str, ScriptedReply] = {
    "text": text_reply("Paris is sunny today, with a light breeze from the west."),
    "tools": tool_reply(
        tool_call("get_weather", {"city": "Paris", "units": "c", "days": [1, 2]}, id="toolu_a"),
        tool_call("get_time", {}, id="toolu_b"),
        text="Let me check the weather.",
    ),
    "thinking": message_reply(
        [
            {
                "type": "thinking",
                "thinking": "The user wants the weather in Paris.",
                "signature": "c2lnbmF0dXJl",
            },
            {"type": "redacted_thinking", "data": "b3BhcXVl"},
            {
                "type": "server_tool_use",
                "id": "srvtoolu_1",
                "name": "web_search",
                "input": {"query": "Paris"},
            },
            {"type": "text", "text": "It is sunny."},
        ],
        stop_reason="end_turn",
        usage={"input_tokens": 120, "output_tokens": 42, "cache_read_input_tokens": 7},
    ),
    "short": text_reply("k", stop_reason="stop_sequence"),
    "future": message_reply([{"type": "text", "text": "New."}], stop_reason="future_reason"),
}


def accumulate(events: list[RawMessageStreamEvent]) -> dict[str, Any]:
    """A Message as wire JSON, rebuilt from stream events independently of the SDK's helper."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for event in events:
        if event.type == "message_start":
            message = event.message.model_dump(exclude_none=True)
        elif event.type == "content_block_start":
            message["content"].append(event.content_block.model_dump(exclude_none=True))
        elif event.type == "content_block_delta":
            block = message["content"][event.index]
            delta = event.delta
            if delta.type == "text_delta":
                block["text"] += delta.text
            elif delta.type == "input_json_delta":
                partial[event.index] = partial.get(event.index, "") + delta.partial_json
            elif delta.type == "thinking_delta":
                block["thinking"] += delta.thinking
            elif delta.type == "signature_delta":
                block["signature"] = delta.signature
        elif event.type == "content_block_stop":
            if event.index in partial:
                message["content"][event.index]["input"] = json.loads(partial[event.index])
        elif event.type == "message_delta":
            message["stop_reason"] = event.delta.stop_reason
            if event.delta.stop_sequence is not None:
                message["stop_sequence"] = event.delta.stop_sequence
            message["usage"]["output_tokens"] = event.usage.output_tokens
    return message


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(REPLIES))
async def test_streams_accumulate_the_same_message_as_the_plain_reply(name: str) -> None:
    reply = REPLIES[name]
    plain_fake, helper_fake, raw_fake = (FakeMessagesAPI([reply]) for _ in range(3))
    async with plain_fake.async_client() as client:
        plain = await client.messages.create(model="m", max_tokens=100, messages=USER)
    async with (
        helper_fake.async_client() as client,
        client.messages.stream(model="m", max_tokens=100, messages=USER) as stream,
    ):
        helped = await stream.get_final_message()
    async with raw_fake.async_client() as client:
        events = [
            event
            async for event in await client.messages.create(
                model="m", max_tokens=100, messages=USER, stream=True
            )
        ]

    assert raw_fake.requests[0].stream
    expected = plain.model_dump(exclude_none=True)
    assert helped.model_dump(exclude_none=True) == expected
    assert accumulate(events) == expected


def test_the_sync_client_streams_too() -> None:
    fake = FakeMessagesAPI([REPLIES["tools"], REPLIES["tools"]])
    with fake.client() as client:
        plain = client.messages.create(model="m", max_tokens=100, messages=USER)
        with client.messages.stream(model="m", max_tokens=100, messages=USER) as stream:
            streamed = stream.get_final_message()
    assert streamed.model_dump(exclude_none=True, exclude={"id"}) == plain.model_dump(
        exclude_none=True, exclude={"id"}
    )


@pytest.mark.anyio
async def test_events_come_in_the_service_order_with_split_deltas() -> None:
    fake = FakeMessagesAPI([REPLIES["tools"]])
    async with fake.async_client() as client:
        stream = await client.messages.create(model="m", max_tokens=100, messages=USER, stream=True)
        events = [event async for event in stream]

    names = [event.type for event in events]
    assert names[:3] == ["message_start", "content_block_start", "content_block_delta"]  # the SDK drops pings
    assert names[-2:] == ["message_delta", "message_stop"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 3
    start = events[0]
    assert start.type == "message_start"
    assert start.message.content == []
    assert start.message.stop_reason is None
    text_deltas = [e for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"]
    json_deltas = [
        e for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"
    ]
    assert len(text_deltas) > 1
    assert len([e for e in json_deltas if e.index == 1]) > 2  # an empty first piece, then several


def test_the_event_order_matches_a_recorded_stream() -> None:
    def names(text: str) -> list[str]:
        found = [line.removeprefix("event: ") for line in text.splitlines() if line.startswith("event: ")]
        # Only the number of deltas per block differs.
        return [name for i, name in enumerate(found) if name != "content_block_delta" or found[i - 1] != name]

    fake = FakeMessagesAPI([tool_reply(tool_call("get_weather", {"location": "Paris"}), text="I'll check.")])
    body = {"model": "m", "max_tokens": 100, "messages": USER, "stream": True}
    with httpx2.Client(transport=fake.transport()) as http:
        response = http.post("https://api.anthropic.com/v1/messages", json=body)
    assert response.headers["content-type"].startswith("text/event-stream")
    assert names(response.text) == names(RECORDED.read_text())


@pytest.mark.anyio
async def test_delay_paces_the_events(monkeypatch: pytest.MonkeyPatch) -> None:
    # The pauses the fake takes, recorded rather than timed (no clock in a test's assertion).
    slept: list[float] = []
    real_sleep = anyio.sleep

    async def sleep(seconds: float) -> None:
        slept.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(_transport.anyio, "sleep", sleep)
    fake = FakeMessagesAPI([text_reply("one two three", delay=0.02)])
    async with fake.async_client() as client:
        stream = await client.messages.create(model="m", max_tokens=100, messages=USER, stream=True)
        events = [event async for event in stream]
    # 9 events (the SDK drops the ping, so 8 arrive): a pause of 0.02 s before each but the first.
    assert len(events) == 8
    assert slept == [0.02] * 8


def test_a_paced_plain_reply_takes_as_long_as_its_stream(monkeypatch: pytest.MonkeyPatch) -> None:
    slept: list[float] = []
    monkeypatch.setattr(_transport.time, "sleep", slept.append)
    fake = FakeMessagesAPI([text_reply("one two three", delay=0.02)])
    with fake.client() as client:
        client.messages.create(model="m", max_tokens=100, messages=USER)
    assert slept == [pytest.approx(9 * 0.02)]  # the stream's pauses, taken at once

"""Faults on demand: HTTP errors, dropped connections, cut streams, replies cut by max_tokens."""

from __future__ import annotations

from typing import Any, cast

import anthropic
import httpx2
import pytest
from anthropic.types import TextBlock, ToolUseBlock

from toolrunner.testing import (
    FakeMessagesAPI,
    disconnect,
    fault,
    stream_cut,
    text_reply,
    tool_call,
    tool_reply,
    truncated_tool_reply,
)

USER: list[Any] = [{"role": "user", "content": "Write the report."}]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("status", "error", "error_type"),
    [
        (429, anthropic.RateLimitError, "rate_limit_error"),
        (500, anthropic.InternalServerError, "api_error"),
        (529, anthropic.OverloadedError, "overloaded_error"),
        (400, anthropic.BadRequestError, "invalid_request_error"),
    ],
)
async def test_faults_raise_the_sdk_error_with_the_service_body(
    status: int, error: type[anthropic.APIStatusError], error_type: str
) -> None:
    fake = FakeMessagesAPI([fault(status), text_reply("unused")])
    async with fake.async_client() as client:
        with pytest.raises(error) as caught:
            await client.messages.create(model="m", max_tokens=10, messages=USER)
    assert caught.value.status_code == status
    body = cast(dict[str, Any], caught.value.body)
    assert body["type"] == "error"
    assert body["error"]["type"] == error_type
    assert body["error"]["message"]
    assert len(fake.requests) == 1
    assert len(fake.unused) == 1


@pytest.mark.anyio
async def test_retry_after_is_sent_and_a_retry_consumes_the_next_entry() -> None:
    fake = FakeMessagesAPI([fault(429, retry_after=0.01), text_reply("after the retry")])
    async with fake.async_client(max_retries=1) as client:
        message = await client.messages.create(model="m", max_tokens=10, messages=USER)
    assert message.content == [TextBlock(type="text", text="after the retry")]
    assert len(fake.requests) == 2
    assert fake.requests[1].headers["x-stainless-retry-count"] == "1"
    fake.assert_complete()


def test_the_retry_after_header_reaches_the_sdk_error() -> None:
    fake = FakeMessagesAPI([fault(429, retry_after=1.0, message="Slow down.")])
    with fake.client() as client, pytest.raises(anthropic.RateLimitError, match=r"Slow down\.") as caught:
        client.messages.create(model="m", max_tokens=10, messages=USER)
    assert caught.value.response.headers["retry-after"] == "1"


def test_fault_needs_an_error_status() -> None:
    with pytest.raises(ValueError, match=r"needs an error status from 400 to 599, not 200"):
        fault(200)


@pytest.mark.anyio
async def test_a_disconnect_raises_a_connection_error() -> None:
    fake = FakeMessagesAPI([disconnect()])
    async with fake.async_client() as client:
        with pytest.raises(anthropic.APIConnectionError) as caught:
            await client.messages.create(model="m", max_tokens=10, messages=USER)
    assert isinstance(caught.value.__cause__, httpx2.RemoteProtocolError)
    assert len(fake.requests) == 1


def test_the_sdk_retries_a_disconnect_on_the_next_entry() -> None:
    fake = FakeMessagesAPI([disconnect(), fault(500, retry_after=0.001), text_reply("third time lucky")])
    with fake.client(max_retries=2) as client:
        message = client.messages.create(model="m", max_tokens=10, messages=USER)
    assert message.content == [TextBlock(type="text", text="third time lucky")]
    assert len(fake.requests) == 3


@pytest.mark.anyio
async def test_a_cut_stream_raises_a_read_error_after_the_given_events() -> None:
    fake = FakeMessagesAPI([stream_cut(text_reply("This will never arrive whole."), after_events=4)])
    seen: list[str] = []
    async with fake.async_client() as client:
        stream = await client.messages.create(model="m", max_tokens=10, messages=USER, stream=True)
        with pytest.raises(httpx2.ReadError, match=r"cut the answer after 4 events"):
            async for event in stream:
                seen.append(event.type)
    # message_start, content_block_start, ping (dropped by the SDK), one delta.
    assert seen == ["message_start", "content_block_start", "content_block_delta"]


def test_a_cut_plain_answer_raises_a_read_error() -> None:
    fake = FakeMessagesAPI([stream_cut(after_events=0)])
    with fake.client() as client, pytest.raises(anthropic.APIConnectionError) as caught:
        client.messages.create(model="m", max_tokens=10, messages=USER)
    assert isinstance(caught.value.__cause__, httpx2.ReadError)


def test_a_truncated_tool_reply_loses_the_end_of_the_last_input() -> None:
    fake = FakeMessagesAPI(
        [
            truncated_tool_reply(
                tool_call("lookup", {"q": "x"}, id="toolu_whole"),
                tool_call("make_file", {"filename": "taxes.txt", "lines": ["a", "b"], "mode": "w"}),
                text="Writing it.",
            )
        ]
    )
    with fake.client() as client:
        message = client.messages.create(model="m", max_tokens=10, messages=USER)
    assert message.stop_reason == "max_tokens"
    text, whole, cut = message.content
    assert isinstance(text, TextBlock)
    assert isinstance(whole, ToolUseBlock)
    assert whole.input == {"q": "x"}
    assert isinstance(cut, ToolUseBlock)
    assert cut.input == {"filename": "taxes.txt"}


@pytest.mark.anyio
@pytest.mark.parametrize(
    "tool_input",
    [
        {"filename": "taxes.txt", "lines": ["a", "b"], "mode": "w"},
        {"body": "a long text"},
        {"count": 3, "n": 4},
    ],
)
async def test_a_streamed_truncated_tool_reply_stops_mid_json(tool_input: dict[str, Any]) -> None:
    reply = truncated_tool_reply(tool_call("make_file", tool_input))
    plain_fake, stream_fake = FakeMessagesAPI([reply]), FakeMessagesAPI([reply])
    async with plain_fake.async_client() as client:
        plain = await client.messages.create(model="m", max_tokens=10, messages=USER)
    async with stream_fake.async_client() as client:
        raw = await client.messages.with_raw_response.create(
            model="m", max_tokens=10, messages=USER, stream=True
        )
        text = (await raw.http_response.aread()).decode()
    async with (
        FakeMessagesAPI([reply]).async_client() as client,
        client.messages.stream(model="m", max_tokens=10, messages=USER) as stream,
    ):
        streamed = await stream.get_final_message()

    assert "content_block_stop" not in text  # the cut block is left open, as the service does
    assert '"stop_reason":"max_tokens"' in text
    assert streamed.stop_reason == "max_tokens"
    assert streamed.content == plain.content


@pytest.mark.anyio
async def test_faults_and_replies_mix_in_one_script() -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("t", {})), fault(529), text_reply("done")],
        validate=False,
    )
    async with fake.async_client() as client:
        await client.messages.create(model="m", max_tokens=10, messages=USER)
        with pytest.raises(anthropic.OverloadedError):
            await client.messages.create(model="m", max_tokens=10, messages=USER)
        await client.messages.create(model="m", max_tokens=10, messages=USER)
    fake.assert_complete()

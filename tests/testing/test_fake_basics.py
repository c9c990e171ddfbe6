"""Scripted replies, recording, script exhaustion and responders, through the real SDK."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic.types import Message, TextBlock, ToolUseBlock

from tests.support.helpers import MODEL
from toolrunner import AwaitingApprovalError, MemoryCheckpointer, ToolRunner, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    message_reply,
    text_reply,
    tool_call,
    tool_reply,
)

USER: list[Any] = [{"role": "user", "content": "Weather in Paris and Berlin?"}]
TOOLS: list[Any] = [
    {
        "name": "get_weather",
        "description": "Weather for a city.",
        "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
    }
]


def weather_script() -> list[ScriptedReply]:
    return [
        tool_reply(
            tool_call("get_weather", {"city": "Paris"}, id="toolu_paris"),
            tool_call("get_weather", {"city": "Berlin"}),
            text="Let me check.",
        ),
        text_reply("Paris is sunny, Berlin is cloudy."),
    ]


def answer(message: Message, *results: str) -> list[Any]:
    """The history after `message`, answering its tool calls with `results` in order."""
    calls = [block for block in message.content if isinstance(block, ToolUseBlock)]
    return [
        *USER,
        {"role": "assistant", "content": [block.model_dump(exclude_none=True) for block in message.content]},
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": call.id, "content": result}
                for call, result in zip(calls, results, strict=True)
            ],
        },
    ]


@pytest.mark.anyio
async def test_scripted_tool_and_text_replies_round_trip_through_the_sdk() -> None:
    fake = FakeMessagesAPI(weather_script())
    async with fake.async_client() as client:
        first = await client.messages.create(model="claude-test", max_tokens=100, messages=USER, tools=TOOLS)
        second = await client.messages.create(
            model="claude-test", max_tokens=100, messages=answer(first, "sunny", "cloudy"), tools=TOOLS
        )

    assert isinstance(first, Message)
    assert first.id == "msg_fake_0001"
    assert first.model == "claude-test"
    assert first.stop_reason == "tool_use"
    text, paris, berlin = first.content
    assert isinstance(text, TextBlock)
    assert text.text == "Let me check."
    assert isinstance(paris, ToolUseBlock)
    assert (paris.id, paris.input) == ("toolu_paris", {"city": "Paris"})
    assert isinstance(berlin, ToolUseBlock)
    assert berlin.id == "toolu_fake_0001"
    assert berlin.name == "get_weather"
    assert second.stop_reason == "end_turn"
    assert second.content == [TextBlock(type="text", text="Paris is sunny, Berlin is cloudy.")]
    assert second.usage.input_tokens > 0
    assert second.usage.output_tokens > 0
    fake.assert_complete()


def test_the_sync_client_shares_the_script_and_the_records() -> None:
    fake = FakeMessagesAPI([text_reply("one"), text_reply("two")])
    with fake.client() as client:
        first = client.messages.create(model="m", max_tokens=10, messages=USER)
    with fake.client() as client:
        second = client.messages.create(model="m", max_tokens=10, messages=USER)
    assert [first.content[0], second.content[0]] == [
        TextBlock(type="text", text="one"),
        TextBlock(type="text", text="two"),
    ]
    assert [request.index for request in fake.requests] == [0, 1]


@pytest.mark.anyio
async def test_requests_are_recorded_in_order_with_the_parsed_body() -> None:
    fake = FakeMessagesAPI(weather_script())
    async with fake.async_client() as client:
        first = await client.messages.create(model="m", max_tokens=100, messages=USER, tools=TOOLS)
        await client.messages.create(model="m", max_tokens=100, messages=answer(first, "a", "b"), tools=TOOLS)

    first_request, second_request = fake.requests
    assert (first_request.index, first_request.method) == (0, "POST")
    assert first_request.url == "https://api.anthropic.com/v1/messages"
    assert first_request.headers["content-type"] == "application/json"
    assert first_request.body["model"] == "m"
    assert first_request.body["max_tokens"] == 100
    assert first_request.messages == USER
    assert first_request.tools == TOOLS
    assert not first_request.stream
    assert second_request.index == 1
    assert [block["tool_use_id"] for block in second_request.messages[2]["content"]] == [
        "toolu_paris",
        "toolu_fake_0001",
    ]


@pytest.mark.anyio
async def test_auto_tool_ids_are_unique_across_replies() -> None:
    call = tool_call("get_weather", {"city": "Paris"})
    fake = FakeMessagesAPI([tool_reply(call, call), tool_reply(call)])
    async with fake.async_client() as client:
        first = await client.messages.create(model="m", max_tokens=10, messages=USER)
        second = await client.messages.create(model="m", max_tokens=10, messages=answer(first, "a", "b"))
    ids = [
        block.id
        for message in (first, second)
        for block in message.content
        if isinstance(block, ToolUseBlock)
    ]
    assert ids == ["toolu_fake_0001", "toolu_fake_0002", "toolu_fake_0003"]


@pytest.mark.anyio
async def test_auto_tool_ids_skip_the_ids_the_conversation_holds() -> None:
    """A new fake answering a conversation another one began (a run resumed in a test) gives none
    of its ids again, nor one the reply itself names."""
    earlier: list[Any] = [
        *USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_fake_0001", "name": "get_weather", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_fake_0001", "content": "sun"}],
        },
    ]
    call = tool_call("get_weather", {"city": "Rome"})
    fake = FakeMessagesAPI(
        [tool_reply(call, tool_call("get_weather", {"city": "Oslo"}, id="toolu_fake_0003"), call)]
    )
    async with fake.async_client() as client:
        reply = await client.messages.create(model="m", max_tokens=10, messages=earlier, tools=TOOLS)
    ids = [block.id for block in reply.content if isinstance(block, ToolUseBlock)]
    assert ids == ["toolu_fake_0002", "toolu_fake_0003", "toolu_fake_0004"]


@pytest.mark.anyio
async def test_a_run_resumed_with_a_new_fake_gets_new_tool_ids_and_runs_the_new_call() -> None:
    paid: list[int] = []

    @tool(requires_approval=True)
    async def pay(amount: int) -> str:
        """Pay an amount."""
        paid.append(amount)
        return f"paid {amount}"

    store = MemoryCheckpointer()
    first = FakeMessagesAPI([tool_reply(tool_call("pay", {"amount": 1}))])
    runner = ToolRunner(
        first.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=USER,
        tools=[pay],
        checkpointer=store,
        run_id="r",
    )
    with pytest.raises(AwaitingApprovalError):
        await runner.until_done()
    await store.approve_call("r", "toolu_fake_0001")
    second = FakeMessagesAPI([tool_reply(tool_call("pay", {"amount": 2})), text_reply("Paid twice.")])
    resumed = await ToolRunner.resume(second.async_client(), checkpointer=store, run_id="r", tools=[pay])
    with pytest.raises(AwaitingApprovalError) as waiting:
        await resumed.until_done()
    assert [call.id for call in waiting.value.calls] == ["toolu_fake_0002"]  # not the first part's id again
    resumed.approve("toolu_fake_0002")
    await resumed.until_done()
    assert paid == [1, 2]


@pytest.mark.anyio
async def test_message_reply_passes_any_block_and_any_stop_reason() -> None:
    content = [
        {"type": "thinking", "thinking": "Hmm.", "signature": "sig"},
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}},
        {"type": "future_block", "payload": 1},
    ]
    fake = FakeMessagesAPI(
        [
            message_reply(
                content,
                stop_reason="future_reason",
                container={"id": "c1", "expires_at": "2030-01-01T00:00:00Z"},
            )
        ]
    )
    async with fake.async_client() as client:
        message = await client.messages.create(model="m", max_tokens=10, messages=USER)
    # The SDK parses unknown literals leniently: the values arrive as they were sent.
    stop_reason: str | None = message.stop_reason
    kinds: list[str] = [block.type for block in message.content]
    assert stop_reason == "future_reason"
    assert kinds == ["thinking", "server_tool_use", "future_block"]
    assert message.container is not None
    assert message.container.id == "c1"


@pytest.mark.anyio
async def test_usage_overrides_the_defaults() -> None:
    usage = {
        "input_tokens": 7,
        "output_tokens": 3,
        "cache_read_input_tokens": 100,
        "cache_creation_input_tokens": 5,
    }
    fake = FakeMessagesAPI([text_reply("hi", usage=usage)])
    async with fake.async_client() as client:
        message = await client.messages.create(model="m", max_tokens=10, messages=USER)
    assert message.usage.model_dump(include=set(usage)) == usage


@pytest.mark.anyio
async def test_an_exhausted_script_raises_naming_the_request_number() -> None:
    fake = FakeMessagesAPI([text_reply("one"), text_reply("two")])
    async with fake.async_client() as client:
        for _ in range(2):
            await client.messages.create(model="m", max_tokens=10, messages=USER)
        with pytest.raises(
            anthropic.APIStatusError, match=r"request #3 arrived but the script has only 2 replies"
        ):
            await client.messages.create(model="m", max_tokens=10, messages=USER)
    assert len(fake.requests) == 3


@pytest.mark.anyio
async def test_an_exhausted_script_is_not_retried_by_the_sdk() -> None:
    fake = FakeMessagesAPI()
    async with fake.async_client(max_retries=2) as client:
        with pytest.raises(anthropic.InternalServerError, match=r"request #1 arrived"):
            await client.messages.create(model="m", max_tokens=10, messages=USER)
    assert len(fake.requests) == 1


def test_assert_complete_names_the_unused_replies() -> None:
    fake = FakeMessagesAPI([text_reply("used"), text_reply("never sent")])
    with fake.client() as client:
        client.messages.create(model="m", max_tokens=10, messages=USER)
    with pytest.raises(AssertionError, match=r"served 1 of 2 script entries.*never sent"):
        fake.assert_complete()
    fake.add()
    assert len(fake.unused) == 1


def test_entries_added_later_answer_later_requests() -> None:
    fake = FakeMessagesAPI()
    fake.add(text_reply("a"))
    fake.script.extend([text_reply("b")])
    with fake.client() as client:
        texts = [client.messages.create(model="m", max_tokens=10, messages=USER).content[0] for _ in range(2)]
    assert [block.text for block in texts if isinstance(block, TextBlock)] == ["a", "b"]
    fake.assert_complete()


def test_a_sync_responder_answers_with_the_recorded_request() -> None:
    seen: list[RecordedRequest] = []

    def respond(request: RecordedRequest) -> ScriptedReply:
        seen.append(request)
        return text_reply(f"You said {request.messages[-1]['content']!r} to {request.body['model']}.")

    fake = FakeMessagesAPI(responder=respond)
    with fake.client() as client:
        message = client.messages.create(
            model="m", max_tokens=10, messages=[{"role": "user", "content": "hi"}]
        )
    assert message.content == [TextBlock(type="text", text="You said 'hi' to m.")]
    assert seen == fake.requests


@pytest.mark.anyio
async def test_an_async_responder_is_awaited() -> None:
    async def respond(request: RecordedRequest) -> ScriptedReply:
        return text_reply(f"request {request.index}")

    fake = FakeMessagesAPI([text_reply("scripted first")], responder=respond)
    async with fake.async_client() as client:
        first = await client.messages.create(model="m", max_tokens=10, messages=USER)
        second = await client.messages.create(model="m", max_tokens=10, messages=USER)
    assert [first.content, second.content] == [
        [TextBlock(type="text", text="scripted first")],
        [TextBlock(type="text", text="request 1")],
    ]


def test_the_sync_client_refuses_an_async_responder() -> None:
    async def respond(request: RecordedRequest) -> ScriptedReply:
        return text_reply("never")

    fake = FakeMessagesAPI(responder=respond)
    with fake.client() as client, pytest.raises(anthropic.APIConnectionError) as caught:
        client.messages.create(model="m", max_tokens=10, messages=USER)
    # The SDK wraps what the transport raises; the cause says what to do.
    assert isinstance(caught.value.__cause__, TypeError)
    assert "is async, so the sync client cannot await it" in str(caught.value.__cause__)


@pytest.mark.anyio
async def test_unknown_routes_answer_404_in_the_service_shape() -> None:
    fake = FakeMessagesAPI([text_reply("unused")])
    async with fake.async_client() as client:
        with pytest.raises(
            anthropic.NotFoundError,
            match=r"serves only POST /v1/messages and /v1/messages/batches, not GET /v1/models",
        ) as caught:
            await client.models.list()
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "not_found_error",
            "message": "FakeMessagesAPI serves only POST /v1/messages and /v1/messages/batches, not GET /v1/models.",
        },
    }
    assert len(fake.unused) == 1


@pytest.mark.anyio
async def test_the_beta_route_is_served_too() -> None:
    fake = FakeMessagesAPI([text_reply("beta"), text_reply("raw")])
    async with fake.async_client() as client:
        beta = await client.beta.messages.create(model="m", max_tokens=10, messages=USER)
        raw = await client.post(
            "/v1/messages?beta=true", body={"model": "m", "max_tokens": 10, "messages": USER}, cast_to=Message
        )
    assert fake.requests[1].url.endswith("/v1/messages?beta=true")
    assert [beta.content[0].type, raw.content[0].type] == ["text", "text"]


@pytest.mark.anyio
async def test_automatic_mode_calls_each_tool_then_sums_up() -> None:
    tools: list[Any] = [
        *TOOLS,
        {
            "name": "convert",
            "input_schema": {
                "type": "object",
                "properties": {
                    "amount": {"type": "number", "minimum": 5},
                    "unit": {"type": "string", "enum": ["c", "f"]},
                    "round": {"type": "boolean", "default": False},
                    "tags": {"type": "array", "items": {"type": "string"}},
                    "where": {"$ref": "#/$defs/Place"},
                    "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
                },
                "required": ["amount", "unit", "tags", "where"],
                "$defs": {
                    "Place": {
                        "type": "object",
                        "properties": {"lat": {"type": "integer"}},
                        "required": ["lat"],
                    }
                },
            },
        },
        {"type": "web_search_20250305", "name": "web_search"},
    ]
    fake = FakeMessagesAPI.automatic()
    async with fake.async_client() as client:
        first = await client.messages.create(model="m", max_tokens=100, messages=USER, tools=tools)
        calls = [block for block in first.content if isinstance(block, ToolUseBlock)]
        second = await client.messages.create(
            model="m", max_tokens=100, messages=answer(first, "sunny", "41 F"), tools=tools
        )
        no_tools = await client.messages.create(model="m", max_tokens=100, messages=USER)

    assert first.stop_reason == "tool_use"
    assert [(call.name, call.input) for call in calls] == [
        ("get_weather", {"city": "example"}),
        (
            "convert",
            {
                "amount": 5.0,
                "unit": "c",
                "round": False,
                "tags": ["example"],
                "where": {"lat": 1},
                "note": None,
            },
        ),
    ]
    assert second.stop_reason == "end_turn"
    assert second.content == [TextBlock(type="text", text="get_weather: sunny\nconvert: 41 F")]
    assert no_tools.content[0].type == "text"


def test_automatic_mode_follows_the_tool_changes_of_system_messages() -> None:
    def tool(name: str, **fields: Any) -> dict[str, Any]:
        return {"name": name, "input_schema": {"type": "object", "properties": {}}, **fields}

    def change(kind: str, name: str) -> dict[str, Any]:
        return {
            "role": "system",
            "content": [{"type": kind, "tool": {"type": "tool_reference", "name": name}}],
        }

    tools = [tool("get_weather"), tool("get_time"), tool("get_news", defer_loading=True)]
    fake = FakeMessagesAPI.automatic()
    with fake.client() as client:

        def ask(*messages: Any) -> Message:
            body = {"model": "m", "max_tokens": 100, "messages": [*USER, *messages], "tools": tools}
            return client.post("/v1/messages", body=body, cast_to=Message)

        def called(message: Message) -> list[str]:
            return [block.name for block in message.content if isinstance(block, ToolUseBlock)]

        # A deferred tool is not offered, a removed one is withdrawn.
        assert called(ask()) == ["get_weather", "get_time"]
        first = ask(change("tool_removal", "get_time"))
        assert called(first) == ["get_weather"]
        # With the results back, a tool added since is called; without one, the results are summed up.
        call = first.content[0]
        assert isinstance(call, ToolUseBlock)
        history = [
            change("tool_removal", "get_time"),
            {"role": "assistant", "content": [call.model_dump()]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "sunny"}],
            },
        ]
        assert called(ask(*history, change("tool_addition", "get_news"))) == ["get_news"]
        summed_up = ask(*history, {"role": "system", "content": "Be brief."})
    assert summed_up.content == [TextBlock(type="text", text="get_weather: sunny")]


def test_a_closed_fake_refuses_later_requests() -> None:
    fake = FakeMessagesAPI([text_reply("unused")])
    fake.close()
    with (
        fake.client(max_retries=2) as client,
        pytest.raises(anthropic.InternalServerError, match=r"request #1 arrived after close\(\)"),
    ):
        client.messages.create(model="m", max_tokens=10, messages=USER)
    assert len(fake.requests) == 1

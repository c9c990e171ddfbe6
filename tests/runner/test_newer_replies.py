"""What a newer service (or a newer SDK) may send that this version does not know passes through.

A reply may hold a content block of a new type, new fields on known blocks, on its ``usage`` and on
the message itself, and a new stop reason; a stream may hold new events and new delta types. None
of them stops a run (docs/reliability.md, "Faults"): the history keeps the reply's blocks as they
came and sends them back so, the reply's tool calls run once, a new stop reason ends the loop with
the reply kept, the usage counts what they know, and a new stream event reaches whoever reads the
stream. Every path is covered: whole replies and streams (``stream=True``), without a checkpointer
and with ``MemoryCheckpointer`` and ``SQLiteCheckpointer`` (stopped after the first reply and
resumed; the finished run loads again), on asyncio and trio.

The fake serves the replies; a transport between it and the client adds what ``message_reply``
cannot script (a field of the message, events of a stream) to the fake's answers.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Literal, cast

import anthropic
import httpx2
import pytest

from tests.support.counted_tools import look_plain as look, runs
from tests.support.helpers import MODEL, USER, plain, roles
from toolrunner import Checkpointer, MemoryCheckpointer, SQLiteCheckpointer, ToolRunner
from toolrunner.testing import FakeMessagesAPI, ScriptedReply, message_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

# -- what the newer service sends ------------------------------------------------------------------

HOLOGRAM = {"type": "x_hologram", "frames": [1, 2, 3], "meta": {"fps": 24}}
FIRST_CONTENT: list[dict[str, Any]] = [
    HOLOGRAM,
    {"type": "text", "text": "Looking it up.", "x_tone": "calm"},
    {"type": "tool_use", "id": "toolu_a", "name": "look", "input": {"q": "a"}, "x_origin": "future"},
]
NEW_USAGE = {"x_future_tokens": 7, "x_breakdown": {"kind": "new", "tokens": 3}}
NEW_STOP = "x_teleported"


def script() -> list[ScriptedReply]:
    return [
        message_reply(FIRST_CONTENT, stop_reason="tool_use", usage=NEW_USAGE),
        message_reply([{"type": "text", "text": "Found a."}], stop_reason=NEW_STOP, usage=NEW_USAGE),
    ]


def newer_answer(body: bytes, content_type: str) -> bytes:
    """The fake's answer with what a newer service adds: a field of the message; in a stream, also
    an event of a new type after message_start and a delta of a new type for the new block."""
    if content_type.startswith("application/json"):
        message = json.loads(body)
        if message.get("type") == "message":
            message["x_future_field"] = {"since": "2027"}
        return json.dumps(message).encode()
    events: list[bytes] = []
    for event in body.split(b"\n\n"):
        data = next((line[6:] for line in event.split(b"\n") if line.startswith(b"data: ")), None)
        parsed: dict[str, Any] = json.loads(data) if data else {}
        if parsed.get("type") == "message_start":
            parsed["message"]["x_future_field"] = {"since": "2027"}
            event = b"event: message_start\ndata: " + json.dumps(parsed).encode()
        events.append(event)
        if parsed.get("type") == "message_start":
            events.append(sse("x_future_event", {"type": "x_future_event", "detail": {"n": 1}}))
        if (
            parsed.get("type") == "content_block_start"
            and parsed["content_block"]["type"] == HOLOGRAM["type"]
        ):
            delta = {"type": "x_hologram_delta", "frames": [4]}
            events.append(sse("content_block_delta", {"type": "content_block_delta", "index": parsed["index"], "delta": delta}))  # fmt: skip
    return b"\n\n".join(events)


def sse(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}".encode()


class NewerService(httpx2.AsyncBaseTransport):
    """The fake's transport, with each answer passed through ``newer_answer``."""

    def __init__(self, fake: FakeMessagesAPI) -> None:
        self.inner = fake.async_transport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        response = await self.inner.handle_async_request(request)
        body = await response.aread()
        await response.aclose()
        if response.status_code == 200:
            body = newer_answer(body, response.headers.get("content-type", ""))
        return httpx2.Response(response.status_code, headers=response.headers, content=body)

    async def aclose(self) -> None:
        await self.inner.aclose()


@asynccontextmanager
async def newer_client(fake: FakeMessagesAPI) -> AsyncGenerator[anthropic.AsyncAnthropic]:
    async with anthropic.AsyncAnthropic(
        api_key="sk-ant-fake-key",
        base_url="https://api.anthropic.com",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=NewerService(fake)),
    ) as client:
        yield client


# -- one run, taken whole or stopped after its first reply and resumed ----------------------------

Store = Literal["none", "memory", "sqlite"]


def make_store(kind: Store, tmp_path: Path) -> Checkpointer | None:
    if kind == "memory":
        return MemoryCheckpointer()
    if kind == "sqlite":
        return SQLiteCheckpointer(tmp_path / "runs.db")
    return None


async def read(item: Any, stream: bool, seen: list[str]) -> Any:
    """The reply the loop body got: a message, or a stream whose events it reads (kept in ``seen``)."""
    if not stream:
        return item
    async for event in item:
        seen.append(event.type)
    return await item.get_final_message()


def expected_history() -> list[Any]:
    return [
        USER,
        {"role": "assistant", "content": FIRST_CONTENT},
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "found a"}],
        },
        {"role": "assistant", "content": [{"type": "text", "text": "Found a."}]},
    ]


@pytest.mark.parametrize("stream", [False, True], ids=["reply", "stream"])
@pytest.mark.parametrize("store_kind", ["none", "memory", "sqlite"])
async def test_what_a_newer_service_adds_passes_through_every_path(
    stream: bool, store_kind: Store, tmp_path: Path
) -> None:
    store = make_store(store_kind, tmp_path)
    options: dict[str, Any] = {} if store is None else {"checkpointer": store, "run_id": "r"}
    seen: list[str] = []
    replies: list[Any] = []
    fake = FakeMessagesAPI(script())
    async with newer_client(fake) as client:
        runner = ToolRunner(
            client, model=MODEL, max_tokens=64, messages=[USER], tools=[look], stream=stream, **options
        )
        async for item in runner:
            replies.append(await read(item, stream, seen))
            if store is not None:
                if stream:  # a reply is saved once the runner takes it; before, resuming asks again
                    await runner.generate_tool_response()  # the call runs, and is journaled
                break  # the process stops here, the runner left as it is; the run goes on from the store
        if store is not None:
            # From a dict of Any, checkers cannot tell the overload (it may hold output_format).
            resumed = cast(
                "ToolRunner[Any]", await ToolRunner.resume(client, stream=stream, tools=[look], **options)
            )
            async with resumed:
                async for item in resumed:
                    replies.append(await read(item, stream, seen))
            runner = resumed
    fake.assert_complete()

    if store is not None and not stream:
        # The reply was saved before the body had it (RECEIVED): the resumed run hands it over again,
        # loaded from the store, with what this SDK does not know kept.
        again = replies.pop(1)
        assert plain(again.content) == plain(replies[0].content)
        assert again.usage.x_future_tokens == 7
    first, final = replies
    assert [block.type for block in first.content] == ["x_hologram", "text", "tool_use"]
    assert first.usage.x_future_tokens == 7  # kept on the reply, as the SDK keeps it
    assert first.x_future_field == {"since": "2027"}
    assert final.stop_reason == NEW_STOP
    assert runner.finished
    assert runner.end_reason == "model"
    assert runs == {"a": 1}
    assert (
        fake.requests[1].messages == expected_history()[:3]
    )  # the new block and fields sent back as they came
    assert plain(runner.messages) == expected_history()
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]
    usage = runner.usage
    assert (usage.total.input_tokens, usage.total.output_tokens) == (20, 10)  # what it knows, counted
    if stream:
        assert seen.count("x_future_event") == 2  # one per stream, handed to the reader
        assert "text" in seen  # the SDK's own events still come
    if store is not None:
        saved = await store.load("r")
        assert saved is not None
        assert saved.state.finished
        assert saved.state.reply is not None
        assert saved.state.reply.stop_reason == NEW_STOP
        assert plain(list(saved.state.messages)) == expected_history()
    if isinstance(store, SQLiteCheckpointer):
        store.close()


@pytest.mark.parametrize("stream", [False, True], ids=["reply", "stream"])
async def test_a_new_stop_reason_on_a_reply_with_tool_calls_runs_none_of_them(stream: bool) -> None:
    """A stop reason this version does not know ends the loop, even when the reply calls tools: the
    runner cannot tell whether the service wants them answered (docs/lifecycle.md)."""
    fake = FakeMessagesAPI([message_reply(FIRST_CONTENT, stop_reason=NEW_STOP, usage=NEW_USAGE)])
    seen: list[str] = []
    async with newer_client(fake) as client:
        runner = ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[look], stream=stream)
        async with runner:
            replies = [await read(item, stream, seen) async for item in runner]
    assert [reply.stop_reason for reply in replies] == [NEW_STOP]
    assert runs == {}
    assert runner.finished
    assert plain(runner.messages) == expected_history()[:2]
    assert await runner.generate_tool_response() is None

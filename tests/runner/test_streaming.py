"""stream=True: the SDK's own stream per request, the same lifecycle, eager tools, stream faults.

Eagerness is shown by order of events, never by timings: the fake paces its SSE events with a
tiny delay only so that other tasks get to run between them.
"""

from __future__ import annotations

import json
from collections import Counter
from contextlib import aclosing
from pathlib import Path
from typing import Any

import anthropic
import anyio
import httpx2
import pytest
from anthropic.lib.streaming import AsyncMessageStream

from tests.support.helpers import (
    MODEL,
    USER,
    make_runner,
    make_sync_runner,
    plain,
    replays_recorded_models,
    results_of,
    roles,
    sent_messages,
)
from toolrunner import ToolRunner, ToolRunnerError, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    stream_cut,
    text_reply,
    tool_call,
    tool_reply,
    truncated_tool_reply,
)

pytestmark = pytest.mark.anyio

PACE = 0.002  # seconds between SSE events: a checkpoint, not a timing
GUARD = 10

runs: Counter[str] = Counter()
log: list[str] = []


@tool
async def get_weather(city: str) -> str:
    """Get the weather."""
    runs[city] += 1
    log.append(f"start {city}")
    return f"{city}: sunny"


@pytest.fixture(autouse=True)
def _reset() -> None:
    runs.clear()
    log.clear()


def script(pace: float = 0.0) -> list[Any]:
    return [
        tool_reply(
            tool_call("get_weather", {"city": "Paris"}, id="toolu_paris"),
            tool_call("get_weather", {"city": "Berlin"}, id="toolu_berlin"),
            text="Checking both.",
            delay=pace,
        ),
        text_reply("Sunny in both.", delay=pace),
    ]


def streaming(fake: FakeMessagesAPI, **options: Any) -> ToolRunner[Any]:
    return make_runner(fake, get_weather, stream=True, **options)


async def test_yields_the_sdks_stream_and_follows_the_same_lifecycle() -> None:
    fake = FakeMessagesAPI(script())
    texts: list[str] = []
    runner = streaming(fake)
    async for stream in runner:
        assert isinstance(stream, AsyncMessageStream)
        texts.append("".join([piece async for piece in stream.text_stream]))
    assert texts == ["Checking both.", "Sunny in both."]
    assert runs == {"Paris": 1, "Berlin": 1}
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]
    assert runner.last_message is not None
    assert runner.last_message.content[0].type == "text"

    plain_fake = FakeMessagesAPI(script())
    await ToolRunner(
        plain_fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[get_weather]
    ).until_done()
    assert sent_messages(fake) == sent_messages(plain_fake)  # the same requests as without streaming


async def test_a_stream_the_body_does_not_read_is_read_by_the_runner() -> None:
    fake = FakeMessagesAPI(script())
    runner = streaming(fake)
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert runs == {"Paris": 1, "Berlin": 1}
    assert fake.requests[0].body["stream"] is True


async def test_generate_tool_response_reads_the_rest_of_the_stream() -> None:
    fake = FakeMessagesAPI(script())
    runner = streaming(fake)
    async for _ in runner:
        response = await runner.generate_tool_response()
        if response is not None:
            assert [r[0] for r in results_of(response)] == ["toolu_paris", "toolu_berlin"]
    assert runs == {"Paris": 1, "Berlin": 1}


async def test_eager_tools_start_while_the_reply_still_streams() -> None:
    fake = FakeMessagesAPI(script(pace=PACE))
    async with streaming(fake, run_tools_eagerly=True) as runner:
        async for stream in runner:
            async for event in stream:
                if event.type == "message_stop":
                    log.append("message_stop")
    assert log.index("start Paris") < log.index("message_stop")
    assert log.index("start Berlin") < log.index("message_stop")
    assert runs == {"Paris": 1, "Berlin": 1}
    assert results_of(runner.messages[2]) == [
        ("toolu_paris", "Paris: sunny", False),
        ("toolu_berlin", "Berlin: sunny", False),
    ]


async def test_a_tool_marked_start_early_false_waits_for_the_end_of_the_reply() -> None:
    @tool(start_early=False)
    async def charge(amount: int) -> str:
        """Charge a card."""
        log.append("charge")
        return "charged"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("charge", {"amount": 5}), delay=PACE), text_reply("ok", delay=PACE)]
    )
    async with streaming(fake, tools=[charge], run_tools_eagerly=True) as runner:
        async for stream in runner:
            async for event in stream:
                if event.type == "message_stop":
                    log.append("message_stop")
    assert log == ["message_stop", "charge", "message_stop"]


async def test_started_calls_are_cancelled_and_dropped_when_the_reply_must_not_run_tools() -> None:
    cancelled: list[str] = []

    @tool
    async def slow(name: str) -> str:
        """Take a while."""
        try:
            log.append(f"start {name}")
            await anyio.sleep_forever()
        finally:
            cancelled.append(name)
        return name

    reply = truncated_tool_reply(
        tool_call("slow", {"name": "first"}, id="t1"),
        tool_call("slow", {"name": "second", "extra": "cut here"}, id="t2"),
        delay=PACE,
    )
    fake = FakeMessagesAPI([reply])
    with anyio.fail_after(GUARD):
        async with streaming(fake, tools=[slow], run_tools_eagerly=True) as runner:
            final = await runner.until_done()
    assert final.stop_reason == "max_tokens"
    assert log == ["start first"]  # the truncated call never started
    assert cancelled == ["first"]
    assert roles(runner.messages) == ["user", "assistant"]  # no tool_result appended
    assert runner.end_reason == "model"


async def test_eager_tools_need_the_runner_entered() -> None:
    fake = FakeMessagesAPI(script())
    runner = streaming(fake, run_tools_eagerly=True)
    with pytest.raises(ToolRunnerError, match="async with ToolRunner"):
        await runner.until_done()
    assert fake.requests == []


@pytest.mark.parametrize("body_reads", [True, False])
async def test_a_stream_cut_midway_raises_the_sdk_error_and_the_request_is_sent_again(
    body_reads: bool,
) -> None:
    cut = stream_cut(
        tool_reply(tool_call("get_weather", {"city": "Paris"}, id="p"), text="Checking."), after_events=4
    )
    fake = FakeMessagesAPI([cut, *script()])
    runner = streaming(fake)
    # A connection dropped mid-stream surfaces as httpx2's ReadError: the SDK does not wrap it.
    with pytest.raises(httpx2.ReadError):
        async for stream in runner:
            if body_reads:
                async for _ in stream:
                    pass
    assert roles(runner.messages) == ["user"]
    await runner.until_done()
    assert runner.requests_sent == 2  # the cut request is not counted
    assert runs == {"Paris": 1, "Berlin": 1}
    assert sent_messages(fake)[0] == sent_messages(fake)[1]


async def test_a_stream_cut_cancels_tools_started_early() -> None:
    cancelled: list[str] = []

    @tool
    async def slow(name: str) -> str:
        """Take a while."""
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.append(name)
        return name

    reply = tool_reply(
        tool_call("slow", {"name": "a"}, id="a"), tool_call("slow", {"name": "b"}, id="b"), delay=PACE
    )
    fake = FakeMessagesAPI([stream_cut(reply, after_events=8)])
    with anyio.fail_after(GUARD):
        async with streaming(fake, tools=[slow], run_tools_eagerly=True) as runner:
            with pytest.raises(httpx2.ReadError):
                await runner.until_done()
            assert cancelled == ["a"]
            assert roles(runner.messages) == ["user"]


# -- recorded streams ---------------------------------------------------------------------------

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded" / "python-sdk" / "tool_runner"


@replays_recorded_models
@pytest.mark.parametrize("name", ["streaming_call", "streaming_call_events"])
async def test_recorded_streams_replay(name: str) -> None:
    """The recorded SSE bodies, served as they are: the runner sends the recorded messages."""
    exchanges = json.loads((RECORDED / f"{name}.json").read_text())
    sent: list[Any] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        sent.append(json.loads(request.content))
        body = exchanges[len(sent) - 1]["response"]["body"]
        return httpx2.Response(200, headers={"content-type": "text/event-stream"}, content=body.encode())

    @tool(name="get_weather")
    def recorded_weather(location: str, units: str) -> str:
        """Lookup the weather."""
        return json.dumps({"location": location, "temperature": "68\u00b0F", "condition": "Sunny"})

    async with anthropic.AsyncAnthropic(
        api_key="test", http_client=httpx2.AsyncClient(transport=httpx2.MockTransport(handler))
    ) as client:
        first = exchanges[0]["request"]["body"]
        runner = ToolRunner(
            client,
            stream=True,
            model=first["model"],
            max_tokens=first["max_tokens"],
            messages=first["messages"],
            tools=[recorded_weather],
        )
        await runner.until_done()
    assert [plain(body["messages"]) for body in sent] == [e["request"]["body"]["messages"] for e in exchanges]


async def test_with_a_checkpointer_only_idempotent_tools_start_while_the_reply_streams() -> None:
    """A call started early finishes before its reply is whole and saved; were the process to die
    then, the reply would be requested again and the call, which acted, would be lost to the
    journal. So with a checkpointer a call starts early only if its tool may run again."""
    from toolrunner import MemoryCheckpointer

    @tool(idempotent=True)
    async def lookup(city: str) -> str:
        """Look a city up."""
        log.append(f"lookup {city}")
        return city

    reply = tool_reply(
        tool_call("get_weather", {"city": "Paris"}, id="toolu_paris"),
        tool_call("lookup", {"city": "Oslo"}, id="toolu_oslo"),
        delay=PACE,
    )
    fake = FakeMessagesAPI([reply, text_reply("done", delay=PACE)])
    async with streaming(
        fake,
        tools=[get_weather, lookup],
        run_tools_eagerly=True,
        checkpointer=MemoryCheckpointer(),
        run_id="r",
    ) as runner:
        async for stream in runner:
            async for event in stream:
                if event.type == "message_stop":
                    log.append("message_stop")
    assert log.index("lookup Oslo") < log.index("message_stop") < log.index("start Paris")
    assert runs == {"Paris": 1}


async def test_a_call_whose_id_the_reply_check_refuses_never_starts_early() -> None:
    from toolrunner import MalformedReplyError

    reply = tool_reply(tool_call("get_weather", {"city": "Paris"}, id="call 1"), delay=PACE)
    fake = FakeMessagesAPI([reply], validate=False)
    async with streaming(fake, run_tools_eagerly=True) as runner:
        with pytest.raises(MalformedReplyError):
            await runner.until_done()
    assert runs == {}


async def test_a_sequential_tool_never_starts_while_the_reply_streams() -> None:
    @tool(sequential=True)
    async def migrate(step: int) -> str:
        """Run one migration step."""
        log.append(f"migrate {step}")
        return "done"

    reply = tool_reply(
        tool_call("get_weather", {"city": "Paris"}, id="toolu_paris"),
        tool_call("migrate", {"step": 1}, id="toolu_migrate"),
        delay=PACE,
    )
    fake = FakeMessagesAPI([reply, text_reply("ok", delay=PACE)])
    async with streaming(fake, tools=[get_weather, migrate], run_tools_eagerly=True) as runner:
        async for stream in runner:
            async for event in stream:
                if event.type == "message_stop":
                    log.append("message_stop")
    assert log.index("start Paris") < log.index("message_stop") < log.index("migrate 1")


# -- close() from the body -------------------------------------------------------------------------


@pytest.mark.parametrize("closing", ["close", "aclose"])
async def test_close_keeps_the_reply_of_a_stream_the_body_read_to_its_end(closing: str) -> None:
    """A stream the body read to its end is a complete reply the body holds: ``close()`` appends it
    (its tools do not run) and it counts, as without a stream (docs/lifecycle.md)."""
    fake = FakeMessagesAPI(script())
    runner = streaming(fake)
    async for stream in runner:
        async for _ in stream:
            pass
        if closing == "close":
            runner.close()
        else:
            await runner.aclose()
    assert runs == {}  # its tools did not run
    assert roles(runner.messages) == ["user", "assistant"]
    kept = runner.messages[-1]["content"]
    assert [block["type"] for block in kept] == ["text", "tool_use", "tool_use"]
    assert runner.state.end_reason == "closed"
    assert len(runner.state.usage) == 1  # the reply counts
    assert [item async for item in runner] == []  # iterating again yields nothing
    assert len(fake.requests) == 1


@pytest.mark.parametrize("read", ["nothing", "the first event"])
async def test_close_drops_a_stream_the_body_did_not_read_to_its_end(read: str) -> None:
    fake = FakeMessagesAPI(script())
    runner = streaming(fake)
    async for stream in runner:
        if read == "the first event":
            async with aclosing(stream.__aiter__()) as events:  # closed at once, as trio wants
                async for _ in events:
                    break
        runner.close()
    assert roles(runner.messages) == ["user"]  # the reply was not complete: nothing appended
    assert runner.state.end_reason == "closed"
    assert runs == {}
    await runner.aclose()  # the stream closes


def test_close_keeps_the_reply_of_a_sync_stream_the_body_read_to_its_end() -> None:
    fake = FakeMessagesAPI(script())
    runner = make_sync_runner(fake, get_weather, stream=True)
    for stream in runner:
        for _ in stream:
            pass
        runner.close()
    assert roles(runner.messages) == ["user", "assistant"]
    assert runner.state.end_reason == "closed"
    assert runs == {}


async def test_close_after_a_stream_read_to_its_end_keeps_no_reply_the_check_refuses() -> None:
    """Two tool_use blocks with one id: the reply is refused whoever reads it (``check_reply``), so
    ``close()`` appends nothing and raises nothing."""
    twice = tool_call("get_weather", {"city": "Paris"}, id="toolu_same")
    fake = FakeMessagesAPI([tool_reply(twice, twice), text_reply("never sent")])
    runner = streaming(fake)
    async for stream in runner:
        async for _ in stream:
            pass
        runner.close()
    assert roles(runner.messages) == ["user"]
    assert runner.state.end_reason == "closed"
    assert runs == {}

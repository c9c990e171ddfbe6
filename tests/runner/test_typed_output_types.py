"""The types checkers infer for a typed final answer (``output_format=``), checked by pyright over
the tests (``assert_type``, a no-op at run time) and, at run time, against what the runner yields:
with ``output_format=Weather`` the items and ``until_done()`` are
``ParsedReply[Weather]`` (``parsed_output`` is ``Weather | None``, no ``cast``), for a new run and a
resumed one, async and sync; without it they are ``Reply`` as before, and with ``stream=True`` the
streams, as before."""

from __future__ import annotations

from typing import Any, assert_type

import pydantic
import pytest
from anthropic.types import Message, ParsedMessage
from anthropic.types.beta import BetaMessage
from anthropic.types.beta.parsed_beta_message import ParsedBetaMessage

from tests.support.helpers import MODEL, USER
from toolrunner import (
    MemoryCheckpointer,
    ParsedReply,
    Reply,
    ReplyStream,
    SyncReplyStream,
    SyncToolRunner,
    ToolRunner,
)
from toolrunner.testing import FakeMessagesAPI, text_reply

pytestmark = pytest.mark.anyio

PARIS = '{"city": "Paris", "celsius": 21}'


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


def weather_of(final: ParsedReply[Weather]) -> Weather:
    """What user code reads: the answer, typed, with no cast."""
    answer = assert_type(final.parsed_output, Weather | None)
    assert answer is not None
    return answer


async def test_the_async_runner_with_output_format_yields_parsed_replies() -> None:
    fake = FakeMessagesAPI([text_reply(PARIS)])
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], output_format=Weather
    )
    assert_type(runner, ToolRunner[ParsedMessage[Weather] | ParsedBetaMessage[Weather]])
    async for reply in runner:
        assert_type(reply, ParsedReply[Weather])
        assert isinstance(reply, ParsedMessage)
    final = await runner.until_done()
    assert_type(final, ParsedMessage[Weather] | ParsedBetaMessage[Weather])
    assert weather_of(final) == Weather(city="Paris", celsius=21)
    assert runner.last_message is final  # typed Reply | None: read the answer from until_done()


async def test_the_async_runner_without_output_format_yields_replies() -> None:
    fake = FakeMessagesAPI([text_reply("hi")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER])
    assert_type(runner, ToolRunner[Message | BetaMessage])
    async for reply in runner:
        assert_type(reply, Reply)
    assert_type(await runner.until_done(), Reply)
    assert_type(runner.last_message, Reply | None)
    none = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], output_format=None)
    assert_type(none, ToolRunner[Reply])
    maybe: type[Weather] | None = None  # a type or None, not known until run time: Reply, as before
    assert_type(
        ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], output_format=maybe),
        ToolRunner[Reply],
    )


async def test_the_async_runner_streams_as_before_with_output_format() -> None:
    fake = FakeMessagesAPI([text_reply(PARIS)])
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], stream=True, output_format=Weather
    )
    assert_type(runner, ToolRunner[ReplyStream])
    async for stream in runner:
        assert_type(stream, ReplyStream)
        # The final message's parsed_output is read as in the SDK (not typed by the runner).
        final = await stream.get_final_message()
        assert getattr(final, "parsed_output", None) == Weather(city="Paris", celsius=21)
    assert_type(await runner.until_done(), Reply)


async def test_a_resumed_async_runner_is_typed_by_its_output_format() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([text_reply(PARIS)])
    first = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        output_format=Weather,
        checkpointer=store,
        run_id="typed",
    )
    await first.until_done()
    resumed = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="typed", output_format=Weather
    )
    assert_type(resumed, ToolRunner[ParsedReply[Weather]])
    assert_type(await resumed.until_done(), ParsedReply[Weather])
    assert weather_of(await resumed.until_done()) == Weather(city="Paris", celsius=21)
    streams = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="typed", output_format=Weather, stream=True
    )
    assert_type(streams, ToolRunner[ReplyStream])
    untyped_store = MemoryCheckpointer()
    untyped = ToolRunner(
        FakeMessagesAPI([text_reply("hi")]).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        checkpointer=untyped_store,
        run_id="u",
    )
    await untyped.until_done()
    assert_type(
        await ToolRunner.resume(fake.async_client(), checkpointer=untyped_store, run_id="u"),
        ToolRunner[Reply],
    )


def test_the_sync_runner_with_output_format_yields_parsed_replies() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([text_reply(PARIS)])
    runner = SyncToolRunner(
        fake.client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        output_format=Weather,
        checkpointer=store,
        run_id="typed",
    )
    assert_type(runner, SyncToolRunner[ParsedReply[Weather]])
    for reply in runner:
        assert_type(reply, ParsedReply[Weather])
    final = runner.until_done()
    assert_type(final, ParsedReply[Weather])
    assert weather_of(final) == Weather(city="Paris", celsius=21)
    resumed = SyncToolRunner.resume(fake.client(), checkpointer=store, run_id="typed", output_format=Weather)
    assert_type(resumed, SyncToolRunner[ParsedReply[Weather]])
    assert_type(resumed.until_done(), ParsedReply[Weather])
    assert weather_of(resumed.until_done()) == Weather(city="Paris", celsius=21)


def test_the_sync_runner_without_output_format_or_streaming_is_as_before() -> None:
    fake = FakeMessagesAPI([text_reply("hi"), text_reply(PARIS)])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER])
    assert_type(runner, SyncToolRunner[Reply])
    assert_type(runner.until_done(), Reply)
    assert_type(runner.last_message, Reply | None)
    streams = SyncToolRunner(
        fake.client(), model=MODEL, max_tokens=64, messages=[USER], stream=True, output_format=Weather
    )
    assert_type(streams, SyncToolRunner[SyncReplyStream])
    assert_type(streams.until_done(), Reply)


def test_a_runner_of_unknown_item_type_keeps_reply() -> None:
    """``ToolRunner[Any]`` (as helpers type a runner made from ``**options``) reads ``Reply``, not
    ``ParsedReply[Any]``; ``last_message`` is ``Reply | None`` on every runner."""

    async def final(runner: ToolRunner[Any]) -> None:
        assert_type(await runner.until_done(), Reply)
        assert_type(runner.last_message, Reply | None)

    def sync_final(runner: SyncToolRunner[Any]) -> None:
        assert_type(runner.until_done(), Reply)
        assert_type(runner.last_message, Reply | None)

    assert callable(final)
    assert callable(sync_final)

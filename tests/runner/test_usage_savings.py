"""What the prompt cache saved: per request and in total, from the price table."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest
from anthropic.types import Message

from toolrunner import DEFAULT_PRICES, Price, RequestUsage, RunState, ToolRunner, Usage, UsageTracker, tool
from toolrunner.testing import FakeMessagesAPI, PromptCache, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

# Sonnet 4.6: $3 input, $15 output, $0.30 cache reads, $3.75 5-minute writes, $6 1-hour writes.
SONNET = DEFAULT_PRICES["claude-sonnet-4-6"]


def reply(**usage: Any) -> Message:
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": [],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 0, "output_tokens": 0, **usage},
        }
    )


def test_a_read_saves_the_input_price_minus_the_read_price() -> None:
    request = UsageTracker().record(
        reply(input_tokens=100, output_tokens=10, cache_read_input_tokens=1_000_000)
    )
    assert request.saved == Decimal("2.70")  # 1M tokens x ($3 - $0.30)
    assert request.cost == Decimal("0.30") + Decimal("0.0003") + Decimal("0.00015")


def test_a_write_costs_more_than_no_cache_so_it_saves_less_than_nothing() -> None:
    five = UsageTracker().record(reply(cache_creation_input_tokens=1_000_000))
    assert five.saved == Decimal("-0.75")  # $3 - $3.75
    hour = UsageTracker().record(
        reply(
            cache_creation_input_tokens=1_000_000,
            cache_creation={"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": 1_000_000},
        )
    )
    assert hour.saved == Decimal(-3)  # $3 - $6


def test_the_tracker_adds_up_the_savings_and_a_model_without_a_price_makes_the_total_unknown() -> None:
    tracker = UsageTracker()
    tracker.record(reply(cache_creation_input_tokens=1_000_000))
    tracker.record(reply(cache_read_input_tokens=1_000_000))
    assert tracker.saved == Decimal("1.95")  # -0.75 + 2.70
    assert "saved=Decimal('1.95" in repr(tracker)
    unpriced = UsageTracker(prices={})
    request = unpriced.record(reply(cache_read_input_tokens=10))
    assert request.saved is None
    assert unpriced.saved is None
    assert UsageTracker().saved == 0


def test_savings_without_the_cache_are_zero_and_long_prompts_use_their_own_price() -> None:
    assert SONNET.uncached_cost(Usage(input_tokens=1_000_000)) == Decimal(3)
    haiku = DEFAULT_PRICES["claude-haiku-5-5"]
    long = Usage(input_tokens=1_000, cache_read_input_tokens=200_000)
    # The whole prompt is over 100,000 tokens with the cache or without it: the long price both ways.
    assert haiku.uncached_cost(long) == Decimal("0.50") * 201_000 / 1_000_000
    assert UsageTracker().record(reply(input_tokens=5, output_tokens=5)).saved == 0


def test_saved_is_derived_so_it_is_filled_in_for_a_request_read_back_without_it() -> None:
    recorded = UsageTracker().record(reply(input_tokens=10, cache_read_input_tokens=1_000_000))
    read_back = RequestUsage(recorded.model, recorded.usage, recorded.cost)  # as a saved state holds it
    assert read_back.saved is None
    assert read_back == recorded  # saved takes no part in ==
    tracker = UsageTracker.of_requests([read_back])
    assert tracker.requests[0].saved == recorded.saved
    assert tracker.saved == recorded.saved
    custom = Price(3, 15, "0.30", "3.75")
    assert UsageTracker(prices={"claude-sonnet-4-6": custom}).record(
        reply(cache_read_input_tokens=1)
    ).saved == (
        custom.uncached_cost(Usage(cache_read_input_tokens=1)) - custom.cost(Usage(cache_read_input_tokens=1))
    )


async def test_a_resumed_run_shows_the_same_savings() -> None:
    @tool
    async def look(n: int) -> str:
        """Look.

        Args:
            n: Which.
        """
        return "seen " * 100

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("look", {"n": 1})),
            tool_reply(tool_call("look", {"n": 2})),
            text_reply("Done."),
        ],
        prompt_cache=PromptCache(min_tokens=100),
    )
    runner = ToolRunner(
        fake.async_client(),
        model="claude-sonnet-4-6",
        max_tokens=100,
        messages=[{"role": "user", "content": "Look twice."}],
        tools=[look],
        cache_control={"type": "ephemeral"},
    )
    await runner.until_done()
    saved = runner.usage.saved
    assert saved is not None
    assert saved > 0
    state = RunState.from_json(runner.state.to_json())
    assert UsageTracker.of_requests(state.usage).saved == saved

"""Tests of usage and cost tracking."""

from __future__ import annotations

import typing
from decimal import Decimal

import pytest
from anthropic.types import Message, ModelParam, Usage as SDKUsage
from anthropic.types.beta import BetaMessage

from toolrunner._core.usage import (
    DEFAULT_PRICES,
    PRICES_AS_OF,
    Price,
    RequestUsage,
    Usage,
    UsageTracker,
    find_price,
)


def message(
    model: str = "claude-sonnet-4-5",
    *,
    input_tokens: int = 1000,
    output_tokens: int = 100,
    cache_read: int | None = None,
    cache_write: int | None = None,
    cache_write_1h: int | None = None,
) -> Message:
    usage: dict[str, object] = {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_write,
    }
    if cache_write_1h is not None:
        usage["cache_creation"] = {
            "ephemeral_1h_input_tokens": cache_write_1h,
            "ephemeral_5m_input_tokens": (cache_write or 0) - cache_write_1h,
        }
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": model,
            "content": [],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": usage,
        }
    )


def test_usage_adds_up() -> None:
    a = Usage(1, 2, 3, 4)
    b = Usage(10, 20, 30, 40)
    assert a + b == Usage(11, 22, 33, 44)
    assert (a + b).total_tokens == 110
    assert a.prompt_tokens == 8
    assert Usage().total_tokens == 0


def test_usage_of_sdk_usage_treats_none_as_zero() -> None:
    sdk = SDKUsage(
        input_tokens=5, output_tokens=7, cache_read_input_tokens=None, cache_creation_input_tokens=None
    )
    assert Usage.of(sdk) == Usage(5, 7, 0, 0)


def test_price_keeps_exact_decimals() -> None:
    price = Price(0.3, "15", 1, Decimal("3.75"))
    assert price.input == Decimal("0.3")
    assert price.output == Decimal(15)
    assert price.cache_write_1h == Decimal("3.75")
    assert Price(1, 2, 3, 4) == Price("1", "2", "3", "4")


def test_price_needs_both_long_prompt_fields() -> None:
    with pytest.raises(ValueError, match="long_prompt"):
        Price(1, 2, 3, 4, long_prompt=Price(1, 2, 3, 4))


def test_cost_of_one_request() -> None:
    price = Price(3, 15, "0.30", "3.75", cache_write_1h=6)
    usage = message(
        input_tokens=1_000_000, output_tokens=100_000, cache_read=2_000_000, cache_write=1_000_000
    ).usage
    # 3 + 1.5 + 0.6 + 3.75
    assert price.cost(usage) == Decimal("8.85")


def test_one_hour_cache_writes_use_their_price() -> None:
    price = Price(3, 15, "0.30", "3.75", cache_write_1h=6)
    usage = message(input_tokens=0, output_tokens=0, cache_write=1_000_000, cache_write_1h=400_000).usage
    assert price.cost(usage) == Decimal("0.6") * Decimal("3.75") + Decimal("0.4") * 6


def test_long_prompts_use_the_second_price_for_every_token() -> None:
    price = DEFAULT_PRICES["claude-haiku-5-5"]
    short = message("claude-haiku-5-5", input_tokens=100_000, output_tokens=1_000_000).usage
    assert price.cost(short) == Decimal("0.01") + Decimal("0.50")
    long = message("claude-haiku-5-5", input_tokens=90_000, cache_read=10_001, output_tokens=1_000_000).usage
    assert price.cost(long) == Decimal("0.045") + Decimal("0.00050005") + Decimal("2.50")


def test_find_price_matches_snapshots_and_platform_ids() -> None:
    opus = DEFAULT_PRICES["claude-opus-4-5"]
    assert find_price(DEFAULT_PRICES, "claude-opus-4-5") is opus
    assert find_price(DEFAULT_PRICES, "claude-opus-4-5-20251101") is opus
    assert find_price(DEFAULT_PRICES, "claude-opus-4-5@20251101") is opus
    assert find_price(DEFAULT_PRICES, "anthropic.claude-opus-4-5-20251101-v1:0") is opus
    assert find_price(DEFAULT_PRICES, "us.anthropic.claude-opus-4-5-20251101-v1:0") is opus
    assert find_price(DEFAULT_PRICES, "claude-sonnet-4-5[1m]") is DEFAULT_PRICES["claude-sonnet-4-5"]
    # A longer id is another model, never its prefix's.
    assert find_price(DEFAULT_PRICES, "claude-sonnet-5-5-20261007") is DEFAULT_PRICES["claude-sonnet-5-5"]
    assert find_price(DEFAULT_PRICES, "claude-sonnet-5-7") is None
    assert find_price(DEFAULT_PRICES, "gpt-4o") is None


def test_default_prices_cover_the_sdk_models() -> None:
    sdk_models: list[str] = list(typing.get_args(typing.get_args(ModelParam)[0]))
    unpriced = [model for model in sdk_models if find_price(DEFAULT_PRICES, model) is None]
    # A research preview with no public list price.
    assert unpriced == ["claude-mythos-preview"]
    assert len(PRICES_AS_OF) == 10


def test_tracker_records_requests_and_totals() -> None:
    tracker = UsageTracker()
    first = tracker.record(message("claude-sonnet-4-5-20250929", input_tokens=1_000_000, output_tokens=0))
    assert first == RequestUsage("claude-sonnet-4-5-20250929", Usage(1_000_000, 0, 0, 0), Decimal(3))
    tracker.record(message("claude-haiku-4-5", input_tokens=0, output_tokens=1_000_000, cache_read=5))
    assert tracker.total == Usage(1_000_000, 1_000_000, 5, 0)
    assert tracker.cost == Decimal(3) + Decimal(5) + Decimal("0.0000005")
    assert [request.model for request in tracker.requests] == [
        "claude-sonnet-4-5-20250929",
        "claude-haiku-4-5",
    ]
    assert "requests=2" in repr(tracker)


def test_unknown_model_has_no_cost() -> None:
    tracker = UsageTracker()
    tracker.record(message("claude-sonnet-4-5"))
    request = tracker.record(message("my-fine-tune"))
    assert request.cost is None
    assert tracker.cost is None
    assert tracker.total == Usage(2000, 200, 0, 0)
    tracker.record(message("claude-sonnet-4-5"))
    assert tracker.cost is None


def test_custom_prices_override_the_defaults() -> None:
    tracker = UsageTracker(prices={**DEFAULT_PRICES, "my-fine-tune": Price(1, 1, 0, 0)})
    assert tracker.record(message("my-fine-tune", input_tokens=1_000_000, output_tokens=0)).cost == 1
    tokens_only = UsageTracker(prices={})
    assert tokens_only.record(message()).cost is None
    assert tokens_only.total.total_tokens == 1100


def test_tracker_takes_beta_messages() -> None:
    beta = BetaMessage.model_validate(
        message("claude-opus-4-5", input_tokens=1_000_000, output_tokens=0).model_dump()
    )
    assert UsageTracker().record(beta).cost == 5


def test_one_hour_writes_never_exceed_all_writes() -> None:
    price = Price(0, 0, 0, 1, cache_write_1h=2)
    usage = message(input_tokens=0, output_tokens=0, cache_write=10, cache_write_1h=15).usage
    assert price.cost(usage) == Decimal("0.00002")

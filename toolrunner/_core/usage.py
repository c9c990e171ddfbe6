"""Token usage and cost, per request and in total.

:class:`UsageTracker` records the ``usage`` of every reply; with a price table (``DEFAULT_PRICES``
or your own mapping of model id to :class:`Price`) it also gives the cost, and what the prompt
cache saved: what the same tokens would have cost without the cache, minus what they cost. Money
is a ``decimal.Decimal`` in US dollars, so sums are exact.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal
from types import MappingProxyType
from typing import Protocol, Self

from .frozen import frozen_init

__all__ = [
    "DEFAULT_PRICES",
    "PRICES_AS_OF",
    "PRICES_SOURCE",
    "Price",
    "RequestUsage",
    "Usage",
    "UsageTracker",
    "find_price",
    "request_usage",
]

_MILLION = Decimal(1_000_000)


@frozen_init
@dataclasses.dataclass(frozen=True, slots=True)
class Usage:
    """Token counts of one request, or of several added together.

    Attributes:
        input_tokens: Input tokens read without the cache.
        output_tokens: Output tokens, thinking included.
        cache_read_input_tokens: Input tokens read from the prompt cache.
        cache_creation_input_tokens: Input tokens written to the prompt cache.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_input_tokens: int = 0
    cache_creation_input_tokens: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Every input token of the request: uncached, read from and written to the cache."""
        return self.input_tokens + self.cache_read_input_tokens + self.cache_creation_input_tokens

    @property
    def total_tokens(self) -> int:
        """All four counts added up."""
        return self.prompt_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):  # pyright: ignore[reportUnnecessaryIsInstance]
            return NotImplemented
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_input_tokens + other.cache_read_input_tokens,
            self.cache_creation_input_tokens + other.cache_creation_input_tokens,
        )

    @classmethod
    def of(cls, usage: SDKUsage) -> Usage:
        """The counts of an SDK ``Usage`` or ``BetaUsage``; missing counts are 0."""
        return cls(
            usage.input_tokens or 0,
            usage.output_tokens or 0,
            usage.cache_read_input_tokens or 0,
            usage.cache_creation_input_tokens or 0,
        )


def _dollars(value: Decimal | int | float | str) -> Decimal:
    # Through str, so a float such as 0.3 becomes Decimal("0.3"), not its binary approximation.
    return value if isinstance(value, Decimal) else Decimal(str(value))


@dataclasses.dataclass(frozen=True, slots=True, init=False)
class Price:
    """What a model costs, in US dollars per million tokens of each kind.

    Args:
        input: Uncached input tokens.
        output: Output tokens (thinking included).
        cache_read: Input tokens read from the prompt cache.
        cache_write: Input tokens written to the 5-minute prompt cache.
        cache_write_1h: Input tokens written to the 1-hour cache; ``cache_write`` when not given.
        long_prompt: A second price for requests whose prompt (all input tokens, cached ones too)
            is longer than ``long_prompt_threshold`` tokens; it then applies to every token of
            the request.
        long_prompt_threshold: See ``long_prompt``.

    Amounts may be given as ``Decimal``, ``int``, ``str`` or ``float``; they are kept as ``Decimal``.
    """

    input: Decimal
    output: Decimal
    cache_read: Decimal
    cache_write: Decimal
    cache_write_1h: Decimal
    long_prompt: Price | None
    long_prompt_threshold: int | None

    def __init__(
        self,
        input: Decimal | int | float | str,
        output: Decimal | int | float | str,
        cache_read: Decimal | int | float | str,
        cache_write: Decimal | int | float | str,
        *,
        cache_write_1h: Decimal | int | float | str | None = None,
        long_prompt: Price | None = None,
        long_prompt_threshold: int | None = None,
    ) -> None:
        if (long_prompt is None) != (long_prompt_threshold is None):
            raise ValueError("Give Price both long_prompt and long_prompt_threshold, or neither.")
        setattr_ = object.__setattr__
        setattr_(self, "input", _dollars(input))
        setattr_(self, "output", _dollars(output))
        setattr_(self, "cache_read", _dollars(cache_read))
        setattr_(self, "cache_write", _dollars(cache_write))
        setattr_(self, "cache_write_1h", _dollars(cache_write if cache_write_1h is None else cache_write_1h))
        setattr_(self, "long_prompt", long_prompt)
        setattr_(self, "long_prompt_threshold", long_prompt_threshold)

    def uncached_cost(self, usage: SDKUsage) -> Decimal:
        """What one request's tokens would cost without the prompt cache: every prompt token (read
        from the cache, written to it, or neither) at the ``input`` price, the output as it is."""
        counts = usage if isinstance(usage, Usage) else Usage.of(usage)
        if self.long_prompt is not None and counts.prompt_tokens > (self.long_prompt_threshold or 0):
            return self.long_prompt.uncached_cost(counts)
        return (counts.prompt_tokens * self.input + counts.output_tokens * self.output) / _MILLION

    def cost(self, usage: SDKUsage) -> Decimal:
        """The cost of one request with this ``usage`` (an SDK ``Usage`` or :class:`Usage`)."""
        counts = usage if isinstance(usage, Usage) else Usage.of(usage)
        return _priced(self, counts, _cache_write_1h(usage))


def _priced(price: Price, counts: Usage, written_1h: int) -> Decimal:
    """``price.cost`` of the counts already read, and the tokens written to the 1-hour cache."""
    if price.long_prompt is not None and counts.prompt_tokens > (price.long_prompt_threshold or 0):
        return _priced(price.long_prompt, counts, written_1h)
    write_1h = min(written_1h, counts.cache_creation_input_tokens)
    micros = (
        counts.input_tokens * price.input
        + counts.output_tokens * price.output
        + counts.cache_read_input_tokens * price.cache_read
        + (counts.cache_creation_input_tokens - write_1h) * price.cache_write
        + write_1h * price.cache_write_1h
    )
    return micros / _MILLION


class SDKUsage(Protocol):
    """The fields of the SDK's ``Usage`` and ``BetaUsage`` (and of :class:`Usage`) read here."""

    @property
    def input_tokens(self) -> int | None: ...
    @property
    def output_tokens(self) -> int | None: ...
    @property
    def cache_read_input_tokens(self) -> int | None: ...
    @property
    def cache_creation_input_tokens(self) -> int | None: ...


class SDKMessage(Protocol):
    """What :meth:`UsageTracker.record` reads of an SDK ``Message`` or ``BetaMessage``."""

    @property
    def model(self) -> str: ...
    @property
    def usage(self) -> SDKUsage: ...


def _cache_write_1h(usage: object) -> int:
    """Tokens written to the 1-hour cache, from the SDK's ``usage.cache_creation`` breakdown."""
    breakdown = getattr(usage, "cache_creation", None)
    tokens = getattr(breakdown, "ephemeral_1h_input_tokens", None)
    return tokens if isinstance(tokens, int) else 0


# Snapshot and platform spellings of a model id: "claude-opus-4-5-20251101",
# "claude-opus-4-5@20251101" (Vertex AI), "us.anthropic.claude-opus-4-5-20251101-v1:0" (Bedrock),
# "claude-sonnet-4-5[1m]".
_PLATFORM_PREFIX = re.compile(r"^(?:[a-z]+\.)?anthropic\.")
_SNAPSHOT_SUFFIX = re.compile(r"(?:[-@]\d{8})?(?:-v\d+(?::\d+)?)?(?:\[1m\])?$")


def find_price(prices: Mapping[str, Price], model: str) -> Price | None:
    """The price of ``model`` in ``prices``, or ``None`` when it has none.

    An exact id wins; otherwise a dated snapshot (``claude-opus-4-5-20251101``) and the Bedrock and
    Vertex AI spellings of an id find the price of the id without the date and platform parts.
    """
    price = prices.get(model)
    if price is not None:
        return price
    base = _SNAPSHOT_SUFFIX.sub("", _PLATFORM_PREFIX.sub("", model), count=1)
    return prices.get(base)


def request_usage(message: SDKMessage, prices: Mapping[str, Price]) -> RequestUsage:
    """The usage of one reply, priced with ``prices`` (``cost`` and ``saved`` are ``None`` without a price).

    ``Price.cost`` and ``Price.uncached_cost`` in one frame (a call of every reply): the same
    ``Decimal`` operations in the same order, so the same amounts."""
    usage, model = message.usage, message.model
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    counts = Usage(usage.input_tokens or 0, usage.output_tokens or 0, read, written)
    price = prices.get(model)
    if price is None:
        price = find_price(prices, model)
        if price is None:
            return RequestUsage(model, counts, None)
    prompt = counts.input_tokens + read + written
    while price.long_prompt is not None and prompt > (price.long_prompt_threshold or 0):
        price = price.long_prompt
    breakdown = getattr(usage, "cache_creation", None)
    tokens = None if breakdown is None else getattr(breakdown, "ephemeral_1h_input_tokens", None)
    write_1h = min(tokens if isinstance(tokens, int) else 0, written)
    output = counts.output_tokens * price.output
    cost = (
        counts.input_tokens * price.input
        + output
        + read * price.cache_read
        + (written - write_1h) * price.cache_write
        + write_1h * price.cache_write_1h
    ) / _MILLION
    return RequestUsage(model, counts, cost, (prompt * price.input + output) / _MILLION - cost)


@frozen_init
@dataclasses.dataclass(frozen=True, slots=True)
class RequestUsage:
    """The usage of one request.

    Attributes:
        model: The model id the reply names.
        usage: Its token counts.
        cost: Its cost in US dollars, or ``None`` when the price table has no price for the model.
        saved: What the prompt cache saved on it, in US dollars: ``Price.uncached_cost`` minus
            ``cost``; below zero when the request wrote to the cache more than it read from it.
            ``None`` without a price. It follows from the other fields and the price table, so it
            takes no part in ``==``; a tracker fills it in for a request that lacks it (one read
            from a saved state).
    """

    model: str
    usage: Usage
    cost: Decimal | None
    saved: Decimal | None = dataclasses.field(default=None, compare=False)


class UsageTracker:
    """Usage per request and in total, and the cost when the models have prices.

    Args:
        prices: Model id to :class:`Price`; ``DEFAULT_PRICES`` when ``None``. Pass ``{}`` to count
            tokens only. A model with no price (see :func:`find_price`) gets ``cost=None``.

    Not thread-safe: record from one thread (the event loop), as the runner does.
    """

    def __init__(self, *, prices: Mapping[str, Price] | None = None) -> None:
        self.prices: Mapping[str, Price] = DEFAULT_PRICES if prices is None else prices
        self.requests: list[RequestUsage] = []
        self.total = Usage()
        # Invariants: the sums of ``requests[i].cost`` and of ``requests[i].saved``; ``None`` once
        # any request had no price.
        self._cost: Decimal | None = Decimal(0)
        self._saved: Decimal | None = Decimal(0)

    @property
    def cost(self) -> Decimal | None:
        """The total cost in US dollars; ``None`` when any request's model has no price, since a
        sum that leaves requests out would look complete but be too low."""
        return self._cost

    @property
    def saved(self) -> Decimal | None:
        """What the prompt cache saved in total, in US dollars (the sum of the requests' ``saved``:
        what their tokens would have cost without the cache, minus ``cost``); ``None`` when any
        request's model has no price."""
        return self._saved

    @classmethod
    def of_requests(
        cls, requests: Iterable[RequestUsage], *, prices: Mapping[str, Price] | None = None
    ) -> Self:
        """A tracker that has recorded ``requests`` (a saved run's, say)."""
        tracker = cls(prices=prices)
        for request in requests:
            tracker.add(request)
        return tracker

    def record(self, message: SDKMessage) -> RequestUsage:
        """Add the usage of a reply (an SDK ``Message`` or ``BetaMessage``) and return it."""
        request = request_usage(message, self.prices)
        self.add(request)
        return request

    def add(self, request: RequestUsage) -> None:
        """Add one request's usage, as ``record`` worked it out. A request without ``saved`` (one
        read from a saved state) gets it from this tracker's prices."""
        cost = request.cost
        if request.saved is None and cost is not None:
            price = find_price(self.prices, request.model)
            if price is not None:
                request = dataclasses.replace(request, saved=price.uncached_cost(request.usage) - cost)
        self.requests.append(request)
        self.total += request.usage
        self._cost = None if cost is None or self._cost is None else self._cost + cost
        saved = request.saved
        self._saved = None if saved is None or self._saved is None else self._saved + saved

    def __repr__(self) -> str:
        return (
            f"UsageTracker(requests={len(self.requests)}, total={self.total!r}, cost={self._cost!r}, "
            f"saved={self._saved!r})"
        )


PRICES_AS_OF = "2026-11-21"
"""The date the default prices were checked against the source below."""

PRICES_SOURCE = "https://platform.claude.com/docs/en/about-claude/pricing"
"""Where the default prices come from (the model pages link their rows of this table)."""


def _standard(input: str, output: str, cache_read: str) -> Price:
    """A price with the usual cache-write rates: 1.25x input for 5 minutes, 2x for 1 hour."""
    base = Decimal(input)
    return Price(input, output, cache_read, base * Decimal("1.25"), cache_write_1h=base * 2)


_OPUS_4_5 = _standard("5", "25", "0.50")
_SONNET_4 = _standard("3", "15", "0.30")
_SONNET_5 = _standard("2", "10", "0.20")
_FABLE_5 = _standard("10", "50", "1")
_FABLE_5_1 = _standard("10", "50", "0.25")
_FABLE_5_2 = _standard("8", "40", "0.20")

DEFAULT_PRICES: Mapping[str, Price] = MappingProxyType(
    {
        "claude-fable-5-2": _FABLE_5_2,
        "claude-mythos-5-2": _FABLE_5_2,
        "claude-fable-5-1": _FABLE_5_1,
        "claude-mythos-5-1": _FABLE_5_1,
        "claude-fable-5": _FABLE_5,
        "claude-mythos-5": _FABLE_5,
        "claude-opus-5-5": _standard("4", "20", "0.20"),
        "claude-opus-5": _OPUS_4_5,
        "claude-opus-4-8": _OPUS_4_5,
        "claude-opus-4-7": _OPUS_4_5,
        "claude-opus-4-6": _OPUS_4_5,
        "claude-opus-4-5": _OPUS_4_5,
        "claude-sonnet-5-5": _standard("2", "10", "0.10"),
        "claude-sonnet-5": _SONNET_5,
        "claude-sonnet-4-6": _SONNET_4,
        "claude-sonnet-4-5": _SONNET_4,
        "claude-haiku-5-5": Price(
            "0.10",
            "0.50",
            "0.01",
            "0.125",
            cache_write_1h="0.20",
            long_prompt=_standard("0.50", "2.50", "0.05"),
            long_prompt_threshold=100_000,
        ),
        "claude-haiku-4-5": _standard("1", "5", "0.10"),
    }
)
"""List prices of current Claude models in US dollars per million tokens, as of ``PRICES_AS_OF``.

Standard-tier prices on the Claude API: Batch API discounts, fast mode, priority tier, regional
pricing (``inference_geo``) and long-context surcharges of older models are not applied; Claude
Haiku 5.5's higher price for prompts over 100,000 tokens is (``Price.long_prompt``). Prices
change: pass your own mapping (for example ``{**DEFAULT_PRICES, "my-model": Price(...)}``) to
correct or extend them.
"""

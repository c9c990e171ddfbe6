# FROZEN as of commit 8cff606: toolrunner/_core/usage.py, less what the legacy body never reaches.
# Never edit: see ``_legacy/__init__.py``.
"""Token usage and cost, per request and in total.

:class:`UsageTracker` records the ``usage`` of every reply; with a price table (``DEFAULT_PRICES``
or your own mapping of model id to :class:`Price`) it also gives the cost, and what the prompt
cache saved: what the same tokens would have cost without the cache, minus what they cost. Money
is a ``decimal.Decimal`` in US dollars, so sums are exact.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Protocol

__all__ = ["RequestUsage", "Usage"]


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


# Snapshot and platform spellings of a model id: "claude-opus-4-5-20251101",
# "claude-opus-4-5@20251101" (Vertex AI), "us.anthropic.claude-opus-4-5-20251101-v1:0" (Bedrock),
# "claude-sonnet-4-5[1m]".


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

"""What replaying saved runs would cost (``estimate_cost``), before anything is sent: pure, from
their recorded usage and a price table."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal
from typing import Any, Protocol

from .._core.state import RunState
from .._core.usage import DEFAULT_PRICES, Price, find_price

__all__ = ["estimate_cost"]


class Replay(Protocol):
    """What the estimate reads of a ``Replay``: its price table and the params it sends."""

    @property
    def prices(self) -> Mapping[str, Price] | None: ...

    def request_params(self, recorded: Mapping[str, Any]) -> dict[str, Any]: ...


def estimate_cost(
    states: Iterable[RunState], replay: Replay, *, prices: Mapping[str, Price] | None = None
) -> Decimal | None:
    """What replaying ``states`` would cost if each replay used the tokens its record used, at the
    price of the replay's model (``prices``; ``replay.prices`` or ``DEFAULT_PRICES`` by default),
    and its sub-agents' requests at what they cost when recorded; ``None`` when the price table
    has no price for a model, or a sub-agent's model had none."""
    table = prices if prices is not None else (replay.prices if replay.prices is not None else DEFAULT_PRICES)
    total = Decimal(0)
    for state in states:
        model = str(replay.request_params(state.params).get("model", ""))
        price = find_price(table, model)
        if price is None:
            return None
        for request in state.usage:
            total += price.cost(request.usage)
        for summary in state.sub_runs:  # its sub-agents' requests, at what they cost when recorded
            if summary.cost is None:
                return None
            total += summary.cost
    return total

"""A run's tree in figures, as the CLI (``runs show``) and the inbox's run page give them: the
requests, tokens and cost of the run and of each of its sub-agents (``_core.tree_usage``)."""

from __future__ import annotations

from typing import Any

from .._core.state import RunState, usage_data
from .._core.tree_usage import Spent, spent_by_agent
from .render import plural, printable

__all__ = ["agent_name", "agent_usage_data", "agent_usage_lines", "usage_text"]


def agent_usage_data(state: RunState) -> list[dict[str, Any]]:
    """The figures of the run's tree by sub-agent (``_core.tree_usage.spent_by_agent``) as JSON
    data: the path of sub-agents' names (``[]`` for the run's own requests), turns, tokens, cost."""
    return [
        {
            "agents": list(path),
            "turns": figures.requests,
            "usage": usage_data(figures.total),
            "cost": None if figures.cost is None else str(figures.cost),
        }
        for path, figures in spent_by_agent(state).items()
    ]


def usage_text(figures: Spent) -> str:
    """``2 turns, 2,410 input and 187 output tokens, $0.0132`` (no cost once a request had no price)."""
    total = figures.total
    cost = "" if figures.cost is None else f", ${figures.cost:.4f}"
    return (
        f"{plural(figures.requests, 'turn')}, {total.input_tokens:,} input and "
        f"{total.output_tokens:,} output tokens{cost}"
    )


def agent_name(path: tuple[str, ...]) -> str:
    """A path of sub-agents' names as a person reads it (``researcher → searcher``)."""
    return "the run itself" if not path else printable(" → ".join(path))


def agent_usage_lines(state: RunState) -> list[str]:
    """The figures of the run's tree by sub-agent, the run's own first; none for a run that has
    called no sub-agent (its figures are the run's)."""
    figures = spent_by_agent(state)
    if len(figures) < 2:
        return []
    names = {path: agent_name(path) for path in figures}
    width = max(len(name) for name in names.values())
    return [
        "",
        "── by agent",
        *(f"  {names[path].ljust(width)}  {usage_text(spent)}" for path, spent in figures.items()),
    ]

"""How a replayed run differs from its record (``compare``). Pure: it reads two trajectories.

Calls are compared by key (``_journal.call_key``: the tool and the normalised input). The first
divergent turn is the first turn whose list of call keys differs, or that only one of the two runs
has; a replay that makes the same calls but words its text differently has none. Calls added and
dropped are the difference of the two runs' calls as multisets of keys (a call made twice in the
record and once in the replay is dropped once).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from ._journal import Normalize, call_key
from ._results import Comparison
from ._trajectory import Call, Trajectory

__all__ = ["compare"]


def compare(recorded: Trajectory, replayed: Trajectory, *, normalize: Normalize | None = None) -> Comparison:
    """Where ``replayed`` differs from ``recorded`` (see the module docstring)."""

    def keys(calls: Sequence[Call]) -> list[str]:
        return [call_key(call.name, call.input, normalize) for call in calls]

    first: int | None = None
    for index in range(max(len(recorded.turns), len(replayed.turns))):
        if index >= len(recorded.turns) or index >= len(replayed.turns):
            first = index
            break
        if keys(recorded.turns[index].calls) != keys(replayed.turns[index].calls):
            first = index
            break
    return Comparison(
        first_divergent_turn=first,
        calls_added=_minus(replayed.calls, recorded.calls, normalize),
        calls_dropped=_minus(recorded.calls, replayed.calls, normalize),
        final_answer_changed=_answer(recorded) != _answer(replayed),
        divergences=tuple(call for call in replayed.calls if call.answered in ("marked", "safe", "stub")),
        tokens=replayed.usage.total_tokens - recorded.usage.total_tokens,
        cost=None if replayed.cost is None or recorded.cost is None else replayed.cost - recorded.cost,
        seconds=None
        if replayed.seconds is None or recorded.seconds is None
        else replayed.seconds - recorded.seconds,
    )


def _minus(calls: Sequence[Call], other: Sequence[Call], normalize: Normalize | None) -> tuple[Call, ...]:
    """The calls of ``calls`` left once each of ``other`` has taken away one call of its key."""
    left = Counter(call_key(call.name, call.input, normalize) for call in other)
    kept: list[Call] = []
    for call in calls:
        key = call_key(call.name, call.input, normalize)
        if left[key] > 0:
            left[key] -= 1
        else:
            kept.append(call)
    return tuple(kept)


def _answer(trajectory: Trajectory) -> object:
    return trajectory.output if trajectory.output is not None else trajectory.final_answer

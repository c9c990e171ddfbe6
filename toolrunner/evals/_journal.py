"""Which recorded call answers a replay's call (``Journal``, ``match_call``). Pure: no I/O.

A replay's call is answered from the recorded run when the recorded run made the same call: the same
tool, with the same input after ``normalize_input``. Calls are matched by occurrence: the k-th call
of the replay with a given tool and input gets the k-th recorded result for that tool and input.
A call past the recorded ones (a new call, or one made more times than the recorded run made it)
is a divergence, and never gets a recorded result: it may have acted in the recorded run only as
often as it was recorded.

The normalisation (``normalize_input``) makes equal what a model writes differently but means the
same: object keys in any order, ``1`` and ``1.0``, a string's surrounding white space, and Unicode
strings in NFC or NFD form. A replay may pass its own (``normalize=``): a function of the tool's name
and its input that returns any JSON value to compare.
"""

from __future__ import annotations

import json
import unicodedata
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from .._core.messages import client_tool_calls
from .._core.types import ToolCall
from ._trajectory import Call, Trajectory

__all__ = ["Journal", "Match", "Normalize", "call_key", "match_call", "normalize_input"]

Normalize = Callable[[str, object], object]
"""A replay's own normalisation: ``(tool name, input) -> JSON value``; equal values match."""


def normalize_input(name: str, value: object) -> object:
    """The default normalisation of a call's input (see the module docstring)."""
    del name
    return _normal(value)


def _normal(value: object) -> object:
    if isinstance(value, Mapping):
        return {str(key): _normal(item) for key, item in sorted(value.items(), key=lambda pair: str(pair[0]))}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType, reportUnknownLambdaType]
    if isinstance(value, list | tuple):
        return [_normal(item) for item in cast("Sequence[object]", value)]
    if isinstance(value, str):
        return unicodedata.normalize("NFC", value.strip())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def call_key(name: str, input: object, normalize: Normalize | None = None) -> str:
    """The key a call is matched by: its tool's name and its normalised input, as canonical JSON."""
    normal = (normalize or normalize_input)(name, input)
    return json.dumps(
        [name, normal], sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=_not_json
    )


def _not_json(value: object) -> object:
    """``json.dumps``'s ``default``: a value JSON has no form for is no key (two such values with
    the same ``str`` are not the same call)."""
    raise TypeError(
        f"a call's normalised input must be a JSON value (dict, list, str, int, float, bool, None), not "
        f"{type(value).__name__!r}: make Replay(normalize=...) return one."
    )


@dataclass(frozen=True, slots=True)
class Match:
    """What the journal holds for a replay's call: the recorded call it repeats, or ``None`` (a
    divergence); ``occurrence`` is how many calls of the same key came before it in the replay."""

    recorded: Call | None
    occurrence: int


class Journal:
    """The recorded run's calls that have a result, by key, in the order the run made them."""

    def __init__(self, recorded: Trajectory | Iterable[Call], *, normalize: Normalize | None = None) -> None:
        self.normalize = normalize
        calls = recorded.calls if isinstance(recorded, Trajectory) else tuple(recorded)
        self._by_key: dict[str, list[Call]] = {}
        for call in calls:
            if call.result is not None:
                self._by_key.setdefault(call_key(call.name, call.input, normalize), []).append(call)

    def __len__(self) -> int:
        return sum(len(calls) for calls in self._by_key.values())

    def key(self, name: str, input: object) -> str:
        """``call_key`` with this journal's normalisation."""
        return call_key(name, input, self.normalize)

    def recorded(self, key: str, occurrence: int) -> Call | None:
        """The recorded call of ``key`` at ``occurrence`` (0: the first), if the run made it that often."""
        calls = self._by_key.get(key, ())
        return calls[occurrence] if occurrence < len(calls) else None


def match_call(journal: Journal, history: Sequence[Any], call: ToolCall) -> Match:
    """What answers ``call`` in a replay whose history (every message so far, the reply that made
    ``call`` included) is ``history``: its occurrence counts the calls of the same key that come
    before it in the history, and the recorded call at that occurrence answers it, if any."""
    key = journal.key(call.name, call.input)
    occurrence = 0
    for earlier in _calls(history):
        if earlier.id == call.id:
            break
        if journal.key(earlier.name, earlier.input) == key:
            occurrence += 1
    return Match(journal.recorded(key, occurrence), occurrence)


def _calls(history: Sequence[Any]) -> Iterable[ToolCall]:
    seen: set[str] = set()
    for message in history:
        for call in client_tool_calls(message):
            if call.id not in seen:  # a reply may be both the last message and the one handed over
                seen.add(call.id)
                yield call

"""The pure matching of a replay's calls to the record (``toolrunner.evals._journal``): a property
over generated records and replays, and the documented normalisation."""

from __future__ import annotations

from collections import Counter
from typing import Any, cast

import pytest
from hypothesis import given, strategies as st

from toolrunner import ToolCall
from toolrunner.evals import Call, Journal, call_key, match_call, normalize_input
from toolrunner.evals._trajectory import Trajectory, Turn

NAMES = st.sampled_from(["search", "email"])
INPUTS = st.sampled_from(
    [
        {"q": "paris"},
        {"q": " paris "},
        {"q": "rome"},
        {"n": 1},
        {"n": 1.0},
        {"a": 1, "b": 2},
        {"b": 2, "a": 1},
        {},
    ]
)
CALLS = st.lists(st.tuples(NAMES, INPUTS), max_size=8)


def assistant(calls: list[tuple[str, Any]], start: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": f"toolu_{start + index}", "name": name, "input": input}
            for index, (name, input) in enumerate(calls)
        ],
    }


@given(recorded=CALLS, replayed=st.lists(CALLS, max_size=3))
def test_a_replay_gets_each_recorded_result_at_most_once_and_only_for_the_same_call(
    recorded: list[tuple[str, Any]], replayed: list[list[tuple[str, Any]]]
) -> None:
    calls = [
        Call(f"rec_{index}", name, input, result=f"result {index}")
        for index, (name, input) in enumerate(recorded)
    ]
    journal = Journal(Trajectory("r", (Turn(0, "", tuple(calls)),), None))
    history: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    used: list[str] = []
    seen: Counter[str] = Counter()
    for turn in replayed:
        history.append(
            assistant(turn, start=sum(len(t) for t in replayed[: replayed.index(turn)]) + len(history) * 100)
        )
        for block in history[-1]["content"]:
            call = ToolCall(id=block["id"], name=block["name"], input=block["input"])
            match = match_call(journal, history, call)
            key = call_key(call.name, call.input)
            assert match.occurrence == seen[key]
            seen[key] += 1
            if match.recorded is not None:
                assert call_key(match.recorded.name, match.recorded.input) == key
                used.append(match.recorded.id)
        history.append({"role": "user", "content": "results"})
    assert len(used) == len(set(used))  # no recorded result answers two calls
    recorded_keys = Counter(call_key(name, input) for name, input in recorded)
    answered = Counter(call_key(call.name, call.input) for call in calls if call.id in used)
    assert answered == {
        key: min(count, recorded_keys[key]) for key, count in seen.items() if min(count, recorded_keys[key])
    }


def test_the_documented_normalisation() -> None:
    assert normalize_input("t", {"b": [1.0, " x "], "a": "e\u0301"}) == {"a": "\u00e9", "b": [1, "x"]}
    assert call_key("t", {"a": 1, "b": 2}) == call_key("t", {"b": 2.0, "a": 1})
    assert call_key("t", {"a": "x"}) != call_key("u", {"a": "x"})
    assert call_key("t", {"a": "x"}) != call_key("t", {"a": "X"})

    def without_time(name: str, value: object) -> object:
        assert isinstance(value, dict)
        return {"q": cast("dict[str, object]", value)["q"]}

    class Same:
        def __str__(self) -> str:
            return "x"

    with pytest.raises(TypeError, match="must be a JSON value"):  # not keyed by its str, as "x" is
        call_key("t", {"q": "x"}, lambda name, value: {"q": Same()})

    custom = Journal([Call("1", "t", {"at": "10:00", "q": "x"}, result="r")], normalize=without_time)
    assert custom.recorded(custom.key("t", {"at": "11:30", "q": "x"}), 0) is not None

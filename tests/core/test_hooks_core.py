"""The hooks' pure parts (``_core.hooks``, ``_core.hook_types``): the journal's record of a hook's
decision, the per-tool counts, what a save leaves out of them, and their JSON form."""

from __future__ import annotations

from toolrunner import CallStatus, RunState, ToolCall
from toolrunner._core.hook_types import counts_saveable
from toolrunner._core.hooks import call_hooked
from toolrunner._core.results import tool_result_block

A = ToolCall(id="a", name="search", input={"q": "a"})
B = ToolCall(id="b", name="search", input={"q": "b"})


def test_a_call_the_hooks_let_run_starts_and_counts() -> None:
    state = call_hooked(RunState(params={}), A, "rewritten", input={"q": "A"})
    record = state.calls["a"]
    assert (record.status, record.hook, record.hook_input) == (CallStatus.STARTED, "rewritten", {"q": "A"})
    assert state.call_counts == {"search": 1}


def test_a_call_the_hooks_stopped_is_answered_and_not_counted() -> None:
    block = tool_result_block("a", "no", is_error=True)
    state = call_hooked(RunState(params={}), A, "denied", result=block)
    assert (state.calls["a"].status, state.calls["a"].hook, state.calls["a"].result) == (
        CallStatus.FINISHED,
        "denied",
        block,
    )
    assert state.call_counts == {}


def test_a_save_leaves_out_the_count_of_a_start_it_leaves_out() -> None:
    state = call_hooked(call_hooked(RunState(params={}), A, "run"), B, "run")
    saved = counts_saveable(state, {"a": state.calls["a"]}, {"b": None})
    assert saved.call_counts == {"search": 1}
    assert set(saved.calls) == {"a"}


def test_the_records_and_the_counts_survive_json() -> None:
    state = call_hooked(RunState(params={}), A, "rewritten", input={"q": "A"})
    loaded = RunState.from_json(state.to_json())
    assert loaded.calls["a"] == state.calls["a"]
    assert loaded.call_counts == {"search": 1}
    plain = RunState(params={}).to_dict()
    assert "call_counts" not in plain

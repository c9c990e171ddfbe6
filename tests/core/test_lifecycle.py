"""The pure decisions of ``toolrunner._core.transitions``, driven directly (no I/O)."""

from __future__ import annotations

import re
import typing
from pathlib import Path
from typing import Any

import pytest
from anthropic.types import Message, StopReason, TextBlock, ToolUseBlock, Usage
from anthropic.types.beta import BetaStopReason
from hypothesis import given, strategies as st

from toolrunner import HistoryError, UnansweredToolUseError
from toolrunner._core.message_checks import check_history as check_answered
from toolrunner._core.messages import client_tool_calls, tool_result_ids
from toolrunner._core.stop_reasons import STOP_REASON_STEPS, StopReasonStep, calls_to_answer, step_for
from toolrunner._core.transitions import container_param
from toolrunner._core.types import ToolCall


def use(id: str, name: str = "t") -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": {}}


def result(id: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": id, "content": "ok"}


def assistant(*blocks: dict[str, Any], stop_reason: str | None = None) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": list(blocks)}
    if stop_reason is not None:
        message["stop_reason"] = stop_reason
    return message


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks) or "Go on."}


# -- the stop-reason table ------------------------------------------------------------------------


def test_table_covers_every_stop_reason_of_the_installed_sdk() -> None:
    sdk_values = set(typing.get_args(StopReason)) | set(typing.get_args(BetaStopReason))
    assert sdk_values, "the SDK's StopReason literal could not be read"
    assert sdk_values <= set(STOP_REASON_STEPS), sdk_values - set(STOP_REASON_STEPS)


@pytest.mark.parametrize(
    ("stop_reason", "step"),
    [
        ("tool_use", StopReasonStep.RUN_TOOLS),
        ("pause_turn", StopReasonStep.RESUME),
        ("compaction", StopReasonStep.RESUME),
        ("end_turn", StopReasonStep.STOP),
        ("stop_sequence", StopReasonStep.STOP),
        ("max_tokens", StopReasonStep.STOP),
        ("refusal", StopReasonStep.STOP),
        ("model_context_window_exceeded", StopReasonStep.STOP),
        ("a_reason_from_the_future", StopReasonStep.STOP),
        (None, StopReasonStep.STOP),
    ],
)
def test_step_for(stop_reason: str | None, step: StopReasonStep) -> None:
    assert step_for(stop_reason) is step


# -- reading messages -----------------------------------------------------------------------------


def test_client_tool_calls_reads_dicts_and_sdk_models_and_skips_server_tools() -> None:
    as_dict = assistant(
        {"type": "text", "text": "hi"},
        use("a", "x"),
        {"type": "server_tool_use", "id": "srv", "name": "web_search", "input": {}},
        use("b", "y"),
    )
    assert client_tool_calls(as_dict) == (ToolCall("a", "x", {}), ToolCall("b", "y", {}))
    message = Message(
        id="m",
        type="message",
        role="assistant",
        model="m",
        content=[
            TextBlock(type="text", text="x"),
            ToolUseBlock(type="tool_use", id="c", name="z", input={"k": 1}),
        ],
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(input_tokens=1, output_tokens=1),
    )
    assert client_tool_calls(message) == (ToolCall("c", "z", {"k": 1}),)
    assert client_tool_calls(message.to_param()) == (ToolCall("c", "z", {"k": 1}),)


def test_user_messages_and_string_content_have_no_tool_calls() -> None:
    assert client_tool_calls(user(use("a"))) == ()
    assert client_tool_calls({"role": "assistant", "content": "text"}) == ()
    assert tool_result_ids({"role": "user", "content": "text"}) == set()
    assert tool_result_ids(user(result("a"), {"type": "text", "text": "x"}, result("b"))) == {"a", "b"}


# -- which calls the runner answers ---------------------------------------------------------------


def test_the_replys_stop_reason_decides_for_its_own_calls() -> None:
    for stop_reason in STOP_REASON_STEPS:
        reply = assistant(use("a"), stop_reason=stop_reason)
        expected = (ToolCall("a", "t", {}),) if stop_reason == "tool_use" else ()
        assert calls_to_answer(reply, reply) == expected, stop_reason


def test_calls_of_another_message_are_always_answered() -> None:
    reply = assistant(use("paris"), stop_reason="max_tokens")
    london = assistant(use("london"))
    assert calls_to_answer(london, reply) == (ToolCall("london", "t", {}),)
    assert calls_to_answer(london, None) == (ToolCall("london", "t", {}),)
    assert calls_to_answer(None, reply) == ()


# -- checking a history before it is sent ---------------------------------------------------------


def test_check_answered_accepts_a_valid_history() -> None:
    check_answered([user(), assistant(use("a"), use("b")), user(result("b"), result("a")), assistant()])


def test_check_answered_names_the_message_and_ids() -> None:
    with pytest.raises(UnansweredToolUseError, match=r"messages\[1\].*\['b'\].*messages\[2\]"):
        check_answered([user(), assistant(use("a"), use("b")), user(result("a"))])
    with pytest.raises(UnansweredToolUseError, match=r"messages\[1\].*no message answers"):
        check_answered([user(), assistant(use("a"))])


def test_check_answered_starts_where_told() -> None:
    history = [user(), assistant(use("a")), user(), assistant()]
    with pytest.raises(UnansweredToolUseError):
        check_answered(history, 0)
    check_answered(history, 2)


# -- container ------------------------------------------------------------------------------------


def test_container_param() -> None:
    assert container_param(None, None) is None
    assert container_param(None, "c1") == "c1"
    assert container_param("mine", "c1") == "mine"
    assert container_param({"skills": []}, "c1") == {"skills": [], "id": "c1"}
    given_id: dict[str, Any] = {"id": "mine", "skills": []}
    assert container_param(given_id, "c1") is given_id


# -- properties -----------------------------------------------------------------------------------

ids = st.lists(st.text("abc", min_size=1, max_size=3), min_size=1, max_size=4, unique=True)


@given(ids, ids)
def test_check_answered_iff_the_ids_pair_up(used: list[str], answered: list[str]) -> None:
    history = [user(), assistant(*map(use, used)), user(*map(result, answered))]
    if set(used) == set(answered):
        check_answered(history)
    elif not set(used) <= set(answered):
        with pytest.raises(UnansweredToolUseError):
            check_answered(history)
    else:
        with pytest.raises(
            HistoryError, match=r"tool_result block\(s\) for .* messages\[1\] has no tool_use"
        ):
            check_answered(history)


def test_a_tool_result_first_in_the_history_has_nothing_to_answer() -> None:
    with pytest.raises(HistoryError, match=r"messages\[0\].*no message comes before it"):
        check_answered([user(result("a"))])


@given(ids, st.sampled_from([*STOP_REASON_STEPS, "unknown", None]), st.booleans())
def test_calls_to_answer_never_runs_a_stopped_replys_calls(
    used: list[str], stop_reason: str | None, same_message: bool
) -> None:
    reply = assistant(*map(use, used), stop_reason=stop_reason)
    last = reply if same_message else assistant(*map(use, used))
    calls = calls_to_answer(last, reply)
    if step_for(stop_reason) is StopReasonStep.RUN_TOOLS:
        assert [c.id for c in calls] == used
    else:
        # the same ids are the same message: keyed on ids, not identity
        assert calls == ()


def test_every_test_that_docs_lifecycle_cites_exists() -> None:
    """docs/lifecycle.md names the test behind each rule; a renamed test must not leave it stale."""
    root = Path(__file__).parents[1]
    cited = set(re.findall(r"`(test_\w+)`", (root.parent / "docs" / "lifecycle.md").read_text()))
    defined = {
        name for path in root.rglob("test_*.py") for name in re.findall(r"def (test_\w+)", path.read_text())
    }
    assert len(cited) > 20
    assert cited <= defined, sorted(cited - defined)

"""A hand-damaged sub-run in a saved state is refused at load with one readable message (audit F8):
"damaged" said once, with the sub-run's path; the problem not cut off mid-word; a sub-run saved by
a newer toolrunner says to upgrade; and what the schema cannot say (a call's input that is not
the object its tool_use block has, a sub-run on a call to another agent) is refused too."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.support.subagents import by_model, outer, paying_scripts
from toolrunner import RunState, StateError, ToolRunner
from toolrunner._core.state_json import _words  # pyright: ignore[reportPrivateUsage]
from toolrunner.testing import FakeMessagesAPI

pytestmark = pytest.mark.anyio

PATH = "toolu_o1 → outer → toolu_p1 → payer"


async def paused() -> dict[str, Any]:
    """The saved form of a run paused on ``pay`` two levels down."""
    fake = FakeMessagesAPI(responder=by_model(paying_scripts()))
    runner = ToolRunner(
        fake.async_client(),
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Pay my bill."}],
        tools=[outer()],
    )
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    return runner.state.to_dict()


def middle(data: dict[str, Any]) -> dict[str, Any]:
    """The outer sub-agent's state."""
    return data["calls"][0]["sub_run"]["state"]


def inner(data: dict[str, Any]) -> dict[str, Any]:
    """The payer's state, two levels down."""
    return middle(data)["calls"][0]["sub_run"]["state"]


def refused(data: dict[str, Any], edit: Callable[[dict[str, Any]], object]) -> str:
    changed = copy.deepcopy(data)
    edit(changed)
    with pytest.raises(StateError) as error:
        RunState.from_json(json.dumps(changed))
    return str(error.value)


async def test_a_damaged_field_two_levels_down_is_named_once_with_its_path() -> None:
    data = await paused()
    assert RunState.from_dict(data).to_dict() == data  # undamaged, it loads as it was

    message = refused(data, lambda d: inner(d)["calls"][0].__setitem__("status", 7))
    assert message == (
        f"the saved state (version 5) is damaged and cannot be loaded: in its sub-run at {PATH}, calls[0].status is "
        "7: input should be 'awaiting', 'approved', 'started' or 'finished'. Restore it from a copy, or correct "
        "that field as RunState.to_json() writes it."
    )
    message = refused(data, lambda d: middle(d).__setitem__("phase", "zzz"))
    assert message.count("damaged") == 1
    assert message.count("Restore it") == 1
    assert "in its sub-run at toolu_o1 → outer, phase is 'zzz': input should be 'ready'," in message
    message = refused(data, lambda d: inner(d).__setitem__("version", "5"))
    assert f"in its sub-run at {PATH}, version is '5': a saved state's version is a positive int" in message


async def test_a_sub_run_a_newer_toolrunner_saved_says_to_upgrade() -> None:
    data = await paused()
    edits: list[tuple[Callable[[dict[str, Any]], object], str]] = [
        (lambda d: inner(d).__setitem__("version", 999), PATH),
        (lambda d: middle(d).__setitem__("version", 999), "toolu_o1 → outer"),
    ]
    for edit, path in edits:
        message = refused(data, edit)
        assert message == (
            f"the state was saved by a newer toolrunner: its sub-run at {path} has state version 999, and this one "
            "reads up to 5; upgrade toolrunner to resume it."
        )


async def test_a_call_input_that_is_not_its_blocks_object_is_refused_at_load() -> None:
    data = await paused()
    message = refused(data, lambda d: inner(d)["calls"][0].__setitem__("input", "notadict"))
    assert (
        f"in its sub-run at {PATH}, calls[0].input is 'notadict': a call's input is an object, as its tool_use "
        "block has it" in message
    )
    message = refused(data, lambda d: d["calls"][0].__setitem__("input", {"job": "Pay 5."}))
    assert (
        "calls[0].input is {'job': 'Pay 5.'}, but the call has a sub-run: a sub-agent's call that runs one has the "
        'input {"task": string}' in message
    )

    # A model that erred (its tool_use block has that same input) is no damage: it loads, and the
    # call is answered with an error when it runs.
    erred = copy.deepcopy(data)
    inner(erred)["calls"][0]["input"] = "garbage"
    inner(erred)["reply"]["message"]["content"][0]["input"] = "garbage"
    assert RunState.from_dict(erred).to_dict() == erred


async def test_a_sub_run_on_a_call_to_another_agent_is_refused_at_load() -> None:
    data = await paused()
    message = refused(data, lambda d: middle(d)["calls"][0]["sub_run"].__setitem__("agent", "ghost"))
    assert (
        "in its sub-run at toolu_o1 → outer, calls[0].sub_run.agent is 'ghost', but the call is to 'payer': a "
        "sub-run's agent is the sub-agent its call calls" in message
    )


async def test_a_nested_call_with_its_parent_calls_id_is_refused_at_load() -> None:
    data = await paused()

    def same_id(changed: dict[str, Any]) -> None:
        nested = inner(changed)["calls"][0]
        nested["id"] = "toolu_p1"  # the id of the call that runs the payer's sub-run
        inner(changed)["reply"]["message"]["content"][-1]["id"] = "toolu_p1"

    message = refused(data, same_id)
    assert PATH in message
    assert "the id of the call that runs this sub-run" in message


def test_a_long_problem_is_cut_at_a_word_and_says_so() -> None:
    text = "word " * 200
    cut = _words(text, 400)
    assert cut.endswith("word [cut short]")
    assert len(cut) <= 400 + len(" [cut short]")
    assert _words("short", 400) == "short"

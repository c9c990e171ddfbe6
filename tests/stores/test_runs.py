"""Saved runs as a person sees them, in pure code (``toolrunner._stores.runs``): a run's status for every
phase, its summary columns, a listing's cursor, decisions on a saved state, and what a runner that
holds a run reads from a store that a person decided through.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from typing import Any

import pytest

from tests.support.helpers import MODEL, USER
from toolrunner import (
    ApprovalError,
    CallStatus,
    ParamsError,
    Phase,
    RunState,
    RunStatus,
    ToolCall,
    ToolInputError,
    run_status,
)
from toolrunner._core.approval import call_decided, calls_gated, turn_paused, turn_resumed
from toolrunner._core.messages import read_reply
from toolrunner._core.transitions import call_started
from toolrunner._stores.deciding import answered, approved, check_input, decisions_since, denied
from toolrunner._stores.listing import (
    cursor_after,
    cursor_moment,
    cursor_seconds,
    read_cursor,
    read_statuses,
    utc,
)
from toolrunner._stores.runs import SummaryColumns, waiting_calls

PAY = ToolCall("toolu_pay", "pay", {"amount": 5})
LOOK = ToolCall("toolu_look", "look", {"q": "x"})
SCHEMA = {
    "type": "object",
    "properties": {"amount": {"type": "integer", "maximum": 1000}, "to": {"type": "string"}},
    "required": ["amount"],
    "additionalProperties": False,
}
TOOL = {"name": "pay", "description": "Pay.", "input_schema": SCHEMA}
AT = "2025-06-01T12:00:00.000+00:00"


def reply() -> Any:
    return read_reply(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": [
                {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}
                for call in (PAY, LOOK)
            ],
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        },
        beta=False,
    )


def with_body() -> RunState:
    """A reply with the loop body: two calls, none in the journal yet."""
    return RunState(
        params={"model": MODEL, "max_tokens": 64}, messages=(USER,), phase=Phase.WITH_BODY, reply=reply()
    )


def waiting(*, paused: bool = True, tool: bool = True) -> RunState:
    """``pay`` waits for a decision (with its tool's definition, if ``tool``); ``look`` needs none."""
    state = calls_gated(with_body(), [PAY], tools={PAY.id: TOOL} if tool else None)
    return turn_paused(state) if paused else state


# -- status -------------------------------------------------------------------------------------------

FAILURE = {"type": "APIStatusError", "message": "overloaded"}


def states() -> dict[str, RunState]:
    """A state in each phase, with and without calls that wait."""
    ready = RunState(params={"model": MODEL}, messages=(USER,))
    return {
        "ready": ready,
        "received": ready.replace(phase=Phase.RECEIVED, reply=reply()),
        "streaming": ready.replace(phase=Phase.STREAMING),
        "with_body": with_body(),
        "with_body, a call waits": waiting(paused=False),
        "awaiting, a call waits": waiting(),
        "awaiting, every call decided": approved(waiting(), "r", PAY.id, by=None, at=AT),
        "awaiting, every call denied": denied(waiting(), "r", PAY.id, "No.", by=None, at=AT),
        "every call decided, the turn taken up": turn_resumed(
            approved(waiting(), "r", PAY.id, by=None, at=AT)
        ),
        "with_body, the waiting call started": call_started(
            call_decided(waiting(paused=False), PAY.id, "approved", by=None, at=AT), PAY
        ),
        "awaiting, a call waits and another runs": call_started(waiting(), LOOK),
        "steered while a call waits": waiting(paused=False).replace(steered=True),
        "done": ready.replace(phase=Phase.DONE, end_reason="model"),
        "done (closed) while a call waited": waiting().replace(phase=Phase.DONE, end_reason="closed"),
    }


EXPECTED = {
    "ready": RunStatus.RUNNING,
    "received": RunStatus.RUNNING,
    "streaming": RunStatus.RUNNING,
    "with_body": RunStatus.RUNNING,
    # A turn a runner goes on with (before it pauses, or once it took the turn up again) is the
    # runner's: its calls are decided when it pauses (a store would take decisions it loses).
    "with_body, a call waits": RunStatus.RUNNING,
    "awaiting, a call waits": RunStatus.AWAITING,
    # Paused and decided since, taken up by no runner: a resumer (or the app) goes on with it.
    "awaiting, every call decided": RunStatus.READY,
    "awaiting, every call denied": RunStatus.READY,
    # A runner claimed the turn (saved it as going on): it is that runner's now.
    "every call decided, the turn taken up": RunStatus.RUNNING,
    "with_body, the waiting call started": RunStatus.RUNNING,
    "awaiting, a call waits and another runs": RunStatus.RUNNING,
    "steered while a call waits": RunStatus.RUNNING,  # the body changed the history: no call of it waits
    "done": RunStatus.FINISHED,
    "done (closed) while a call waited": RunStatus.FINISHED,
}


def test_every_phase_is_covered() -> None:
    assert {state.phase for state in states().values()} == set(Phase)
    assert states().keys() == EXPECTED.keys()


@pytest.mark.parametrize("name", list(EXPECTED))
def test_a_runs_status_follows_from_its_state(name: str) -> None:
    state = states()[name]
    assert run_status(state) is EXPECTED[name]
    # A failed step makes any run that has not finished failed, whatever else it holds.
    failed = state.replace(failure=FAILURE)
    assert run_status(failed) is (RunStatus.FINISHED if state.phase is Phase.DONE else RunStatus.FAILED)
    assert bool(waiting_calls(state)) is (EXPECTED[name] is RunStatus.AWAITING)


def test_the_summary_columns_hold_the_summary() -> None:
    state = waiting().replace(failure=FAILURE)
    columns = SummaryColumns.of(state)
    assert columns.status == "failed"
    assert columns.end_reason == "awaiting_approval"
    assert columns.turns == 0
    assert columns.cost == "0"
    summary = columns.summary("r", utc(1.0), utc(2.0))
    assert summary.waiting == (ToolCall(PAY.id, "pay", {"amount": 5}),)
    assert summary.failure == FAILURE
    assert (summary.created.timestamp(), summary.updated.timestamp()) == (1.0, 2.0)
    plain = SummaryColumns.of(with_body().replace(cost=None))
    assert plain.waiting is None
    assert plain.cost is None
    assert plain.failure is None


def test_statuses_are_read_from_names_and_values() -> None:
    assert read_statuses(None) is None
    assert read_statuses("awaiting") == {RunStatus.AWAITING}
    assert read_statuses([RunStatus.FAILED, "finished"]) == {RunStatus.FAILED, RunStatus.FINISHED}
    with pytest.raises(ParamsError, match="'paused' is not a run status; use one of 'running', 'awaiting'"):
        read_statuses(["paused"])
    for item in (["awaiting", 5], [None], [["awaiting"]]):
        with pytest.raises(ParamsError, match=r"is not a run status; use one of"):
            read_statuses(item)  # pyright: ignore[reportArgumentType]
    for given in (5, 2.5, b"awaiting", {"awaiting": True}, object()):
        with pytest.raises(
            ParamsError, match=r"^status takes a RunStatus, a status's name, or several of them"
        ):
            read_statuses(given)  # pyright: ignore[reportArgumentType]
    assert read_statuses(iter(["ready"])) == {RunStatus.READY}


def forged_cursor(created: str, run_id: str) -> str:
    """A cursor as a listing writes one, of any text (a lone surrogate as its JSON escape)."""
    return base64.urlsafe_b64encode(json.dumps([created, run_id]).encode()).decode().rstrip("=")


def test_a_cursor_holds_its_key_and_refuses_anything_else() -> None:
    cursor = cursor_after("1750000000.25", "run/ü 7")
    assert read_cursor(cursor, str) == ("1750000000.25", "run/ü 7")
    assert read_cursor(cursor, cursor_seconds) == (1750000000.25, "run/ü 7")
    assert read_cursor(None, str) is None
    for bad in ["", "!!!", cursor_after("x", "y")[:-2], "WzEsMl0"]:  # the last: [1,2]
        with pytest.raises(ParamsError, match="not a cursor"):
            read_cursor(bad, str)
    # Cursors that decode, with a key the store cannot use, or a run id no store can be asked for.
    moment = "2025-06-15T14:08:40.250000+00:00"
    assert read_cursor(cursor_after(moment, "r"), cursor_moment) == (cursor_moment(moment), "r")
    for key, bad in [
        (cursor_seconds, cursor_after(moment, "r")),  # PostgreSQL's, given to SQLite
        (cursor_seconds, cursor_after("nan", "r")),
        (cursor_seconds, cursor_after("1e999", "r")),
        (cursor_moment, cursor_after("1750000000.25", "r")),  # SQLite's, given to PostgreSQL
        (cursor_moment, cursor_after("2025-06-15T14:08:40", "r")),  # no time zone
        (cursor_moment, cursor_after(moment, "r\x00")),
        (cursor_seconds, forged_cursor("1.0", "caf\udce9")),
    ]:
        with pytest.raises(ParamsError, match="not a cursor of this store's listing"):
            read_cursor(bad, key)


# -- decisions on a saved state ----------------------------------------------------------------------


def test_an_approval_records_who_and_when_and_an_edited_input() -> None:
    state = approved(waiting(), "r", PAY.id, input={"amount": 7, "to": "Bob"}, by="ada", at=AT)
    record = state.calls[PAY.id]
    assert record.status is CallStatus.APPROVED
    assert (record.decision, record.decided_by, record.decided_at) == ("approved", "ada", AT)
    assert record.approved_input == {"amount": 7, "to": "Bob"}
    assert record.tool == TOOL
    assert state.phase is Phase.AWAITING  # the runner goes on when it resumes
    assert waiting_calls(state) == ()


@pytest.mark.parametrize(
    ("edited", "problem"),
    [
        ({"amount": "5"}, "amount: '5' is not of type 'integer'"),
        ({"amount": 5000}, "amount: 5000 is greater than the maximum of 1000"),
        ({}, "(the input): 'amount' is a required property"),
        ({"amount": 5, "extra": 1}, "Additional properties are not allowed ('extra' was unexpected)"),
        ("five", "must be a JSON object"),
        ({"amount": {1, 2}}, "cannot be saved"),
    ],
)
def test_an_edited_input_that_does_not_fit_the_schema_is_refused_naming_the_problem(
    edited: object, problem: str
) -> None:
    with pytest.raises(ToolInputError) as raised:
        approved(waiting(), "r", PAY.id, input=edited, by=None, at=AT)
    assert problem in str(raised.value)


def test_an_edited_input_needs_a_schema_that_is_one() -> None:
    with pytest.raises(ToolInputError, match="without its tool's input schema"):
        approved(waiting(tool=False), "r", PAY.id, input={"amount": 1}, by=None, at=AT)
    broken = dataclasses.replace(waiting().calls[PAY.id], tool={**TOOL, "input_schema": {"type": "nope"}})
    with pytest.raises(ToolInputError, match="not a valid JSON schema"):
        check_input(broken, {"amount": 1})


def test_a_denial_and_an_answer_are_tool_results_as_the_runner_makes_them() -> None:
    state = denied(waiting(), "r", PAY.id, None, by="ada", at=AT)
    record = state.calls[PAY.id]
    assert record.status is CallStatus.FINISHED
    assert record.result is not None
    assert record.result.get("is_error") is True
    assert "A person denied this call to 'pay'; it did not run." in str(record.result.get("content"))
    state = answered(waiting(), "r", PAY.id, ["done", 1], by=None, at=AT)
    result = state.calls[PAY.id].result
    assert result == {"type": "tool_result", "tool_use_id": PAY.id, "content": '["done", 1]'}
    with pytest.raises(ApprovalError, match="needs a reason"):
        denied(waiting(), "r", PAY.id, "", by=None, at=AT)


def test_a_call_that_does_not_wait_cannot_be_decided() -> None:
    with pytest.raises(
        ApprovalError,
        match=r"no call 'toolu_look' waiting for a decision; the calls that wait are \['toolu_pay'\]",
    ):
        approved(waiting(), "r", LOOK.id, by=None, at=AT)
    with pytest.raises(ApprovalError, match="no call of the run 'r' waits for a decision"):
        approved(with_body(), "r", PAY.id, by=None, at=AT)
    decided = denied(waiting(), "r", PAY.id, "No.", by="ada", at=AT)
    with pytest.raises(
        ApprovalError, match=re.escape(f"the call 'toolu_pay' of run 'r' was denied by 'ada' at {AT};")
    ):
        approved(decided, "r", PAY.id, by="bob", at=AT)


# -- what a runner that holds the run reads -------------------------------------------------------------


def test_decisions_taken_in_the_store_are_read_back_and_nothing_else_passes_for_one() -> None:
    held = waiting()
    assert decisions_since(held, held) == {}
    stored = approved(held, "r", PAY.id, by="ada", at=AT)
    assert decisions_since(held, stored) == {PAY.id: stored.calls[PAY.id]}
    # Anything else that differs is another runner's doing.
    assert decisions_since(held, stored.replace(messages=(*stored.messages, USER))) is None
    assert decisions_since(held, stored.replace(phase=Phase.DONE, end_reason="closed")) is None
    assert decisions_since(held, stored.replace(params={"model": "other"})) is None
    assert decisions_since(held, call_started(stored, PAY)) is None
    assert decisions_since(held, stored.replace(calls={})) is None
    # A decision on a call the held state does not have waiting is not one a person took through the store.
    already = approved(held, "r", PAY.id, by="me", at=AT)
    assert decisions_since(already, denied(held, "r", PAY.id, "No.", by="ada", at=AT)) is None

"""Decisions taken through a store, in pure code: a decision is a transition of the saved state
(``approved``, ``denied``, ``answered``, over ``_core.approval.call_decided``), which the store
saves as the run's next save, so that a runner holding the run sees its sequence move, and of two
deciders only one can win; an edited input is checked against the schema saved with its call; and
what a runner that holds the run takes over from the store (``decisions_since``).
"""

from __future__ import annotations

import importlib
import json
import math
import sys
from collections.abc import Iterable, Mapping
from typing import Any, NoReturn, Protocol, Unpack, cast

from .._core.approval import DecisionDetails, call_decided
from .._core.errors import ApprovalError, StateError, ToolInputError
from .._core.ids import check_by, check_reason, check_run_id
from .._core.nested import decided_in_tree, record_in_tree
from .._core.results import tool_result_block
from .._core.run import denied_reason
from .._core.state import CallRecord, CallStatus, Decision, Phase, RunState, plain_data
from .._core.tree_audit import decisions_in_tree
from .._tools.approvals import answer_block
from .._tools.results import DEFAULT_ADAPTER
from .formats import format_checker, with_pattern
from .runs import waiting_calls

__all__ = [
    "answered",
    "approved",
    "check_decision",
    "check_input",
    "decisions_since",
    "denied",
    "input_problems",
    "parse_json",
]


def check_decision(run_id: object, tool_use_id: object, by: object) -> str | None:
    """What every decision through a store is given, checked before the run is read: the run's id
    (``ParamsError``), the call's id, and who decides (``ApprovalError``); ``by`` as checked.

    Raises:
        ParamsError: ``run_id`` is not a run id.
        ApprovalError: ``tool_use_id`` is not a call's id, or ``by`` is not who decided (see
            ``_core.ids.check_by``); nothing is decided.
    """
    check_run_id(run_id)
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise ApprovalError(
            f"tool_use_id must be the id of a waiting call, as a str (toolu_...), not {tool_use_id!r}; nothing "
            "was decided."
        )
    return check_by(by)


def _waiting_record(state: RunState, run_id: str, tool_use_id: str) -> CallRecord:
    """The record of the call a person decides (the run's own, or one inside a sub-agent's run),
    or an ``ApprovalError`` that says why it cannot be decided (and who decided it, when someone
    did)."""
    record = record_in_tree(state, tool_use_id)
    waiting = waiting_calls(state)
    if record is not None and record.decision is not None:
        _decided_already(run_id, tool_use_id, record.decision, record.decided_by, record.decided_at)
    if not any(call.id == tool_use_id for call in waiting):
        for audit in reversed(decisions_in_tree(state)):  # decided in an earlier turn, or its turn went on
            if audit.call.id == tool_use_id:
                _decided_already(run_id, tool_use_id, audit.decision, audit.by, audit.at)
        if record is not None and record.status is CallStatus.AWAITING and state.phase is not Phase.DONE:
            raise ApprovalError(
                f"the run {run_id!r} is going on in a runner (it has not paused for {tool_use_id!r} yet, or has "
                "taken the paused turn up again), so its calls cannot be decided through the store now; decide "
                "once the run waits (status 'awaiting'), or in the runner itself."
            )
        if not waiting:
            raise ApprovalError(
                f"no call of the run {run_id!r} waits for a decision, so {tool_use_id!r} cannot be decided; find "
                "the runs that wait with list_runs(status='awaiting') or `toolrunner runs list --status awaiting`."
            )
        raise ApprovalError(
            f"the run {run_id!r} has no call {tool_use_id!r} waiting for a decision; the calls that wait are "
            f"{[call.id for call in waiting]!r}."
        )
    assert record is not None
    return record


def _decided_already(
    run_id: str, tool_use_id: str, decision: str, by: str | None, at: str | None
) -> NoReturn:
    """Raise the ``ApprovalError`` of a call someone decided already: who, and when."""
    who = "" if by is None else f" by {by!r}"
    when = "" if at is None else f" at {at}"
    raise ApprovalError(
        f"the call {tool_use_id!r} of run {run_id!r} was {decision}{who}{when}; it cannot be decided again."
    )


def approved(
    state: RunState, run_id: str, tool_use_id: str, *, input: object = None, by: str | None, at: str
) -> RunState:
    """``state`` with a waiting call approved; with ``input``, to run with that input instead,
    checked against the input schema saved with the call.

    Raises:
        ApprovalError: The call does not wait for a decision (the message says who decided it).
        ToolInputError: ``input`` does not fit the tool's schema, or the schema is not saved.
    """
    record = _waiting_record(state, run_id, tool_use_id)
    if input is not None:
        check_input(record, input)
    return _decided(state, tool_use_id, "approved", approved_input=input, by=by, at=at, via="store")


def denied(
    state: RunState, run_id: str, tool_use_id: str, reason: str | None, *, by: str | None, at: str
) -> RunState:
    """``state`` with a waiting call denied: the model reads ``reason`` as its error result (with
    ``None``, the runner's own wording for a call a person denied)."""
    if reason is not None:
        reason = check_reason(tool_use_id, reason)
    record = _waiting_record(state, run_id, tool_use_id)
    if reason is None:
        reason = denied_reason(record.call)
    block = tool_result_block(tool_use_id, reason, is_error=True)
    return _decided(state, tool_use_id, "denied", result=block, by=by, at=at, via="store")


def answered(
    state: RunState,
    run_id: str,
    tool_use_id: str,
    result: object,
    *,
    is_error: bool = False,
    by: str | None,
    at: str,
) -> RunState:
    """``state`` with a waiting call answered with ``result`` (made into tool_result content as a
    tool's return value is, by the default result adapter; a ``ToolError`` is an error result).

    Raises:
        ApprovalError: The call does not wait, or ``result`` cannot be a tool result.
    """
    _waiting_record(state, run_id, tool_use_id)
    block = answer_block(DEFAULT_ADAPTER, tool_use_id, result, is_error=is_error)
    return _decided(state, tool_use_id, "answered", result=block, by=by, at=at, via="store")


def _decided(
    state: RunState, tool_use_id: str, decision: Decision, **details: Unpack[DecisionDetails]
) -> RunState:
    """The decision on the call, of the run's own turn or inside a sub-run (``_core.nested``)."""
    if tool_use_id in state.calls:
        return call_decided(state, tool_use_id, decision, **details)
    return decided_in_tree(state, tool_use_id, decision, **details)[0]


def check_input(record: CallRecord, input: object) -> None:
    """Check an edited input against the input schema saved with its call (``record.tool``).

    Raises:
        ToolInputError: The input is not a JSON object, does not fit the schema, or no schema was
            saved with the call (a process without the tools cannot check it then).
    """
    problems = input_problems(record, input)
    if problems:
        call = record.call
        listed = "; ".join(f"{path or '(the input)'}: {message}" for path, message in problems[:5])
        raise ToolInputError(
            f"the edited input of {call.id!r} does not fit the input schema of {call.name!r}: {listed}. Fix the "
            "input, or approve the call as it is."
        )


def input_problems(record: CallRecord, input: object) -> list[tuple[str, str]]:
    """What in an edited input does not fit the input schema saved with its call: each problem's
    place in the input (``"items/0/sku"``; ``""`` for the input as a whole) and its message, in the
    order of their places; none if it fits.

    Raises:
        ToolInputError: The input cannot be checked: it is not a JSON object, or no valid schema was
            saved with the call (a process without the tools cannot check it then).
    """
    call = record.call
    try:
        data: object = plain_data(input, "the input")
    except StateError as error:
        raise ToolInputError(f"the edited input of {call.id!r} cannot be saved: {error}") from None
    if not isinstance(data, dict):
        raise ToolInputError(
            f"the edited input of {call.id!r} must be a JSON object (the tool's arguments), not {input!r}."
        )
    schema: object = None if record.tool is None else record.tool.get("input_schema")
    if not isinstance(schema, Mapping):
        raise ToolInputError(
            f"the call {call.id!r} to {call.name!r} was saved without its tool's input schema, so an edited "
            "input cannot be checked here; approve it as it is, deny it, or approve the edit in the app "
            "(runner.approve(..., input=...)), which has the tool."
        )
    schema = cast("Mapping[str, Any]", schema)
    jsonschema: Any = importlib.import_module("jsonschema")  # imported when used: most runs never edit one
    validator_class: _ValidatorClass = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    try:
        validator_class.check_schema(schema)
    except jsonschema.SchemaError as error:
        raise ToolInputError(
            f"the input schema saved with {call.id!r} is not a valid JSON schema ({error.message}); approve the "
            "call as it is, or deny it."
        ) from None
    # Formats (date-time, uuid, ...) and patterns as the tool's pydantic validation reads them (formats).
    checking: _ValidatorClass = with_pattern(
        cast(Any, validator_class)
    )  # a class: hashable, as the cache needs
    errors = sorted(
        checking(schema, format_checker=format_checker()).iter_errors(cast(object, data)),
        key=lambda error: [str(part) for part in error.path],
    )
    return [("/".join(str(part) for part in error.path), error.message) for error in errors]


def parse_json(text: str) -> object:
    """``text`` as JSON, strictly: what JSON can carry only (no ``NaN``, no ``Infinity``, no number
    too large for a float), nested no deeper than Python's parser reads.

    Raises:
        ValueError: It is not such JSON, saying why.
    """
    try:
        return json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except RecursionError:
        raise ValueError(
            f"it is nested too deeply (more than about {sys.getrecursionlimit()} levels)"
        ) from None


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not a JSON number; give a finite number")


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"{text} is too large for a number JSON carries")
    return number


class _SchemaProblem(Protocol):
    message: str
    path: Iterable[object]


class _Validator(Protocol):
    def iter_errors(self, instance: object) -> Iterable[_SchemaProblem]: ...


class _ValidatorClass(Protocol):
    def __call__(self, schema: Mapping[str, Any], *, format_checker: Any) -> _Validator: ...
    def check_schema(self, schema: Mapping[str, Any]) -> None: ...


# -- what a runner that holds the run reads from the store -----------------------------------------


def decisions_since(held: RunState, stored: RunState) -> dict[str, CallRecord] | None:
    """The decisions taken through the store on calls that wait in ``held``, if ``stored`` differs
    from ``held`` by those alone; ``None`` if anything else differs (another runner went on with
    the run). An empty dict: the two are the same run state.

    A runner that holds a paused run reads the store when the turn goes on (``Saver.decisions``):
    it takes over the decisions this returns and saves on; with ``None`` it stops.
    """
    if held.calls.keys() != stored.calls.keys():
        return None
    decided: dict[str, CallRecord] = {}
    waiting = {call.id for call in waiting_calls(held)}
    for tool_use_id, mine in held.calls.items():
        theirs = stored.calls[tool_use_id]
        if _record(theirs) == _record(mine):
            if mine.sub_run is None or theirs.sub_run is None:
                if mine.sub_run is not theirs.sub_run:
                    return None
                continue
            # A sub-agent's call: the decisions taken through the store inside its sub-run.
            if mine.sub_run.agent != theirs.sub_run.agent:
                return None
            nested = decisions_since(mine.sub_run.state, theirs.sub_run.state)
            if nested is None:
                return None
            decided.update(nested)
            continue
        # A decision as a decider leaves it: approved and not started, or answered (denied) at once.
        fresh = CallStatus.APPROVED if theirs.decision == "approved" else CallStatus.FINISHED
        if (
            tool_use_id not in waiting
            or theirs.decision is None
            or theirs.status is not fresh
            or theirs.call != mine.call
        ):
            return None
        decided[tool_use_id] = theirs
    # The audit grows by the decisions' entries (those are taken over with the decisions).
    if stored.decisions[: len(held.decisions)] != held.decisions:
        return None
    if (
        len(held.messages) != len(stored.messages)
        or held.usage != stored.usage
        or {**held.to_dict(), "calls": None, "decisions": None}
        != {**stored.to_dict(), "calls": None, "decisions": None}
    ):
        return None
    return decided


def _record(record: CallRecord) -> dict[str, Any]:
    return {
        "call": record.call,
        "status": record.status,
        "result": plain_data(record.result, "result"),
        "approved_input": plain_data(record.approved_input, "approved_input"),
        "decision": record.decision,
        "decided_by": record.decided_by,
        "decided_at": record.decided_at,
    }

"""Saved runs as a person sees them, in pure code: a run's status and summary, the filters of a
listing, and decisions taken through a store, with no I/O.

A run's status is a function of its state alone (``run_status``), so every store computes it the
same way and writes it beside the state, in the same transaction. A decision through a store is a
transition of the saved state (``approved``, ``denied``, ``answered``, over
``_lifecycle.call_decided``); the store saves its result as the run's next save, so that a
runner holding the run sees its sequence move, and of two deciders only one can win.
"""

from __future__ import annotations

import base64
import binascii
import enum
import importlib
import json
import math
import sys
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Protocol, TypeVar, cast

from .._core.errors import ApprovalError, ParamsError, StateError, ToolInputError
from .._core.ids import check_by, check_run_id, storable_text
from .._core.results import tool_result_block
from .._core.run import denied_reason
from .._core.state import CallRecord, CallStatus, Phase, RunState, plain_data
from .._core.transitions import awaiting, call_decided, pending_calls
from .._core.types import EndReason, ToolCall
from .._core.unicode import store_json
from .._tools.approvals import answer_block, check_reason
from .._tools.results import DEFAULT_ADAPTER
from .formats import format_checker

K = TypeVar("K")

__all__ = [
    "PRUNE_KEEPS",
    "Lease",
    "RunPage",
    "RunStatus",
    "RunSummary",
    "SummaryColumns",
    "answered",
    "approved",
    "check_decision",
    "check_input",
    "check_limit",
    "check_time",
    "cursor_after",
    "cursor_moment",
    "cursor_seconds",
    "damaged_summary",
    "decided_at",
    "decisions_since",
    "denied",
    "input_problems",
    "parse_json",
    "pruned_statuses",
    "read_cursor",
    "read_statuses",
    "run_status",
    "summary_columns",
    "utc",
    "waiting_calls",
]


class RunStatus(enum.Enum):
    """Where a saved run stands, as its state says (``run_status``)."""

    RUNNING = "running"
    """Neither finished nor waiting: a runner is driving it, or it stopped (a crash, a deploy) and
    goes on when it is resumed; the time it was last saved tells which."""
    AWAITING = "awaiting"
    """Calls wait for a decision (``RunSummary.waiting``): approve, deny or answer them."""
    READY = "ready"
    """Paused, and every call that waited is decided: the run goes on once a runner takes it up (a
    ``Resumer``, ``ToolRunner.resume``, or a runner that holds it, iterated again)."""
    FINISHED = "finished"
    """The loop ended; ``end_reason`` says why."""
    FAILED = "failed"
    """The last step raised (``RunSummary.failure``), and the run has not gone on since."""


def waiting_calls(state: RunState) -> tuple[ToolCall, ...]:
    """The calls of the current turn that wait for a decision, while the run is paused for them:
    none while a runner goes on with the turn (before it pauses, and from when it takes the
    turn up again), and none once the loop ended."""
    if state.phase is not Phase.AWAITING or not any(
        record.status is CallStatus.AWAITING for record in state.calls.values()
    ):
        return ()
    if any(record.status is CallStatus.STARTED for record in state.calls.values()):
        return ()  # a call runs (or ran when its runner died): the turn is not paused
    return awaiting(state, pending_calls(state))


def run_status(state: RunState) -> RunStatus:
    """The status of a run in ``state``: finished once the loop ended; else failed if its last
    step raised; else awaiting if calls wait for a decision; else ready if it is paused with every
    call decided (none waits, none started: no runner has taken the turn up); else running."""
    return _status(state, waiting_calls(state))


def _status(state: RunState, waiting: tuple[ToolCall, ...]) -> RunStatus:
    if state.phase is Phase.DONE:
        return RunStatus.FINISHED
    if state.failure is not None:
        return RunStatus.FAILED
    if waiting:
        return RunStatus.AWAITING
    if state.phase is Phase.AWAITING and all(
        record.status in (CallStatus.APPROVED, CallStatus.FINISHED) for record in state.calls.values()
    ):
        # Paused, and decided since: a runner that takes the turn up saves it as going on first
        # (phase WITH_BODY: running), so this holds only while nothing has taken it up.
        return RunStatus.READY
    return RunStatus.RUNNING


@dataclass(frozen=True, slots=True)
class Lease:
    """A resumer's hold on a run (``RunSummary.lease``; see ``_leases``).

    Attributes:
        owner: The resumer that holds it (``Resumer.owner``: host, process and a random part).
        expires: When it runs out (UTC), unless renewed; after that, another resumer may take the
            run over.
    """

    owner: str
    expires: datetime


@dataclass(frozen=True, slots=True)
class RunSummary:
    """One saved run, as a store lists it.

    Attributes:
        run_id: The run's name in the store.
        status: Where it stands.
        end_reason: Why the loop ended (or ``"awaiting_approval"``: it paused), if it did.
        waiting: The calls that wait for a decision: their id, tool and input.
        created: When the run was first saved (UTC).
        updated: When it was last saved (UTC).
        turns: How many requests got a reply.
        cost: What they cost in US dollars; ``None`` once one had no price.
        failure: The error that stopped the last step (``{"type": ..., "message": ...}``), if any.
        lease: The lease of the resumer that holds the run (or held it, and stopped: it ran out),
            if one does.
    """

    run_id: str
    status: RunStatus
    end_reason: EndReason | None
    waiting: tuple[ToolCall, ...]
    created: datetime
    updated: datetime
    turns: int
    cost: Decimal | None
    failure: Mapping[str, str] | None = None
    lease: Lease | None = None


@dataclass(frozen=True, slots=True)
class RunPage:
    """One page of a listing: the runs, newest first, and the cursor of the next page (``None``
    after the last)."""

    runs: tuple[RunSummary, ...]
    cursor: str | None


# -- the summary columns ----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SummaryColumns:
    """What a store writes beside the state, in the same transaction, to list runs without loading
    them: plain values a SQL column holds (JSON text for ``waiting`` and ``failure``)."""

    status: str
    end_reason: str | None
    waiting: str | None
    turns: int
    cost: str | None
    failure: str | None

    @classmethod
    def of(cls, state: RunState) -> SummaryColumns:
        calls = waiting_calls(state)
        waiting = None
        if calls:
            waiting = store_json(
                [{"id": call.id, "name": call.name, "input": _input_data(call)} for call in calls]
            )
        return cls(
            status=_status(state, calls).value,
            end_reason=state.end_reason,
            waiting=waiting,
            turns=state.requests_sent,
            cost=None if state.cost is None else str(state.cost),
            failure=None if state.failure is None else store_json(dict(state.failure)),
        )

    def summary(
        self, run_id: str, created: datetime, updated: datetime, lease: Lease | None = None
    ) -> RunSummary:
        """The summary these columns make, with the store's times (and the run's lease).

        Raises:
            ValueError: A column does not hold what a store writes there (changed by hand, or
                damaged); the message names the column.
        """
        column = "status"
        try:
            status = RunStatus(self.status)
            column = "end_reason"
            if self.end_reason is not None and not isinstance(self.end_reason, str):
                raise TypeError(f"{self.end_reason!r} is not text")
            column = "waiting"
            waiting = () if self.waiting is None else tuple(_call(item) for item in _json_list(self.waiting))
            column = "turns"
            if isinstance(self.turns, bool) or not isinstance(self.turns, int) or self.turns < 0:
                raise TypeError(f"{self.turns!r} is not a count")
            column = "cost"
            cost = None if self.cost is None else Decimal(self.cost)
            if cost is not None and not cost.is_finite():
                raise ValueError(f"{self.cost!r} is not an amount")
            column = "failure"
            failure = None if self.failure is None else _failure(self.failure)
        except (ValueError, TypeError, KeyError, ArithmeticError, RecursionError) as error:
            raise ValueError(
                f"its {column} column holds what a store does not write there ({error})"
            ) from None
        return RunSummary(
            run_id=run_id,
            status=status,
            end_reason=cast("EndReason | None", self.end_reason),
            waiting=waiting,
            created=created,
            updated=updated,
            turns=self.turns,
            cost=cost,
            failure=failure,
            lease=lease,
        )


def _json_list(text: object) -> list[object]:
    data: object = json.loads(cast(str, text))
    if not isinstance(data, list):
        raise TypeError(f"{text!r} is not a list")
    return cast("list[object]", data)


def _call(item: object) -> ToolCall:
    if not isinstance(item, dict):
        raise TypeError(f"{item!r} is not a call")
    call = cast("dict[str, object]", item)
    if not isinstance(call["id"], str) or not isinstance(call["name"], str):
        raise TypeError(f"{item!r} is not a call")
    return ToolCall(call["id"], call["name"], call["input"])


def _failure(text: object) -> dict[str, str]:
    data: object = json.loads(cast(str, text))
    if not isinstance(data, dict) or not all(
        isinstance(value, str) for value in cast("dict[str, object]", data).values()
    ):
        raise TypeError(f"{text!r} is not an error's type and message")
    return cast("dict[str, str]", data)


def damaged_summary(
    run_id: str, created: datetime, updated: datetime, problem: str, where: str
) -> RunSummary:
    """What a store lists for a run whose summary row it cannot read (changed by hand, or
    damaged): the run, as failed, its failure a ``StateError`` that names it, ``where`` it is and
    what is wrong, so that one damaged row neither hides the others nor stops a listing."""
    message = (
        f"the summary of the saved run {run_id!r} in {where} is damaged: {problem}; the run's next save writes "
        "it again (resume the run), or delete the run"
    )
    return RunSummary(
        run_id=run_id,
        status=RunStatus.FAILED,
        end_reason=None,
        waiting=(),
        created=created,
        updated=updated,
        turns=0,
        cost=None,
        failure={"type": StateError.__name__, "message": message},
    )


def summary_columns(state: RunState) -> SummaryColumns:
    """The summary columns of ``state``."""
    return SummaryColumns.of(state)


def _input_data(call: ToolCall) -> object:
    try:
        return plain_data(call.input, "input")
    except StateError:  # the state could not be saved either; the summary shows what it can
        return repr(call.input)


# -- listing ----------------------------------------------------------------------------------------


def read_statuses(status: RunStatus | str | Iterable[RunStatus | str] | None) -> frozenset[RunStatus] | None:
    """The statuses a listing keeps (``None``: all), from a status, its name, or several.

    Raises:
        ParamsError: A name that is no status.
    """
    if status is None:
        return None
    items: Iterable[RunStatus | str] = [status] if isinstance(status, RunStatus | str) else status
    found: set[RunStatus] = set()
    for item in items:
        if isinstance(item, RunStatus):
            found.add(item)
            continue
        try:
            found.add(RunStatus(item))
        except ValueError:
            names = ", ".join(repr(status.value) for status in RunStatus)
            raise ParamsError(f"{item!r} is not a run status; use one of {names}.") from None
    return frozenset(found)


PRUNE_KEEPS: frozenset[RunStatus] = frozenset({RunStatus.AWAITING, RunStatus.READY})
"""The statuses a prune keeps unless its ``status=`` names them: runs that wait for a person, and
runs a person decided that wait to be resumed. A routine clean-up by age
(``prune_runs(updated_before=...)``, ``runs prune --older-than 30d``) must not delete an approval
that has waited a month, nor one decided and not yet taken up."""


def pruned_statuses(status: RunStatus | str | Iterable[RunStatus | str] | None) -> frozenset[RunStatus]:
    """The statuses a prune deletes: those named, or, with none named, every status but
    ``PRUNE_KEEPS``.

    Raises:
        ParamsError: A name that is no status.
    """
    named = read_statuses(status)
    return frozenset(RunStatus) - PRUNE_KEEPS if named is None else named


def check_time(value: datetime | None, name: str, *, required: bool = False) -> datetime | None:
    """``value``, checked to be timezone-aware (a naive time is ambiguous across machines) and a
    time every store can compare in UTC (``0001-01-01T00:00:00+01:00`` is in the year 0 there),
    before anything is read or deleted.

    Raises:
        ParamsError: It is not; the message names it by ``name``.
    """
    if value is None and not required:
        return None
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise ParamsError(
            f"{name} must be a timezone-aware datetime, not {value!r}; for example datetime.now(UTC) - "
            "timedelta(days=7)."
        )
    try:
        value.astimezone(UTC).timestamp()
    except (OverflowError, ValueError, OSError):
        raise ParamsError(
            f"{name} {value.isoformat()} is not a time in UTC's years 1 to 9999; give a time within them."
        ) from None
    return value


def check_limit(limit: int) -> int:
    if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 1000:
        raise ParamsError(f"limit must be an int from 1 to 1000, not {limit!r}.")
    return limit


def cursor_after(created: str, run_id: str) -> str:
    """The cursor of the page after the run with that creation key (as the store orders it)."""
    text = json.dumps([created, run_id], ensure_ascii=False, separators=(",", ":"))
    return base64.urlsafe_b64encode(text.encode()).decode().rstrip("=")


def read_cursor(cursor: str | None, key: Callable[[str], K]) -> tuple[K, str] | None:
    """The creation key and run id a cursor holds (``None`` for the first page), the key read by
    the store's ``key`` (``cursor_seconds``, ``cursor_moment``), which raises ``ValueError`` for a
    key it cannot use: all is checked here, before the store is asked.

    Raises:
        ParamsError: Not a cursor this store's listing gave (forged, damaged, or another store's).
    """
    if cursor is None:
        return None
    try:
        text = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
        created, run_id = json.loads(text)
        if isinstance(created, str) and storable_text(run_id):
            return key(created), run_id
    except (ValueError, TypeError, OverflowError, binascii.Error):
        pass
    raise ParamsError(
        f"{cursor!r} is not a cursor of this store's listing; pass the cursor a RunPage of this store gave, "
        "or none for the first page."
    )


def cursor_seconds(text: str) -> float:
    """A cursor's creation key as seconds since the epoch (the memory and SQLite stores' key)."""
    seconds = float(text)
    if not math.isfinite(seconds):
        raise ValueError(f"{text!r} is not a time")
    return seconds


def cursor_moment(text: str) -> datetime:
    """A cursor's creation key as a timezone-aware time (PostgreSQL's key)."""
    moment = datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r} has no time zone")
    return moment


def utc(seconds: float) -> datetime:
    """A time in seconds since the epoch, as a UTC datetime."""
    return datetime.fromtimestamp(seconds, UTC)


# -- decisions --------------------------------------------------------------------------------------


def decided_at(now: datetime) -> str:
    """A decision's time as the journal keeps it: ISO 8601, UTC, milliseconds."""
    return now.astimezone(UTC).isoformat(timespec="milliseconds")


def check_decision(run_id: object, tool_use_id: object, by: object) -> str | None:
    """What every decision through a store is given, checked before the run is read: the run's id
    (``ParamsError``), the call's id, and who decides (``ApprovalError``); ``by`` as checked.

    Raises:
        ParamsError: ``run_id`` is not a run id.
        ApprovalError: ``tool_use_id`` is not a call's id, or ``by`` is not who decided (see
            ``_ids.check_by``); nothing is decided.
    """
    check_run_id(run_id)
    if not isinstance(tool_use_id, str) or not tool_use_id:
        raise ApprovalError(
            f"tool_use_id must be the id of a waiting call, as a str (toolu_...), not {tool_use_id!r}; nothing "
            "was decided."
        )
    return check_by(by)


def _waiting_record(state: RunState, run_id: str, tool_use_id: str) -> CallRecord:
    """The record of the call a person decides, or an ``ApprovalError`` that says why it cannot
    be decided (and who decided it, when someone did)."""
    record = state.calls.get(tool_use_id)
    waiting = waiting_calls(state)
    if record is not None and record.decision is not None:
        who = "" if record.decided_by is None else f" by {record.decided_by!r}"
        when = "" if record.decided_at is None else f" at {record.decided_at}"
        raise ApprovalError(
            f"the call {tool_use_id!r} of run {run_id!r} was {record.decision}{who}{when}; it cannot be "
            "decided again."
        )
    if not any(call.id == tool_use_id for call in waiting):
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
    return call_decided(state, tool_use_id, "approved", approved_input=input, by=by, at=at, via="store")


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
    return call_decided(state, tool_use_id, "denied", result=block, by=by, at=at, via="store")


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
    return call_decided(state, tool_use_id, "answered", result=block, by=by, at=at, via="store")


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
    # Formats (date-time, uuid, ...) as the tool's pydantic validation reads them (_formats).
    errors = sorted(
        validator_class(schema, format_checker=format_checker()).iter_errors(cast(object, data)),
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

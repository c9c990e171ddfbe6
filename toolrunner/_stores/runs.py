"""Saved runs as a person sees them, in pure code: a run's status and summary, and the summary
columns a store writes beside the state, with no I/O (a listing's arguments are ``listing``'s,
decisions through a store ``deciding``'s).

A run's status is a function of its state alone (``run_status``), so every store computes it the
same way and writes it beside the state, in the same transaction. So are its turns and cost,
which are its whole tree's (its own requests and its sub-agents', ``_core.tree_usage.spent``).
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import cast

from .._core.errors import StateError
from .._core.nested import suspended, waiting_in_tree
from .._core.state import CallRecord, CallStatus, Phase, RunState, plain_data
from .._core.tree_usage import spent
from .._core.types import EndReason, ToolCall
from .._core.unicode import store_json

__all__ = [
    "Lease",
    "RunPage",
    "RunStatus",
    "RunSummary",
    "SummaryColumns",
    "damaged_summary",
    "run_status",
    "summary_columns",
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
    """The calls of the current turn that wait for a decision, while the run is paused for them,
    then those inside its sub-agents' paused runs, each with its ``ToolCall.path``
    (``_core.nested``): none while a runner goes on with the turn (before it pauses, and from
    when it takes the turn up again), and none once the loop ended."""
    if state.phase is not Phase.AWAITING or not any(
        record.status is CallStatus.AWAITING or suspended(record) for record in state.calls.values()
    ):
        return ()
    if any(
        record.status is CallStatus.STARTED and not suspended(record) and not _decided(record)
        for record in state.calls.values()
    ):
        return ()  # a call runs (or ran when its runner died): the turn is not paused
    return waiting_in_tree(state)


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
    if state.phase is Phase.AWAITING and all(_decided(record) for record in state.calls.values()):
        # Paused, and decided since: a runner that takes the turn up saves it as going on first
        # (phase WITH_BODY: running), so this holds only while nothing has taken it up.
        return RunStatus.READY
    return RunStatus.RUNNING


def _decided(record: CallRecord) -> bool:
    """Whether a call of a paused turn is decided: approved or answered; or a sub-agent's call
    whose paused sub-run's calls are all decided (it goes on once a runner takes the turn up)."""
    if record.status in (CallStatus.APPROVED, CallStatus.FINISHED):
        return True
    child = None if record.sub_run is None else record.sub_run.state
    return (
        record.status is CallStatus.STARTED
        and child is not None
        and child.phase is Phase.AWAITING
        and all(_decided(inner) for inner in child.calls.values())
    )


@dataclass(frozen=True, slots=True)
class Lease:
    """A resumer's hold on a run (``RunSummary.lease``; see ``_stores.leases``).

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
        waiting: The calls that wait for a decision: their id, tool and input; a call inside a
            sub-agent's run has its ``path`` too (``ToolCall.path``).
        created: When the run was first saved (UTC).
        updated: When it was last saved (UTC).
        turns: How many requests got a reply: the run's own and its sub-agents' (its whole tree,
            ``_core.tree_usage.spent``; ``toolrunner runs show`` gives them by sub-agent).
        cost: What they cost in US dollars (the tree's); ``None`` once one had no price.
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
            waiting = store_json([_call_data(call) for call in calls])
        tree = spent(state)  # the run's requests and its sub-agents' (_core.tree_usage)
        return cls(
            status=_status(state, calls).value,
            end_reason=state.end_reason,
            waiting=waiting,
            turns=tree.requests,
            cost=None if tree.cost is None else str(tree.cost),
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
    path: object = call.get("path", [])
    if not isinstance(path, list) or not all(isinstance(part, str) for part in cast("list[object]", path)):
        raise TypeError(f"{item!r} is not a call")
    return ToolCall(call["id"], call["name"], call["input"], path=tuple(cast("list[str]", path)))


def _call_data(call: ToolCall) -> dict[str, object]:
    """A waiting call as the ``waiting`` column keeps it (its path only when it has one)."""
    data: dict[str, object] = {"id": call.id, "name": call.name, "input": _input_data(call)}
    if call.path:
        data["path"] = list(call.path)
    return data


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

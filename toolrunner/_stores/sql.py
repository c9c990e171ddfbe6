"""What the SQL stores (``_sqlite``, ``_postgres``) share: a save as rows, rows as a checkpoint,
and the queries of a listing and a prune, written once with ``?`` placeholders.

A run is three tables: ``toolrunner_runs`` holds one row a run (the state's fixed-size part as JSON
text, its sequence, and the summary columns a listing reads), ``toolrunner_messages`` and
``toolrunner_usage`` one row a history message and a request's usage, so that a save writes only
the new ones.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import partial
from typing import Any, cast

from .._core.errors import StateError
from .._core.ids import check_run_id
from .._core.state import RunState, message_data, request_usage_data
from .leases import TAKEN_OVER
from .listing import check_limit, check_time, pruned_statuses, read_cursor, read_statuses
from .protocol import Checkpoint, store_json
from .runs import Lease, RunStatus, RunSummary, SummaryColumns, damaged_summary

__all__ = [
    "CLAIMABLE",
    "NEXT_EXPIRY",
    "SUMMARY",
    "EncodedSave",
    "Listing",
    "decode",
    "encode",
    "listing",
    "prune_filter",
    "summary_of",
]

LENGTHS = "stored_lengths"
"""The header's key for the lengths of the history and the usage the rows hold."""

SUMMARY = (
    "run_id, created, updated, status, end_reason, waiting, turns, cost, failure, lease_owner, lease_expires"
)
"""The columns of ``toolrunner_runs`` that make a ``RunSummary`` (``summary_of``)."""

_TAKEN_OVER = ", ".join(f"'{status.value}'" for status in TAKEN_OVER)
CLAIMABLE = (
    f"status IN ({_TAKEN_OVER}) AND (lease_owner IS NULL OR lease_expires <= ?) "
    f"AND (status = '{RunStatus.READY.value}' OR lease_owner IS NOT NULL)"
)
"""``_leases.claimable`` as a WHERE clause over a row of ``toolrunner_runs``, with the time as its
parameter (the contract suite checks that the stores agree with the pure function)."""
NEXT_EXPIRY = (
    f"SELECT min(lease_expires) FROM toolrunner_runs WHERE status IN ({_TAKEN_OVER}) AND lease_owner IS NOT NULL "
    "AND lease_expires > ?"
)
"""The earliest lease still to run out of a run it would make claimable (``_leases.wait_time``)."""


@dataclass(frozen=True, slots=True)
class EncodedSave:
    """A checkpoint as the rows it writes (made on the event loop's thread, where the state lives)."""

    run_id: str
    sequence: int
    header: str
    columns: SummaryColumns
    kept_messages: int
    messages: list[tuple[int, str]]
    kept_usage: int
    usage: list[tuple[int, str]]


def encode(checkpoint: Checkpoint) -> EncodedSave:
    """The rows of a save: the header, the summary, and the messages and usage entries that are new.

    Raises:
        ParamsError: The checkpoint's run id is not one (``_ids.check_run_id``).
    """
    check_run_id(checkpoint.run_id)
    state = checkpoint.state
    header = _header(state)
    messages = [
        (position, store_json(message_data(state.messages[position], position)))
        for position in range(checkpoint.kept_messages, len(state.messages))
    ]
    usage = [
        (position, store_json(request_usage_data(state.usage[position])))
        for position in range(checkpoint.kept_usage, len(state.usage))
    ]
    return EncodedSave(
        checkpoint.run_id,
        checkpoint.sequence,
        header,
        SummaryColumns.of(state),
        checkpoint.kept_messages,
        messages,
        checkpoint.kept_usage,
        usage,
    )


_replies: dict[int, tuple[weakref.ref[Any], str]] = {}
"""The JSON text of the replies that states being saved hold, by ``id``, while they live: a turn's
saves (after the reply, before and after each call) all hold the same reply."""


def _header(state: RunState) -> str:
    """The state's fixed-size part as JSON text, with the lengths of the history and the usage (so
    that a load notices rows lost or added)."""
    lengths = [len(state.messages), len(state.usage)]
    reply = state.reply
    if reply is None:
        return store_json({**state.to_dict(history=False), LENGTHS: lengths})
    known = _replies.get(id(reply))
    if known is None or known[0]() is not reply:
        data = state.to_dict(history=False)
        known = weakref.ref(reply, partial(_forget, id(reply))), store_json(data.pop("reply"))
        _replies[id(reply)] = known
    else:
        data = state.replace(reply=None).to_dict(history=False)
        del data["reply"]
    # The reply's text goes in whole: its JSON is written once, however many saves hold it.
    return store_json({**data, LENGTHS: lengths})[:-1] + ',"reply":' + known[1] + "}"


def _forget(key: int, reference: weakref.ref[Any]) -> None:
    known = _replies.get(key)
    if known is not None and known[0] is reference:
        _replies.pop(key, None)


def decode(
    run_id: str, sequence: int, header: str, messages: Sequence[str], usage: Sequence[str], where: str
) -> Checkpoint:
    """A checkpoint from a run's rows.

    Raises:
        StateError: The rows are damaged, or were changed by hand; the message names the run and ``where``.
    """
    state = read_state(header, messages, usage, run_id, where)
    return Checkpoint(run_id, state, sequence, len(state.messages), len(state.usage))


def read_state(
    header: str, messages: Sequence[str], usage: Sequence[str], run_id: str, where: str
) -> RunState:
    try:
        data: object = json.loads(header)
        lengths: object = None
        if isinstance(data, dict):
            lengths = cast("dict[str, object]", data).pop(LENGTHS, None)
        if lengths is not None and lengths != [len(messages), len(usage)]:
            raise ValueError(
                f"the run's history and usage have the lengths {lengths!r}, but the store holds {len(messages)} "
                f"and {len(usage)} rows for it (rows were deleted or added by hand)"
            )
        return RunState.from_dict(
            cast(object, data),
            messages=[json.loads(text) for text in messages],
            usage=[json.loads(text) for text in usage],
        )
    except (ValueError, StateError, RecursionError) as error:  # RecursionError: a row nested too deeply
        raise StateError(f"the saved run {run_id!r} in {where} cannot be loaded: {error}") from error


def summary_of(row: Sequence[Any], time: Callable[[Any], datetime], where: str) -> RunSummary:
    """A summary from the ``SUMMARY`` columns of a row (its lease's too); ``time`` reads the store's
    times. A row that holds what the store does not write (changed by hand) is listed as a failed
    run whose failure names it and ``where`` (``damaged_summary``): one such row does not stop a
    listing."""
    run_id, created, updated, status, end_reason, waiting, turns, cost, failure, owner, expires = row
    problem: str | None = None
    times: list[datetime] = []
    for name, value in (("created", created), ("updated", updated)):
        try:
            times.append(time(value))
        except (ValueError, TypeError, OverflowError, OSError) as error:
            times.append(_EPOCH)
            problem = problem or f"its {name} column holds what a store does not write there ({error})"
    if problem is None:
        columns = SummaryColumns(status, end_reason, waiting, turns, cost, failure)
        try:
            lease = None if owner is None or expires is None else Lease(owner, time(expires))
            return columns.summary(str(run_id), times[0], times[1], lease)
        except (ValueError, TypeError, OverflowError, OSError) as error:
            problem = str(error)
    return damaged_summary(str(run_id), times[0], times[1], problem, where)


_EPOCH = datetime.fromtimestamp(0, UTC)
"""The time a damaged row is listed at when its own cannot be read."""


# -- queries ------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Listing:
    """A listing's checked arguments."""

    statuses: frozenset[RunStatus] | None
    updated_before: datetime | None
    updated_after: datetime | None
    limit: int
    start: tuple[object, str] | None

    def query(self, time: Callable[[datetime], object]) -> tuple[str, list[object]]:
        """The SELECT of one page (one row more than ``limit``: whether there is a next page),
        newest first; ``time`` turns a time into a parameter."""
        where, parameters = _status_filter(self.statuses)
        if self.updated_before is not None:
            where.append("updated < ?")
            parameters.append(time(self.updated_before))
        if self.updated_after is not None:
            where.append("updated >= ?")
            parameters.append(time(self.updated_after))
        if self.start is not None:
            where.append("(created, run_id) < (?, ?)")
            parameters += [self.start[0], self.start[1]]
        sql = f"SELECT {SUMMARY} FROM toolrunner_runs"
        if where:
            sql += " WHERE " + " AND ".join(where)
        sql += " ORDER BY created DESC, run_id DESC LIMIT ?"
        return sql, [*parameters, self.limit + 1]


def listing(
    status: RunStatus | str | Iterable[RunStatus | str] | None,
    updated_before: datetime | None,
    updated_after: datetime | None,
    limit: int,
    cursor: str | None,
    key: Callable[[str], object],
) -> Listing:
    """The arguments of ``list_runs``, checked (``ParamsError`` names the wrong one); ``key``
    reads a cursor's creation key as the store keeps it (``cursor_seconds``, ``cursor_moment``)."""
    return Listing(
        read_statuses(status),
        check_time(updated_before, "updated_before"),
        check_time(updated_after, "updated_after"),
        check_limit(limit),
        read_cursor(cursor, key),
    )


def prune_filter(
    updated_before: datetime,
    status: RunStatus | str | Iterable[RunStatus | str] | None,
    time: Callable[[datetime], object],
) -> tuple[str, list[object]]:
    """The WHERE clause (and its parameters) of the runs ``prune_runs`` deletes: of the statuses
    named, or of any but those that wait for a person (``pruned_statuses``)."""
    before = check_time(updated_before, "updated_before", required=True)
    assert before is not None
    where, parameters = _status_filter(pruned_statuses(status))
    where.append("updated < ?")
    parameters.append(time(before))
    return " AND ".join(where), parameters


def _status_filter(statuses: frozenset[RunStatus] | None) -> tuple[list[str], list[object]]:
    if statuses is None:
        return [], []
    if not statuses:
        return ["0 = 1"], []
    ordered = sorted(status.value for status in statuses)
    return [f"status IN ({', '.join('?' for _ in ordered)})"], list[object](ordered)

"""A listing's arguments, checked before a store is asked, in pure code: the statuses it keeps (and
those a prune deletes), its times, its page size and its cursor, and the ``Listing`` they make.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Generic, TypeVar, cast

from .._core.errors import ParamsError
from .._core.ids import storable_text
from .runs import RunStatus

K = TypeVar("K")

__all__ = [
    "PRUNE_KEEPS",
    "Listing",
    "check_limit",
    "check_time",
    "cursor_after",
    "cursor_moment",
    "cursor_seconds",
    "pruned_statuses",
    "read_cursor",
    "read_listing",
    "read_statuses",
    "utc",
]


@dataclass(frozen=True, slots=True)
class Listing(Generic[K]):
    """A listing's checked arguments (``read_listing``); ``start`` is the creation key (as the
    store keeps it) and the run id the page starts after."""

    statuses: frozenset[RunStatus] | None
    updated_before: datetime | None
    updated_after: datetime | None
    limit: int
    start: tuple[K, str] | None


def read_listing(
    status: RunStatus | str | Iterable[RunStatus | str] | None,
    updated_before: datetime | None,
    updated_after: datetime | None,
    limit: int,
    cursor: str | None,
    key: Callable[[str], K],
) -> Listing[K]:
    """The arguments of ``list_runs``, checked (``ParamsError`` names the wrong one); ``key`` reads a
    cursor's creation key as the store keeps it (``cursor_seconds``, ``cursor_moment``)."""
    return Listing(
        read_statuses(status),
        check_time(updated_before, "updated_before"),
        check_time(updated_after, "updated_after"),
        check_limit(limit),
        read_cursor(cursor, key),
    )


def read_statuses(status: RunStatus | str | Iterable[RunStatus | str] | None) -> frozenset[RunStatus] | None:
    """The statuses a listing keeps (``None``: all), from a status, its name, or several.

    Raises:
        ParamsError: A name that is no status, or what is neither a status, a name nor several
            (a number, bytes, a mapping): the message says what it takes.
    """
    if status is None:
        return None
    given: object = status
    if isinstance(given, RunStatus | str):
        items: Iterable[object] = [given]
    elif isinstance(given, Iterable) and not isinstance(given, bytes | bytearray | memoryview | Mapping):
        items = cast("Iterable[object]", given)
    else:
        raise ParamsError(
            f"status takes a RunStatus, a status's name, or several of them (a list, a set), not "
            f"{type(status).__name__} {status!r}; for example status='awaiting' or status=[RunStatus.FAILED, 'ready']."
        )
    found: set[RunStatus] = set()
    for item in items:
        if isinstance(item, RunStatus):
            found.add(item)
            continue
        try:
            if not isinstance(item, str):
                raise ValueError(item)
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

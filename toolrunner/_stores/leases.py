"""Leases on runs, in pure code: which runs a resumer may take up, and what a lease says. The
stores only perform these decisions (the SQL ones with the same predicate, ``_stores.sql.CLAIMABLE``;
the contract suite checks that every store takes up exactly the runs ``claimable`` names).

A resumer (``Resumer``) takes a run up under a lease: its name (the owner) and a time the lease
runs out, written on the run's row without a save of its state, so the run's sequence does not
move. It renews the lease while it drives the run and gives it up when the run pauses or ends. The
lease gives the run to one resumer at a time, and back to the others when that resumer dies; it
does not make a run safe to drive, which every save's sequence check does (two runners of one run
conflict, and one stops). So a lease that runs out too early (a resumer stalled longer than its
lease) costs a conflict, never a call run twice.

Invariant: a lease is an owner and an expiry together, or neither.
"""

from __future__ import annotations

import math

from .._core.errors import ParamsError
from .._core.ids import unshowable_problem
from .runs import RunStatus

__all__ = [
    "HANDED_OVER",
    "TAKEN_OVER",
    "check_lease",
    "check_owner",
    "check_seconds",
    "claimable",
    "kept_on_release",
    "takeable",
    "wait_time",
]

TAKEN_OVER = (RunStatus.READY, RunStatus.RUNNING, RunStatus.FAILED)
"""The statuses in which a run under a lease that ran out is taken over by another resumer: its
resumer died with the run in hand (ready or running), or left it failed by an error that may pass
(the service overloaded, the store unreachable: ``Resumer`` keeps the lease then, and the run is
tried again once it runs out)."""
HANDED_OVER = (RunStatus.READY, RunStatus.RUNNING)
"""The statuses in which a lease given up stays on the run, run out (``kept_on_release``)."""


def claimable(status: RunStatus, owner: str | None, expires: float | None, now: float) -> bool:
    """Whether a resumer may take up a run in ``status`` whose lease is ``owner`` until ``expires``
    (seconds since the epoch; both ``None``: no lease) at ``now``.

    - A lease that has not run out holds the run: no.
    - A ready run (paused, every call decided, no runner took the turn up): yes.
    - A running or failed run under a lease that ran out: its resumer stopped mid-run (a crash, a
      lost store), or kept the lease of a run that failed by an error that may pass: yes, another
      resumer takes it over.
    - A running or failed run without a lease is an app's own runner's (it drives it, or stopped
      in it), or failed for good: never; the app resumes it. Runs that wait, or ended: never.
    """
    if owner is not None and expires is not None and expires > now:
        return False
    if status is RunStatus.READY:
        return True
    return status in TAKEN_OVER and owner is not None


def takeable(owner: str, held_by: str | None, expires: float | None, now: float) -> bool:
    """Whether ``owner`` may take the lease of one named run (``lease_run``, whatever the run's
    status) whose lease is ``held_by`` until ``expires`` at ``now``: when no one holds it, ``owner``
    holds it already (it is renewed), or it ran out (its holder died, or gave it up on a run still
    to go on). A lease of another owner that has not run out holds the run: no. A web ``Agent``
    takes its runs so, and one that finds the run held follows it instead of driving it."""
    return held_by is None or held_by == owner or expires is None or expires <= now


def kept_on_release(status: RunStatus) -> bool:
    """Whether a lease given up stays on the run, run out, rather than dropped: it stays while the
    run is running or ready (its resumer stopped mid-way: a shutdown, a conflict), so that another
    resumer takes the run up at once; a run that paused, ended or failed needs no resumer until it
    is ready again."""
    return status in HANDED_OVER


def wait_time(now: float, next_expiry: float | None) -> float:
    """How long a store waits before it looks for runs to take up again, when it is told of every
    save and every lease given up: until the earliest lease of a run in ``TAKEN_OVER`` runs out
    (``next_expiry``), or for ever."""
    return math.inf if next_expiry is None else max(0.0, next_expiry - now)


def check_lease(lease: object, name: str = "lease") -> float:
    """A lease's length in seconds, checked (``check_seconds``)."""
    return check_seconds(lease, name, f"{name}=30.0")


def check_seconds(value: object, name: str, example: str) -> float:
    """A length in seconds, checked: a finite number above 0.

    Raises:
        ParamsError: It is not; the message names the argument (``name``) and gives ``example``.
    """
    if (
        not isinstance(value, int | float)
        or isinstance(value, bool)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise ParamsError(
            f"{name} must be a number of seconds above 0, not {value!r}; for example {example}."
        )
    return float(value)


def check_owner(owner: object) -> str:
    """A lease's owner, checked: a non-empty string of printable text (no control character, such
    as a trailing newline, no line separator, no lone surrogate: ``_core.ids.unshowable``), which
    every store can save and a listing shows on one line.

    Raises:
        ParamsError: It is not; the message says why.
    """
    if not isinstance(owner, str) or not owner.strip():
        raise ParamsError(
            f"a lease's owner must be a non-empty string naming the resumer, not {owner!r}; for example "
            "Resumer(...).owner."
        )
    problem = unshowable_problem(f"a lease's owner {owner!r}", owner, shown_on="listing")
    if problem is not None:
        raise ParamsError(
            f"{problem}; name the resumer with printable text (for example Resumer(...).owner)."
        )
    return owner

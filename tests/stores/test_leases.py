"""Leases on runs, in pure code (``toolrunner._stores.leases``): which runs a resumer may take up, when a
lease given up stays on its run, and how long a store waits before it looks again. The stores'
side (the same rules in SQL) is in ``test_store_contract_leases.py``.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, strategies as st

from toolrunner import ParamsError, RunStatus
from toolrunner._stores.leases import (
    HANDED_OVER,
    TAKEN_OVER,
    check_lease,
    check_owner,
    claimable,
    kept_on_release,
    wait_time,
)

times = st.floats(min_value=0, max_value=1e10, allow_nan=False)
owners = st.none() | st.sampled_from(["resumer-a", "resumer-b"])


@pytest.mark.parametrize(
    ("status", "owner", "expires", "expected"),
    [
        (RunStatus.READY, None, None, True),  # decided, nobody took it up
        (RunStatus.READY, "a", 99.0, True),  # its resumer stopped before it went on
        (RunStatus.READY, "a", 100.0, True),  # a lease runs out at its time
        (RunStatus.READY, "a", 101.0, False),  # held
        (RunStatus.RUNNING, "a", 99.0, True),  # its resumer died mid-run: taken over
        (RunStatus.RUNNING, "a", 101.0, False),  # its resumer drives it
        (RunStatus.RUNNING, None, None, False),  # an app's runner drives it (or did, and stopped)
        (RunStatus.AWAITING, None, None, False),
        (RunStatus.AWAITING, "a", 99.0, False),
        (RunStatus.FINISHED, "a", 99.0, False),
        (RunStatus.FAILED, "a", 99.0, True),  # failed by an error that may pass: tried again
        (RunStatus.FAILED, "a", 101.0, False),  # not before its resumer's lease runs out
        (RunStatus.FAILED, None, None, False),  # failed for good, or in an app's runner
    ],
)
def test_which_runs_a_resumer_may_take_up(
    status: RunStatus, owner: str | None, expires: float | None, expected: bool
) -> None:
    assert claimable(status, owner, expires, 100.0) is expected


@given(st.sampled_from(list(RunStatus)), owners, times, times)
def test_a_lease_that_has_not_run_out_holds_its_run(
    status: RunStatus, owner: str | None, expires: float, now: float
) -> None:
    if owner is not None and expires > now:
        assert not claimable(status, owner, expires, now)


@given(st.sampled_from(list(RunStatus)), owners, times, times, times)
def test_a_run_once_claimable_stays_so_as_time_goes_on(
    status: RunStatus, owner: str | None, expires: float, now: float, later: float
) -> None:
    lease = (owner, None if owner is None else expires)
    if claimable(status, *lease, now) and later >= now:
        assert claimable(status, *lease, later)


@given(st.sampled_from(list(RunStatus)), owners, times, times)
def test_only_ready_runs_and_runs_a_resumer_held_are_ever_claimable(
    status: RunStatus, owner: str | None, expires: float, now: float
) -> None:
    if claimable(status, owner, None if owner is None else expires, now):
        assert status is RunStatus.READY or (status in TAKEN_OVER and owner is not None)
        assert status not in (RunStatus.AWAITING, RunStatus.FINISHED)


def test_a_lease_given_up_stays_run_out_only_on_a_run_still_to_go_on() -> None:
    assert {status for status in RunStatus if kept_on_release(status)} == set(HANDED_OVER)
    assert set(HANDED_OVER) == {RunStatus.READY, RunStatus.RUNNING}
    assert set(HANDED_OVER) < set(TAKEN_OVER)  # a failed run's lease is dropped when given up


@given(times, st.none() | times)
def test_a_store_waits_until_the_next_lease_runs_out_or_for_ever(
    now: float, next_expiry: float | None
) -> None:
    seconds = wait_time(now, next_expiry)
    if next_expiry is None:
        assert seconds == math.inf
    else:
        assert seconds == max(0.0, next_expiry - now)


@pytest.mark.parametrize("lease", [0, -1, math.nan, math.inf, True, "30", None])
def test_a_lease_is_a_number_of_seconds_above_zero(lease: object) -> None:
    with pytest.raises(ParamsError, match=r"lease must be a number of seconds above 0, not .*; for example"):
        check_lease(lease)
    assert check_lease(2) == 2.0


@pytest.mark.parametrize("owner", ["", " ", None, 7])
def test_an_owner_is_a_name(owner: object) -> None:
    with pytest.raises(ParamsError, match="a lease's owner must be a non-empty string naming the resumer"):
        check_owner(owner)
    assert check_owner("host:1:ab") == "host:1:ab"


@pytest.mark.parametrize(
    "owner", ["a\n", "a\r\n", "a\tb", "a\x00", "\x1b[2Ja", "a\x85", "a\u2029", "caf\udce9"]
)
def test_an_owner_is_printable_text(owner: str) -> None:
    with pytest.raises(
        ParamsError, match=r"a lease's owner .* holds .*; name the resumer with printable text"
    ):
        check_owner(owner)

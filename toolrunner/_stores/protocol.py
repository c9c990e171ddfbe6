"""Where runs are saved: the ``Checkpointer`` protocol that the runner saves through, the
``RunStore`` protocol of a store that can also be queried and decided through, and ``StoreBase``,
the base of every store (decisions through the store, over its ``load`` and ``save``). The runner's
side of saving is ``_runner.saver``.

A runner with a checkpointer saves its ``RunState`` after each reply, before each tool call starts,
as soon as each finishes, and when the loop ends. A save is a ``Checkpoint``: the state, and how
much of it the store holds already. The history and the per-request usage only grow (but for
``set_messages_params``), so a store need write only their new entries, and a save costs the same
at turn 400 as at turn 10.

Two runners must not drive one run: each save carries the number of saves before it
(``sequence``), and a store refuses a save that does not follow the one it holds
(``CheckpointConflictError``). A decision taken through the store is such a save too, so a runner
that holds the run sees it, and of two deciders of one call only one wins.

The stores: ``MemoryCheckpointer`` (``memory``), ``SQLiteCheckpointer`` (``sqlite``) and
``PostgresCheckpointer`` (``postgres``); the last two share their rows' encoding and their queries
(``sql``).
"""

from __future__ import annotations

import abc
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol, runtime_checkable

from .._core.errors import CheckpointConflictError, CheckpointError
from .._core.ids import check_reason
from .._core.nested import record_in_tree
from .._core.state import CallRecord, RunState, decided_at
from .._core.unicode import store_json
from .._tools.approvals import check_is_error
from .deciding import answered, approved, check_decision, denied
from .listing import Listing, cursor_seconds, read_listing, utc
from .runs import RunPage, RunStatus, RunSummary

__all__ = [
    "Checkpoint",
    "Checkpointer",
    "ListingStore",
    "RunStore",
    "StoreBase",
    "check_sequence",
    "store_json",
]


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """One save of a run.

    Attributes:
        run_id: The run's name in the store.
        state: The state to save.
        sequence: How many saves of this run came before this one (0: the run is new, and must
            not exist in the store yet).
        kept_messages: The first ``kept_messages`` messages are as the previous save left them.
        kept_usage: The first ``kept_usage`` entries of ``state.usage`` are as the previous save
            left them.
    """

    run_id: str
    state: RunState
    sequence: int
    kept_messages: int = 0
    kept_usage: int = 0


@runtime_checkable
class Checkpointer(Protocol):
    """A store of runs: what ``ToolRunner(checkpointer=...)`` saves to and ``ToolRunner.resume`` loads from.

    ``save`` must be atomic (all of the checkpoint or nothing) and refuse a checkpoint whose
    ``sequence`` does not follow the stored one (``CheckpointConflictError``): that is how two
    runners of one run are caught. Other failures are ``CheckpointError``s: the runner saves again
    at its next step. A store may write everything each time (``state.to_json()``) or only what
    ``kept_messages`` and ``kept_usage`` say is new.
    """

    async def save(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` (atomically), unless another runner saved the run since."""
        ...

    async def load(self, run_id: str) -> Checkpoint | None:
        """The run's latest save (``kept_*`` count what the store holds), or ``None``."""
        ...


@runtime_checkable
class RunStore(Checkpointer, Protocol):
    """A checkpointer that can also be queried, cleaned up and decided through (see
    docs/operating.md): ``MemoryCheckpointer``, ``SQLiteCheckpointer`` and ``PostgresCheckpointer``.

    Listing reads summaries that the store writes beside each state, in the same transaction, so
    that it costs the same whatever the runs hold. A decision is a save of the run (its sequence
    moves), so it reaches a runner that holds the run, and of two deciders only one wins.
    """

    async def list_runs(
        self,
        *,
        status: RunStatus | str | Iterable[RunStatus | str] | None = None,
        updated_before: datetime | None = None,
        updated_after: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> RunPage:
        """The runs that match, newest first, ``limit`` at a time; ``cursor`` is the previous page's."""
        ...

    async def get_run(self, run_id: str) -> RunSummary | None:
        """The summary of one run, or ``None``."""
        ...

    async def delete_run(self, run_id: str) -> bool:
        """Delete a run; whether there was one."""
        ...

    async def prune_runs(
        self,
        *,
        updated_before: datetime,
        status: RunStatus | str | Iterable[RunStatus | str] | None = None,
    ) -> int:
        """Delete the runs last saved before ``updated_before`` of those statuses (none named: of any
        but those that wait for a person, ``awaiting``); how many."""
        ...

    async def approve_call(
        self, run_id: str, tool_use_id: str, *, input: object = None, by: str | None = None
    ) -> CallRecord:
        """Approve a waiting call (with ``input``, to run with that input instead)."""
        ...

    async def deny_call(
        self, run_id: str, tool_use_id: str, reason: str | None = None, *, by: str | None = None
    ) -> CallRecord:
        """Deny a waiting call; the model reads ``reason``."""
        ...

    async def answer_call(
        self, run_id: str, tool_use_id: str, result: object, *, is_error: bool = False, by: str | None = None
    ) -> CallRecord:
        """Answer a waiting call with a result computed elsewhere."""
        ...

    # What a resumer (``Resumer``) asks of the store: leases on runs, written on the run's row
    # without a save of its state (its sequence does not move), and a wait for runs to take up.

    async def lease_runs(self, owner: str, *, lease: float, limit: int = 1) -> tuple[str, ...]:
        """Take up to ``limit`` claimable runs (``_stores.leases.claimable``: ready, or running under a
        lease that ran out), oldest first, under a lease of ``owner`` for ``lease`` seconds;
        their ids. Atomic: of resumers asking at once, each run goes to one."""
        ...

    async def lease_run(self, run_id: str, owner: str, *, lease: float) -> bool:
        """Take the lease of one run, whatever its status, for ``owner`` for ``lease`` seconds, unless
        another owner's lease that has not run out holds it (``_stores.leases.takeable``); whether
        ``owner`` holds it now (``False`` too when there is no such run). Atomic: of owners asking
        at once, one gets it."""
        ...

    async def renew_lease(self, run_id: str, owner: str, *, lease: float) -> bool:
        """Make ``owner``'s lease on the run run out ``lease`` seconds from now; ``False`` if
        ``owner`` holds none (another resumer took the run over, or it was deleted)."""
        ...

    async def release_lease(self, run_id: str, owner: str) -> bool:
        """Give up ``owner``'s lease on the run (``_stores.leases.kept_on_release``: it stays, run out, on
        a run still running or ready, for another resumer to take up at once); whether ``owner``
        held one."""
        ...

    async def wait_ready(self, *, poll_interval: float = 1.0) -> None:
        """Return once a run may be taken up (a save made one ready, a lease was given up or ran
        out; ``lease_runs`` says which); bound the wait with a cancel scope
        (``anyio.move_on_after``). A store that cannot be told looks every ``poll_interval``
        seconds (SQLite, for other processes' saves); the others are told (PostgreSQL's
        ``LISTEN``, this process's saves)."""
        ...


def check_sequence(run_id: str, stored: int | None, sequence: int) -> CheckpointConflictError | None:
    """Why a save of ``run_id`` with ``sequence`` cannot follow the stored one (``None``: it can)."""
    if sequence == 0 and stored is not None:
        return CheckpointConflictError(
            f"a run named {run_id!r} is saved already; resume it with ToolRunner.resume(..., run_id={run_id!r}), "
            "or start the new run under another run_id."
        )
    if sequence > 0 and stored is None:
        return CheckpointConflictError(
            f"the run {run_id!r} was deleted from the store since this runner loaded it, so this one stops here; "
            "start it again under a new run_id if it should go on."
        )
    if sequence > 0 and stored != sequence - 1:
        return CheckpointConflictError(
            f"the run {run_id!r} was saved by another runner since this one loaded it (save "
            f"{'none' if stored is None else stored + 1} is stored, this is save {sequence + 1}); "
            "only one runner may drive a run at a time, so this one stops here."
        )
    return None


class StoreBase(abc.ABC):
    """The base of a store: implement ``save`` and ``load`` (the ``Checkpointer`` protocol), and it
    gives ``approve_call``, ``deny_call`` and ``answer_call`` over them. The stores toolrunner ships
    derive from it; so may yours.

    A decision loads the run, decides the call in the saved state, and saves that as the run's next
    save, so that a runner holding the run sees it and of two deciders only one wins. A save
    refused because the run moved meanwhile (``CheckpointConflictError``) is tried again from the
    newer state, which says who decided the call if someone did.
    """

    _ATTEMPTS = 20

    @abc.abstractmethod
    async def save(self, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` atomically; refuse one whose ``sequence`` does not follow the stored
        one (``CheckpointConflictError``)."""

    @abc.abstractmethod
    async def load(self, run_id: str) -> Checkpoint | None:
        """The run's latest save, or ``None``."""

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"  # named in the messages of a decision that cannot be taken

    def _now(self) -> float:
        """The store's clock (seconds since the epoch): the times it writes and decides at."""
        return time.time()

    async def approve_call(
        self, run_id: str, tool_use_id: str, *, input: object = None, by: str | None = None
    ) -> CallRecord:
        """Approve a call that waits for a decision; with ``input``, it runs with that input,
        checked against the input schema saved with the call.

        Raises:
            CheckpointError: There is no run named ``run_id``.
            ApprovalError: The call does not wait for a decision (the message says who decided it).
            ToolInputError: ``input`` does not fit the schema, or no schema was saved with the call.
        """
        by = check_decision(run_id, tool_use_id, by)
        return await self._decide(
            run_id,
            tool_use_id,
            lambda state, at: approved(state, run_id, tool_use_id, input=input, by=by, at=at),
        )

    async def deny_call(
        self, run_id: str, tool_use_id: str, reason: str | None = None, *, by: str | None = None
    ) -> CallRecord:
        """Deny a call that waits for a decision; the model reads ``reason`` as its error result
        (by default, that a person denied it).

        Raises:
            CheckpointError: There is no run named ``run_id``.
            ApprovalError: The call does not wait for a decision, or ``reason`` is empty.
        """
        by = check_decision(run_id, tool_use_id, by)
        if reason is not None:
            reason = check_reason(tool_use_id, reason)
        return await self._decide(
            run_id, tool_use_id, lambda state, at: denied(state, run_id, tool_use_id, reason, by=by, at=at)
        )

    async def answer_call(
        self, run_id: str, tool_use_id: str, result: object, *, is_error: bool = False, by: str | None = None
    ) -> CallRecord:
        """Answer a call that waits for a decision with ``result`` (made into tool_result content
        as a tool's return value is); ``is_error`` marks it an error.

        Raises:
            CheckpointError: There is no run named ``run_id``.
            ApprovalError: The call does not wait for a decision.
        """
        by = check_decision(run_id, tool_use_id, by)
        check_is_error(tool_use_id, is_error)
        return await self._decide(
            run_id,
            tool_use_id,
            lambda state, at: answered(state, run_id, tool_use_id, result, is_error=is_error, by=by, at=at),
        )

    async def _decide(
        self, run_id: str, tool_use_id: str, decide: Callable[[RunState, str], RunState]
    ) -> CallRecord:
        for _ in range(self._ATTEMPTS):
            loaded = await self.load(run_id)
            if loaded is None:
                raise CheckpointError(
                    f"{self!r} has no saved run named {run_id!r}; list its runs to find the name."
                )
            state = decide(loaded.state, decided_at(utc(self._now())))
            try:
                await self.save(
                    Checkpoint(run_id, state, loaded.sequence + 1, loaded.kept_messages, loaded.kept_usage)
                )
            except CheckpointConflictError:
                continue  # the run moved: decide again from where it stands (or learn who decided)
            record = record_in_tree(state, tool_use_id)  # the run's own call, or one in a sub-run
            assert record is not None
            return record
        raise CheckpointConflictError(
            f"the run {run_id!r} changed {self._ATTEMPTS} times while {tool_use_id!r} was being decided; try again."
        )


class ListingStore(StoreBase):
    """A store of toolrunner's own: a ``StoreBase`` that also lists its runs (``list_runs`` checks a
    listing's arguments once, and the store pages its own in ``_list``)."""

    async def _list(self, listing: Listing[Any]) -> RunPage:
        """One page of the runs ``listing`` keeps, newest first."""
        raise NotImplementedError

    def _cursor_key(self, text: str) -> object:
        """A cursor's creation key as the store orders runs by it (seconds since the epoch)."""
        return cursor_seconds(text)

    async def list_runs(
        self,
        *,
        status: RunStatus | str | Iterable[RunStatus | str] | None = None,
        updated_before: datetime | None = None,
        updated_after: datetime | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> RunPage:
        """The runs that match, newest first, ``limit`` at a time; ``cursor`` is the previous page's.

        Raises:
            ParamsError: An argument is not one a listing takes (the message names it); nothing is read.
        """
        return await self._list(
            read_listing(status, updated_before, updated_after, limit, cursor, self._cursor_key)
        )

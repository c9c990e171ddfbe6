"""``Resumer``: the decided run goes on by itself. It waits for runs to take up
(``RunStore.wait_ready``), takes each under a lease (``lease_runs``), has the app's factory resume
it with the app's client and tools, and drives it until it ends or pauses again, renewing the
lease meanwhile; then it gives the lease up (``release_lease``).

Many resumers (tasks, processes, machines) may serve one store: the store gives each run to one of
them, and a run whose resumer died goes to another once the lease runs out (``_stores.leases``). What
keeps a run safe is not the lease but its saves, as for any runner: two runners of one run
conflict and one stops, and a call that started is never started again unless its tool is
idempotent (a resumed run answers it as interrupted). The lease only keeps runs going.

What happens to a run taken up, and to its lease:

- it ends, or pauses for new decisions: the lease is given up (dropped);
- it fails by an error that may pass (``transient``: the service rate-limited or overloaded, a
  5xx, a lost connection; the store failing): the lease is kept, not renewed, and once it runs out
  the next resumer tries the run again (it is ``failed`` meanwhile, with the error);
- it fails otherwise (the runner records the error in the run: ``failed``), or the factory fails
  (the resumer records it): the lease is given up, and no resumer takes the run up again until it
  goes on elsewhere (``ToolRunner.resume``). A failure that could not be recorded keeps the lease
  until it runs out: the run is tried again then;
- another runner went on with it (``CheckpointConflictError``), or the resumer stops (a
  cancellation, ``stop()`` once the grace is over): the lease is given up, run out, so another
  resumer takes the run up at once;
- the lease is lost (another resumer took the run over, after this one stalled longer than its
  lease): the resumer stops driving the run at once.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import anyio.abc

from .._core.api_errors import transient as transient_api_error
from .._core.errors import (
    AwaitingApprovalError,
    CheckpointConflictError,
    CheckpointError,
    ParamsError,
    ToolRunnerError,
    message_of,
)
from .._runner.runner import ToolRunner
from .._stores.leases import check_lease, check_owner
from .._stores.protocol import Checkpoint, RunStore
from .._stores.runs import RunStatus
from .._stores.waiting import check_wait

__all__ = ["Factory", "Resumer", "transient"]

logger = logging.getLogger("toolrunner.resumer")

Factory = Callable[[str, RunStore], Awaitable[ToolRunner[Any]]]
"""The app's part: given a run's id and the store, the runner that goes on with it, usually
``await ToolRunner.resume(client, checkpointer=store, run_id=run_id, tools=[...])``."""


class Resumer:
    """Takes up the runs of a store that are ready (every call that waited is decided) and drives
    each with the app's runner until it ends or pauses again; many resumers may serve one store.

    Args:
        store: The runs (``open_store(url)``, or any ``RunStore``).
        factory: ``async def factory(run_id, store) -> ToolRunner``: the app's runner for a run,
            usually ``await ToolRunner.resume(client, checkpointer=store, run_id=run_id, tools=[...])``.
        concurrency: How many runs it drives at once.
        lease: Seconds a run is held without news of this resumer: it renews the lease every
            third of that while it drives the run; if it dies, another resumer takes the run over
            once the lease has run out.
        poll_interval: How often it looks for runs on a store that cannot tell it (SQLite).
        owner: Its name in the leases; by default the host, the process id and a random part.
    """

    def __init__(
        self,
        store: RunStore,
        factory: Factory,
        *,
        concurrency: int = 8,
        lease: float = 30.0,
        poll_interval: float = 1.0,
        owner: str | None = None,
    ) -> None:
        if not callable(factory):
            raise ParamsError(
                f"factory must be an async function (run_id, store) -> ToolRunner, not {factory!r}."
            )
        if not isinstance(concurrency, int) or isinstance(concurrency, bool) or concurrency < 1:
            raise ParamsError(f"concurrency must be an int of 1 or more, not {concurrency!r}.")
        check_wait(poll_interval)
        if owner is not None and (not isinstance(owner, str) or not owner.strip()):
            raise ParamsError(
                f"owner must be a non-empty string, not {owner!r}; leave it out for one made up."
            )
        if owner is not None:
            check_owner(owner)  # printable text: what every store can save as a lease's owner
        self.store = store
        self.owner = owner or f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        self._factory = factory
        self._concurrency = concurrency
        self._lease = check_lease(lease)
        self._poll_interval = float(poll_interval)
        self._in_hand: set[str] = set()
        self._serving = False
        self._stopping = False
        self._attention: anyio.Event | None = None  # set when a run leaves the hand, or stop()
        self._idle: anyio.CancelScope | None = None  # the wait for runs, which stop() cuts short

    def __repr__(self) -> str:
        return (
            f"Resumer({self.store!r}, owner={self.owner!r}, concurrency={self._concurrency}, "
            f"lease={self._lease:g})"
        )

    @property
    def in_hand(self) -> frozenset[str]:
        """The runs it drives now."""
        return frozenset(self._in_hand)

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Take up runs as they become ready, for ever: until cancelled (the runs in hand stop
        where they are, and go to another resumer at once), or until ``stop()`` (they go on to
        their end or their next pause first). Errors of a run are logged (logger
        ``toolrunner.resumer``) and recorded in the run, and the store's are logged and tried
        again: neither stops it. ``task_status``: for ``TaskGroup.start``, started once serving."""
        await self._serve(until_idle=False, task_status=task_status)

    async def resume_ready(self) -> tuple[str, ...]:
        """Take up the runs there are to take up now, drive them (``concurrency`` at a time) until
        each ends or pauses, and return their ids; a script's or a test's one pass. A store that
        fails raises here."""
        return await self._serve(until_idle=True, task_status=anyio.TASK_STATUS_IGNORED)

    def stop(self) -> None:
        """Take up no more runs: ``run()`` returns once the runs in hand end or pause (cancel it to
        stop them sooner)."""
        self._stopping = True
        if self._attention is not None:
            self._attention.set()
        if self._idle is not None:
            self._idle.cancel()

    # -- serving --------------------------------------------------------------------------------

    async def _serve(self, *, until_idle: bool, task_status: anyio.abc.TaskStatus[None]) -> tuple[str, ...]:
        if self._serving:
            raise ToolRunnerError(f"{self!r} is serving already; run one run() or resume_ready() at a time.")
        self._serving, self._stopping = True, False
        self._attention = anyio.Event()
        taken_all: list[str] = []
        woke = False  # the store said a run may be taken up
        try:
            async with anyio.create_task_group() as group:
                task_status.started()
                while not self._stopping:
                    free = self._concurrency - len(self._in_hand)
                    if free <= 0:
                        await self._await_attention()
                        continue
                    taken = await self._take(free, until_idle=until_idle)
                    for run_id in taken:
                        self._in_hand.add(run_id)
                        taken_all.append(run_id)
                        group.start_soon(self._go_on_with, run_id, name=f"toolrunner resumer: {run_id}")
                    if len(taken) == free:
                        continue  # there may be more
                    if until_idle:
                        if not self._in_hand:
                            break
                        await self._await_attention()  # a run left the hand: look again
                        continue
                    if woke and not taken:
                        # The store said a run is there, and none was taken: another resumer's, or
                        # one whose row a save holds this instant. Not in a tight loop, then.
                        await anyio.sleep(min(self._poll_interval, 0.05))
                    await self._wait_for_runs()
                    woke = True
        finally:
            self._serving, self._attention, self._idle = False, None, None
        return tuple(taken_all)

    async def _take(self, free: int, *, until_idle: bool) -> tuple[str, ...]:
        try:
            # Shielded: a claim cancelled midway could be written and its answer lost, and its runs
            # would wait for their leases to run out. Claimed during a shutdown, they start in the
            # cancelled task group and are handed over at once.
            taken: tuple[str, ...] = ()
            with anyio.CancelScope(shield=True):
                taken = await self.store.lease_runs(self.owner, lease=self._lease, limit=free)
            return taken
        except Exception as error:
            if until_idle:
                raise
            logger.warning(
                "%s could not take runs up (%s: %s); trying again in %gs",
                self.owner,
                type(error).__name__,
                message_of(error),
                self._poll_interval,
            )
            await anyio.sleep(self._poll_interval)
            return ()

    async def _wait_for_runs(self) -> None:
        """Until the store says a run may be taken up (or ``stop()``)."""
        try:
            with anyio.CancelScope() as self._idle:
                if not self._stopping:
                    await self._wait()
        finally:
            self._idle = None

    async def _wait(self) -> None:
        try:
            await self.store.wait_ready(poll_interval=self._poll_interval)
        except Exception as error:
            logger.warning(
                "%s could not wait for runs (%s: %s); looking again in %gs",
                self.owner,
                type(error).__name__,
                message_of(error),
                self._poll_interval,
            )
            await anyio.sleep(self._poll_interval)

    async def _await_attention(self) -> None:
        assert self._attention is not None
        await self._attention.wait()
        self._attention = anyio.Event()

    # -- one run ---------------------------------------------------------------------------------

    async def _go_on_with(self, run_id: str) -> None:
        """Drive one run under the lease, renewed meanwhile; then give the lease up, or leave it
        to run out (see the module's docstring)."""
        give_up = True
        lost: list[bool] = []
        try:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._keep_lease, run_id, scope, lost)
                    give_up = await self._drive(run_id)
                    group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if give_up and not lost:
                    await self._release(run_id)
            self._in_hand.discard(run_id)
            if self._attention is not None:
                self._attention.set()

    async def _keep_lease(self, run_id: str, scope: anyio.CancelScope, lost: list[bool]) -> None:
        while True:
            await anyio.sleep(self._lease / 3)
            try:
                held = await self.store.renew_lease(run_id, self.owner, lease=self._lease)
            except Exception as error:
                logger.warning(
                    "%s could not renew its lease on the run %r (%s: %s); trying again",
                    self.owner,
                    run_id,
                    type(error).__name__,
                    message_of(error),
                )
                continue
            if not held:
                logger.warning(
                    "%s lost its lease on the run %r (another resumer took it over, or it was deleted); it "
                    "stops driving it",
                    self.owner,
                    run_id,
                )
                lost.append(True)
                scope.cancel()
                return

    async def _drive(self, run_id: str) -> bool:
        """Resume the run and drive it until it ends or pauses; whether to give the lease up (not
        when a failure could not be recorded: the run is tried again once the lease runs out)."""
        logger.info("%s takes up the run %r", self.owner, run_id)
        try:
            runner: object = await self._factory(run_id, self.store)
            if not isinstance(runner, ToolRunner):
                raise ParamsError(
                    f"the factory gave {type(runner).__name__!r} for the run {run_id!r}; it must return the "
                    f"ToolRunner that goes on with it: await ToolRunner.resume(client, checkpointer=store, "
                    f"run_id={run_id!r}, tools=[...])."
                )
            resumed: ToolRunner[Any] = runner
            if resumed.state.run_id not in (None, run_id):
                raise ParamsError(
                    f"the factory gave a runner of the run {resumed.state.run_id!r} for the run {run_id!r}; "
                    "resume the run_id it is given."
                )
        except Exception as error:
            logger.error(
                "%s could not resume the run %r: %s: %s",
                self.owner,
                run_id,
                type(error).__name__,
                message_of(error),
            )
            return await self._failed_for_good(run_id, error, recorded=False)
        try:
            async with resumed:
                await resumed.until_done()
        except AwaitingApprovalError as paused:
            logger.info(
                "%s: the run %r paused; %s wait for a decision",
                self.owner,
                run_id,
                [call.id for call in paused.calls],
            )
            return True
        except CheckpointConflictError as error:
            logger.warning("%s: the run %r went on elsewhere: %s", self.owner, run_id, message_of(error))
            return True
        except Exception as error:
            logger.error(
                "%s: the run %r failed: %s: %s", self.owner, run_id, type(error).__name__, message_of(error)
            )
            return await self._failed_for_good(run_id, error, recorded=True)
        logger.info("%s: the run %r ended (%s)", self.owner, run_id, resumed.state.end_reason)
        return True

    async def _failed_for_good(self, run_id: str, error: Exception, *, recorded: bool) -> bool:
        """After a failure: whether to give the lease up. Not after one that may pass (the run is
        tried again once the lease runs out), nor before the failure is recorded in the run (a
        runner records those of its steps, ``recorded``; one before its first, the factory's or
        that of tools that would not open, is recorded here)."""
        if transient(error):
            logger.info(
                "%s: the run %r is tried again once the lease runs out (in %gs)",
                self.owner,
                run_id,
                self._lease,
            )
            return False
        if recorded and await self._failed(run_id):
            return True
        return await self._record_failure(run_id, error)

    async def _record_failure(self, run_id: str, error: Exception) -> bool:
        """Record a failure no runner recorded (the factory's) in the run, as a runner records its
        own (``failure``); whether it is recorded (or the run is gone)."""
        try:
            loaded = await self.store.load(run_id)
            if loaded is None:
                return True
            failure = {"type": type(error).__name__, "message": message_of(error)[:2000]}
            state = loaded.state.replace(failure=failure)
            await self.store.save(
                Checkpoint(run_id, state, loaded.sequence + 1, loaded.kept_messages, loaded.kept_usage)
            )
        except Exception as again:
            logger.warning(
                "%s could not record the failure in the run %r (%s: %s); it tries again once its lease runs out",
                self.owner,
                run_id,
                type(again).__name__,
                message_of(again),
            )
            return False
        return True

    async def _failed(self, run_id: str) -> bool:
        """Whether the runner recorded its failure in the store (the run is ``failed``)."""
        try:
            summary = await self.store.get_run(run_id)
        except Exception:
            return False
        return summary is None or summary.status is RunStatus.FAILED

    async def _release(self, run_id: str) -> None:
        with anyio.move_on_after(max(self._lease, 1.0)):  # a store that hangs: the lease runs out anyway
            try:
                await self.store.release_lease(run_id, self.owner)
            except Exception as error:
                logger.warning(
                    "%s could not give up its lease on the run %r (%s: %s); it runs out by itself",
                    self.owner,
                    run_id,
                    type(error).__name__,
                    message_of(error),
                )


def transient(error: BaseException) -> bool:
    """Whether an error that stopped a run may pass by itself, so that the run is tried again once
    its lease runs out: the service rate-limited or overloaded it, answered with a 5xx or a
    timeout, or the connection to it was lost; or the store failed (a conflict is not a failure:
    another runner went on with the run)."""
    if transient_api_error(error):  # the service's or the network's (_core.api_errors)
        return True
    return isinstance(error, CheckpointError) and not isinstance(error, CheckpointConflictError)

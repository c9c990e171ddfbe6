"""The runner's side of saving (``Saver``): one save at a time, only when the state changed, and
only what the store does not hold; what the store decided since the last save, read back."""

from __future__ import annotations

from collections.abc import Callable

import anyio

from .._core.errors import CheckpointConflictError, DecidedMeanwhileError
from .._core.state import CallRecord, RunState
from .._stores.deciding import decisions_since
from .._stores.protocol import Checkpoint, Checkpointer, check_sequence

__all__ = ["Saver"]


class Saver:
    """Saves one runner's states to its checkpointer: one save at a time, only when the state
    changed, and only the history and usage entries the store does not hold."""

    def __init__(self, checkpointer: Checkpointer, run_id: str, *, loaded: Checkpoint | None = None) -> None:
        self._checkpointer = checkpointer
        self._run_id = run_id
        self._lock = anyio.Lock(fast_acquire=True)
        self._saved: RunState | None = None if loaded is None else loaded.state
        self._sequence = 0 if loaded is None else loaded.sequence + 1
        self._kept_messages = 0 if loaded is None else loaded.kept_messages
        self._kept_usage = 0 if loaded is None else loaded.kept_usage
        # Incremented when the history is replaced rather than appended to: the store's copy of it
        # is then no longer a prefix of the state's.
        self._epoch = 0
        self._saved_epoch = 0
        self._refused: CheckpointConflictError | None = None  # once refused, this runner saves no more
        self._uncertain: tuple[Checkpoint, int] | None = None  # the last save and its epoch, if it failed

    def derived(self, before: RunState, after: RunState) -> None:
        """``after`` follows from ``before`` by a pure transition (a finished turn's append, from a
        journal that holds every result): if ``before`` is saved, resuming from it reaches
        ``after`` again, so ``after`` counts as saved; the next save writes what it added."""
        if self._saved is before:
            self._saved = after

    def history_replaced(self) -> None:
        """The history was replaced (``set_messages_params``): the next save writes all of it."""
        self._epoch += 1

    async def save(self, current: Callable[[], RunState]) -> None:
        """Save the state ``current()`` gives once the previous save is done, if it changed.

        A save refused because the run moved (``CheckpointConflictError``) refuses every later
        one. Any other failure (a full disk, a lost connection) leaves the store as the last save
        left it, or, when the store could not tell (a connection lost during its commit), perhaps
        holding this save: the next save finds out which, and writes what is missing.
        """
        async with self._lock:
            for attempt in range(2):
                if self._refused is not None:
                    raise self._refused
                state, epoch = current(), self._epoch
                if state is self._saved:
                    return
                same_history = epoch == self._saved_epoch
                checkpoint = Checkpoint(
                    self._run_id,
                    state,
                    self._sequence,
                    kept_messages=min(self._kept_messages, len(state.messages)) if same_history else 0,
                    kept_usage=min(self._kept_usage, len(state.usage)),
                )
                try:
                    await self._checkpointer.save(checkpoint)
                except CheckpointConflictError as error:
                    if attempt == 0 and await self._saved_after_all():
                        continue
                    _, decided = await self._decided_in_store()
                    if decided:
                        raise DecidedMeanwhileError(
                            f"the calls {sorted(decided)!r} of the run {self._run_id!r} were decided through the "
                            "store since this runner last saved, so this step was not saved; iterate the runner "
                            "again: it takes the decisions over and goes on."
                        ) from error
                    self._refused = error
                    raise
                except Exception:
                    self._uncertain = checkpoint, epoch
                    raise
                self._uncertain = None
                self._saved_as(checkpoint, epoch)
                return

    async def decisions(self) -> dict[str, CallRecord]:
        """The decisions taken through the store on this run's waiting calls since its last save
        (another process approving, denying or answering them); the saves go on from the store's.

        Raises:
            CheckpointConflictError: The run changed in the store by more than decisions (another
                runner went on with it), or was deleted; this runner saves no more.
        """
        async with self._lock:
            if self._refused is not None:
                raise self._refused
            if self._uncertain is not None:
                await self._saved_after_all()
            if self._saved is None:
                return {}
            stored, decided = await self._decided_in_store()
            if stored is not None and stored.sequence == self._sequence - 1:
                return {}  # nothing was saved since this runner's last save
            if stored is None or decided is None:
                error = check_sequence(
                    self._run_id, None if stored is None else stored.sequence, self._sequence
                )
                assert error is not None
                self._refused = error
                raise error
            self._saved_as(stored, self._saved_epoch)
            return decided

    async def _decided_in_store(self) -> tuple[Checkpoint | None, dict[str, CallRecord] | None]:
        """The stored run, and the decisions taken through the store since this runner's last save
        if the stored run is newer than that save by those alone (else ``None``)."""
        stored = await self._checkpointer.load(self._run_id)
        if stored is None or self._saved is None or stored.sequence < self._sequence:
            return stored, None
        return stored, decisions_since(self._saved, stored.state)

    def _saved_as(self, checkpoint: Checkpoint, epoch: int) -> None:
        state = checkpoint.state
        self._saved, self._saved_epoch, self._sequence = state, epoch, checkpoint.sequence + 1
        self._kept_messages, self._kept_usage = len(state.messages), len(state.usage)

    async def _saved_after_all(self) -> bool:
        """Whether the save that failed last is in the store after all (its commit went through,
        but the answer was lost): then it counts as saved, and the refusal was of its repetition."""
        if self._uncertain is None:
            return False
        (uncertain, epoch), self._uncertain = self._uncertain, None
        try:
            stored = await self._checkpointer.load(self._run_id)
        except Exception:
            return False
        if stored is None or stored.sequence != uncertain.sequence:
            return False
        if stored.state.to_dict() != uncertain.state.to_dict():
            return False
        self._saved_as(uncertain, epoch)
        return True

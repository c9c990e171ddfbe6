"""What a web request is and is answered with, whatever serves it (``Agent``, ``TemporalAgent``):
the request's turn (``Turn``, its ``Decision``s), the answer (``Follow``: the run's events, or a
``RunView`` of it), the errors (``RequestError``), and ``Serving``, what both agents share.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import anyio
import anyio.abc

from .._core.errors import ApprovalError, ToolRunnerError
from .._core.ids import check_by, check_run_id
from .._core.state import RunState
from .._core.types import ToolCall
from .._stores.deciding import approved, denied
from ._events import Entry, RunError
from ._log import Session

__all__ = [
    "NOT_OPTIONS",
    "Decision",
    "Follow",
    "RequestError",
    "RunView",
    "Serving",
    "Turn",
    "check_decisions",
    "client_error",
    "decider",
    "user_turns",
    "web_run_id",
]

LOGGER = logging.getLogger("toolrunner.web")
"""Where a run's error goes whole (its client is told its type only: ``client_error``)."""

NOT_OPTIONS = frozenset({"messages", "checkpointer", "run_id", "stream", "on_event", "tools"})


class RequestError(Exception):
    """A request the endpoint refuses, with its HTTP status (internal: the apps answer with it)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's decision on a waiting call, as a client sent it."""

    call_id: str
    approved: bool
    reason: str | None = None
    input: object = None
    """The input to run with instead of the model's (``None``: the model's)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """What a request brings, read from its protocol's body."""

    run_id: str
    conversation: Sequence[tuple[Literal["user", "assistant"], str]] = ()
    """The client's messages, as text: those the run has not seen are new."""
    decisions: Sequence[Decision] = ()
    after: int | None = None
    """The last event the client has (a reconnect); ``None``: from the start of the request's part."""
    keep_alive: float | None = None
    """After how many seconds of silence the answer says it is alive (``None``: never)."""

    def __post_init__(self) -> None:
        web_run_id(self.run_id)


def web_run_id(value: str) -> str:
    """``value`` if it can name a run (``_core.ids.check_run_id``); else a 422 that says why, before
    anything is read or written."""
    try:
        return check_run_id(value)
    except ToolRunnerError as error:
        raise RequestError(422, f"the conversation's id cannot name a run: {error}") from error


def check_decisions(run_id: str, state: RunState, decisions: Sequence[Decision], by: str | None) -> None:
    """Every decision a request brings, taken in turn on ``state`` (pure: nothing is written),
    before the first is taken for real: a request one of whose decisions cannot be taken takes
    none (a call decided twice in it, a call that does not wait, or was decided already: whom by;
    an edited input its tool refuses).

    Raises:
        RequestError: 409 for a call that does not wait, 422 for a request that cannot be right.
    """
    seen: set[str] = set()
    for decision in decisions:
        if decision.call_id in seen:
            raise RequestError(
                422,
                f"nothing was decided: the request decides the call {decision.call_id!r} twice; send one "
                "decision a call.",
            )
        seen.add(decision.call_id)
        try:
            if decision.approved:
                state = approved(state, run_id, decision.call_id, input=decision.input, by=by, at="")
            else:
                state = denied(state, run_id, decision.call_id, decision.reason, by=by, at="")
        except ApprovalError as error:
            raise RequestError(409, f"nothing was decided: {error}") from error
        except ToolRunnerError as error:  # an edited input the tool refuses
            raise RequestError(422, f"nothing was decided: {error}") from error


def decider(by: str | None) -> str | None:
    """Who decides, as the app's ``decided_by`` said, checked (``_core.ids.check_by``) before
    anything is read or written; a 400 that says why otherwise."""
    try:
        return check_by(by)
    except ToolRunnerError as error:
        raise RequestError(400, f"who decides cannot be recorded: {error}") from error


def client_error(error: BaseException | None, kind: str | None = None) -> RunError:
    """What a client is told of the error that stopped a run: its type (``kind``, for a failure
    read from a saved state), not its message, which may hold what a client must not read (a
    store's URL, a service's answer); the whole error goes to the ``toolrunner.web`` logger."""
    if error is not None:
        LOGGER.error("the run stopped with an error", exc_info=error)
        kind = type(error).__name__
    kind = kind or "Error"
    return RunError(f"the run stopped with an error ({kind}); the server's log has the rest.", kind)


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as the store has it, for a client that was not there."""

    messages: Sequence[Mapping[str, Any]]
    waiting: tuple[ToolCall, ...]
    end_reason: str | None
    denied: frozenset[str] = frozenset()
    """The calls a person denied (their results are the reasons the model read)."""
    running: bool = False
    """Whether the run is running in this process (the store has its last save)."""


@dataclass(frozen=True, slots=True)
class Follow:
    """What a request is answered with: the run's events from ``after`` on (``events``), or, the
    run not running in this process and nothing to send from its log, ``view``."""

    events: AsyncIterator[Entry | None] | None
    """``None`` in it: a silence of the turn's ``keep_alive`` seconds (the answer says it is alive)."""
    view: RunView | None
    started: bool
    """Whether this request started the run or made it go on (else: it follows it)."""


class Serving:
    """What ``Agent`` and ``TemporalAgent`` share: the request params of new runs, checked, and the
    task group the agent's work runs in, entered with the agent (``async with agent:``)."""

    _group: anyio.abc.TaskGroup | None = None

    @staticmethod
    def request_params(
        model: str,
        max_tokens: int,
        system: str | None,
        options: Mapping[str, Any] | None,
        reserved: frozenset[str],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The params of new runs, and the options as given (the ``reserved`` ones refused)."""
        given = dict(options or {})
        if clash := sorted(reserved & given.keys()):
            raise ValueError(f"the agent sets {clash!r} itself; leave them out of options=.")
        params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, **given}
        if system is not None:
            params["system"] = system
        return params, given

    @staticmethod
    def following(turn: Turn, session: Session) -> Follow:
        """What a request that brings nothing new is answered with. Running: the request's part so
        far, then live. Not running: the events after those the client says it has, if this
        process logged any; else nothing (the run as the store has it). A number this process
        did not give (another replica's) is taken for none."""
        after = turn.after if turn.after is not None and session.knows(turn.after) else None
        keep_alive = turn.keep_alive
        if session.running:  # a number another process gave: from the part's start, as a reload
            after = session.first - 1 if after is None else after
            return Follow(session.follow(after, keep_alive), None, started=False)
        if after is not None and after < session.base + len(session.log) - 1:
            return Follow(session.follow(after, keep_alive), None, started=False)
        return Follow(None, None, started=False)

    @property
    def entered(self) -> bool:
        """Whether the agent is entered (serving)."""
        return self._group is not None

    async def __aenter__(self) -> Self:
        if self._group is not None:
            raise RuntimeError(
                f"this {type(self).__name__} is entered already; enter it once, where the app starts."
            )
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        group, self._group = self._group, None
        assert group is not None
        group.cancel_scope.cancel()  # what runs in the group stops; the runs' last saves stand
        return await group.__aexit__(kind, error, traceback)


def user_turns(history: Sequence[Any]) -> int:
    """How many messages of the history a person wrote (tool results are not)."""
    count = 0
    for message in history:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str) or not any(block.get("type") == "tool_result" for block in content):
            count += 1
    return count

"""What a web request is and is answered with, whatever serves it (``Agent``, ``TemporalAgent``):
the request's turn (``Turn``, its ``Decision``s), the answer (``Follow``: the run's events, or a
``RunView`` of it), the errors (``RequestError``), and ``Serving``, what both agents share.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Literal, Self

import anyio
import anyio.abc

from .._core.types import ToolCall
from ._events import Entry
from ._log import Session

__all__ = [
    "NOT_OPTIONS",
    "Decision",
    "Follow",
    "RequestError",
    "RunView",
    "Serving",
    "Turn",
    "user_turns",
]

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

    events: AsyncIterator[Entry] | None
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
        if session.running:  # a number another process gave: from the part's start, as a reload
            return Follow(session.follow(session.first - 1 if after is None else after), None, started=False)
        if after is not None and after < session.base + len(session.log) - 1:
            return Follow(session.follow(after), None, started=False)
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

"""What the activities share: heartbeats, errors as Temporal's retry policy reads them, the
runner a tool in an activity does not have, and a sub-run's sub-agent found by its path."""

from __future__ import annotations

import asyncio
import email.utils
import time
from collections.abc import Awaitable, Mapping, Sequence
from datetime import timedelta
from typing import Any, NoReturn, TypeVar

import anthropic
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._core.errors import ToolRunnerError
from .._core.types import Reply, RunnerView
from .._tools.subagents import SubAgent
from .._tools.toolsets import RunnableTool
from ._names import TOOL_NOT_REGISTERED

__all__ = ["NoRunner", "agent_of", "agent_wire", "heartbeating", "not_registered", "raise_for_status"]

T = TypeVar("T")


class NoRunner(RunnerView):
    """``ToolContext.runner`` of a tool run by an activity: there is no runner on this worker."""

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id

    def _refuse(self) -> NoReturn:
        raise ToolRunnerError(
            f"a tool of the Temporal run {self._run_id!r} runs in an activity, where there is no runner to read "
            "or steer; use ToolContext.call, and steer the run from its workflow instead."
        )

    @property
    def params(self) -> Mapping[str, Any]:
        self._refuse()

    @property
    def messages(self) -> Sequence[Any]:
        self._refuse()

    @property
    def last_message(self) -> Reply | None:
        self._refuse()

    @property
    def requests_sent(self) -> int:
        self._refuse()

    @property
    def finished(self) -> bool:
        self._refuse()

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        self._refuse()

    def set_messages_params(self, params: Any) -> None:
        self._refuse()

    def close(self) -> None:
        self._refuse()


async def heartbeating(work: Awaitable[T]) -> T:
    """Await ``work`` while heartbeating three times per heartbeat timeout, so that Temporal
    notices a lost worker in about that time."""
    timeout = activity.info().heartbeat_timeout
    if not timeout:
        return await work

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(timeout.total_seconds() / 3)

    beating = asyncio.create_task(beat())
    try:
        return await work
    finally:
        beating.cancel()
        await asyncio.wait([beating])


def raise_for_status(error: anthropic.APIStatusError) -> NoReturn:
    """An API error as Temporal's retry policy reads it: the SDK's own rule of what to retry
    (408, 409, 429, 5xx, and what ``x-should-retry`` says), and ``retry-after`` as the delay."""
    headers = error.response.headers
    should = headers.get("x-should-retry")
    retry = (
        should == "true"
        if should in ("true", "false")
        else error.status_code in (408, 409, 429) or error.status_code >= 500
    )
    raise ApplicationError(
        str(error),
        type=type(error).__name__,
        non_retryable=not retry,
        next_retry_delay=_retry_after(headers.get("retry-after")) if retry else None,
    ) from None


def _retry_after(value: str | None) -> timedelta | None:
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        parsed = email.utils.parsedate_tz(value)
        if parsed is None:
            return None
        seconds = email.utils.mktime_tz(parsed) - time.time()
    return timedelta(seconds=seconds) if 0 < seconds <= 3600 else None


def not_registered(name: str, tools: Mapping[str, object]) -> NoReturn:
    raise ApplicationError(
        f"the tool {name!r} is not registered on this worker (it has {sorted(tools)!r}); every worker of the "
        "task queue must be created with every tool of the runs it serves: create_worker(tools=[...]).",
        type=TOOL_NOT_REGISTERED,
        non_retryable=True,
    )


def agent_of(tools: Mapping[str, RunnableTool], path: Sequence[str]) -> SubAgent:
    """The sub-agent whose sub-run is at ``path`` (``SubRunEvent.path``): its name among a worker's
    ``tools``, then among its tools, ...; a worker that has none there fails the run (``not_registered``)."""
    agent: SubAgent | None = None
    for name in path[1::2]:
        found = tools.get(name)
        if found is None:
            not_registered(name, tools)
        if not isinstance(found, SubAgent):
            raise ApplicationError(
                f"the tool {name!r} of this worker is not a sub-agent (SubAgent), and the run's {name!r} is; every "
                "worker of the task queue must be created with the runs' sub-agents: create_worker(tools=[...]).",
                type=TOOL_NOT_REGISTERED,
                non_retryable=True,
            )
        agent, tools = found, found.runnable
    assert agent is not None, "a sub-run's path names its sub-agent"
    return agent


def agent_wire(agent: SubAgent, tools: Sequence[object]) -> list[Any]:
    """The definitions of the tools of ``agent`` that ``tools`` (a sub-run's ``tools`` param) names."""
    wire = {tool.name: definition for tool, definition in zip(agent.tools, agent.wire, strict=True)}
    found: list[Any] = []
    for entry in tools:
        if not isinstance(entry, str):
            found.append(entry)
        elif entry in wire:
            found.append(wire[entry])
        else:
            not_registered(entry, agent.runnable)
    return found

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

from .._core.errors import MalformedReplyError, ToolRunnerError
from .._core.message_checks import check_reply
from .._core.output import OutputFormat
from .._core.state import RunState
from .._core.transitions import request_params
from .._core.types import Reply, RunnerView
from .._tools.subagents import SubAgent, transport_at
from .._tools.toolsets import RunnableTool
from ._names import OUTPUT_NOT_REGISTERED, TOOL_NOT_REGISTERED

__all__ = [
    "NoRunner",
    "agent_of",
    "agent_output_of",
    "agent_wire",
    "checked_reply",
    "heartbeating",
    "not_registered",
    "raise_for_status",
    "sub_run_request",
]

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


def checked_reply(reply: Reply) -> None:
    """``reply`` checked as ``ToolRunner`` checks one (``check_reply``); a malformed one fails the
    request activity with its error (which the run's retry policy sends again)."""
    try:
        check_reply(reply)
    except MalformedReplyError as error:
        raise ApplicationError(str(error), type="MalformedReplyError") from None


def agent_output_of(agent: SubAgent, output: Mapping[str, Any] | None) -> OutputFormat | None:
    """The typed answer of ``agent`` (this worker's ``SubAgent``) for a sub-run whose sub-agent's
    definition has ``output`` (``{"name", "schema", "retries"}``, or ``None``: the run's answer is
    text, whatever this worker's sub-agent says); the worker's type must have the run's schema, or
    the run fails, as it does for a run's own output type (``WorkerOutputs.find``)."""
    if output is None:
        return None
    if agent.output is None or agent.output.fingerprint != output["schema"]:
        raise ApplicationError(
            f"the sub-agent {agent.name!r} of this worker has "
            f"{'no output_format' if agent.output is None else 'another output_format (another JSON schema)'}, and "
            f"the run's has {output['name']}: every worker of the task queue must be created with the runs' "
            "sub-agents as they were started: create_worker(tools=[...]).",
            type=OUTPUT_NOT_REGISTERED,
            non_retryable=True,
        )
    return agent.output


def sub_run_request(
    tools: Mapping[str, RunnableTool],
    path: Sequence[str],
    state: RunState,
    wire: Sequence[object],
    output: Mapping[str, Any] | None,
) -> tuple[dict[str, Any], OutputFormat | None]:
    """The keyword arguments of the request of the sub-run at ``path`` whose ``tools`` param is
    ``wire``, as ``ToolRunner`` sends it: its sub-agent's tools (found among the worker's ``tools``),
    its typed answer's schema (``agent_output_of``, also returned: the reply is parsed with it), and
    the transport params of the sub-agents on the path (never in a state)."""
    agent = agent_of(tools, path)
    typed = agent_output_of(agent, output)
    kwargs = request_params(state, agent_wire(agent, wire))
    if typed is not None:
        kwargs = typed.request(kwargs)
    return kwargs | transport_at(tools, path[1::2], {}), typed


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

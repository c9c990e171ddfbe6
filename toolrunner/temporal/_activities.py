"""The activities: the I/O of a Temporal run, on the workers.

``toolrunner.request`` sends one request through ``_requests.send_request`` (the one place that
sends), with the SDK's retries off: Temporal's retry policy is the only retry, so retries do not
multiply. ``toolrunner.tool`` runs one call through ``_execution.run_one``, exactly as a
``ToolRunner`` runs it: the input is validated, what the tool raises becomes an ``is_error``
result, a tool's timeout answers for it. Both read and write large data through the
``PayloadStore`` (``_payloads``), so that only small values reach workflow history.
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from datetime import timedelta
from functools import partial
from typing import Any, NoReturn, TypeVar, cast

import anthropic
from anthropic.types import ToolResultBlockParam
from anthropic.types.beta import BetaMessage
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._approvals import evaluate_gates
from .._caching import CachePolicy, Caching
from .._errors import MalformedReplyError, ToolInputError, ToolRunnerError
from .._events import (
    ApprovalDecided,
    ApprovalRequested,
    MessageFinished,
    RunnerEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .._execution import CallHooks, ExecutionOptions, run_one
from .._lifecycle import pending_calls, request_params
from .._messages import check_reply
from .._options import ToolLike
from .._params import index_tools
from .._requests import send_request
from .._results import DEFAULT_ADAPTER, ToolResultAdapter, tool_result_block
from .._state import Phase, RunState, request_usage_data
from .._streaming import StreamWatch
from .._tools import ToolContext
from .._toolsets import RunnableTool
from .._types import Reply, RunnerView, ToolCall
from .._usage import DEFAULT_PRICES, Price, request_usage
from ._data import DecisionInput, RequestInput, RequestOutput, ToolInput
from ._names import DECISION_ACTIVITY, REQUEST_ACTIVITY, TOOL_ACTIVITY, TOOL_NOT_REGISTERED
from ._payloads import Payloads, PayloadStore

__all__ = ["Activities", "EventListener"]

logger = logging.getLogger("toolrunner")

T = TypeVar("T")

EventListener = Callable[[str, RunnerEvent], None]
"""Called on a worker with a run's id and each of its events."""


class Activities:
    """The activities of one worker: its client, its tools, its store.

    Args:
        client: The Anthropic client; its own retries are switched off.
        tools: The tools to run (``@tool`` tools or plain functions; raw definitions are ignored).
        store: Where large blocks and the history go.
        inline_limit: Blocks whose JSON is longer than this many bytes go to the store.
        prices: The price table for usage and ``max_cost``.
        result_adapter: Turns what tools return into tool_result content.
        stream: Stream each reply (needed for long requests; text deltas reach ``on_event`` as
            they arrive).
        on_event: Called with the run id and each event, on the worker.
    """

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        *,
        tools: Iterable[ToolLike],
        store: PayloadStore,
        inline_limit: int = 1024,
        prices: Mapping[str, Price] | None = None,
        result_adapter: ToolResultAdapter = DEFAULT_ADAPTER,
        stream: bool = False,
        on_event: EventListener | None = None,
    ) -> None:
        if not isinstance(client, anthropic.AsyncAnthropic):
            raise ToolRunnerError(
                f"the worker's client must be an anthropic.AsyncAnthropic, not {type(client).__name__!r}; "
                "create one with anthropic.AsyncAnthropic()."
            )
        entries = list(tools)
        index = index_tools(entries)  # raw definitions are never run: a worker has no use for them
        if index.toolsets:
            raise ToolRunnerError(
                f"Toolset objects ({', '.join(repr(toolset.name) for toolset in index.toolsets)}) are not supported "
                "on Temporal workers yet (they must be opened and closed around each call); give their tools instead."
            )
        self.client = client.with_options(max_retries=0)
        self.tools: Mapping[str, RunnableTool] = index.runnable
        self.families: Mapping[str, RunnableTool] = index.families
        # Each tool's definitions, by the key a run's ``tools`` param keeps it under (``ToolIndex.saved``).
        self.definitions: dict[str, list[Any]] = {}
        for entry in entries:
            single = index_tools([entry])
            if single.saved and isinstance(single.saved[0], str):
                self.definitions[single.saved[0]] = single.wire
        self.payloads = Payloads(store, inline_limit=inline_limit)
        self.prices = DEFAULT_PRICES if prices is None else prices
        self.result_adapter = result_adapter
        self.stream = stream
        self.on_event = on_event

    def all(self) -> list[Callable[..., Any]]:
        """The activities, to register on a worker."""
        return [self.request, self.tool, self.decision]

    # -- toolrunner.request ---------------------------------------------------------------------

    @activity.defn(name=REQUEST_ACTIVITY)
    async def request(self, input: RequestInput) -> RequestOutput:
        """Send one request: the history is the node ``input.base`` and what is new."""
        key, history = await self.payloads.save_history(
            input.base, params=input.params, tools=input.tools, messages=input.messages
        )
        state = RunState(
            params=history.params,
            messages=tuple(await self.payloads.resolve(history.messages)),
            final_answer=cast(Any, input.final_answer),
        )
        wire = [definition for entry in history.tools for definition in self._definitions(entry)]
        cache = None if input.cache is None else Caching(CachePolicy(**input.cache))
        kwargs = request_params(state, wire, cache)
        reply = await _heartbeating(self._send(input.run_id, kwargs))
        try:
            check_reply(reply)
        except MalformedReplyError as error:
            raise ApplicationError(str(error), type="MalformedReplyError") from None
        self._emit(input.run_id, MessageFinished(message=reply))
        gated, denied = await self._gate(input.run_id, reply)
        return RequestOutput(
            reply=await self.payloads.stash_reply(reply),
            beta=isinstance(reply, BetaMessage),
            usage=request_usage_data(request_usage(reply, self.prices)),
            history=key,
            gated=gated,
            denied=denied,
        )

    async def _gate(self, run_id: str, reply: Reply) -> tuple[list[str], dict[str, str]]:
        """Which of the reply's calls wait for a decision, as ``ToolRunner`` finds them (the
        tools' gates may be functions of the call); a gate that raises denies its call."""
        calls = pending_calls(RunState(params={}, phase=Phase.WITH_BODY, reply=reply))
        gated, denied = await evaluate_gates(calls, self._options(None).find)
        for call in gated:
            self._emit(run_id, ApprovalRequested(call=call))
        for call, _ in denied:
            self._emit(run_id, ApprovalDecided(call=call, decision="denied"))
        return [call.id for call in gated], {call.id: reason for call, reason in denied}

    async def _send(self, run_id: str, kwargs: dict[str, Any]) -> Reply:
        emit: Callable[[RunnerEvent], None] | None = None
        if self.on_event is not None:
            emit = partial(self._emit, run_id)
        try:
            if not self.stream:
                reply = cast(Reply, await send_request(self.client, kwargs))
                for index, block in enumerate(reply.content):
                    if block.type == "text":
                        self._emit(run_id, TextDelta(text=block.text, index=index))
                return reply
            watch = cast(StreamWatch, await send_request(self.client, kwargs, stream=True, emit=emit))
            try:
                return await watch.final_message()
            finally:
                await watch.close()
        except anthropic.APIStatusError as error:
            _raise_for_status(error)
        except anthropic.APIConnectionError as error:  # and timeouts: retryable
            raise ApplicationError(str(error), type=type(error).__name__) from None

    def _definitions(self, entry: object) -> list[Any]:
        if not isinstance(entry, str):
            return [entry]  # a raw definition, sent as given
        definitions = self.definitions.get(entry)
        if definitions is None:
            _not_registered(entry, self.definitions)
        return definitions

    def _options(
        self, timeout: float | None, available: list[str] | None = None, unrunnable: Iterable[str] = ()
    ) -> ExecutionOptions:
        """How this worker runs calls: all its tools, or those ``available`` to a run."""
        tools, families = self.tools, self.families
        if available is not None:
            tools = {name: tool for name, tool in tools.items() if name in available}
            families = {name: tool for name, tool in families.items() if name in available}
        return ExecutionOptions(
            tools=tools,
            adapter=self.result_adapter,
            timeout=timeout,
            unrunnable=frozenset(unrunnable),
            families=families,
        )

    # -- toolrunner.tool ------------------------------------------------------------------------

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool(self, input: ToolInput) -> dict[str, Any]:
        """Run one tool call as a ``ToolRunner`` would; a large result goes to the store."""
        call = ToolCall(id=input.id, name=input.name, input=input.input, toolset_name=input.toolset_name)
        # For a call to no tool of the run, the core's message names the run's tools.
        options = self._options(input.timeout, input.available, input.unrunnable)
        if input.available is None and options.find(call) is None:
            _not_registered(call.toolset_name or call.name, {**self.tools, **self.families})
        approved = input.approved_input
        hooks = CallHooks(
            context=lambda call: ToolContext(call=call, runner=_NoRunner(input.run_id)),
            input_of=lambda call: call.input if approved is None else approved,
            started=lambda call, early: self._started(input.run_id, call),
            finished=lambda call, block, duration: self._finished(input.run_id, call, block, duration),
        )
        block = await _heartbeating(run_one(call, options, hooks))
        return dict(await self.payloads.stash_result(block))

    # -- toolrunner.decision --------------------------------------------------------------------

    @activity.defn(name=DECISION_ACTIVITY)
    async def decision(self, input: DecisionInput) -> dict[str, Any]:
        """Check an approved input against the tool's schema (``{}`` when it fits), or convert an
        answer as a tool's return value is converted (its tool_result block)."""
        if input.kind == "approve":
            tool = self._options(None).find(ToolCall(input.id, input.name, None, input.toolset_name))
            if tool is None:
                _not_registered(input.toolset_name or input.name, {**self.tools, **self.families})
            try:
                tool.parse_input(input.value)
            except ToolInputError as error:
                raise ApplicationError(str(error), type="ToolInputError", non_retryable=True) from None
            return {}
        value, is_error = input.value, input.is_error
        try:
            content = self.result_adapter.to_content(value)
        except (TypeError, ValueError) as error:
            raise ApplicationError(
                f"the answer to {input.id!r} cannot be a tool result ({error}); answer with text, or JSON data.",
                type=type(error).__name__,
                non_retryable=True,
            ) from None
        block = tool_result_block(input.id, content, is_error=is_error)
        return dict(await self.payloads.stash_result(block))

    async def _started(self, run_id: str, call: ToolCall) -> None:
        self._emit(run_id, ToolCallStarted(call=call))

    async def _finished(
        self, run_id: str, call: ToolCall, block: ToolResultBlockParam, duration: float
    ) -> None:
        self._emit(
            run_id, ToolCallFinished(call=call, duration=duration, is_error=bool(block.get("is_error")))
        )

    def _emit(self, run_id: str, event: RunnerEvent) -> None:
        if self.on_event is None:
            return
        try:
            self.on_event(run_id, event)
        except Exception:  # a listener's failure must not fail (and so retry) a call that finished
            logger.exception("on_event raised for %r of run %r", type(event).__name__, run_id)


class _NoRunner(RunnerView):
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


async def _heartbeating(work: Awaitable[T]) -> T:
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


def _raise_for_status(error: anthropic.APIStatusError) -> NoReturn:
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


def _not_registered(name: str, tools: Mapping[str, object]) -> NoReturn:
    raise ApplicationError(
        f"the tool {name!r} is not registered on this worker (it has {sorted(tools)!r}); every worker of the "
        "task queue must be created with every tool of the runs it serves: create_worker(tools=[...]).",
        type=TOOL_NOT_REGISTERED,
        non_retryable=True,
    )

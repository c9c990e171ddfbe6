"""The activities: the I/O of a Temporal run, on the workers.

``toolrunner.request`` sends one request through ``_runner.requests.send_request`` (the one place that
sends), with the SDK's retries off: Temporal's retry policy is the only retry, so retries do not
multiply. ``toolrunner.tool`` runs one call through ``_tools.execution.run_one``, exactly as a
``ToolRunner`` runs it: the input is validated, what the tool raises becomes an ``is_error``
result, a tool's timeout answers for it. Both read and write large data through the
``PayloadStore`` (``_payloads``), so that only small values reach workflow history.
``toolrunner.summarize`` sends client-side compaction's summary request, ``toolrunner.gate`` the
gates of calls no request saw, ``toolrunner.decision`` checks an approved input or converts an
answer, and the local activity ``toolrunner.events`` hands ``on_event`` what the workflow heard.

A worker's ``Toolset`` objects (an MCP server's session, say) are opened once, when the worker
starts, and closed when it stops (``open_tools``, ``close_tools``); their tools are read again
when they change, and each call is an activity like any other.

A sub-agent (``SubAgent``) is registered like a tool, by name: its sub-runs run in the workflow;
a sub-run's activities name its path (``SubRunEvent.path``), by which they find its sub-agent
among the worker's tools (its tools, its typed answer, its transport params, which are never
in a state), and report its events as ``SubRunEvent`` s with that path.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import TYPE_CHECKING, Any, cast

import anthropic
from anthropic.types import ToolResultBlockParam
from anthropic.types.beta import BetaMessage
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._core.caching import CachePolicy, Caching
from .._core.compaction import CompactionControl, compaction_request, summary_request
from .._core.errors import ToolInputError, ToolRunnerError
from .._core.events import (
    ApprovalDecided,
    ApprovalRequested,
    MessageFinished,
    RunnerEvent,
    SubRunEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .._core.results import tool_result_block
from .._core.state import Phase, RunState, request_usage_data
from .._core.transitions import pending_calls, request_params
from .._core.types import Reply, ToolCall
from .._core.usage import DEFAULT_PRICES, Price, request_usage
from .._runner.options import ToolLike
from .._runner.params import ToolIndex, index_tools
from .._runner.requests import send_request
from .._runner.streaming import StreamWatch
from .._tools.approvals import evaluate_gates, tool_definition
from .._tools.execution import CallHooks, ExecutionOptions, run_one
from .._tools.results import DEFAULT_ADAPTER, ToolResultAdapter
from .._tools.subagents import execution_at
from .._tools.tool import ToolContext
from .._tools.toolsets import RunnableTool, Toolset
from .._tracing.trace import TracedCall, trace_tool_calls, untraced
from ._activity_support import (
    NoRunner,
    agent_of,
    checked_reply,
    heartbeating,
    not_registered,
    raise_for_status,
    sub_run_request,
)
from ._data import (
    DecisionInput,
    EventsInput,
    GateInput,
    GateOutput,
    RequestInput,
    RequestOutput,
    SummaryInput,
    SummaryOutput,
    ToolInput,
    ToolSpec,
)
from ._event_data import read_call, read_event
from ._names import (
    DECISION_ACTIVITY,
    EVENTS_ACTIVITY,
    GATE_ACTIVITY,
    REQUEST_ACTIVITY,
    SUMMARY_ACTIVITY,
    TOOL_ACTIVITY,
)
from ._output import WorkerOutputs, answer_data
from ._payloads import Payloads, PayloadStore

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["Activities", "EventListener"]

logger = logging.getLogger("toolrunner")

EventListener = Callable[[str, RunnerEvent], None]
"""Called on a worker with a run's id and each of its events."""


class Activities:
    """The activities of one worker: its client, its tools, its store.

    Args:
        client: The Anthropic client; its own retries are switched off.
        tools: The tools to run (``@tool`` tools, plain functions, SDK tools, ``Toolset`` objects;
            raw definitions are ignored).
        store: Where large blocks and the history go.
        inline_limit: Blocks whose JSON is longer than this many bytes go to the store.
        prices: The price table for usage and ``max_cost``.
        result_adapter: Turns what tools return into tool_result content.
        stream: Stream each reply (needed for long requests; text deltas reach ``on_event`` as
            they arrive).
        on_event: Called with the run id and each event, on the worker.
        tracer_provider: Where the ``execute_tool`` spans of traced runs go; the global one when ``None``.
        output_types: The output types of the runs, by name (``start_run(output_format=...)``).
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
        tracer_provider: TracerProvider | None = None,
        output_types: WorkerOutputs | None = None,
    ) -> None:
        if not isinstance(client, anthropic.AsyncAnthropic):
            raise ToolRunnerError(
                f"the worker's client must be an anthropic.AsyncAnthropic, not {type(client).__name__!r}; "
                "create one with anthropic.AsyncAnthropic()."
            )
        self.client = client.with_options(max_retries=0)
        self._entries = list(tools)
        self._index = ToolIndex(tools=[], wire=[], runnable={}, unrunnable=frozenset())
        self.tools: Mapping[str, RunnableTool] = {}
        self.families: Mapping[str, RunnableTool] = {}
        self.definitions: dict[str, list[Any]] = {}
        """Each tool's definitions, by the key a run's ``tools`` param keeps it under (``ToolIndex.saved``)."""
        self._offered: dict[str, list[str]] = {}  # the names of each toolset's tools, by its key
        self._reindex()
        self._opened: list[Toolset] = []
        self.payloads = Payloads(store, inline_limit=inline_limit)
        self.prices = DEFAULT_PRICES if prices is None else prices
        self.result_adapter = result_adapter
        self.stream = stream
        self.on_event = on_event
        self.tracer_provider = tracer_provider
        self.outputs = WorkerOutputs(()) if output_types is None else output_types

    def all(self) -> list[Callable[..., Any]]:
        """The activities, to register on a worker."""
        return [self.request, self.tool, self.decision, self.summarize, self.gate, self.events]

    # -- the tools --------------------------------------------------------------------------------

    @property
    def toolsets(self) -> tuple[Toolset, ...]:
        """The worker's ``Toolset`` objects."""
        return self._index.toolsets

    def _reindex(self) -> None:
        """Read the tools (again): raw definitions are never run, a worker has no use for them."""
        self._index = index = index_tools(self._entries)
        self.tools, self.families = index.runnable, index.families
        self.definitions, self._offered = {}, {}
        for entry in self._entries:
            single = index_tools([entry])
            if single.saved and isinstance(single.saved[0], str):
                self.definitions[single.saved[0]] = single.wire
                if isinstance(entry, Toolset):
                    self._offered[single.saved[0]] = list(single.runnable)

    def _fresh(self) -> None:
        """Read the toolsets' tools again if they changed (an MCP server's list, say)."""
        if self._index.toolsets and self._index.stale():
            self._reindex()

    async def open_tools(self) -> None:
        """Open the worker's toolsets (those not open already), first to last."""
        for toolset in self._index.toolsets:
            if await toolset.acquire(self):
                self._opened.append(toolset)
        self._fresh()

    async def close_tools(self) -> None:
        """Close the toolsets ``open_tools`` opened, last first; each one even if closing another failed."""
        while self._opened:
            toolset = self._opened.pop()
            try:
                await toolset.release(self)
            except Exception:
                logger.exception("Closing the toolset %r failed", toolset)

    def _options(
        self,
        timeout: float | None,
        available: list[str] | None = None,
        unrunnable: Iterable[str] = (),
        removed: Iterable[str] = (),
    ) -> ExecutionOptions:
        """How this worker runs calls: all its tools, or those ``available`` to a run (names, and
        ``"toolset:<name>"`` for all of a toolset's tools), less those the run removed."""
        tools, families = self.tools, self.families
        if available is not None:
            names = set(available)
            for key in available:
                names.update(self._offered.get(key, ()))
            tools = {name: tool for name, tool in tools.items() if name in names}
            families = {name: tool for name, tool in families.items() if name in names}
        return ExecutionOptions(
            tools=tools,
            adapter=self.result_adapter,
            timeout=timeout,
            unrunnable=frozenset(unrunnable),
            families=families,
            removed=frozenset(removed),
        )

    def tool_options(self) -> ExecutionOptions:
        """How this worker runs calls, with all its tools (a hook's ``RunWith`` input is checked with them)."""
        return self._options(None)

    def _definitions(self, entry: object) -> list[Any]:
        if not isinstance(entry, str):
            return [entry]  # a raw definition, sent as given
        definitions = self.definitions.get(entry)
        if definitions is None:
            not_registered(entry, self.definitions)
        return definitions

    def _agent_options(self, path: Sequence[str], timeout: float | None) -> ExecutionOptions:
        """How the calls of the sub-run at ``path`` run: its sub-agent's tools (``execution_at``)."""
        agent_of(self.tools, path)  # one the worker has
        return execution_at(self._options(timeout), path[1::2])

    # -- toolrunner.request -----------------------------------------------------------------------

    @activity.defn(name=REQUEST_ACTIVITY)
    async def request(self, input: RequestInput) -> RequestOutput:
        """Send one request: the history is the node ``input.base`` and what is new."""
        self._fresh()
        key, history = await self.payloads.save_history(
            input.base, params=input.params, tools=input.tools, messages=input.messages
        )
        state = RunState(
            params=history.params,
            messages=tuple(await self.payloads.resolve(history.messages)),
            final_answer=cast(Any, input.final_answer),
        )
        path = input.path
        if path:  # a sub-run's: its sub-agent's tools and typed answer (no cache policy: as ToolRunner)
            kwargs, output = sub_run_request(self.tools, path, state, history.tools, input.output)
        else:
            output = None if input.output is None else self.outputs.find(input.output)
            wire = [definition for entry in history.tools for definition in self._definitions(entry)]
            cache = None if input.cache is None else Caching(CachePolicy(**input.cache))
            kwargs = request_params(state, wire, cache)
            if output is not None:  # the type's schema, as ToolRunner sends it (_core.output)
                kwargs = output.request(kwargs)
            if input.compaction is not None:
                kwargs = compaction_request(kwargs, input.compaction)
        reply = await heartbeating(self._send(input.run_id, kwargs, path=path))
        checked_reply(reply)
        parsed, answer = (reply, None) if output is None else answer_data(output, reply, sub_run=bool(path))
        if answer is not None and not path:  # a large answer travels by reference (a sub-run's is its result)
            answer["value"] = await self.payloads.stash_value(answer["value"])
        self._emit(input.run_id, MessageFinished(message=parsed), path)  # with parsed_output, as ToolRunner's
        calls = pending_calls(RunState(params={}, phase=Phase.WITH_BODY, reply=reply))
        gated = await self._gate(input.run_id, calls, input.removed or (), path)
        return RequestOutput(
            reply=await self.payloads.stash_reply(reply),
            beta=isinstance(reply, BetaMessage),
            usage=request_usage_data(request_usage(reply, self.prices)),
            history=key,
            gated=gated.gated,
            denied=gated.denied,
            definitions=gated.definitions,
            specs=[] if path else self._specs_of(calls),
            output=answer,
        )

    async def _gate(
        self,
        run_id: str,
        calls: Iterable[ToolCall],
        removed: Iterable[str],
        path: Sequence[str] | None = None,
    ) -> GateOutput:
        """Which of ``calls`` wait for a decision, as ``ToolRunner`` finds them (the tools' gates
        may be functions of the call), with their tools' definitions; a gate that raises denies
        its call. ``path``: the calls of that sub-run, whose tools are its sub-agent's."""
        find = (self._agent_options(path, None) if path else self._options(None, removed=removed)).find
        gated, denied = await evaluate_gates(list(calls), find)
        definitions: dict[str, dict[str, Any]] = {}
        for call in gated:
            self._emit(run_id, ApprovalRequested(call=call), path)
            tool = find(call)
            if tool is not None:
                definitions[call.id] = tool_definition(tool)
        for call, reason in denied:
            self._emit(run_id, ApprovalDecided(call=call, decision="denied", reason=reason, via="gate"), path)
        return GateOutput(
            gated=[call.id for call in gated],
            denied={call.id: reason for call, reason in denied},
            definitions=definitions,
        )

    def _specs_of(self, calls: Iterable[ToolCall]) -> list[ToolSpec]:
        """The flags of the tools of ``calls`` that toolsets offer (the workflow knows the others)."""
        offered = {name for names in self._offered.values() for name in names}
        specs: dict[str, ToolSpec] = {}
        for call in calls:
            tool = self.tools.get(call.name) if call.toolset_name is None and call.name in offered else None
            if tool is not None:
                specs[tool.name] = ToolSpec(
                    name=tool.name,
                    idempotent=tool.idempotent,
                    sequential=tool.sequential,
                    timeout=tool.timeout,
                    gated=tool.requires_approval is not False,
                )
        return list(specs.values())

    async def _send(
        self, run_id: str, kwargs: dict[str, Any], *, report: bool = True, path: Sequence[str] | None = None
    ) -> Reply:
        emit: Callable[[RunnerEvent], None] | None = None
        if self.on_event is not None and report:
            emit = partial(self._emit, run_id, path=path)
        try:
            if not self.stream or not report:
                reply = cast(Reply, await send_request(self.client, kwargs))
                if report:
                    for index, block in enumerate(reply.content):
                        if block.type == "text":
                            self._emit(run_id, TextDelta(text=block.text, index=index), path)
                return reply
            watch = cast(StreamWatch, await send_request(self.client, kwargs, stream=True, emit=emit))
            try:
                return await watch.final_message()
            finally:
                await watch.close()
        except anthropic.APIStatusError as error:
            raise_for_status(error)
        except anthropic.APIConnectionError as error:  # and timeouts: retryable
            raise ApplicationError(str(error), type=type(error).__name__) from None

    # -- toolrunner.summarize ---------------------------------------------------------------------

    @activity.defn(name=SUMMARY_ACTIVITY)
    async def summarize(self, input: SummaryInput) -> SummaryOutput:
        """Send the summary request of client-side compaction for the history's first
        ``input.point`` messages, as ``ToolRunner`` sends it (no tools, no events)."""
        before = () if input.base is None else (await self.payloads.load_history(input.base)).messages
        replaced = await self.payloads.resolve([*before, *input.messages][: input.point])
        kwargs = summary_request(input.params, replaced, cast(CompactionControl, input.control))
        reply = await heartbeating(self._send(input.run_id, kwargs, report=False))
        checked_reply(reply)
        return SummaryOutput(
            reply=reply.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False),
            beta=isinstance(reply, BetaMessage),
            usage=request_usage_data(request_usage(reply, self.prices)),
        )

    # -- toolrunner.gate --------------------------------------------------------------------------

    @activity.defn(name=GATE_ACTIVITY)
    async def gate(self, input: GateInput) -> GateOutput:
        """Evaluate the gates of calls no request saw (the calls of a history a client set)."""
        self._fresh()
        calls = [read_call(call) for call in input.calls]
        return await self._gate(input.run_id, calls, input.removed, input.path)

    # -- toolrunner.tool --------------------------------------------------------------------------

    @activity.defn(name=TOOL_ACTIVITY)
    async def tool(self, input: ToolInput) -> dict[str, Any]:
        """Run one tool call as a ``ToolRunner`` would; a large result goes to the store."""
        self._fresh()
        call = ToolCall(id=input.id, name=input.name, input=input.input, toolset_name=input.toolset_name)
        path = input.path
        if path:  # a sub-run's call: its sub-agent's tools (to no tool of it, the message names them)
            options = self._agent_options(path, input.timeout)
            if input.available is None and options.find(call) is None:
                not_registered(call.name, options.tools)
        else:  # for a call to no tool of the run, the core's message names the run's tools
            options = self._options(input.timeout, input.available, input.unrunnable, input.removed)
            if input.available is None and options.find(call) is None:
                not_registered(call.toolset_name or call.name, {**self.tools, **self.families})
        approved = input.approved_input

        def input_of(call: ToolCall) -> object:
            return call.input if approved is None else approved

        traced: TracedCall = untraced
        if input.trace is not None:
            traced = trace_tool_calls(
                self.tracer_provider,
                input_of if input.trace.get("content") else None,
                input.trace.get("hook"),
            )
        hooks = CallHooks(
            context=lambda call: ToolContext(call=call, runner=NoRunner(input.run_id)),
            input_of=input_of,
            started=lambda call, early: self._started(input.run_id, call, path),
            finished=lambda call, block, duration: self._finished(input.run_id, call, block, duration, path),
            traced=traced,
        )
        block = await heartbeating(run_one(call, options, hooks))
        return dict(await self.payloads.stash_result(block))

    # -- toolrunner.decision ----------------------------------------------------------------------

    @activity.defn(name=DECISION_ACTIVITY)
    async def decision(self, input: DecisionInput) -> dict[str, Any]:
        """Check an approved input against the tool's schema (``{}`` when it fits), or convert an
        answer as a tool's return value is converted (its tool_result block)."""
        self._fresh()
        if input.kind == "approve":
            call = ToolCall(input.id, input.name, None, input.toolset_name)
            if input.path:  # a call inside a sub-run: its sub-agent's tool
                options = self._agent_options(input.path, None)
                tool = options.find(call)
                if tool is None:
                    not_registered(input.name, options.tools)
            else:
                tool = self._options(None).find(call)
                if tool is None:
                    not_registered(input.toolset_name or input.name, {**self.tools, **self.families})
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

    # -- toolrunner.events ------------------------------------------------------------------------

    @activity.defn(name=EVENTS_ACTIVITY)
    async def events(self, input: EventsInput) -> None:
        """Hand ``on_event`` the events no other activity witnessed (the workflow's: decisions,
        calls answered without running, the end of the loop); a local activity."""
        for data in input.events:
            self._emit(input.run_id, read_event(data))

    async def _started(self, run_id: str, call: ToolCall, path: Sequence[str] | None) -> None:
        self._emit(run_id, ToolCallStarted(call=call), path)

    async def _finished(
        self,
        run_id: str,
        call: ToolCall,
        block: ToolResultBlockParam,
        duration: float,
        path: Sequence[str] | None,
    ) -> None:
        self._emit(
            run_id,
            ToolCallFinished(call=call, duration=duration, is_error=bool(block.get("is_error"))),
            path,
        )

    def _emit(self, run_id: str, event: RunnerEvent, path: Sequence[str] | None = None) -> None:
        """Hand ``on_event`` an event of the run; of the sub-run at ``path``, as its parent's
        listener hears it (a ``SubRunEvent``)."""
        if self.on_event is None:
            return
        if path:
            event = SubRunEvent(tuple(path), event)
        try:
            self.on_event(run_id, event)
        except Exception:  # a listener's failure must not fail (and so retry) a call that finished
            logger.exception("on_event raised for %r of run %r", type(event).__name__, run_id)

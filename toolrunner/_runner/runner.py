"""The async driver: ``ToolRunner``, made of parts, each an object with the dependencies it needs.

What to do next, and in which order, is ``RunCore``'s (``_core.run``): its programs yield effects
(send this request, save, run these calls, execute this tool, wait for decisions). The runner makes
the core and its parts, and its public methods delegate to them:

- ``Performer`` (``performer.py``) performs the effects, in the caller's task, with the runner's
  client, store, tools and task group; one iteration (``__anext__``) is one step it drives;
- ``LoopBody`` (``body.py``): what the loop body asks: the params, steering, tool results, decisions
  (and ``TreeViews``, the members that read the tree: usage, the sub-runs in flight);
- ``RunnerTools`` (``sdk_features.py``): the tools' index and lifetime, and tool changes mid-run.

What lives in the parts and not in the state cannot be saved: the client, the tools, open streams,
the calls running now, and the guard that one task advances the runner at a time.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from functools import partial
from types import TracebackType
from typing import Any, Generic, Literal, NoReturn, Self, TypeVar, cast, overload
from weakref import ReferenceType, ref

import anthropic
from typing_extensions import TypeVar as DefaultTypeVar, Unpack

from .._core.errors import CheckpointError, ParamsError
from .._core.events import RunnerEvent
from .._core.output import output_resumed
from .._core.run import RunCore
from .._core.state import Phase, RunState
from .._core.tool_changes import added_definitions, pending_message
from .._core.types import EndReason, ParsedReply, Reply, ReplyStream, ToolCall, ToolResultMessage
from .._core.usage import DEFAULT_PRICES, request_usage
from .._tools.execution import ExecutionOptions
from .._tools.request_params import split_transport
from .._tools.tool import ToolContext
from .._tools.toolsets import RunnableTool
from .._tracing.trace import NO_TRACE, start_trace, traced_listener
from .body import LoopBody, TreeViews
from .events import run_with_events
from .options import ResumeArguments, RunnerArguments, read_options
from .params import resolve_tools, warn_unknown_limits
from .performer import CLOCK, Performer
from .requests import Client
from .saver import Saver
from .sdk_features import RunnerTools

__all__ = ["ToolRunner"]

ItemT = DefaultTypeVar("ItemT", default=Reply)
OutputT = TypeVar("OutputT")


class ToolRunner(TreeViews, Generic[ItemT]):
    """Runs Claude's tool-use loop: sends requests, yields replies, runs the requested tools.

    Args:
        client: An ``anthropic.AsyncAnthropic`` (or ``anthropic.Anthropic``, whose requests then
            run in a worker thread).
        stream: Yield the SDK's ``AsyncMessageStream`` of each reply instead of the message.
        **options: The options of ``RunnerOptions`` (``tools``, ``max_iterations``, ...) and any
            parameter of ``client.messages.create`` (``model``, ``max_tokens`` and ``messages`` are
            required). ``betas=[...]``, or a param only ``client.beta.messages.create`` takes, sends
            through ``client.beta.messages``.
    """

    # fmt: off
    @overload
    def __init__(self: ToolRunner[Reply], client: Client, *, stream: Literal[False] = False,
                 output_format: None = None, **options: Unpack[RunnerArguments]) -> None: ...
    @overload  # output_format=T: the items are ParsedReply[T] (docs/typed-output.md)
    def __init__(self: ToolRunner[ParsedReply[OutputT]], client: Client, *, stream: Literal[False] = False,
                 output_format: type[OutputT], **options: Unpack[RunnerArguments]) -> None: ...
    @overload
    def __init__(self: ToolRunner[Reply], client: Client, *, stream: Literal[False] = False,
                 output_format: type[Any] | None, **options: Unpack[RunnerArguments]) -> None: ...
    @overload
    def __init__(self: ToolRunner[ReplyStream], client: anthropic.AsyncAnthropic, *, stream: Literal[True],
                 output_format: type[Any] | None = None, **options: Unpack[RunnerArguments]) -> None: ...
    # fmt: on
    def __init__(self, client: Client, *, stream: bool = False, **options: Any) -> None:
        self._start(client, stream, options, from_sync_code=False)

    def _start(
        self, client: Client, stream: bool, options: Mapping[str, Any], *, from_sync_code: bool
    ) -> None:
        """Make a new run (``__init__``; ``SyncToolRunner`` with ``from_sync_code``)."""
        params = self._configure(client, stream, options, from_sync_code=from_sync_code)
        self._body.apply_params({**params, "tools": self._options.tools}, steer=False)
        warn_unknown_limits(self._core.hooks, self._tools.index)

    # fmt: off
    @overload
    @classmethod
    async def resume(cls, client: Client, *, stream: Literal[False] = False, output_format: None = None,
                     **options: Unpack[ResumeArguments]) -> ToolRunner[Reply]: ...
    @overload
    @classmethod
    async def resume(cls, client: Client, *, stream: Literal[False] = False, output_format: type[OutputT],
                     **options: Unpack[ResumeArguments]) -> ToolRunner[ParsedReply[OutputT]]: ...
    @overload
    @classmethod
    async def resume(cls, client: Client, *, stream: Literal[False] = False, output_format: type[Any] | None,
                     **options: Unpack[ResumeArguments]) -> ToolRunner[Reply]: ...
    @overload
    @classmethod
    async def resume(cls, client: anthropic.AsyncAnthropic, *, stream: Literal[True],
                     output_format: type[Any] | None = None,
                     **options: Unpack[ResumeArguments]) -> ToolRunner[ReplyStream]: ...
    # fmt: on
    @classmethod
    async def resume(cls, client: Client, *, stream: bool = False, **options: Any) -> ToolRunner[Any]:
        """Go on with a saved run: ``await ToolRunner.resume(client, run_id=..., checkpointer=..., tools=[...])``.

        The request params and the history come from the saved state; the options (tools above
        all: they are code) are given again, and so are the transport params (``extra_headers``,
        ``extra_query``, ``timeout``), which are never saved. Calls that finished are answered from
        the journal and never run again; a call that had started but not finished runs again if its
        tool is ``idempotent``, and otherwise gets an ``is_error`` result saying it was interrupted.

        Tools changed mid-run stay changed: a tool the history (or a pending change) removed is not
        run, and a tool that ``add_tools()`` added (a ``tool_addition`` of the saved history) may be
        given again in ``tools=[...]``: it runs, and is not sent in the ``tools`` param.

        Raises:
            CheckpointError: The checkpointer has no run of that name.
            ParamsError: A tool of the saved run (or of a sub-run under way) is not given, a tool
                given is not one of the run's (nor added by it), or request params are given.
        """
        return await cls._resumed(client, stream, options, from_sync_code=False)

    @classmethod
    async def _resumed(
        cls, client: Client, stream: bool, options: Mapping[str, Any], *, from_sync_code: bool
    ) -> ToolRunner[Any]:
        """Go on with a saved run (``resume``; ``SyncToolRunner.resume`` with ``from_sync_code``)."""
        checkpointer, run_id = options.get("checkpointer"), options.get("run_id")
        if checkpointer is None or run_id is None:
            raise ParamsError("resume needs the checkpointer=... and the run_id=... of the saved run.")
        runner = cls.__new__(cls)
        params = runner._configure(client, stream, options, from_sync_code=from_sync_code)
        params, runner._performer.transport = split_transport(params)
        if params:
            raise ParamsError(
                f"resume takes the request params from the saved run, so {sorted(params)!r} cannot be given; "
                "change them after resuming with set_messages_params()."
            )
        loaded = await checkpointer.load(run_id)
        if loaded is None:
            raise CheckpointError(
                f"{checkpointer!r} has no saved run named {run_id!r}; start it with ToolRunner(..., run_id={run_id!r})."
            )
        saved = loaded.state
        added = added_definitions((*saved.messages, pending_message(saved.tool_changes)))
        tools, extra = resolve_tools(saved.tools, runner._options.tools, run_id, added=added, tree=saved)
        runner._tools.changes.update(extra)  # run, but not sent in the tools param: as add_tools() left them
        saved = output_resumed(saved, runner._options.output)  # the same schema, its reply parsed again
        runner._core.load(saved)  # what the fold of tool changes reads, and may_run_again
        runner._tools.index_tools(tools)
        runner._performer.saver = Saver(checkpointer, run_id, loaded=loaded)
        runner._core.resume()
        warn_unknown_limits(runner._core.hooks, runner._tools.index)
        return runner

    def _configure(
        self, client: Client, stream: bool, options: Mapping[str, Any], *, from_sync_code: bool
    ) -> dict[str, Any]:
        """Everything but the state: the core and the parts; returns the request params among
        ``options``. A runner a ``SyncToolRunner`` drives (``from_sync_code``) runs each step in a
        task of its own unless entered, and with ``stream`` yields the SDK's sync streams, which the
        body reads in its own thread (``read_options`` refuses ``stream=True`` with a sync client
        everywhere else)."""
        if not isinstance(client, anthropic.AsyncAnthropic | anthropic.Anthropic):
            raise ParamsError(
                f"client must be an anthropic.AsyncAnthropic or anthropic.Anthropic, not {type(client).__name__!r}; "
                "create one with anthropic.AsyncAnthropic()."
            )
        self._options, params = read_options(
            options, stream=stream, is_async=from_sync_code or isinstance(client, anthropic.AsyncAnthropic)
        )
        prices = DEFAULT_PRICES if self._options.prices is None else self._options.prices
        checkpointer, run_id = self._options.checkpointer, self._options.run_id
        saver = None if checkpointer is None or run_id is None else Saver(checkpointer, run_id)
        execution = ExecutionOptions(tools={}, adapter=self._options.result_adapter)
        output = self._options.output
        # Without tracing, nothing of the core refers back to the runner: a run's objects are freed
        # when the last reference goes, not by the cycle collector (the tool context refers to it weakly).
        self._trace = start_trace(
            self._options.tracing, client, lambda: self._core.state, self._options.hook_plan
        )
        self._core: RunCore[RunnableTool] = RunCore(
            RunState(params={}, run_id=run_id, output=None if output is None else output.record()),
            tools=execution,
            usage_of=partial(request_usage, prices=prices),  # no Python frame of its own per reply
            limits=self._options.limits,
            stream=self._options.stream,
            durable=saver is not None,
            asks=self._options.approve is not None,
            compaction_control=self._options.compaction_control,
            ended=None if self._trace is NO_TRACE else self._trace.ended,
            output=output,
            hooks=self._options.hook_plan,
            clock=CLOCK,  # a sub-agent's call is timed as the performer times a tool
        )
        self._core.listener = traced_listener(self._options.on_event, self._trace)
        self._tools = RunnerTools(self._core, self._options, execution, steps_in_new_tasks=from_sync_code)
        self._performer = Performer(
            self._core, self._options, client, self._tools, self._trace, saver, partial(_context, ref(self))
        )
        self._body = LoopBody(self._core, self._options, self._tools, self._performer, prices)
        return params

    async def __aenter__(self) -> Self:
        """Enter the runner: its toolsets open; tools started early (``run_tools_eagerly``) run in its
        task group."""
        await self._performer.enter()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        """Leave the runner (see ``Performer.leave``). An exception of the block passes through as itself:
        the runner's task group holds only the calls started early, and is not told of it."""
        await self._performer.exit(exc)
        return None

    # -- iteration --------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ItemT]:
        return self

    async def __anext__(self) -> ItemT:
        item: ItemT | None = await self._performer.iterate()  # type: ignore[assignment]  # (no cast call per iteration)
        if item is None:
            raise StopAsyncIteration
        return item

    # -- the run's state -----------------------------------------------------------------------------

    @property
    def state(self) -> RunState:
        """The run's state: one immutable value, serialisable with ``to_json()``."""
        return self._core.state

    @property
    def params(self) -> Mapping[str, Any]:
        """The params of the next request (read-only); ``params["messages"]`` is the history.

        Change them with ``push_messages()`` and ``set_messages_params()``.
        """
        return self._body.params()

    @property
    def messages(self) -> Sequence[Any]:
        """The history (a copy: change it with ``push_messages()`` and ``set_messages_params()``)."""
        return list(self._core.state.messages)

    @property
    def last_message(self) -> Reply | None:
        """The latest complete reply, or ``None`` before the first."""
        return self._core.state.reply

    @property
    def requests_sent(self) -> int:
        """How many requests got a reply."""
        return self._core.state.requests_sent

    @property
    def finished(self) -> bool:
        """Whether the loop has ended, or is paused for decisions (steering opens it again)."""
        return self._core.state.finished

    @property
    def end_reason(self) -> EndReason | None:
        """Why the loop ended (``"model"``, ``"max_iterations"``, ``"token_budget"``,
        ``"cost_budget"``, ``"closed"``), or paused (``"awaiting_approval"``); ``None`` while it
        goes on."""
        return self._core.state.end_reason

    # -- tools ---------------------------------------------------------------------------------------

    async def generate_tool_response(self) -> ToolResultMessage | None:
        """The user message holding the tool_result blocks for the pending tool calls, or ``None``.

        The pending calls are those of the reply the loop body holds (unless the body changed
        the history), or else of the last message of the history. Results are computed once per
        tool_use id and shared by concurrent callers; the history is never changed. With
        ``stream=True`` it first reads the rest of the reply's stream.

        Raises:
            ApprovalError: Calls wait for a decision (the others ran); decide them first.
            ToolRunnerError: Called from a tool for the turn that runs it (it would wait for itself).
        """
        return await self._body.tool_response()

    # -- steering ------------------------------------------------------------------------------------

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """Append messages to the history: MessageParam dicts or SDK ``Message`` objects.

        From the loop body, this means the runner will not append the yielded reply itself. After
        the loop ended, it opens the loop again: the next iteration sends a request.
        """
        self._body.push_messages(*messages)

    def set_messages_params(
        self, params: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]
    ) -> None:
        """Replace the request params, or map them with ``fn(params) -> params``.

        ``fn`` gets a shallow copy of the current params. From the loop body, this means the
        runner will not append the yielded reply itself: the new history stands. After the loop
        ended, it opens the loop again.
        """
        self._body.set_messages_params(params)

    # -- decisions -----------------------------------------------------------------------------------

    @property
    def pending_approvals(self) -> list[ToolCall]:
        """The calls that wait for a decision: the current turn's, in tool_use order, then those
        inside its sub-agents' runs (``SubAgent``), each with its ``ToolCall.path`` (the parent's
        call id, the sub-agent's name, and so on down); decide any of them by its id."""
        return self._core.waiting_in_tree()

    def approve(self, tool_use_id: str, *, input: object = None, by: str | None = None) -> None:
        """Approve a call that waits; with ``input`` it runs with that input (checked like the
        model's, and JSON data); ``by`` says who decided, kept with the call.

        Raises:
            ApprovalError: No call waits with that id, or it was decided already (by another thread,
                say), or ``input`` is not JSON data. ToolInputError: ``input`` does not fit the tool.
        """
        self._body.approve(tool_use_id, input=input, by=by)

    def deny(self, tool_use_id: str, reason: str, *, by: str | None = None) -> None:
        """Deny a call that waits (or has not started): the model reads ``reason`` as its error result."""
        self._body.deny(tool_use_id, reason, by=by)

    def answer(
        self, tool_use_id: str, result: object, *, is_error: bool = False, by: str | None = None
    ) -> None:
        """Answer a call that waits (or has not started) with a result computed elsewhere, as a
        tool's return value (or a ``ToolError``) would be.

        Raises:
            ApprovalError: No call can be answered with that id, or ``result`` cannot be a tool result.
        """
        self._body.answer(tool_use_id, result, is_error=is_error, by=by)

    # -- the SDK runner's features -------------------------------------------------------------------

    def append_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """The SDK runner's name for ``push_messages()``."""
        self.push_messages(*messages)

    async def generate_tool_call_response(self) -> ToolResultMessage | None:
        """The SDK runner's name for ``generate_tool_response()``."""
        return await self.generate_tool_response()

    def defer_tool_call(self, tool_use: object) -> None:
        """Hold a call of the reply streaming now, as the SDK's runner does: with
        ``run_tools_eagerly=True`` it does not start while the reply streams, and runs with the rest
        of the turn, when the loop body asks for the next reply or calls ``generate_tool_response()``
        (decide on it meanwhile, or answer it yourself with ``answer()``). The reply's other calls still
        start early. It does nothing without ``run_tools_eagerly``, for a call that started already,
        or for an id the reply does not have.

        Args:
            tool_use: The call's ``tool_use`` block (a stream event's ``content_block``), or its id.

        Raises:
            ParamsError: ``tool_use`` is neither a ``tool_use`` block nor an id.
        """
        self._tools.defer(tool_use)

    @property
    def deferred_tool_calls(self) -> list[ToolCall]:
        """The calls of the current reply that ``defer_tool_call()`` holds and that have not run, in
        the model's order, once their blocks finished streaming (read it when done with the stream).
        Empty without ``run_tools_eagerly``."""
        return self._tools.deferred(self._performer.streamed)

    def add_tools(self, *tools: object) -> None:
        """Give the model more tools without changing the ``tools`` param (which would miss the
        prompt cache), as the SDK's runner does.

        The definitions go to the model in ``tool_addition`` blocks of a ``role: "system"``
        message sent with the next request (the service needs the ``inline-tools-2026-09-15``
        beta). A tool runs at once, in place of any tool of the same name, even for a call of the
        reply being handled; a raw definition (a server tool) is never run, and stops a tool of
        its name from running.

        Raises:
            ParamsError: A toolset was given: a runner's toolsets are its ``tools=[...]``.
        """
        self._tools.add(*tools)

    def remove_tools(self, *tools: object) -> None:
        """Take tools away from the model without changing the ``tools`` param, as the SDK's runner
        does: they stop running at once (a call to one is answered like a call to an unknown
        tool), and the model is told in ``tool_removal`` blocks sent with the next request.

        Args:
            *tools: The tools, or their names.

        Raises:
            ParamsError: A name that is not a tool of this runner, or a toolset.
        """
        self._tools.remove(*tools)

    def compact_before_next_turn(self, compaction: Mapping[str, Any] | None = None) -> None:
        """Compact the conversation before the model's next turn, as the SDK's runner does.

        Once the current turn is finished (its tools ran), the next request is a compaction
        request (the ``compaction`` param; pass ``betas=["compact-2026-09-04"]``): the reply, with
        ``stop_reason == "compaction"``, is yielded like any other, and replaces the history it
        summarizes; then the loop goes on. After the loop's last turn, the compaction is the last
        request. Calling it again before then replaces the pending config.

        Args:
            compaction: The compaction config; ``{"type": "summarize"}`` by default.

        Raises:
            ParamsError: ``context_management`` has a compaction edit, which the service does not
                take together with a compaction block.
        """
        self._core.compact_next(compaction)

    # -- ending -----------------------------------------------------------------------------------

    def close(self) -> None:
        """End the loop now. A complete reply that the body holds is appended if the body left
        the history unchanged, but its tool calls are not run; so is the reply of a stream the body
        read to its end. A stream not read to its end is dropped (use ``async with`` or
        ``aclose()`` to close it at once). Idempotent.

        Called from another task while the runner is busy, it lets the step under way finish
        whole (a request's reply is appended, without running its tools; a turn's tools finish and
        their results are appended), then ends the loop.
        """
        self._performer.close_now()

    async def aclose(self) -> None:
        """``close()``, and also close an unread stream and cancel tools started early."""
        await self._performer.close()

    @overload
    async def until_done(self: ToolRunner[Reply]) -> Reply: ...
    @overload
    async def until_done(self: ToolRunner[ParsedReply[OutputT]]) -> ParsedReply[OutputT]: ...
    @overload
    async def until_done(self) -> Reply: ...
    async def until_done(self) -> Reply:
        """Run the loop to its end and return the final reply; resumes a loop left by ``break``.

        Raises:
            AwaitingApprovalError: The loop paused: calls wait for a decision (``error.calls``).
                Decide them, then call ``until_done()`` again.
        """
        async for _ in self:
            pass
        return self._body.final_reply()

    def __iter__(self) -> NoReturn:
        raise TypeError(
            "ToolRunner is an async iterator: use `async for message in runner` inside a coroutine, or "
            "SyncToolRunner with an anthropic.Anthropic client for a plain `for` loop."
        )

    # -- events ----------------------------------------------------------------------------------

    @asynccontextmanager
    async def events(self) -> AsyncGenerator[AsyncIterator[RunnerEvent]]:
        """Run the loop in the background and receive its events as they happen::

            async with runner.events() as events:
                async for event in events:
                    ...

        The iteration ends after ``LoopFinished``, or when the loop fails; the loop's error is then
        raised as the block exits. Leaving the block early cancels the loop (it can be resumed
        like after ``break``). Opened on a paused run, it first gives the decisions taken since the
        pause (``ApprovalDecided``), which the run now takes up.
        """
        backlog = self._core.decided_since_pause() if self._core.state.phase is Phase.AWAITING else []
        async with run_with_events(self._drain, self._body.listen, backlog) as events:
            yield events

    async def _drain(self) -> None:
        async for _ in self:
            pass


def _context(runner: ReferenceType[ToolRunner[Any]], call: ToolCall) -> ToolContext:
    """The ``ToolContext`` of a call the runner runs (it runs only while the runner lives)."""
    return ToolContext(call=call, runner=cast("ToolRunner[Any]", runner()))

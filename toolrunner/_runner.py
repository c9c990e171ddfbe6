"""The async driver: the whole lifecycle of a tool loop, top to bottom.

One iteration (``__anext__``):

1. finish the previous turn if a reply is out with the loop body (``_finish_turn``): read the
   rest of its stream, append the reply unless the body changed the history, answer the calls
   that ``calls_to_answer`` picks, and decide whether the loop goes on;
2. stop if the loop is over, or a limit is reached (``max_iterations``, token or cost budget);
   with ``on_limit="final_answer"``, send one last request that may not call tools first;
3. check the history, send the request, hand the reply (or its stream) to the body.

The decisions are the pure functions of ``_lifecycle``; this module does the I/O around them.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Iterable, Mapping, Sequence
from contextlib import asynccontextmanager
from decimal import Decimal
from functools import partial
from types import MappingProxyType, TracebackType
from typing import Any, Generic, Literal, Self, TypeAlias, TypedDict, cast, overload

import anthropic
import anyio
import anyio.abc
import anyio.to_thread
from anthropic.types import Message, ToolResultBlockParam
from anthropic.types.beta import BetaMessage
from typing_extensions import TypeVar

from ._calls import CallResults
from ._errors import MalformedReplyError, ParamsError, ToolRunnerError
from ._events import EndReason, LoopFinished, MessageFinished, RunnerEvent, TextDelta
from ._execution import ExecutionOptions, current_call, run_one, run_tool_calls
from ._lifecycle import (
    Step,
    ToolCall,
    calls_to_answer,
    check_answered,
    container_param,
    step_for,
)
from ._params import check_params, check_positive_int, dollars, index_tools, message_param, reply_param
from ._results import DEFAULT_ADAPTER, ToolResultAdapter
from ._streaming import ReplyStream, StreamWatch, watch_stream
from ._tools import Tool
from ._usage import Price, UsageTracker, find_price

__all__ = ["Reply", "ReplyStream", "ToolResultMessage", "ToolRunner"]

logger = logging.getLogger("toolrunner")

Reply: TypeAlias = Message | BetaMessage
"""A reply: a ``Message``, or a ``BetaMessage`` when ``betas`` is set."""

ItemT = TypeVar("ItemT", default=Reply)

Client: TypeAlias = anthropic.AsyncAnthropic | anthropic.Anthropic
ToolLike: TypeAlias = Tool | Callable[..., Any] | Mapping[str, Any]


class ToolResultMessage(TypedDict):
    """The user message that answers tool calls: one tool_result block per call, in tool_use order."""

    role: Literal["user"]
    content: list[ToolResultBlockParam]


class _Phase(enum.Enum):
    READY = "ready"
    """The next step is to send a request."""
    WITH_BODY = "with_body"
    """A reply (or its stream) was yielded; the loop body may steer until it asks for more."""
    DONE = "done"
    """The loop is over; ``_end_reason`` says why."""


class ToolRunner(Generic[ItemT]):
    """Runs Claude's tool-use loop: sends requests, yields replies, runs the requested tools.

    Args:
        client: An ``anthropic.AsyncAnthropic`` (or ``anthropic.Anthropic``, whose requests then
            run in a worker thread).
        tools: Tools made with ``@tool``, plain functions (made into tools), or raw tool
            definitions (dicts such as server tools), which are sent as given and never run.
        stream: Yield the SDK's ``AsyncMessageStream`` of each reply instead of the message.
        run_tools_eagerly: With ``stream=True``, start each tool call as soon as its tool_use
            block is complete; needs ``async with runner:``.
        max_iterations: The most requests to send; ``None`` for no limit.
        max_total_tokens: Stop once the replies' usage adds up to this many tokens.
        max_cost: Stop once the requests cost this many US dollars (needs prices for the model).
        on_limit: ``"stop"`` ends the loop at a limit; ``"final_answer"`` first sends one last
            request with ``tool_choice={"type": "none"}`` so that the model answers.
        max_concurrency: The most tool calls to run at once; ``None`` for no limit.
        tool_timeout: Seconds a tool call may take (a tool's own ``timeout`` wins); a call that
            takes longer becomes an ``is_error`` result that says so.
        result_adapter: Turns what tools return into tool_result content.
        prices: Model id to ``Price`` for ``runner.usage``; the dated defaults when ``None``.
        on_event: Called with each ``RunnerEvent`` (text deltas, tool calls, ...), for UIs.
        **params: Any parameter of ``client.messages.create`` (``model``, ``max_tokens`` and
            ``messages`` are required). ``betas=[...]`` sends through ``client.beta.messages``.
    """

    @overload
    def __init__(
        self: ToolRunner[Reply],
        client: Client,
        *,
        tools: Iterable[ToolLike] = (),
        stream: Literal[False] = False,
        run_tools_eagerly: Literal[False] = False,
        max_iterations: int | None = None,
        max_total_tokens: int | None = None,
        max_cost: Decimal | float | str | None = None,
        on_limit: Literal["stop", "final_answer"] = "stop",
        max_concurrency: int | None = None,
        tool_timeout: float | None = None,
        result_adapter: ToolResultAdapter = DEFAULT_ADAPTER,
        prices: Mapping[str, Price] | None = None,
        on_event: Callable[[RunnerEvent], None] | None = None,
        **params: Any,
    ) -> None: ...
    @overload
    def __init__(
        self: ToolRunner[ReplyStream],
        client: anthropic.AsyncAnthropic,
        *,
        tools: Iterable[ToolLike] = (),
        stream: Literal[True],
        run_tools_eagerly: bool = False,
        max_iterations: int | None = None,
        max_total_tokens: int | None = None,
        max_cost: Decimal | float | str | None = None,
        on_limit: Literal["stop", "final_answer"] = "stop",
        max_concurrency: int | None = None,
        tool_timeout: float | None = None,
        result_adapter: ToolResultAdapter = DEFAULT_ADAPTER,
        prices: Mapping[str, Price] | None = None,
        on_event: Callable[[RunnerEvent], None] | None = None,
        **params: Any,
    ) -> None: ...
    def __init__(
        self,
        client: Client,
        *,
        tools: Iterable[ToolLike] = (),
        stream: bool = False,
        run_tools_eagerly: bool = False,
        max_iterations: int | None = None,
        max_total_tokens: int | None = None,
        max_cost: Decimal | float | str | None = None,
        on_limit: Literal["stop", "final_answer"] = "stop",
        max_concurrency: int | None = None,
        tool_timeout: float | None = None,
        result_adapter: ToolResultAdapter = DEFAULT_ADAPTER,
        prices: Mapping[str, Price] | None = None,
        on_event: Callable[[RunnerEvent], None] | None = None,
        **params: Any,
    ) -> None:
        if not isinstance(client, anthropic.AsyncAnthropic | anthropic.Anthropic):
            raise ParamsError(
                f"client must be an anthropic.AsyncAnthropic or anthropic.Anthropic, not {type(client).__name__!r}; "
                "create one with anthropic.AsyncAnthropic()."
            )
        check_positive_int("max_iterations", max_iterations)
        check_positive_int("max_total_tokens", max_total_tokens)
        check_positive_int("max_concurrency", max_concurrency)
        if tool_timeout is not None and (
            isinstance(tool_timeout, bool)
            or not isinstance(tool_timeout, int | float)
            or not tool_timeout > 0
        ):
            raise ParamsError(
                f"tool_timeout must be a positive number of seconds or None, not {tool_timeout!r}."
            )
        if not all(
            callable(getattr(result_adapter, name, None))
            for name in ("to_content", "error_content", "needs_thread")
        ):
            raise ParamsError(
                f"result_adapter must be a ToolResultAdapter (or a subclass of it), not {type(result_adapter).__name__!r}."
            )
        if on_limit not in ("stop", "final_answer"):
            raise ParamsError(f"on_limit must be 'stop' or 'final_answer', not {on_limit!r}.")
        if stream and not isinstance(client, anthropic.AsyncAnthropic):
            raise ParamsError(
                "stream=True needs an anthropic.AsyncAnthropic client; SyncToolRunner does not stream."
            )
        if run_tools_eagerly and not stream:
            raise ParamsError(
                "run_tools_eagerly=True needs stream=True: tools start while the reply streams."
            )
        self._client = client
        self._stream = stream
        self._eager = run_tools_eagerly
        self._max_iterations = max_iterations
        self._max_total_tokens = max_total_tokens
        self._max_cost = None if max_cost is None else dollars(max_cost)
        self._on_limit = on_limit
        self._max_concurrency = max_concurrency
        self._tool_timeout = tool_timeout
        self._adapter = result_adapter
        self._emit = on_event
        self._usage = UsageTracker(prices=prices)

        # State. Invariants: ``_reply`` is the latest complete reply. In WITH_BODY the body holds
        # ``_reply`` (or ``_open`` while its stream is unread) and ``_history_changed`` says whether
        # it called push_messages/set_messages_params. ``_end_reason`` is set exactly in DONE.
        self._phase = _Phase.READY
        self._end_reason: EndReason | None = None
        self._reply: Reply | None = None
        self._open: StreamWatch | None = None
        self._history_changed = False
        # The limit that made the request out the last one, sent with tool_choice none.
        self._final_answer: EndReason | None = None
        self._requests_sent = 0
        self._advancing = False  # inside __anext__
        self._closing = False  # close() came from another task while advancing
        self._task_group: anyio.abc.TaskGroup | None = None
        # The history is known to be valid before this index (see ``check_answered``).
        self._check_from = 0
        # Tool results by tool_use id: a call that finished is never run again.
        self._calls = CallResults()

        self._params: dict[str, Any] = {}
        self._wire_tools: list[Any] = []
        self._execution = ExecutionOptions(tools={}, adapter=result_adapter)
        self._install_params({**params, "tools": tools})
        if self._max_cost is not None and find_price(self._usage.prices, self._params["model"]) is None:
            raise ParamsError(
                f"max_cost needs a price for model {self._params['model']!r}, and the price table has none; "
                "pass prices={model: Price(...)}."
            )

    # -- public state ---------------------------------------------------------------------------

    @property
    def params(self) -> Mapping[str, Any]:
        """The params of the next request (read-only); ``params["messages"]`` is the history.

        Change them with ``push_messages()`` and ``set_messages_params()``.
        """
        return MappingProxyType(self._params)

    @property
    def messages(self) -> Sequence[Any]:
        """The history: ``params["messages"]``."""
        return self._params["messages"]  # type: ignore[no-any-return]

    @property
    def last_message(self) -> Reply | None:
        """The latest complete reply, or ``None`` before the first."""
        return self._reply

    @property
    def requests_sent(self) -> int:
        """How many requests got a reply."""
        return self._requests_sent

    @property
    def usage(self) -> UsageTracker:
        """Token usage per request and in total, and the cost when the model has a price."""
        return self._usage

    @property
    def finished(self) -> bool:
        """Whether the loop has ended."""
        return self._phase is _Phase.DONE

    @property
    def end_reason(self) -> EndReason | None:
        """Why the loop ended (``"model"``, ``"max_iterations"``, ``"token_budget"``,
        ``"cost_budget"`` or ``"closed"``), or ``None`` while it goes on."""
        return self._end_reason

    # -- steering ---------------------------------------------------------------------------------

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """Append messages to the history: MessageParam dicts or SDK ``Message`` objects.

        From the loop body, this means the runner will not append the yielded reply itself.
        """
        self._check_can_steer("push_messages")
        params = [message_param(message, index) for index, message in enumerate(messages)]
        history: list[Any] = self._params["messages"]
        self._check_from = min(self._check_from, max(len(history) - 1, 0))
        history.extend(params)
        self._history_changed = True

    def set_messages_params(
        self, params: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]
    ) -> None:
        """Replace the request params, or map them with ``fn(params) -> params``.

        ``fn`` gets a shallow copy of the current params. From the loop body, this means the
        runner will not append the yielded reply itself: the new history stands.
        """
        self._check_can_steer("set_messages_params")
        if callable(params):
            new = params(dict(self._params))
            if not isinstance(new, Mapping):
                raise ParamsError(
                    f"the function given to set_messages_params returned {type(new).__name__!r}, not a mapping; "
                    "return the new params, for example {**params, 'messages': [...]}."
                )
        elif isinstance(params, Mapping):
            new = params
        else:
            raise ParamsError(
                f"set_messages_params takes a mapping of params or a function of them, not {type(params).__name__!r}."
            )
        self._install_params(dict(new))
        self._check_from = 0
        self._history_changed = True

    def _check_can_steer(self, method: str) -> None:
        """Steering belongs to the loop body: from a tool, or while the runner is between replies,
        the history would change under the turn being finished."""
        call = current_call()
        if call is not None or self._advancing:
            source = (
                f"inside the tool {call.name!r}"
                if call is not None
                else "while the runner was finishing a turn (from a callback or another task)"
            )
            raise ToolRunnerError(
                f"{method}() was called {source}; change the history from the loop body instead, between "
                "receiving a reply and asking for the next."
            )

    def close(self) -> None:
        """End the loop now. A complete reply that the body holds is appended if the body left
        the history unchanged, but its tool calls are not run. An unread stream is dropped (use
        ``async with`` or ``aclose()`` to close it at once). Idempotent.

        Called from another task while the runner is busy, it lets the step under way finish
        whole (a request's reply is appended, without running its tools; a turn's tools finish and
        their results are appended), then ends the loop.
        """
        if self._advancing:
            self._closing = True
            return
        if self._phase is _Phase.WITH_BODY and not self._history_changed and self._open is None:
            assert self._reply is not None
            self._params["messages"].append(reply_param(self._reply))
        self._finish("closed")

    async def aclose(self) -> None:
        """``close()``, and also close an unread stream and cancel tools started early."""
        self.close()
        with anyio.CancelScope(shield=True):
            await self._abandon_stream()

    async def __aenter__(self) -> Self:
        """Enter the runner: tools started early (``run_tools_eagerly``) run in its task group."""
        group = anyio.create_task_group()
        await group.__aenter__()
        self._task_group = group
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        group, self._task_group = self._task_group, None
        assert group is not None, "__aexit__ without __aenter__"
        try:
            await self.aclose()
        finally:
            group.cancel_scope.cancel()  # tools started early whose results nobody asked for
            await group.__aexit__(exc_type, exc, tb)
        return None

    # -- tools ------------------------------------------------------------------------------------

    async def generate_tool_response(self) -> ToolResultMessage | None:
        """The user message holding the tool_result blocks for the pending tool calls, or ``None``.

        The pending calls are those of the reply the loop body holds (unless the body changed
        the history), or else of the last message of the history. Results are computed once per
        tool_use id and shared by concurrent callers; the history is never changed. With
        ``stream=True`` it first reads the rest of the reply's stream.
        """
        await self._read_stream()
        calls = self._calls_to_answer()
        if not calls:
            return None
        return {"role": "user", "content": await self._calls.complete(calls, self._execute)}

    def _calls_to_answer(self) -> tuple[ToolCall, ...]:
        if self._phase is _Phase.WITH_BODY and not self._history_changed:
            return calls_to_answer(self._reply, self._reply)
        history: list[Any] = self._params["messages"]
        return calls_to_answer(history[-1] if history else None, self._reply)

    async def _execute(
        self, calls: Sequence[ToolCall], on_result: Callable[[str, ToolResultBlockParam], None]
    ) -> None:
        await run_tool_calls(calls, self._execution, self, on_result)

    def _start_early(self, call: ToolCall) -> None:
        """Start a call while the reply streams (``run_tools_eagerly``), if its tool allows."""
        tool = self._execution.tools.get(call.name)
        if tool is not None and tool.start_early:
            assert self._task_group is not None
            self._calls.start_early(call, self._task_group, self._run_early)

    async def _run_early(self, call: ToolCall) -> ToolResultBlockParam:
        return await run_one(call, self._execution, self, early=True)

    # -- iteration --------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[ItemT]:
        return self

    async def __anext__(self) -> ItemT:
        if self._advancing:
            raise ToolRunnerError(
                "this runner is already advancing in another task; iterate a runner from one task at a time."
            )
        self._advancing = True
        try:
            if self._phase is _Phase.WITH_BODY:
                await self._finish_turn()
            if self._phase is _Phase.READY and (limit := self._limit_reached()) is not None:
                if self._on_limit == "final_answer" and self._final_answer is None:
                    self._final_answer = limit
                else:
                    self._finish(limit)
            if self._closing:
                self._finish("closed")
            if self._phase is _Phase.DONE:
                raise StopAsyncIteration
            item = await self._send()
            if self._open is None:
                _check_reply(item)
            self._requests_sent += 1
            self._history_changed = False
            self._phase = _Phase.WITH_BODY
            if self._open is None:
                self._accept(cast(Reply, item))
            if self._closing:  # closed while the request was out: keep the reply, run nothing
                with anyio.CancelScope(shield=True):
                    await self._abandon_stream()
                self._advancing = False
                self.close()
                raise StopAsyncIteration
        finally:
            self._advancing = False
        return cast(ItemT, item)

    async def until_done(self) -> Reply:
        """Run the loop to its end and return the final reply; resumes a loop left by ``break``."""
        async for _ in self:
            pass
        if self._reply is None:
            raise ToolRunnerError(
                "the runner ended before any request got a reply, so there is no final message."
            )
        return self._reply

    @asynccontextmanager
    async def events(self) -> AsyncGenerator[AsyncIterator[RunnerEvent]]:
        """Run the loop in the background and receive its events as they happen::

            async with runner.events() as events:
                async for event in events:
                    ...

        The iteration ends after ``LoopFinished``, or when the loop fails; the loop's error is then
        raised as the block exits. Leaving the block early cancels the loop (it can be resumed
        like after ``break``).
        """
        send, receive = anyio.create_memory_object_stream[RunnerEvent](float("inf"))
        failure: list[BaseException] = []
        previous = self._emit

        def emit(event: RunnerEvent) -> None:
            if previous is not None:
                previous(event)
            with contextlib.suppress(anyio.BrokenResourceError):  # the block was left: nobody listens
                send.send_nowait(event)

        async def drive() -> None:
            with send:
                try:
                    await self.until_done()
                except Exception as error:
                    failure.append(error)

        self._emit = emit
        self._execution = _with_emit(self._execution, emit)
        try:
            async with anyio.create_task_group() as group, receive:
                group.start_soon(drive)
                yield receive
                group.cancel_scope.cancel()
        except BaseExceptionGroup as group_error:  # the body's own error: raise it as it was
            if len(group_error.exceptions) == 1:
                raise group_error.exceptions[0] from None
            raise
        finally:
            self._emit = previous
            self._execution = _with_emit(self._execution, previous)
        if failure:
            raise failure[0]

    async def _finish_turn(self) -> None:
        """Steps 3 to 5 for the reply the body held. Appends happen together, after the tools ran,
        so a cancelled turn leaves the history as it was and can be finished again."""
        await self._read_stream()
        if self._phase is not _Phase.WITH_BODY:
            return  # the stream failed and was dropped: the request is sent again
        reply = self._reply
        assert reply is not None
        results = await self.generate_tool_response()
        history: list[Any] = self._params["messages"]
        if not self._history_changed:
            history.append(reply_param(reply))
        if results is not None:
            history.append(results)
        if reply.container is not None:
            self._params["container"] = container_param(self._params.get("container"), reply.container.id)
        if self._final_answer is not None:
            self._finish(self._final_answer)
        elif results is not None or self._history_changed or step_for(reply.stop_reason) is Step.RESUME:
            self._phase = _Phase.READY
        else:
            self._finish("model")

    def _limit_reached(self) -> EndReason | None:
        if self._max_iterations is not None and self._requests_sent >= self._max_iterations:
            return "max_iterations"
        if self._max_total_tokens is not None and self._usage.total.total_tokens >= self._max_total_tokens:
            return "token_budget"
        if self._max_cost is not None and (self._usage.cost or 0) >= self._max_cost:
            return "cost_budget"
        return None

    def _finish(self, reason: EndReason) -> None:
        if self._phase is _Phase.DONE:
            return
        self._phase = _Phase.DONE
        self._end_reason = reason
        if self._emit is not None:
            self._emit(LoopFinished(message=self._reply, reason=reason))

    def _accept(self, reply: Reply) -> None:
        """Take a complete reply: it is the latest, its usage counts, listeners hear of it."""
        self._reply = reply
        self._usage.record(reply)
        if self._emit is not None:
            if self._open is None:  # a streamed reply's text was reported as it arrived
                for index, block in enumerate(reply.content):
                    if block.type == "text":
                        self._emit(TextDelta(text=block.text, index=index))
            self._emit(MessageFinished(message=reply))

    async def _send(self) -> Reply | ReplyStream:
        if self._eager and self._task_group is None:
            raise ToolRunnerError(
                "run_tools_eagerly=True runs tools in the runner's task group: enter the runner first, "
                "with `async with ToolRunner(...) as runner:`."
            )
        history: list[Any] = self._params["messages"]
        check_answered(history, self._check_from)
        self._check_from = max(len(history) - 1, 0)
        kwargs = dict(self._params)  # a handful of keys; the history list itself is not copied
        del kwargs["tools"]
        if self._wire_tools:
            kwargs["tools"] = self._wire_tools
            if self._final_answer is not None:
                kwargs["tool_choice"] = {"type": "none"}
        betas = kwargs.pop("betas", None)
        messages = self._client.beta.messages if betas else self._client.messages
        if betas:
            kwargs["betas"] = betas
        if not isinstance(self._client, anthropic.AsyncAnthropic):
            return await anyio.to_thread.run_sync(partial(messages.create, **kwargs))  # type: ignore[no-any-return]
        if not self._stream:
            return await messages.create(**kwargs)  # type: ignore[no-any-return]
        self._open = await watch_stream(
            messages.stream(**kwargs),  # type: ignore[arg-type]
            emit=self._emit,
            on_tool_use=self._start_early if self._eager else None,
        )
        return self._open.stream

    async def _read_stream(self) -> None:
        """Read the rest of the stream the body holds and take its final message. If the stream
        fails here, drop it and what started early, and raise its error; if the body already got
        the error, just drop them. Either way the next iteration sends the request again."""
        watch = self._open
        if watch is None:
            return
        if watch.error is not None:  # the body read the stream and got its error already
            await self._abandon_stream()
            return
        try:
            reply = await watch.final_message()
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._abandon_stream()
            raise
        await watch.close()
        self._accept(reply)
        self._open = None
        await self._calls.settle_early(watch.tool_use_ids, keep=step_for(reply.stop_reason) is Step.RUN_TOOLS)

    async def _abandon_stream(self) -> None:
        watch, self._open = self._open, None
        if watch is None:
            return
        await watch.close()
        await self._calls.settle_early(watch.tool_use_ids, keep=False)
        if self._phase is _Phase.WITH_BODY:
            self._phase = _Phase.READY  # the request is sent again
            self._requests_sent -= 1

    # -- params -----------------------------------------------------------------------------------

    def _install_params(self, params: dict[str, Any]) -> None:
        """Check ``params`` and make them current; index the tools when they changed."""
        check_params(params)
        if "tools" not in self._params or params.get("tools") is not self._params["tools"]:
            index = index_tools(params.get("tools"))
            params["tools"] = index.tools
            self._wire_tools = index.wire
            self._execution = ExecutionOptions(
                tools=index.runnable,
                adapter=self._adapter,
                limiter=anyio.CapacityLimiter(self._max_concurrency) if self._max_concurrency else None,
                timeout=self._tool_timeout,
                unrunnable=index.unrunnable,
                emit=self._emit,
            )
        self._params = params


def _check_reply(reply: object) -> None:
    """Refuse what is not a whole assistant message (a proxy's page answered with a 200, say): the
    SDK parses leniently, and such a reply would poison the history."""
    if not (
        isinstance(reply, Message | BetaMessage)
        and getattr(reply, "role", None) == "assistant"
        and isinstance(getattr(reply, "content", None), list)
        and hasattr(reply, "stop_reason")
    ):
        raise MalformedReplyError(
            f"the service answered with something that is not a message ({_preview(reply)}); nothing was "
            "appended, and iterating the runner again sends the same request again."
        )


def _preview(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 120 else text[:117] + "..."


def _with_emit(options: ExecutionOptions, emit: Callable[[RunnerEvent], None] | None) -> ExecutionOptions:
    return dataclasses.replace(options, emit=emit)

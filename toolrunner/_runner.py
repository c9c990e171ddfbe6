"""The async driver: the whole lifecycle of a tool loop, top to bottom.

One iteration (``__anext__``):

1. finish the previous turn, if a reply is out with the loop body (``_finish_turn``):
   append the reply unless the body changed the history, answer the calls that
   ``calls_to_answer`` picks, and decide whether the loop goes on;
2. stop if the runner is closed, finished, or ``max_iterations`` requests have been sent;
3. check the history, send the request, hand the reply to the body.

The decisions are the pure functions of ``_lifecycle``; this module only does the I/O around them.
"""

from __future__ import annotations

import difflib
import enum
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from functools import cache, partial
from types import MappingProxyType, TracebackType
from typing import Any, Literal, Self, TypeAlias, TypedDict, cast

import anthropic
import anyio
import anyio.to_thread
from anthropic.resources.beta.messages import AsyncMessages as _BetaMessages
from anthropic.resources.messages import AsyncMessages as _Messages
from anthropic.types import Message, ToolResultBlockParam
from anthropic.types.beta import BetaMessage

from ._errors import HistoryError, ParamsError, ToolDefinitionError, ToolRunnerError
from ._execution import ExecutionOptions, run_tool_calls
from ._lifecycle import Step, ToolCall, calls_to_answer, check_answered, container_param, step_for
from ._results import DEFAULT_ADAPTER, ToolResultAdapter
from ._tools import Tool, as_tool

__all__ = ["Reply", "ToolResultMessage", "ToolRunner"]

logger = logging.getLogger("toolrunner")

Reply: TypeAlias = Message | BetaMessage
"""What the runner yields: a ``Message``, or a ``BetaMessage`` when ``betas`` is set."""

Client: TypeAlias = anthropic.AsyncAnthropic | anthropic.Anthropic


class ToolResultMessage(TypedDict):
    """The user message that answers tool calls: one tool_result block per call, in tool_use order."""

    role: Literal["user"]
    content: list[ToolResultBlockParam]


class _Phase(enum.Enum):
    READY = "ready"
    """The next step is to send a request."""
    WITH_BODY = "with_body"
    """A reply was yielded; the loop body may steer until it asks for the next message."""
    FINISHED = "finished"
    """The model stopped, or the runner was closed: iteration ends."""


class _ToolRun:
    """One in-flight ``generate_tool_response()`` computation that concurrent callers share."""

    __slots__ = ("done",)

    def __init__(self) -> None:
        self.done = anyio.Event()


class ToolRunner:
    """Runs Claude's tool-use loop: sends requests, yields replies, runs the requested tools.

    Args:
        client: An ``anthropic.AsyncAnthropic`` (or ``anthropic.Anthropic``, whose requests then
            run in a worker thread).
        tools: Tools made with ``@tool``, plain functions (made into tools), or raw tool
            definitions (dicts such as server tools), which are sent as given and never run.
        max_iterations: The most requests to send; ``None`` for no limit.
        max_concurrency: The most tool calls to run at once; ``None`` for no limit.
        tool_timeout: Seconds a tool call may take (a tool's own ``timeout`` wins); a call that
            takes longer becomes an ``is_error`` result that says so.
        result_adapter: Turns what tools return into tool_result content.
        **params: Any parameter of ``client.messages.create`` (``model``, ``max_tokens`` and
            ``messages`` are required). ``betas=[...]`` sends through ``client.beta.messages``.
    """

    def __init__(
        self,
        client: Client,
        *,
        tools: Iterable[Tool | Callable[..., Any] | Mapping[str, Any]] = (),
        max_iterations: int | None = None,
        max_concurrency: int | None = None,
        tool_timeout: float | None = None,
        result_adapter: ToolResultAdapter = DEFAULT_ADAPTER,
        **params: Any,
    ) -> None:
        if not isinstance(client, anthropic.AsyncAnthropic | anthropic.Anthropic):
            raise ParamsError(
                f"client must be an anthropic.AsyncAnthropic or anthropic.Anthropic, not {type(client).__name__!r}; "
                "create one with anthropic.AsyncAnthropic()."
            )
        if max_iterations is not None and (not isinstance(max_iterations, int) or max_iterations < 1):
            raise ParamsError(f"max_iterations must be a positive int or None, not {max_iterations!r}.")
        if max_concurrency is not None and (not isinstance(max_concurrency, int) or max_concurrency < 1):
            raise ParamsError(f"max_concurrency must be a positive int or None, not {max_concurrency!r}.")
        if tool_timeout is not None and not (isinstance(tool_timeout, int | float) and tool_timeout > 0):
            raise ParamsError(
                f"tool_timeout must be a positive number of seconds or None, not {tool_timeout!r}."
            )
        if "stream" in params:
            raise ParamsError(
                "stream is not supported by this runner yet; drop stream= and iterate the runner for "
                "whole messages."
            )
        self._client = client
        self._max_iterations = max_iterations
        self._max_concurrency = max_concurrency
        self._tool_timeout = tool_timeout
        self._adapter = result_adapter

        # State. Invariant: ``_reply`` is the latest reply; in WITH_BODY it is the one the body holds,
        # and ``_history_changed`` says whether the body called push_messages/set_messages_params.
        self._phase = _Phase.READY
        self._closed = False
        self._reply: Reply | None = None
        self._history_changed = False
        self._requests_sent = 0
        self._advancing = False
        # The history is known to be valid before this index (see ``check_answered``).
        self._check_from = 0
        # Tool results by tool_use id: a call that finished is never run again.
        self._results: dict[str, ToolResultBlockParam] = {}
        self._inflight: dict[tuple[str, ...], _ToolRun] = {}

        self._params: dict[str, Any] = {}
        self._wire_tools: list[Any] = []
        self._execution = ExecutionOptions(tools={}, adapter=result_adapter)
        self._install_params({**params, "tools": tools})

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
        """The latest reply, or ``None`` before the first."""
        return self._reply

    @property
    def requests_sent(self) -> int:
        """How many requests got a reply."""
        return self._requests_sent

    @property
    def finished(self) -> bool:
        """Whether the loop has ended (the model stopped, a limit was reached, or ``close()``)."""
        return self._phase is _Phase.FINISHED or self._limit_reached()

    # -- steering ---------------------------------------------------------------------------------

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """Append messages to the history: MessageParam dicts or SDK ``Message`` objects.

        From the loop body, this means the runner will not append the yielded reply itself.
        """
        params = [_message_param(message, index) for index, message in enumerate(messages)]
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

    def close(self) -> None:
        """End the loop now. A reply that the body holds is appended if the body left the history
        unchanged, but its tool calls are not run. Idempotent."""
        if self._phase is _Phase.WITH_BODY and not self._history_changed and self._reply is not None:
            self._params["messages"].append(self._reply.to_param())
        self._closed = True
        self._phase = _Phase.FINISHED

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- tools ------------------------------------------------------------------------------------

    async def generate_tool_response(self) -> ToolResultMessage | None:
        """The user message holding the tool_result blocks for the pending tool calls, or ``None``.

        The pending calls are those of the last message of the history, or of the reply the loop
        body holds when the body has not changed the history. Results are computed once per
        tool_use id and shared by concurrent callers; the history is never changed.
        """
        calls = self._calls_to_answer()
        if not calls:
            return None
        key = tuple(call.id for call in calls)
        while (run := self._inflight.get(key)) is not None:
            await run.done.wait()  # if that run was cancelled, the loop goes on and runs what is missing
        missing = [call for call in calls if call.id not in self._results]
        if missing:
            run = self._inflight[key] = _ToolRun()
            try:
                await run_tool_calls(missing, self._execution, self, self._results.__setitem__)
            finally:
                del self._inflight[key]
                run.done.set()
        # Copies: a caller may edit what it gets without changing what is cached.
        return {"role": "user", "content": [ToolResultBlockParam(**self._results[call.id]) for call in calls]}

    def _calls_to_answer(self) -> tuple[ToolCall, ...]:
        history: list[Any] = self._params["messages"]
        if self._phase is _Phase.WITH_BODY and not self._history_changed:
            return calls_to_answer(self._reply, self._reply)
        return calls_to_answer(history[-1] if history else None, self._reply)

    # -- iteration --------------------------------------------------------------------------------

    def __aiter__(self) -> AsyncIterator[Reply]:
        return self

    async def __anext__(self) -> Reply:
        if self._advancing:
            raise ToolRunnerError(
                "this runner is already advancing in another task; iterate a runner from one task at a time."
            )
        self._advancing = True
        try:
            if self._phase is _Phase.WITH_BODY:
                await self._finish_turn()
            if self._phase is _Phase.FINISHED or self._limit_reached():
                raise StopAsyncIteration
            reply = await self._send()
        finally:
            self._advancing = False
        self._reply = reply
        self._requests_sent += 1
        self._history_changed = False
        self._phase = _Phase.WITH_BODY
        return reply

    async def until_done(self) -> Reply:
        """Run the loop to its end and return the final reply; resumes a loop left by ``break``."""
        async for _ in self:
            pass
        if self._reply is None:
            raise ToolRunnerError(
                "the runner ended before sending any request, so there is no final message."
            )
        return self._reply

    async def _finish_turn(self) -> None:
        """Steps 3 to 5 for the reply the body held. Appends happen together, after the tools ran,
        so a cancelled turn leaves the history as it was and can be finished again."""
        reply = self._reply
        assert reply is not None
        results = await self.generate_tool_response()
        history: list[Any] = self._params["messages"]
        if not self._history_changed:
            history.append(reply.to_param())
        if results is not None:
            history.append(results)
        if reply.container is not None:
            self._params["container"] = container_param(self._params.get("container"), reply.container.id)
        paused = step_for(reply.stop_reason) is Step.RESUME
        self._phase = (
            _Phase.READY if (results is not None or self._history_changed or paused) else _Phase.FINISHED
        )

    def _limit_reached(self) -> bool:
        return self._max_iterations is not None and self._requests_sent >= self._max_iterations

    async def _send(self) -> Reply:
        history: list[Any] = self._params["messages"]
        check_answered(history, self._check_from)
        self._check_from = max(len(history) - 1, 0)
        kwargs = dict(self._params)  # a handful of keys; the history list itself is not copied
        del kwargs["tools"]
        if self._wire_tools:
            kwargs["tools"] = self._wire_tools
        betas = kwargs.pop("betas", None)
        messages = self._client.beta.messages if betas else self._client.messages
        if betas:
            kwargs["betas"] = betas
        if isinstance(self._client, anthropic.AsyncAnthropic):
            return await messages.create(**kwargs)  # type: ignore[no-any-return]
        return await anyio.to_thread.run_sync(partial(messages.create, **kwargs))  # type: ignore[no-any-return]

    # -- params -----------------------------------------------------------------------------------

    def _install_params(self, params: dict[str, Any]) -> None:
        """Validate ``params`` and make them current; index the tools when they changed."""
        for required in ("model", "max_tokens", "messages"):
            if required not in params:
                raise ParamsError(
                    f"params need {required!r}; pass it to ToolRunner(...) or keep it in set_messages_params."
                )
        _check_param_names(params)
        messages = params["messages"]
        if isinstance(messages, str | bytes) or not isinstance(messages, Sequence):
            raise ParamsError(
                f"messages must be a list of message params, not {type(messages).__name__!r}; "
                "for example [{'role': 'user', 'content': 'Hello'}]."
            )
        params["messages"] = [_message_param(message, index) for index, message in enumerate(messages)]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
        if "tools" not in self._params or params.get("tools") is not self._params["tools"]:
            self._index_tools(params)
        self._params = params

    def _index_tools(self, params: dict[str, Any]) -> None:
        entries: object = params.get("tools") or []
        if isinstance(entries, str | bytes | Mapping) or not isinstance(entries, Iterable):
            raise ParamsError(f"tools must be a list of tools, not {type(cast(object, entries)).__name__!r}.")
        tools: list[Tool | Mapping[str, Any]] = []
        runnable: dict[str, Tool] = {}
        unrunnable: set[str] = set()
        for entry in cast("Iterable[object]", entries):
            tool: Tool | Mapping[str, Any]
            if isinstance(entry, Mapping):
                tool = cast("Mapping[str, Any]", entry)
                name = tool.get("name")
                if not isinstance(name, str):
                    raise ParamsError(
                        f"the raw tool definition {entry!r} has no 'name'; every tool needs one."
                    )
            else:
                tool = as_tool(entry)
                name = tool.name
            if name in runnable or name in unrunnable:
                raise ToolDefinitionError(
                    f"two tools are named {name!r}; tool names must be unique. Rename one with @tool(name=...)."
                )
            if isinstance(tool, Tool):
                runnable[name] = tool
            else:
                unrunnable.add(name)
            tools.append(tool)
        params["tools"] = tools
        self._wire_tools = [tool.to_param() if isinstance(tool, Tool) else tool for tool in tools]
        self._execution = ExecutionOptions(
            tools=runnable,
            adapter=self._adapter,
            limiter=anyio.CapacityLimiter(self._max_concurrency) if self._max_concurrency else None,
            timeout=self._tool_timeout,
            unrunnable=frozenset(unrunnable),
        )


@cache
def _known_param_names() -> frozenset[str]:
    names: set[str] = set()
    names.update(inspect.signature(_Messages.create).parameters)
    names.update(inspect.signature(_BetaMessages.create).parameters)
    names.discard("self")
    return frozenset(names)


def _check_param_names(params: Mapping[str, Any]) -> None:
    known = _known_param_names()
    for name in params:
        if name not in known and name != "tools":
            close = difflib.get_close_matches(name, known, n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParamsError(
                f"{name!r} is not a parameter of client.messages.create.{hint} "
                "Pass runner options (max_iterations, ...) and request params by their documented names."
            )


def _message_param(message: object, index: int) -> Any:
    """A message as the history keeps it: SDK messages become params; dicts are checked, not copied."""
    if isinstance(message, Message | BetaMessage):
        return message.to_param()
    if not isinstance(message, Mapping):
        raise HistoryError(
            f"message {index} is a {type(message).__name__!r}; a message is a dict like "
            "{'role': 'user', 'content': '...'} or an SDK Message."
        )
    message = cast("Mapping[str, Any]", message)
    role = message.get("role")
    if role not in ("user", "assistant"):
        raise HistoryError(
            f"message {index} has role {role!r}; the Messages API takes 'user' and 'assistant' "
            "(put system text in the system= param)."
        )
    content = message.get("content")
    if not isinstance(content, str | list | tuple):
        raise HistoryError(
            f"message {index} has content of type {type(content).__name__!r}; content is a string or a list of "
            "content blocks."
        )
    return message

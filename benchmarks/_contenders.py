"""The three ways to run the same conversation that the benchmarks compare.

- ``raw``: a hand-written loop on ``client.messages.create`` (or ``.stream``), calling tools one
  after another: the floor for a sequential loop;
- ``sdk``: the SDK's own runner, ``client.beta.messages.tool_runner(..., thread=False)``;
- ``toolrunner``: ``ToolRunner(...)``, iterated to the end.

Each run gets its conversation from the server in ``_server.py`` (its shape is in ``base_url``)
and returns a ``Run``. Runs check their final reply, so a contender that ends the conversation
early cannot look fast. Streamed runs read every event in the loop body, as a UI would, and note
when each turn's last tool_use block closed; the tools note when they finish.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, TypeAlias, cast

import anthropic
import anyio
from anthropic.lib.tools import BetaAsyncFunctionTool, BetaFunctionTool, beta_async_tool, beta_tool
from anthropic.types import ToolParam

from toolrunner import Tool, ToolRunner, tool

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 1024
PROMPT = "Call the tool each time I ask; this conversation is a benchmark."
TOOL_TEXT = ("A no-op tool's result: a short text of about two hundred bytes, like a small lookup. " * 3)[
    :200
]
DESCRIPTION = "A benchmark tool."

ToolKind: TypeAlias = Literal["noop", "sleep", "sleep_sync"]
Contender: TypeAlias = Literal["raw", "sdk", "toolrunner"]
CONTENDERS: tuple[Contender, ...] = ("raw", "sdk", "toolrunner")


@dataclass(frozen=True, slots=True)
class Conversation:
    """What the server scripts (``turns`` tool turns of ``calls`` calls each) and what tools do.

    With ``stream``, replies are streamed ``pace`` seconds apart per event, with ``tail`` seconds
    after the last block, and the SDK runner and toolrunner run tools eagerly.
    """

    turns: int
    calls: int
    tool: ToolKind
    sleep: float = 0.0
    stream: bool = False
    pace: float = 0.0
    tail: float = 0.0

    def base_url(self, port: int) -> str:
        url = f"http://127.0.0.1:{port}/bench/{self.turns}/{self.calls}/{self.tool}"
        if self.pace or self.tail:
            url += f"/{round(self.pace * 1000)}/{round(self.tail * 1000)}"
        return url


@dataclass(frozen=True, slots=True)
class Run:
    """One run of one conversation by one contender.

    Attributes:
        seconds: Wall time from the first request to the final reply.
        cpu_seconds: CPU time of this process (all its threads) over the same span.
        arrivals: Seconds from the start at which each reply (or its stream) arrived.
        after_close: Streamed runs: per tool turn, seconds from its last tool_use block closing to
            its last tool call finishing.
    """

    seconds: float
    cpu_seconds: float
    arrivals: list[float]
    after_close: list[float] = field(default_factory=list[float])


class _Clock:
    """Times one run: ``begin()`` before the first request, ``arrived()`` at each reply, ``stop()``
    after the last."""

    def __init__(self, calls: int) -> None:
        self.calls = calls
        self.arrivals: list[float] = []
        self.closes: list[float] = []  # the last tool_use close of each streamed turn
        self.finishes: list[float] = []  # every tool call's end, in order
        self.begin()

    def begin(self) -> None:
        _active.clock = self
        self.cpu_start = time.process_time()
        self.start = time.perf_counter()

    def arrived(self) -> None:
        self.arrivals.append(time.perf_counter() - self.start)

    def tool_use_closed(self, index: int) -> None:
        """A tool_use block closed; the turn's last one (``index`` from 0) is the one kept."""
        if index == self.calls - 1:
            self.closes.append(time.perf_counter())

    def finished(self) -> None:
        self.finishes.append(time.perf_counter())

    def stop(self) -> Run:
        seconds = time.perf_counter() - self.start
        turn_ends = [max(self.finishes[n : n + self.calls]) for n in range(0, len(self.finishes), self.calls)]
        after_close = [end - close for close, end in zip(self.closes, turn_ends, strict=False)]
        return Run(seconds, time.process_time() - self.cpu_start, self.arrivals, after_close)


# -- the tool, the same behaviour in each contender's form ----------------------------------------
#
# Tools are made once per process and kind, as programs define them once: a definition made per run
# would fill the typing and pydantic caches and look like memory that runs keep. Each run's clock is
# reached through ``_active``.


class _Active:
    clock: _Clock | None = None


_active = _Active()


def _finished() -> None:
    if _active.clock is not None:
        _active.clock.finished()


@cache
def _async_function(kind: ToolKind, delay: float) -> Callable[[int], Awaitable[str]]:
    async def noop(n: int) -> str:
        return TOOL_TEXT

    async def sleep(n: int) -> str:
        await anyio.sleep(delay)
        _finished()
        return f"slept {n}"

    return noop if kind == "noop" else sleep


@cache
def _sync_function(delay: float) -> Callable[[int], str]:
    def sleep_sync(n: int) -> str:
        time.sleep(delay)
        _finished()
        return f"slept {n}"

    return sleep_sync


def _definition(conversation: Conversation) -> ToolParam:
    return {
        "name": conversation.tool,
        "description": DESCRIPTION,
        "input_schema": {
            "type": "object",
            "properties": {"n": {"type": "integer", "description": "The call's number."}},
            "required": ["n"],
        },
    }


@cache
def _toolrunner_tool(kind: ToolKind, delay: float) -> Tool[..., Any]:
    function: Callable[[int], object]
    function = _sync_function(delay) if kind == "sleep_sync" else _async_function(kind, delay)
    return tool(name=kind, description=DESCRIPTION)(function)


@cache
def _sdk_async_tool(kind: ToolKind, delay: float) -> BetaAsyncFunctionTool[Any]:
    return beta_async_tool(_async_function(kind, delay), name=kind, description=DESCRIPTION)


@cache
def _sdk_sync_tool(kind: ToolKind, delay: float) -> BetaFunctionTool[Any]:
    return beta_tool(_sync_function(delay), name=kind, description=DESCRIPTION)


# -- checks -----------------------------------------------------------------------------------------


def _check(conversation: Conversation, run: Run, final: Any) -> Run:
    expected = f"Done after {conversation.turns} turns."
    text = "".join(block.text for block in final.content if block.type == "text")
    if len(run.arrivals) != conversation.turns + 1 or not text.startswith(expected):
        raise RuntimeError(
            f"the conversation ended after {len(run.arrivals)} replies with {text[:40]!r}; expected "
            f"{conversation.turns + 1} replies ending with {expected!r}."
        )
    return run


def _watch_events(clock: _Clock, event: Any) -> None:
    if event.type == "content_block_stop" and event.content_block.type == "tool_use":
        clock.tool_use_closed(int(event.content_block.input["n"]))


# -- the contenders ---------------------------------------------------------------------------------


async def run_raw(client: anthropic.AsyncAnthropic, conversation: Conversation) -> Run:
    """The hand-written loop: create (or stream), append, call each tool in turn, append the results."""
    clock = _Clock(conversation.calls)
    definition = _definition(conversation)
    function: Callable[[int], Awaitable[str]]
    if conversation.tool == "sleep_sync":
        sync_function = _sync_function(conversation.sleep)

        async def blocking(n: int) -> str:
            return sync_function(n)  # blocks the event loop: a sequential loop does not care

        function = blocking
    else:
        function = _async_function(conversation.tool, conversation.sleep)
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    clock.begin()
    while True:
        if conversation.stream:
            async with client.messages.stream(
                model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=[definition]
            ) as stream:
                clock.arrived()
                async for event in stream:
                    _watch_events(clock, event)
                message = await stream.get_final_message()
        else:
            message = await client.messages.create(
                model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=[definition]
            )
            clock.arrived()
        messages.append({"role": "assistant", "content": message.content})
        if message.stop_reason != "tool_use":
            break
        results: list[dict[str, Any]] = []
        for block in message.content:
            if block.type == "tool_use":
                value = await function(cast(int, cast("dict[str, Any]", block.input)["n"]))
                results.append({"type": "tool_result", "tool_use_id": block.id, "content": value})
        messages.append({"role": "user", "content": results})
    return _check(conversation, clock.stop(), message)


async def run_sdk(client: anthropic.AsyncAnthropic, conversation: Conversation) -> Run:
    """The SDK's async runner, sending the whole history each turn (``thread=False``)."""
    if conversation.tool == "sleep_sync":
        raise ValueError("the SDK's async runner takes async tools only; use run_sdk_sync for sync tools.")
    clock = _Clock(conversation.calls)
    sdk_tool = _sdk_async_tool(conversation.tool, conversation.sleep)
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    last: Any = None
    if conversation.stream:
        streaming = client.beta.messages.tool_runner(
            model=MODEL,
            max_tokens=MAX_TOKENS,
            messages=messages,
            tools=[sdk_tool],
            thread=False,
            stream=True,
            run_tools_eagerly=True,
        )
        clock.begin()
        async for stream in streaming:
            clock.arrived()
            async for event in stream:
                _watch_events(clock, event)
            last = await stream.get_final_message()
        return _check(conversation, clock.stop(), last)
    runner = client.beta.messages.tool_runner(
        model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=[sdk_tool], thread=False
    )
    clock.begin()
    async for message in runner:
        clock.arrived()
        last = message
    return _check(conversation, clock.stop(), last)


def run_sdk_sync(client: anthropic.Anthropic, conversation: Conversation) -> Run:
    """The SDK's sync runner, for sync tools (its async runner takes async tools only)."""
    clock = _Clock(conversation.calls)
    sdk_tool = _sdk_sync_tool(conversation.tool, conversation.sleep)
    runner = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=MAX_TOKENS,
        messages=[{"role": "user", "content": PROMPT}],
        tools=[sdk_tool],
        thread=False,
    )
    last: Any = None
    clock.begin()
    for message in runner:
        clock.arrived()
        last = message
    return _check(conversation, clock.stop(), last)


async def run_toolrunner(client: anthropic.AsyncAnthropic, conversation: Conversation) -> Run:
    """toolrunner's ``ToolRunner``, iterated to the end (streamed: eager tools, every event read)."""
    clock = _Clock(conversation.calls)
    tools = [_toolrunner_tool(conversation.tool, conversation.sleep)]
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    last: Any = None
    if conversation.stream:
        streaming = ToolRunner(
            client,
            model=MODEL,
            max_tokens=MAX_TOKENS,
            messages=messages,
            tools=tools,
            stream=True,
            run_tools_eagerly=True,
        )
        async with streaming:
            clock.begin()
            async for stream in streaming:
                clock.arrived()
                async for event in stream:
                    _watch_events(clock, event)
                last = await stream.get_final_message()
        return _check(conversation, clock.stop(), last)
    runner = ToolRunner(client, model=MODEL, max_tokens=MAX_TOKENS, messages=messages, tools=tools)
    clock.begin()
    async for message in runner:
        clock.arrived()
        last = message
    return _check(conversation, clock.stop(), last)


_ASYNC_RUNS: dict[Contender, Callable[[anthropic.AsyncAnthropic, Conversation], Awaitable[Run]]] = {
    "raw": run_raw,
    "sdk": run_sdk,
    "toolrunner": run_toolrunner,
}


def run_once(contender: Contender, conversation: Conversation, port: int) -> Run:
    """One run with a fresh client (and event loop): what the harness times."""
    base_url = conversation.base_url(port)
    if contender == "sdk" and conversation.tool == "sleep_sync":
        with anthropic.Anthropic(api_key="sk-ant-bench", base_url=base_url, max_retries=0) as client:
            return run_sdk_sync(client, conversation)

    async def main() -> Run:
        async with anthropic.AsyncAnthropic(
            api_key="sk-ant-bench", base_url=base_url, max_retries=0
        ) as client:
            return await _ASYNC_RUNS[contender](client, conversation)

    return anyio.run(main)

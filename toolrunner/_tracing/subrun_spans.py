"""The spans of sub-runs (``_core.subruns``) for ``OtelTrace``: a sub-agent's call's
``execute_tool {name}`` span and, under it, the sub-run's ``invoke_agent {name}``, opened at the
sub-run's first request or tool call and ended with the call's program (``call``); current around
the sub-run's requests and tool calls (``agent``). Which sub-run an effect is of is read from the
calls whose programs run in the task (``_driving``, a context variable: the programs of a sub-run's
calls run in tasks of the program of the call that runs it) and the effect's ``agent_path``."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Generator
from contextvars import ContextVar
from dataclasses import dataclass

from anthropic.types import ToolResultBlockParam
from opentelemetry import context as otel_context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind
from opentelemetry.util.types import AttributeValue

from .._core.state import RunState
from .._core.types import ToolCall
from .._core.usage import Usage
from .attributes import ended_attributes, json_attribute as _json
from .content import result_content
from .otel import PROVIDER, record_exception, set_error, tool_span

__all__ = ["SubRunSpans"]


class SubRunSpans:
    """The open spans of one runner's sub-runs, by the ids of the calls down to the one that runs it."""

    def __init__(
        self,
        tracer: trace.Tracer,
        open_run: Callable[[], Span],
        state: Callable[[], RunState],
        *,
        content: bool,
    ) -> None:
        self._tracer = tracer
        self._open_run = open_run
        self._state = state
        self._content = content
        self._sub_runs: dict[tuple[str, ...], _SubRun] = {}

    @property
    def inside(self) -> bool:
        """A sub-run's span is current in this task (``agent``): a sub-run's tool call runs."""
        return _inside.get() is self

    def end_all(self) -> None:
        while self._sub_runs:
            spans = self._sub_runs.popitem()[1]
            spans.agent.end()
            spans.tool.end()

    @contextlib.contextmanager
    def call(self, call: ToolCall, result: Callable[[], ToolResultBlockParam | None]) -> Generator[None]:
        owner, calls = _driving.get()
        stack = (*(calls if owner is self else ()), _Driven(call, result))
        token = _driving.set((self, stack))
        failed: BaseException | None = None
        try:
            yield
        except BaseException as error:
            failed = error
            raise
        finally:
            _driving.reset(token)
            spans = self._sub_runs.pop(_key(stack), None)
            if spans is not None:
                self._end_sub_run(stack, spans, failed)

    @contextlib.contextmanager
    def agent(self, path: tuple[str, ...]) -> Generator[None]:
        owner, calls = _driving.get()
        if not path or owner is not self or len(calls) < len(path):  # the run's own effect
            yield
            return
        spans = self._sub_run(calls[: len(path)], path)
        token = otel_context.attach(spans.context)
        inside = _inside.set(self)
        try:
            yield
        finally:
            _inside.reset(inside)
            otel_context.detach(token)

    def _sub_run(self, stack: tuple[_Driven, ...], path: tuple[str, ...]) -> _SubRun:
        """The open spans of the sub-run of ``stack[-1]`` (a call of the sub-agent ``path[-1]``), or
        new ones (its sub-run's first request or tool call), under its parent's."""
        key = _key(stack)
        found = self._sub_runs.get(key)
        if found is not None:
            return found
        if len(key) == 1:
            parent = trace.set_span_in_context(self._open_run())
        else:
            parent = self._sub_run(stack[:-1], path[:-1]).context
        call = stack[-1].call
        tool = tool_span(self._tracer, call, parent, None)
        if self._content and tool.is_recording():
            tool.set_attribute("gen_ai.tool.call.arguments", _json(call.input))
        state = self._sub_state(key)
        name = path[-1]
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": PROVIDER,
            "gen_ai.agent.name": name,
        }
        model = None if state is None else state.params.get("model")
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        agent = self._tracer.start_span(
            f"invoke_agent {name}",
            context=trace.set_span_in_context(tool),
            kind=SpanKind.INTERNAL,
            attributes=attributes,
        )
        found = _SubRun(
            tool=tool,
            agent=agent,
            context=trace.set_span_in_context(agent),
            first=0 if state is None else len(state.usage),
        )
        self._sub_runs[key] = found
        return found

    def _sub_state(self, key: tuple[str, ...]) -> RunState | None:
        """The state of the sub-run of the call ``key[-1]`` (``key``: the calls down to it), as the
        run's state holds it (``CallRecord.sub_run``), if it does yet."""
        state: RunState | None = self._state()
        for call_id in key:
            record = None if state is None else state.calls.get(call_id)
            state = None if record is None or record.sub_run is None else record.sub_run.state
        return state

    def _end_sub_run(self, stack: tuple[_Driven, ...], spans: _SubRun, failed: BaseException | None) -> None:
        """The program of the call that ran a sub-run ended: its spans end, with the sub-run's
        usage and end, and the call's result (an ``is_error`` one marks the call's span)."""
        agent, tool = spans.agent, spans.tool
        state = self._sub_state(_key(stack))
        if state is not None:
            usage = sum((request.usage for request in state.usage[spans.first :]), Usage())
            agent.set_attributes(ended_attributes(state, usage))
        agent.end()
        if isinstance(failed, Exception):  # around the sub-run (a save refused, say)
            set_error(tool, type(failed).__qualname__)
            record_exception(tool, failed)
        elif failed is None:  # (a call cancelled ends with its status unset)
            block = stack[-1].result()
            if block is not None and block.get("is_error"):
                set_error(tool, "tool_error")
            elif block is not None and self._content:
                tool.set_attribute("gen_ai.tool.call.result", result_content(block.get("content")))
        tool.end()


@dataclass(frozen=True, slots=True)
class _Driven:
    """A call whose program runs in this task (``_driving``), and how to read its result."""

    call: ToolCall
    result: Callable[[], ToolResultBlockParam | None]


@dataclass(frozen=True, slots=True, kw_only=True)
class _SubRun:
    """The open spans of a sub-run: its call's and its own (``context``: its own, current)."""

    tool: Span
    agent: Span
    context: Context
    first: int
    """The index in the sub-run's ``RunState.usage`` of its first request in this span."""


_driving: ContextVar[tuple[object, tuple[_Driven, ...]]] = ContextVar(
    "toolrunner_driving", default=(None, ())
)
"""The trace whose calls' programs run in this task, and those calls, outermost first."""

_inside: ContextVar[object | None] = ContextVar("toolrunner_sub_run", default=None)
"""The trace whose sub-run's span ``agent`` made current in this task (a tool of a sub-run runs)."""


def _key(stack: tuple[_Driven, ...]) -> tuple[str, ...]:
    return tuple(driven.call.id for driven in stack)

"""The OpenTelemetry implementation of ``RunTrace``, after the GenAI semantic conventions.

Imported only when a runner is given ``tracing=``. The spans of one runner:

- ``invoke_agent [agent_name]`` (INTERNAL), one per run: from the iteration that sends the run's
  first request (or runs its first tool call) until the loop ends or pauses. It is current while a
  request is sent, so the SDK's own span of the request (``chat``, when the client traces) is its
  child; toolrunner emits no span per request itself, so there is never a duplicate of it.
- ``execute_tool {name}`` (INTERNAL), one per tool call (one the hooks stopped too, with no
  duration), a child of its run's span (siblings for calls run together), current inside the tool.
- for a call that runs a sub-agent, its ``execute_tool`` span and the sub-run's ``invoke_agent
  {name}`` under it, where the sub-run's spans nest (``subrun_spans``).

The hooks' decisions come from the runner's events (``hears``, only for a run with hooks): a
``HookDecided`` that stops a call makes its span; one that replaces a call's result marks the span,
held open after the tool (``_held``) until ``ToolCallFinished``; a refusal is a run span event.

Invariants: at most one run span is open per runner (``_run``), and the next run's span links to
the one before; the loop never depends on its spans (OpenTelemetry's API does not raise, and content
that JSON cannot hold is recorded as its ``repr``).
"""

from __future__ import annotations

import contextlib
import weakref
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar, Token
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from types import TracebackType
from typing import Any

from anthropic.types import ToolResultBlockParam
from opentelemetry import context as otel_context, trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode, TracerProvider
from opentelemetry.util.types import AttributeValue

from .._core.errors import describe
from .._core.events import HookDecided, RunnerEvent, ToolCallFinished
from .._core.hook_types import HookPlan
from .._core.state import RunState
from .._core.types import ToolCall
from .._core.usage import Usage
from .attributes import (
    END_REASON,
    HOOK_EVENT,
    HOOK_REASON,
    RESULT_REPLACED,
    ended_attributes,
    json_attribute as _json,
    stopped_attributes,
    tool_attributes,
)
from .content import chat_messages, output_messages, parts as _parts, result_content

__all__ = [
    "END_REASON",
    "PROVIDER",
    "OtelTrace",
    "chat_messages",
    "output_messages",
    "record_exception",
    "result_content",
    "run_attributes",
    "set_error",
    "tool_span",
    "tool_tracer",
    "traced_tool_call",
]

SCOPE = "toolrunner"
"""The instrumentation scope of the runner's spans."""

PROVIDER = "anthropic"
"""``gen_ai.provider.name``."""


class OtelTrace:
    """A ``RunTrace`` that records the runner's runs and tool calls as OpenTelemetry spans."""

    def __init__(
        self,
        client: object,
        state: Callable[[], RunState],
        *,
        tracer_provider: TracerProvider | None,
        content: bool,
        agent_name: str | None,
        failures: ContextVar[Callable[[Exception], None] | None],
        hooks: HookPlan | None = None,
    ) -> None:
        client_options: Mapping[str, Any] = getattr(client, "open_telemetry", None) or {}
        provider = tracer_provider if tracer_provider is not None else client_options.get("tracer_provider")
        self._tracer = trace.get_tracer(SCOPE, _version(), tracer_provider=provider)
        self._conversation_id: str | None = client_options.get("conversation_id")
        self._state = state
        self._content = content
        self._agent_name = agent_name
        self._failures = failures
        self._run: _Run | None = None
        self._previous: trace.SpanContext | None = None  # the span of the run before, to link to
        self._token: Token[Context] | None = None  # what `sending` attached, detached after the iteration
        self._failed: Exception | None = None  # what the last iteration raised, if it failed
        self.hears: Callable[[RunnerEvent], None] | None = None if hooks is None else self._heard
        self._after = hooks is not None and hooks.after_tool_call
        self._held: dict[str, Span] = {}
        """The spans of calls whose tool finished and whose ``after_tool_call`` hook has yet to answer."""
        from .subrun_spans import SubRunSpans  # here: it imports this module's helpers

        self._subs = SubRunSpans(self._tracer, self._open_run, state, content=content)

    # -- RunTrace ---------------------------------------------------------------------------------

    def iteration(self) -> OtelTrace:
        return self

    def __enter__(self) -> None:
        self._failed = None

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        token, self._token = self._token, None
        if token is not None:
            otel_context.detach(token)
        # The end of the iteration (StopAsyncIteration) and cancellation are no failure.
        if isinstance(exc, Exception) and not isinstance(exc, StopAsyncIteration):
            self._failed = exc  # the run's span fails if the run ends before an iteration goes well
            if self._run is not None:
                record_exception(self._run.span, exc)

    def sending(self) -> None:
        span = self._open_run()
        if self._token is None:
            self._token = otel_context.attach(trace.set_span_in_context(span))

    async def tool_call(self, call: ToolCall, run: Awaitable[ToolResultBlockParam]) -> ToolResultBlockParam:
        if self._subs.inside:  # a sub-run's call: under its invoke_agent span, current (``agent``)
            return await traced_tool_call(
                self._tracer,
                call,
                run,
                parent=None,
                arguments=(lambda: call.input) if self._content else None,
                failures=self._failures,
            )
        parent = trace.set_span_in_context(self._open_run())  # not the current span: calls are siblings
        record = self._state().calls.get(call.id)
        return await traced_tool_call(
            self._tracer,
            call,
            run,
            parent=parent,
            arguments=(lambda: self._input_of(call)) if self._content else None,
            failures=self._failures,
            hook=None if record is None else record.hook,
            hold=(lambda span: self._hold(call.id, span)) if self._after else None,
        )

    def call(
        self, call: ToolCall, result: Callable[[], ToolResultBlockParam | None]
    ) -> contextlib.AbstractContextManager[object]:
        return self._subs.call(call, result)

    def agent(self, path: tuple[str, ...]) -> contextlib.AbstractContextManager[object]:
        return self._subs.agent(path)

    def ended(self, state: RunState) -> None:
        _end_held(self._held)  # calls cancelled while their after_tool_call hook ran
        self._subs.end_all()  # none is open once the calls' programs ended (they are ended there)
        run, self._run = self._run, None
        if run is None:
            return
        run.keep()
        span = run.span
        self._previous = span.get_span_context()
        usage = sum((request.usage for request in state.usage[run.first :]), Usage())
        span.set_attributes(
            {
                "gen_ai.usage.input_tokens": usage.prompt_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
                "gen_ai.usage.cache_write.input_tokens": usage.cache_creation_input_tokens,
            }
        )
        if state.end_reason is not None:
            span.set_attribute(END_REASON, state.end_reason)
        if state.reply is not None and state.reply.stop_reason is not None:
            span.set_attribute("gen_ai.response.finish_reasons", [state.reply.stop_reason])
        if self._content and state.reply is not None:
            span.set_attribute("gen_ai.output.messages", _json(output_messages(state.reply)))
        if self._failed is not None:  # the run ends after an iteration that failed (closed, say)
            set_error(span, type(self._failed).__qualname__)
        span.end()

    # -- the run's span ---------------------------------------------------------------------------

    def _open_run(self) -> Span:
        """The open run's span, or a new one: a run starts with its first request or tool call."""
        if self._run is not None:
            return self._run.span
        state = self._state()
        model = state.params.get("model")
        conversation_id = self._conversation_id or state.run_id
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.provider.name": PROVIDER,
        }
        if isinstance(model, str):
            attributes["gen_ai.request.model"] = model
        if self._agent_name is not None:
            attributes["gen_ai.agent.name"] = self._agent_name
        if conversation_id is not None:
            attributes["gen_ai.conversation.id"] = conversation_id
        span = self._tracer.start_span(
            f"invoke_agent {self._agent_name}" if self._agent_name else "invoke_agent",
            kind=SpanKind.INTERNAL,
            attributes=attributes,
            links=[Link(self._previous)] if self._previous is not None else None,
        )
        if self._content and span.is_recording():
            span.set_attribute("gen_ai.input.messages", _json(chat_messages(state.messages)))
            system = state.params.get("system")
            if system:
                span.set_attribute("gen_ai.system_instructions", _json(_parts(system)))
        # A runner dropped while its run is open (left by break, never closed) ends the span when it
        # is collected, so that the span and its children are not lost.
        finalizer = weakref.finalize(self, _abandon, span, self._held)
        finalizer.atexit = False  # at exit the exporters may be shut down already
        self._run = _Run(span=span, first=len(state.usage), keep=finalizer.detach)
        return span

    # -- what the hooks decided -------------------------------------------------------------------

    def _heard(self, event: RunnerEvent) -> None:
        """An event of a run with hooks: what the hooks decided goes on the spans."""
        if isinstance(event, HookDecided):
            self._hook_decided(event)
        elif self._held and isinstance(event, ToolCallFinished):
            span = self._held.pop(event.call.id, None)
            if span is not None:  # the after_tool_call hook answered: the call is done
                span.end()

    def _hook_decided(self, event: HookDecided) -> None:
        call = event.call
        if call is None:  # a request or an answer refused: the run's
            attributes: dict[str, AttributeValue] = {
                f"{HOOK_EVENT}.name": event.hook,
                f"{HOOK_EVENT}.decision": event.decision,
            }
            if event.reason is not None:
                attributes[f"{HOOK_EVENT}.reason"] = event.reason
            self._open_run().add_event(HOOK_EVENT, attributes)
        elif event.decision in ("denied", "limited"):
            self._stopped(call, event.decision, event.reason)
        elif event.decision == "replaced":
            span = self._held.get(call.id)
            if span is not None:
                span.set_attribute(RESULT_REPLACED, True)
                if event.reason is not None:  # the hook failed: the result is withheld
                    span.set_attribute(HOOK_REASON, event.reason)
        # "run" and "rewritten": the call's span reads them from its record as the call starts

    def _stopped(self, call: ToolCall, decision: str, reason: str | None) -> None:
        """The span of a call the hooks answered without running it: no duration, and no error
        status (the tool did not fail: it did not run)."""
        parent = trace.set_span_in_context(self._open_run())
        span = self._tracer.start_span(
            f"execute_tool {call.name}", context=parent, attributes=stopped_attributes(call, decision, reason)
        )
        if self._content and span.is_recording():
            span.set_attribute("gen_ai.tool.call.arguments", _json(self._input_of(call)))
        span.end()

    def _hold(self, call_id: str, span: Span) -> None:
        """Keep the span of a call whose tool finished open until its after_tool_call hook answers."""
        previous = self._held.pop(call_id, None)
        if previous is not None:  # cut off in its hook before, and run again
            previous.end()
        self._held[call_id] = span

    def _input_of(self, call: ToolCall) -> object:
        """The input the call runs with: the model's, or the one a person approved instead."""
        record = self._state().calls.get(call.id)
        if record is not None and record.hook == "rewritten":  # the input a hook gave instead
            return record.hook_input
        if record is not None and record.approved_input is not None:
            return record.approved_input
        return call.input


async def traced_tool_call(
    tracer: trace.Tracer,
    call: ToolCall,
    run: Awaitable[ToolResultBlockParam],
    *,
    parent: Context | None,
    arguments: Callable[[], object] | None,
    failures: ContextVar[Callable[[Exception], None] | None],
    hook: str | None = None,
    hold: Callable[[Span], None] | None = None,
) -> ToolResultBlockParam:
    """Await ``run`` (the call's execution) in an ``execute_tool {name}`` span, a child of
    ``parent`` (the current span when ``None``: a Temporal activity's), current inside the tool.
    With ``arguments`` (content recorded), the call's input and its result go on the span; with
    ``hook``, what the run's hooks decided on the call (``toolrunner.tool.hook``: ``"run"`` or
    ``"rewritten"``); with ``hold``, the span of a call that finished is handed to it, not ended
    (an ``after_tool_call`` hook has yet to answer)."""
    span = tool_span(tracer, call, parent, hook)
    if arguments is not None and span.is_recording():
        span.set_attribute("gen_ai.tool.call.arguments", _json(arguments()))
    raised: list[Exception] = []

    def failed(error: Exception) -> None:
        raised.append(error)
        record_exception(span, error)

    token = otel_context.attach(trace.set_span_in_context(span))
    failures_token = failures.set(failed)
    finished = False
    try:
        block = await run
        finished = True
    except Exception as error:  # around the tool (a checkpoint refused, say), not the tool itself
        set_error(span, type(error).__qualname__)
        record_exception(span, error)
        raise
    finally:
        failures.reset(failures_token)
        otel_context.detach(token)
        if not finished:  # a call cancelled before its result ends with its status unset
            span.end()
    if block.get("is_error"):
        set_error(span, type(raised[-1]).__qualname__ if raised else "tool_error")
    elif arguments is not None:
        span.set_attribute("gen_ai.tool.call.result", result_content(block.get("content")))
    if hold is None:
        span.end()
    else:
        hold(span)
    return block


def tool_span(tracer: trace.Tracer, call: ToolCall, parent: Context | None, hook: str | None) -> Span:
    attributes = tool_attributes(call, hook)
    return tracer.start_span(
        f"execute_tool {call.name}", context=parent, kind=SpanKind.INTERNAL, attributes=attributes
    )


def tool_tracer(tracer_provider: TracerProvider | None) -> trace.Tracer:
    """The tracer of toolrunner's spans on ``tracer_provider`` (the global one when ``None``)."""
    return trace.get_tracer(SCOPE, _version(), tracer_provider=tracer_provider)


def run_attributes(
    state: RunState,
    *,
    agent_name: str | None,
    usage: Usage,
    content: bool,
    input_messages: Sequence[object] | None,
) -> dict[str, AttributeValue]:
    """The attributes of a run's ``invoke_agent`` span that ended in ``state``, all at once (for a
    span made when the run ended or paused: a Temporal workflow's, which cannot stay open)."""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.provider.name": PROVIDER,
        **ended_attributes(state, usage),
    }
    if agent_name is not None:
        attributes["gen_ai.agent.name"] = agent_name
    if state.run_id is not None:
        attributes["gen_ai.conversation.id"] = state.run_id
    if state.reply is not None and state.reply.stop_reason is not None:
        attributes["gen_ai.response.finish_reasons"] = [state.reply.stop_reason]
    if content:
        if input_messages is not None:
            attributes["gen_ai.input.messages"] = _json(chat_messages(input_messages))
        system = state.params.get("system")
        if system:
            attributes["gen_ai.system_instructions"] = _json(_parts(system))
        if state.reply is not None:
            attributes["gen_ai.output.messages"] = _json(output_messages(state.reply))
    return attributes


@dataclass(frozen=True, slots=True)
class _Run:
    span: Span
    first: int
    """The index in ``RunState.usage`` of the run's first request: the run's usage is from there."""
    keep: Callable[[], object]
    """Cancels the end of the span when the runner is collected (``_abandon``): the run ended."""


def _abandon(span: Span, held: dict[str, Span]) -> None:
    _end_held(held)
    span.set_attribute(END_REASON, "abandoned")
    span.end()


def _end_held(held: dict[str, Span]) -> None:
    """End the spans of calls cut off while their ``after_tool_call`` hook ran (status unset)."""
    while held:
        held.popitem()[1].end()


def record_exception(span: Span, error: BaseException) -> None:
    """``span.record_exception(error)``, which formats the error with ``str``: an exception from
    user code whose ``__str__`` raises is recorded with ``describe``'s text instead."""
    try:
        span.record_exception(error)
    except Exception:
        span.add_event(
            "exception",
            {"exception.type": type(error).__qualname__, "exception.message": describe(error)},
        )


def set_error(span: Span, error_type: str) -> None:
    span.set_status(Status(StatusCode.ERROR))
    span.set_attribute("error.type", error_type)


@cache
def _version() -> str | None:
    try:
        return metadata.version("claude-toolrunner")
    except metadata.PackageNotFoundError:
        return None

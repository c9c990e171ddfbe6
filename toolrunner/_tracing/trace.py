"""Tracing: the seam between the driver and OpenTelemetry (``tracing=Tracing(...)``).

The driver tells a ``RunTrace`` about a run at four points: around each iteration, before each
request, around each tool call, and when the loop ends or pauses; and about sub-agents' runs
(``_core.subruns``) at two more: around each call's program (``call``) and around each effect of a
sub-run that makes a span (``agent``, with the effect's ``agent_path``); a run with hooks (``hooks=``,
``max_calls=``) also lets it hear the run's events (``hears``), for what the hooks decided. Without
``tracing=`` the runner holds ``NO_TRACE``, whose methods do nothing, and OpenTelemetry is never
imported: ``otel`` (the one implementation) is imported by ``start_trace`` only when tracing is
asked for. See docs/observability.md for the spans.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol

from anthropic.types import ToolResultBlockParam

from .._core.errors import ParamsError
from .._core.types import ToolCall

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from .._core.events import Listener, RunnerEvent
    from .._core.hook_types import HookPlan
    from .._core.state import RunState

__all__ = [
    "NO_TRACE",
    "RunTrace",
    "Tracing",
    "start_trace",
    "tool_failed",
    "trace_tool_calls",
    "traced_listener",
    "untraced",
]

TracedCall = Callable[[ToolCall, Awaitable[ToolResultBlockParam]], Awaitable[ToolResultBlockParam]]
"""Runs one tool call's awaitable (its whole execution, to the result block) in the call's span."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Tracing:
    """Trace a runner with OpenTelemetry, after the GenAI semantic conventions (``tracing=Tracing()``).

    Each run gets an ``invoke_agent`` span, each tool call an ``execute_tool {name}`` span under it,
    and the SDK's own span of each request (when the client traces) is a child of the run's span.
    Needs the OpenTelemetry API (``pip install 'claude-toolrunner[otel]'``).

    Args:
        tracer_provider: Where the spans go. ``None``: the client's (the ``tracer_provider`` of its
            ``open_telemetry`` option), or else the global one, so that the runner's spans and the
            SDK's go to the same place.
        content: Record content on the spans: the run's input and output messages and system
            prompt, each tool call's arguments and result. Off by default: content may hold
            personal data.
        agent_name: The agent's name (``gen_ai.agent.name``); the run span is then named
            ``invoke_agent {agent_name}``.
    """

    tracer_provider: TracerProvider | None = None
    content: bool = False
    agent_name: str | None = None

    def __post_init__(self) -> None:
        provider: object = self.tracer_provider
        if provider is not None and not callable(getattr(provider, "get_tracer", None)):
            raise ParamsError(
                f"Tracing(tracer_provider=...) takes an OpenTelemetry TracerProvider or None, not "
                f"{type(provider).__name__!r}."
            )
        content: object = self.content
        if not isinstance(content, bool):
            raise ParamsError(f"Tracing(content=...) takes True or False, not {content!r}.")
        name: object = self.agent_name
        if name is not None and (not isinstance(name, str) or not name):
            raise ParamsError(f"Tracing(agent_name=...) takes a non-empty str or None, not {name!r}.")


class RunTrace(Protocol):
    """What the driver tells the tracing of one runner."""

    @property
    def hears(self) -> Listener | None:
        """What must hear the run's events (``traced_listener``): what the run's hooks decided goes
        on its spans. ``None`` (nothing to hear) for a run without hooks, so that it makes no events
        for the trace's sake."""
        ...

    def iteration(self) -> contextlib.AbstractContextManager[object]:
        """Around one iteration (``__anext__``): an error it raises is recorded on the run's span,
        and the run's span, made current by ``sending``, is current no more after it."""
        ...

    def sending(self) -> None:
        """A request is about to be sent: open the run's span if none is open, and make it current
        for the rest of the iteration, so that the SDK's span of the request is its child."""
        ...

    def tool_call(
        self, call: ToolCall, run: Awaitable[ToolResultBlockParam]
    ) -> Awaitable[ToolResultBlockParam]:
        """Await ``run`` (the call's execution, to its result block) in the call's span, current
        inside the tool; open the run's span first if none is open."""
        ...

    def ended(self, state: RunState) -> None:
        """The loop ended or paused in ``state``: end the run's span, if one is open."""
        ...

    def call(
        self, call: ToolCall, result: Callable[[], ToolResultBlockParam | None]
    ) -> contextlib.AbstractContextManager[object]:
        """Around the program of ``call`` (of the run, or of a sub-run), whose result ``result()``
        reads once it ended: if the call ran a sub-agent (``agent`` was entered below it), the
        spans of its sub-run end here."""
        ...

    def agent(self, path: tuple[str, ...]) -> contextlib.AbstractContextManager[object]:
        """Around a sub-run's request or tool call (``path``: the sub-agents' names, the effect's
        ``agent_path``; empty for the run's own, which this leaves as it is): the sub-run's
        ``invoke_agent`` span (opened with its call's ``execute_tool`` span if none is open) is
        current, so that the SDK's request span and the tool calls' spans are its children."""
        ...


def untraced(call: ToolCall, run: Awaitable[ToolResultBlockParam]) -> Awaitable[ToolResultBlockParam]:
    """``RunTrace.tool_call`` without tracing: ``run`` itself (no extra frame on the common path)."""
    return run


class _NoTrace:
    """The ``RunTrace`` of a runner without ``tracing=``: nothing at all."""

    _nothing = contextlib.nullcontext()
    hears = None

    def iteration(self) -> contextlib.AbstractContextManager[object]:
        return self._nothing

    def sending(self) -> None:
        pass

    tool_call = staticmethod(untraced)

    def ended(self, state: RunState) -> None:
        pass

    def call(
        self, call: ToolCall, result: Callable[[], ToolResultBlockParam | None]
    ) -> contextlib.AbstractContextManager[object]:
        return self._nothing

    def agent(self, path: tuple[str, ...]) -> contextlib.AbstractContextManager[object]:
        return self._nothing


NO_TRACE: RunTrace = _NoTrace()


_tool_failures: ContextVar[Callable[[Exception], None] | None] = ContextVar(
    "toolrunner_tool_failures", default=None
)
"""Where a failure of the tool call running in this context is recorded (its span), if traced."""


def tool_failed(error: Exception) -> None:
    """The tool call running in this context raised ``error``, which becomes its ``is_error``
    result: its span, if it has one, records the exception."""
    record = _tool_failures.get()
    if record is not None:
        record(error)


def _otel_module() -> Any:
    """``otel``, imported now: OpenTelemetry is an optional extra.

    Raises:
        ParamsError: The OpenTelemetry API is not installed.
    """
    try:
        return importlib.import_module(f"{__package__}.otel")
    except ImportError as error:
        if not (error.name or "").startswith("opentelemetry"):
            raise
        raise ParamsError(
            "tracing=Tracing(...) needs the OpenTelemetry API, which is not installed; install it with "
            "pip install 'claude-toolrunner[otel]'."
        ) from error


def trace_tool_calls(
    tracer_provider: TracerProvider | None,
    arguments: Callable[[ToolCall], object] | None,
    hook: str | None = None,
) -> TracedCall:
    """Run each call in an ``execute_tool`` span, a child of the current span, outside a runner (a
    Temporal activity: its span is the parent); ``arguments``, when content is recorded, gives the
    input a call runs with; ``hook``, what the run's hooks decided on it (``toolrunner.tool.hook``)."""
    otel = _otel_module()
    tracer = otel.tool_tracer(tracer_provider)

    def traced(call: ToolCall, run: Awaitable[ToolResultBlockParam]) -> Awaitable[ToolResultBlockParam]:
        given = None if arguments is None else functools.partial(arguments, call)
        traced_run: Awaitable[ToolResultBlockParam] = otel.traced_tool_call(
            tracer, call, run, parent=None, arguments=given, failures=_tool_failures, hook=hook
        )
        return traced_run

    return traced


def start_trace(
    tracing: Tracing | None, client: object, state: Callable[[], RunState], hooks: HookPlan | None = None
) -> RunTrace:
    """The ``RunTrace`` of a runner of ``client`` whose state ``state()`` gives, and whose hooks and
    limits are ``hooks``.

    Raises:
        ParamsError: ``tracing`` is given and the OpenTelemetry API is not installed.
    """
    if tracing is None:
        return NO_TRACE
    trace: RunTrace = _otel_module().OtelTrace(
        client,
        state,
        tracer_provider=tracing.tracer_provider,
        content=tracing.content,
        agent_name=tracing.agent_name,
        failures=_tool_failures,
        hooks=hooks,
    )
    return trace


def traced_listener(listener: Listener | None, trace: RunTrace) -> Listener | None:
    """What hears the run's events: ``listener`` (``on_event=``), and ``trace`` if it must hear
    them (first: a listener that raises does not keep the spans from what happened)."""
    hears = trace.hears
    if hears is None:
        return listener
    if listener is None:
        return hears
    user = listener

    def both(event: RunnerEvent) -> None:
        hears(event)
        user(event)

    return both

"""What a runner reports as it goes, for UIs and logs (``on_event=`` and ``runner.events()``).

Events are plain frozen data; the runner emits them in this order for each request:
``TextDelta``\\* (as text streams in, or once per text block without streaming),
``MessageFinished``, ``ApprovalRequested`` for each call that waits for a decision, then for each
tool call ``ToolCallStarted`` ... ``ToolCallFinished`` (``ApprovalDecided`` when a waiting call is
decided; ``HookDecided`` when a hook or a per-tool limit stops or changes it), and
``LoopFinished`` when the loop ends or pauses. The events of a sub-agent's run (``SubAgent``) come
wrapped in ``SubRunEvent``, with the path to it. Calls started early
(``run_tools_eagerly``) report ``ToolCallStarted`` before their reply's ``MessageFinished``. Each
call is reported once, across a pause and a resume.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal, TypeAlias

from .types import Decision, DecisionSource, EndReason, Reply, ToolCall
from .usage import RequestUsage

__all__ = [
    "ApprovalDecided",
    "ApprovalRequested",
    "EndReason",
    "HookDecided",
    "LoopFinished",
    "MessageFinished",
    "RunnerEvent",
    "SubRunEvent",
    "TextDelta",
    "ToolCallFinished",
    "ToolCallStarted",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the reply's text."""

    text: str
    index: int
    """The index of the content block the text belongs to."""


@dataclass(frozen=True, slots=True)
class MessageFinished:
    """A reply is complete (for a stream: its final message)."""

    message: Reply
    requests: tuple[RequestUsage, ...] = ()
    """The usage of each request of the run that got a reply, this one's last, across pauses and
    resumes: ``len(requests)`` is the reply's number in the run (``runner.usage`` counts the same).
    Empty from a driver that does not tell (a Temporal worker)."""


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call started running."""

    call: ToolCall
    early: bool = False
    """Whether it started while the reply was still streaming (``run_tools_eagerly``)."""
    input: object = None
    """The input the tool runs with when a person edited it on approval (``call.input`` is the
    model's); ``None`` when it runs with the model's."""


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call finished (a call cancelled before it finished reports nothing)."""

    call: ToolCall
    duration: float
    """Seconds from start to finish, as the driver's clock timed them; for a sub-agent's call, its
    sub-run's (since the call last started: a sub-run that paused for decisions is timed from
    when it went on)."""
    is_error: bool


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """A tool call waits for a person's decision (``runner.pending_approvals`` lists it)."""

    call: ToolCall


@dataclass(frozen=True, slots=True)
class ApprovalDecided:
    """A call that needed a decision got one (or was denied because deciding failed). Reported
    once per call, across a pause and a resume, whichever way it was decided."""

    call: ToolCall
    """The call as the model sent it (``call.input`` is the model's input)."""
    decision: Decision
    by: str | None = None
    """Who decided, as the decider said (``approve(..., by=...)``), if known."""
    input: object = None
    """The input the call runs with instead of the model's, when a person edited it."""
    reason: str | None = None
    """What the model reads for a denial."""
    via: DecisionSource | None = None
    """Where the decision came from: ``"runner"``, ``"store"`` (its API, the CLI, the inbox),
    ``"callback"`` (``approve=``), ``"gate"`` (a gate that failed) or ``"timeout"``."""


@dataclass(frozen=True, slots=True)
class HookDecided:
    """One of the run's hooks (``hooks=``), or a per-tool limit (``max_calls=``), decided on a
    tool call, or refused a request (see docs/hooks.md). Reported once per call and hook; a call the hooks decided
    before a resume is not reported again."""

    hook: Literal["before_tool_call", "after_tool_call", "max_calls", "before_request", "check_output"]
    """Which decided."""
    call: ToolCall | None
    """The call as the model sent it; ``None`` for ``before_request`` and ``check_output``."""
    decision: Literal["run", "rewritten", "denied", "limited", "replaced", "refused"]
    """``"run"`` as it is, ``"rewritten"`` (runs with ``input``), ``"denied"``, ``"limited"``
    (over its tool's ``max_calls``: not run), ``"replaced"`` (the model reads another result), or
    ``"refused"`` (``before_request``: the request was not sent; ``check_output``: the final
    answer was refused)."""
    input: object = None
    """The input the call runs with instead of the model's (``"rewritten"``)."""
    reason: str | None = None
    """What the model reads for a call that did not run."""


@dataclass(frozen=True, slots=True)
class LoopFinished:
    """The loop ended."""

    message: Reply | None
    """The final reply (``None`` if no request got a reply)."""
    reason: EndReason
    requests: tuple[RequestUsage, ...] = ()
    """The usage of each request of the whole run, as ``MessageFinished.requests``."""


@dataclass(frozen=True, slots=True)
class SubRunEvent:
    """An event of a sub-agent's run (``SubAgent``), as the parent's listener hears it."""

    path: tuple[str, ...]
    """Where it happened: the id of the parent's call that runs the sub-agent and the sub-agent's
    name, then the same pair for each level of nesting below (``("toolu_1", "researcher",
    "toolu_7", "searcher")``)."""
    event: RunnerEvent
    """The sub-run's event, as its own listener would hear it (never a ``SubRunEvent``)."""


RunnerEvent: TypeAlias = (
    TextDelta
    | MessageFinished
    | ToolCallStarted
    | ToolCallFinished
    | ApprovalRequested
    | ApprovalDecided
    | HookDecided
    | LoopFinished
    | SubRunEvent
)


Listener: TypeAlias = Callable[[RunnerEvent], None]

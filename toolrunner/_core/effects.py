"""What the run's orchestration (``_core.run``) asks a driver to do: the effects, plain values.

``RunCore``'s programs are generators: each ``yield`` hands the driver one effect, and the driver
sends back its outcome (or throws in the exception performing it raised). The programs do no I/O
and read no clock, so every driver (``ToolRunner``, the Temporal workflow) performs the same
sequence of effects for the same run, and a test can put a fault at any one of them.

The effects, with the outcome each expects:

============================  ================================================================
effect                        outcome
============================  ================================================================
``Save``                      ``None``: the state is saved (or there is no store)
``StateDerived``              ``None``: the state follows from ``before`` (no write needed)
``OpenTools``                 ``None``: the tools are open and their lists read again
``Send``                      the reply to ``request`` (the core checks it)
``Summarize``                 the reply to the summary request of ``state.messages[:point]``
``OpenStream``                the stream the loop body gets (the driver keeps reading it)
``ReadStream``                the reply, the rest of the stream read; ``None`` if the loop body
                              read the stream and got its error (the request is sent again)
``EndStream``                 the ids of calls started early whose results must be forgotten
``DropStream``                ``None``: the stream is closed, its early calls cancelled
``Gate``                      ``Gated``: which of ``calls`` wait for a decision, which are denied
``Ask``                       the ``approve=`` callback's verdict on ``call`` (or it raises)
``BeforeToolCall``            the ``before_tool_call`` hook's answer: ``None``, ``Deny``, ``RunWith``
``AfterToolCall``             the ``after_tool_call`` hook's answer: ``None``, or the content the
                              model reads instead
``BeforeRequest``             the ``before_request`` hook's answer: ``None`` (send), or why not
``CheckOutput``               the ``check_output`` hook's answer: ``None`` (accepted), or why not
``RunCalls``                  ``None``: each call ran through ``RunCore.call`` (or elsewhere)
``Execute``                   ``(block, seconds)``: the tool's result block, and how long it took;
                              or ``CancelledAfter``: the block, and a cancellation that came while
                              the driver waited for a tool it cannot stop (raised once it is kept)
``ReadDecisions``             the decisions taken elsewhere (through the run's store) since the
                              driver last saved, by tool_use id; empty if none (or no store)
``AwaitDecisions``            ``PAUSED``, or ``TIMED_OUT`` from a driver that waited too long
``LoopStopped``               ``None``: the loop stopped (its tools may close)
============================  ================================================================

A sub-agent's run (``_core.subruns``) yields its effects through its parent's call program, which
maps them: its saves are the parent's, and the effects whose tools the driver looks up (``Send``'s
``Request``, ``Gate``, ``Execute``) name the path of sub-agents (``agent_path``) whose tools they
are; ``RunCalls`` names the sub-run whose call programs run (``runs``).

A driver must hold one of the run's concurrency slots (``max_concurrency``) for the whole of a
call's program, from before the call is journaled as started: a call still queued for a slot has
not started, and must not be reported "interrupted" after a crash.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol, TypeAlias, TypeVar

from anthropic.types import ToolResultBlockParam

from .frozen import frozen_init
from .types import ToolCall

if TYPE_CHECKING:
    from .compaction import CompactionControl
    from .hook_types import RequestInfo, ToolCallInfo
    from .state import RunState

__all__ = [
    "LOST",
    "AfterToolCall",
    "Ask",
    "AwaitDecisions",
    "BeforeRequest",
    "BeforeToolCall",
    "CallRunner",
    "CancelledAfter",
    "CheckOutput",
    "Decisions",
    "DropStream",
    "Effect",
    "EndStream",
    "Execute",
    "Gate",
    "Gated",
    "LoopStopped",
    "Lost",
    "OpenStream",
    "OpenTools",
    "Program",
    "ReadDecisions",
    "ReadStream",
    "Request",
    "RunCalls",
    "Save",
    "Send",
    "StateDerived",
    "Summarize",
]

T = TypeVar("T")


@frozen_init
@dataclass(frozen=True, slots=True)
class Save:
    """Save the run's state, if the run has a store: the state ``state()`` gives when the store is
    ready to write (the current state, less the starts of other calls whose own save has not been
    written: ``RunCore.saveable``). ``starting``: the call this save journals as started, which
    begins once it is written. ``history_replaced``: the history was replaced since the last save
    that was written (the store writes all of it again, not only what was appended). ``shielded``:
    a save that is done even while the task is cancelled: a call's result (the tool ran; it cannot
    be had again), or why a step failed (then its own failure is the core's to ignore)."""

    state: Callable[[], RunState]
    starting: str | None = None
    history_replaced: bool = False
    shielded: bool = False


@frozen_init
@dataclass(frozen=True, slots=True)
class StateDerived:
    """The current state follows from ``before`` by a pure step (a finished turn's append, from a
    journal that holds every result): if the store holds ``before``, resuming from it reaches the
    current state again, so it counts as saved; the next save writes what it added."""

    before: RunState


@frozen_init
@dataclass(frozen=True, slots=True)
class OpenTools:
    """Tools are about to be needed (a request is built, calls are gated or run): open the tools that
    are not open, and read again the tool lists that changed."""


@frozen_init
@dataclass(frozen=True, slots=True)
class Request:
    """What a request carries, as data: the params, the history and the tools of ``state`` (the
    last request a limit forces is sent with ``tool_choice: none``), made a compaction request when
    ``compaction`` is given."""

    state: RunState
    compaction: Mapping[str, Any] | None = None
    agent_path: tuple[str, ...] = ()
    """The request of a sub-agent's run (``_core.subruns``): the names of the sub-agents from the
    run's tools down to it, whose tools the request offers; empty for the run's own."""


@frozen_init
@dataclass(frozen=True, slots=True)
class Send:
    """Send ``request`` and wait for the whole reply."""

    request: Request


@frozen_init
@dataclass(frozen=True, slots=True)
class Summarize:
    """Send the summary request of client-side compaction: ``state.messages[:point]`` summarized
    as ``control`` asks (``_core.compaction.summary_request``: no tools). As data, so that a driver that
    keeps the history elsewhere (a Temporal run's payload store) can build the request there;
    ``point`` counts from the first message ``state`` holds (see ``RunCore.elided``)."""

    state: RunState
    point: int
    control: CompactionControl


@frozen_init
@dataclass(frozen=True, slots=True)
class OpenStream:
    """Send ``request`` as a stream, and hand the stream over."""

    request: Request


@frozen_init
@dataclass(frozen=True, slots=True)
class ReadStream:
    """Read the rest of the open stream, and give its complete reply."""


@frozen_init
@dataclass(frozen=True, slots=True)
class EndStream:
    """The open stream's reply is in: close the stream; keep what the calls it started early give,
    or (not ``keep``) cancel them and say which to forget."""

    keep: bool


@frozen_init
@dataclass(frozen=True, slots=True)
class DropStream:
    """Close the open stream (if any) and cancel what it started early; its reply is not used."""


@frozen_init
@dataclass(frozen=True, slots=True)
class Gate:
    """Find which of ``calls`` must wait for a decision (their tools' ``requires_approval``); the
    calls of the sub-agent ``agent_path`` names, if not empty (as ``Request.agent_path``)."""

    calls: tuple[ToolCall, ...]
    agent_path: tuple[str, ...] = ()


@frozen_init
@dataclass(frozen=True, slots=True)
class Gated:
    """``Gate``'s outcome: the calls that wait, the calls denied (their gate raised: fail closed,
    with the reason the model reads), and the definitions of the waiting calls' tools by id."""

    waiting: Sequence[ToolCall] = ()
    denied: Sequence[tuple[ToolCall, str]] = ()
    tools: Mapping[str, Mapping[str, Any]] = field(default_factory=dict[str, Mapping[str, Any]])


@frozen_init
@dataclass(frozen=True, slots=True)
class Ask:
    """Ask the run's ``approve=`` callback about ``call``."""

    call: ToolCall


@frozen_init
@dataclass(frozen=True, slots=True)
class BeforeToolCall:
    """Ask the run's ``before_tool_call`` hook about a call that is about to start (``_core.hooks``)."""

    info: ToolCallInfo


@frozen_init
@dataclass(frozen=True, slots=True)
class AfterToolCall:
    """Ask the run's ``after_tool_call`` hook about a call's result ``block`` (``_core.hooks``)."""

    info: ToolCallInfo
    block: ToolResultBlockParam


@frozen_init
@dataclass(frozen=True, slots=True)
class BeforeRequest:
    """Ask the run's ``before_request`` hook whether the request ``info`` describes may be sent."""

    info: RequestInfo


@frozen_init
@dataclass(frozen=True, slots=True)
class CheckOutput:
    """Ask the run's ``check_output`` hook whether the model's final answer ``reply`` stands."""

    reply: Any


@frozen_init
@dataclass(frozen=True, slots=True)
class RunCalls:
    """Run ``calls`` at once, each through ``RunCore.call`` (a call that runs elsewhere already is
    waited for), each holding a concurrency slot (see the module docstring). ``runs``: the calls
    are a sub-run's (``_core.subruns``), run through its ``call`` and found finished in its
    ``state``; they hold no slot (the parent's call that runs the sub-agent holds one)."""

    calls: tuple[ToolCall, ...]
    runs: CallRunner | None = None


class CallRunner(Protocol):
    """What runs a sub-run's calls (``RunCalls.runs``): their programs, and the journal they finish in."""

    @property
    def state(self) -> RunState: ...

    def call(self, call: ToolCall, *, early: bool = False) -> Program[None]: ...


@frozen_init
@dataclass(frozen=True, slots=True)
class Execute:
    """Run the tool of ``call`` with ``input`` (the model's, or the one a person approved), the
    tools named in ``removed`` counting as unknown; the tool_result block, and the seconds it took.
    ``may_repeat``: the tool may run again for this call if running it was lost half way (it is
    idempotent, or the run has no such tool): a driver that retries may retry it; else it must not.
    A driver that lost the call's execution (a Temporal activity it gave up on) answers ``(LOST,
    seconds)``, and the core answers the call as interrupted."""

    call: ToolCall
    input: object
    removed: frozenset[str]
    may_repeat: bool = True
    agent_path: tuple[str, ...] = ()
    """The call of a sub-agent's run: the tool is that sub-agent's (as ``Request.agent_path``)."""


class Lost(enum.Enum):
    """What a driver gives for an ``Execute`` whose execution it lost (``LOST``)."""

    LOST = "lost"


LOST = Lost.LOST


@dataclass(frozen=True, slots=True)
class CancelledAfter:
    """What a driver gives for an ``Execute`` when the task was cancelled while it waited for a tool
    it cannot stop (a sync tool in its thread), and it waited on: the tool's ``block`` and
    ``seconds``, and the ``cancellation`` it held back. The core keeps the result as any (journaled,
    saved), then raises ``cancellation``: the call never runs again for a result thrown away."""

    block: ToolResultBlockParam
    seconds: float
    cancellation: BaseException


class Decisions(enum.Enum):
    """How ``AwaitDecisions`` ended."""

    PAUSED = "paused"
    """The loop pauses, to go on with the decisions taken meanwhile when it is iterated again: a
    ``ToolRunner`` pauses at once (its caller decides, then iterates); the Temporal workflow once
    no call waits (decided, or steered away) or the run is closed."""
    TIMED_OUT = "timed_out"
    """The driver waited, and the run's time for decisions passed: the core denies the calls still
    waiting (``RunCore.timed_out`` words the reason), and the turn goes on."""


@frozen_init
@dataclass(frozen=True, slots=True)
class ReadDecisions:
    """The turn paused for ``calls`` and goes on: read the decisions taken on them outside this
    driver since its last save (another process deciding through the store). A driver that holds
    the only copy of the run (no store, or a Temporal workflow) answers with none."""

    calls: tuple[ToolCall, ...]


@frozen_init
@dataclass(frozen=True, slots=True)
class AwaitDecisions:
    """``calls`` wait for decisions (the state says ``AWAITING``)."""

    calls: tuple[ToolCall, ...]


@frozen_init
@dataclass(frozen=True, slots=True)
class LoopStopped:
    """The loop stopped (ended, or paused): a runner that was not entered closes its tools."""


Effect: TypeAlias = (
    Save
    | StateDerived
    | OpenTools
    | Send
    | Summarize
    | OpenStream
    | ReadStream
    | EndStream
    | DropStream
    | Gate
    | Ask
    | BeforeToolCall
    | AfterToolCall
    | BeforeRequest
    | CheckOutput
    | RunCalls
    | Execute
    | ReadDecisions
    | AwaitDecisions
    | LoopStopped
)

Program: TypeAlias = Generator[Effect, Any, T]
"""A program of ``RunCore``: yields effects, gets their outcomes, returns a ``T``."""

Result: TypeAlias = ToolResultBlockParam

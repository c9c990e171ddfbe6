"""What a web client is told of a run, whatever the protocol: plain frozen data, numbered.

A run's session (``_log.py``) turns the SDK's stream and the runner's events (or a saved
history) into these, in order, and numbers each (``Entry.index``, on from where the agent's
numbers start, across the run's requests in this process) so that a client that reconnects can be
sent what it missed; a protocol module (``_agui.py``,
``_ui_stream.py``) only encodes them. The order of one request's events:

    (TextStart TextDelta* TextEnd | ToolCallStart ToolCallArgs* (ToolCallEnd | ToolCallCut))*
                                                                                per reply, as it streams
    ToolResult*                                                                 as the results are appended
    ApprovalWanted*  RunFinished                                                a pause: the calls that wait
    RunFinished | RunError                                                      the end of the request
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

__all__ = [
    "ApprovalWanted",
    "Entry",
    "RunError",
    "RunFinished",
    "TextDelta",
    "TextEnd",
    "TextStart",
    "ToolCallArgs",
    "ToolCallCut",
    "ToolCallEnd",
    "ToolCallStart",
    "ToolResult",
    "UIEvent",
    "is_last",
]


@dataclass(frozen=True, slots=True)
class TextStart:
    """A text block of a reply begins (``id``: the reply's id and the block's index)."""

    id: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of a text block."""

    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class TextEnd:
    """A text block is complete."""

    id: str


@dataclass(frozen=True, slots=True)
class ToolCallStart:
    """The model began a tool call (``id``: its ``tool_use`` id)."""

    id: str
    name: str
    message_id: str
    """The AG-UI message it belongs to: the reply's text block before it, else the reply."""


@dataclass(frozen=True, slots=True)
class ToolCallArgs:
    """A piece of the call's input, as JSON text: the pieces joined are the whole input."""

    id: str
    delta: str


@dataclass(frozen=True, slots=True)
class ToolCallEnd:
    """The call's input is complete."""

    id: str
    name: str
    input: object


@dataclass(frozen=True, slots=True)
class ToolCallCut:
    """The reply was cut off (``max_tokens``) while the model wrote the call's input: the input
    never completed, and the call does not run."""

    id: str
    name: str
    partial: str
    """The input's JSON text as far as it came."""


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the model reads for a call: the tool's result, or the reason it did not run."""

    id: str
    content: str
    is_error: bool = False
    denied: bool = False
    """A person denied the call (``content`` is the reason the model reads)."""


@dataclass(frozen=True, slots=True)
class ApprovalWanted:
    """A call waits for a person's decision; the request ends with ``RunFinished`` after these."""

    id: str
    name: str
    input: object


@dataclass(frozen=True, slots=True)
class RunFinished:
    """The request's part of the run is over: the loop ended, or paused for decisions."""

    reason: str
    """The runner's ``end_reason`` (``"awaiting_approval"``: it paused)."""
    text: str = ""
    """The final reply's text, if it has any."""
    stop_reason: str | None = None
    """The final reply's ``stop_reason`` (``"max_tokens"``: it was cut off; ``"refusal"``)."""


@dataclass(frozen=True, slots=True)
class RunError:
    """The run stopped on an error; the state is as the last save left it."""

    message: str
    code: str


UIEvent: TypeAlias = (
    TextStart
    | TextDelta
    | TextEnd
    | ToolCallStart
    | ToolCallArgs
    | ToolCallEnd
    | ToolCallCut
    | ToolResult
    | ApprovalWanted
    | RunFinished
    | RunError
)


@dataclass(frozen=True, slots=True)
class Entry:
    """One event of a run's log and its number there."""

    index: int
    event: UIEvent


def is_last(event: UIEvent) -> bool:
    """Whether ``event`` ends a request's stream."""
    return isinstance(event, RunFinished | RunError)

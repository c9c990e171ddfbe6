"""What a runner reports as it goes, for UIs and logs (``on_event=`` and ``runner.events()``).

Events are plain frozen data; the runner emits them in this order for each request:
``TextDelta``\\* (as text streams in, or once per text block without streaming),
``MessageFinished``, then for each tool call ``ToolCallStarted`` ... ``ToolCallFinished``, and
``LoopFinished`` once at the end.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

from ._types import EndReason, Reply, ToolCall

__all__ = [
    "EndReason",
    "LoopFinished",
    "MessageFinished",
    "RunnerEvent",
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


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """A tool call started running."""

    call: ToolCall
    early: bool = False
    """Whether it started while the reply was still streaming (``run_tools_eagerly``)."""


@dataclass(frozen=True, slots=True)
class ToolCallFinished:
    """A tool call finished (a call cancelled before it finished reports nothing)."""

    call: ToolCall
    duration: float
    """Seconds from start to finish."""
    is_error: bool


@dataclass(frozen=True, slots=True)
class LoopFinished:
    """The loop ended."""

    message: Reply | None
    """The final reply (``None`` if no request got a reply)."""
    reason: EndReason


RunnerEvent: TypeAlias = TextDelta | MessageFinished | ToolCallStarted | ToolCallFinished | LoopFinished

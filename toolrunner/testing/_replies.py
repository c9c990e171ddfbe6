"""Script entries: what the fake answers to one request, and the builders that make them.

An entry is plain data: a `ScriptedReply` (an assistant message, as wire JSON without the fields the fake
fills in), a `Fault` (an HTTP error), a `Disconnect` (the connection drops) or a `StreamCut` (a streamed
reply that stops after some events). The fake turns them into HTTP answers; nothing here does I/O.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, TypeAlias

__all__ = [
    "Disconnect",
    "Fault",
    "ScriptEntry",
    "ScriptedReply",
    "ScriptedToolCall",
    "StreamCut",
    "disconnect",
    "fault",
    "message_reply",
    "stream_cut",
    "text_reply",
    "tool_call",
    "tool_reply",
    "truncated_tool_reply",
]


@dataclass(frozen=True, slots=True)
class ScriptedToolCall:
    """One `tool_use` block to put in a reply; `id=None` lets the fake pick a unique id."""

    name: str
    input: Mapping[str, Any]
    id: str | None = None

    def to_block(self) -> dict[str, Any]:
        """The wire JSON of this call as a `tool_use` block (`id` may still be None)."""
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": dict(self.input)}


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One assistant message the fake answers with.

    The fake fills in `id`, `type`, `role`, `model` (echoing the request), `stop_sequence` and the
    usage counts not given here. Treat `content` as read-only: it is sent as it is.

    Attributes:
        content: The content blocks as wire JSON; a `tool_use` block with `"id": None` gets a unique id.
        stop_reason: Any stop reason string (unknown ones too), or None.
        usage: Usage counts that replace the fake's defaults.
        container: The `container` object of the message, if any.
        delay: Seconds between streamed events; a non-streamed reply waits as long as its stream would.
        stream_partial_json: When set, a streamed reply sends only this JSON text for its last block's
            input and leaves that block open, as a reply cut by `max_tokens` does.
    """

    content: tuple[dict[str, Any], ...]
    stop_reason: str | None
    usage: Mapping[str, Any] | None = None
    container: Mapping[str, Any] | None = None
    delay: float = 0.0
    stream_partial_json: str | None = None
    # True when some tool_use block waits for an id from the fake; computed once, so serving a reply
    # that needs no ids copies nothing.
    needs_ids: bool = field(init=False, repr=False, compare=False)

    def __repr__(self) -> str:
        blocks = ", ".join(_describe(block) for block in self.content)
        return f"<reply [{blocks}] stop_reason={self.stop_reason!r}>"

    def __post_init__(self) -> None:
        object.__setattr__(
            self,
            "needs_ids",
            any(block.get("type") == "tool_use" and block.get("id") is None for block in self.content),
        )


def _describe(block: dict[str, Any]) -> str:
    """A short summary of a content block, for error messages."""
    kind = block.get("type")
    if kind == "text":
        text = str(block.get("text", ""))
        return f"text {text[:40]!r}" + ("..." if len(text) > 40 else "")
    if kind == "tool_use":
        return f"tool_use {block.get('name')}({json.dumps(block.get('input'))[:40]})"
    return str(kind)


@dataclass(frozen=True, slots=True)
class Fault:
    """An HTTP error answer with the service's error body.

    Attributes:
        status: The HTTP status code.
        error_type: The service's error type, e.g. `"rate_limit_error"`.
        message: The error message.
        retry_after: Seconds for the `retry-after` header, or None for no header.
    """

    status: int
    error_type: str
    message: str
    retry_after: float | None = None


@dataclass(frozen=True, slots=True)
class Disconnect:
    """The connection drops before any answer: the transport raises `httpx2.RemoteProtocolError`."""


@dataclass(frozen=True, slots=True)
class StreamCut:
    """A reply whose stream stops after `after_events` events with `httpx2.ReadError`.

    A non-streamed request gets its answer body cut instead (the same read error).
    """

    reply: ScriptedReply
    after_events: int


ScriptEntry: TypeAlias = ScriptedReply | Fault | Disconnect | StreamCut
"""Anything the fake can answer one request with."""


def tool_call(name: str, input: Mapping[str, Any], *, id: str | None = None) -> ScriptedToolCall:
    """A tool call for `tool_reply`; without `id` the fake gives it the next `toolu_fake_NNNN` id that the
    conversation does not hold yet."""
    return ScriptedToolCall(name=name, input=input, id=id)


def text_reply(
    text: str,
    *,
    stop_reason: str | None = "end_turn",
    usage: Mapping[str, Any] | None = None,
    container: Mapping[str, Any] | None = None,
    delay: float = 0.0,
) -> ScriptedReply:
    """A reply holding one text block."""
    return ScriptedReply(
        ({"type": "text", "text": text},), stop_reason, usage=usage, container=container, delay=delay
    )


def tool_reply(
    *calls: ScriptedToolCall,
    text: str | None = None,
    stop_reason: str | None = "tool_use",
    usage: Mapping[str, Any] | None = None,
    container: Mapping[str, Any] | None = None,
    delay: float = 0.0,
) -> ScriptedReply:
    """A reply calling tools: an optional text block first, then one `tool_use` block per call."""
    if not calls:
        raise ValueError(
            "tool_reply() needs at least one tool_call(...); use text_reply() for a reply without tools."
        )
    blocks = [call.to_block() for call in calls]
    if text is not None:
        blocks.insert(0, {"type": "text", "text": text})
    return ScriptedReply(tuple(blocks), stop_reason, usage=usage, container=container, delay=delay)


def message_reply(
    content: list[dict[str, Any]],
    *,
    stop_reason: str | None,
    usage: Mapping[str, Any] | None = None,
    container: Mapping[str, Any] | None = None,
    delay: float = 0.0,
) -> ScriptedReply:
    """A reply with any content blocks (thinking, server tools, unknown types) and any stop reason."""
    return ScriptedReply(tuple(content), stop_reason, usage=usage, container=container, delay=delay)


def truncated_tool_reply(
    *calls: ScriptedToolCall,
    text: str | None = None,
    usage: Mapping[str, Any] | None = None,
    delay: float = 0.0,
) -> ScriptedReply:
    """A `max_tokens` reply whose last tool call was cut off while the model wrote its input.

    Non-streamed, the last call's input keeps only its first half of keys (at least one key is lost
    when it has any). Streamed, its `partial_json` stops in the middle of the first lost key, and the
    block is left open, as in a real stream cut by `max_tokens`; the SDK accumulates the same input.
    """
    reply = tool_reply(*calls, text=text, stop_reason="max_tokens", usage=usage, delay=delay)
    last = reply.content[-1]
    items = list(last["input"].items())
    kept = items[: len(items) // 2]
    parts = [f"{json.dumps(key)}: {json.dumps(value)}" for key, value in kept]
    partial = "{" + ", ".join(parts)
    if len(kept) < len(items):
        lost_key, lost_value = items[len(kept)]
        lost = json.dumps(lost_value)
        partial += (", " if kept else "") + f"{json.dumps(lost_key)}: "
        # A string cut in the middle is dropped by the SDK's partial JSON parser, like the whole key.
        if isinstance(lost_value, str):
            partial += lost[: max(1, len(lost) // 2)]
    content = (*reply.content[:-1], {**last, "input": dict(kept)})
    return ScriptedReply(content, "max_tokens", usage=usage, delay=delay, stream_partial_json=partial)


_ERROR_TYPES: dict[int, str] = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}

_ERROR_MESSAGES: dict[str, str] = {
    "invalid_request_error": "FakeMessagesAPI answered this request with a scripted invalid_request_error.",
    "authentication_error": "invalid x-api-key",
    "permission_error": "Your API key does not have permission to use the specified resource.",
    "not_found_error": "Not found.",
    "request_too_large": "Request exceeds the maximum allowed number of bytes.",
    "rate_limit_error": "This request would exceed the rate limit for your organization.",
    "api_error": "Internal server error",
    "overloaded_error": "Overloaded",
}


def fault(
    status: int = 500,
    *,
    retry_after: float | None = None,
    error_type: str | None = None,
    message: str | None = None,
) -> Fault:
    """An HTTP error answer, e.g. `fault(429, retry_after=1.0)`, `fault(529)`, `fault(400)`.

    The error type follows the status as the service does (`rate_limit_error` for 429, `api_error`
    for 500 and other 5xx, `overloaded_error` for 529, `invalid_request_error` for 400); pass
    `error_type` or `message` to choose them.
    """
    if status < 400 or status > 599:
        raise ValueError(f"fault() needs an error status from 400 to 599, not {status!r}.")
    kind = (
        error_type or _ERROR_TYPES.get(status) or ("api_error" if status >= 500 else "invalid_request_error")
    )
    return Fault(status, kind, message or _ERROR_MESSAGES.get(kind, "Scripted error."), retry_after)


def disconnect() -> Disconnect:
    """The connection drops before the answer, as a network failure does."""
    return Disconnect()


def stream_cut(reply: ScriptedReply | None = None, *, after_events: int) -> StreamCut:
    """`reply` (by default a short text reply) whose stream breaks after `after_events` SSE events."""
    if after_events < 0:
        raise ValueError(f"stream_cut() needs after_events >= 0, not {after_events!r}.")
    return StreamCut(reply or text_reply("This reply is cut short by the fake."), after_events)

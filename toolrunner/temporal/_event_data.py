"""The events the workflow forwards to the workers (``toolrunner.events``), and the calls the
queries and activities carry, as JSON values."""

from __future__ import annotations

from typing import Any

from anthropic.types import Message
from anthropic.types.beta import BetaMessage

from .._core.events import (
    ApprovalDecided,
    HookDecided,
    LoopFinished,
    RunnerEvent,
    SubRunEvent,
    ToolCallFinished,
    ToolCallStarted,
)
from .._core.types import ToolCall

__all__ = ["call_data", "event_data", "read_call", "read_event"]


def call_data(call: ToolCall) -> dict[str, Any]:
    """A call as JSON values: ``{"id", "name", "input"}``, ``"toolset_name"`` for a toolset member,
    and ``"path"`` for a call inside a sub-run (``ToolCall.path``)."""
    data: dict[str, Any] = {"id": call.id, "name": call.name, "input": call.input}
    if call.toolset_name is not None:
        data["toolset_name"] = call.toolset_name
    if call.path:
        data["path"] = list(call.path)
    return data


def read_call(data: dict[str, Any]) -> ToolCall:
    """Read ``call_data``'s values."""
    return ToolCall(
        id=data["id"],
        name=data["name"],
        input=data["input"],
        toolset_name=data.get("toolset_name"),
        path=tuple(data.get("path", ())),
    )


def event_data(event: RunnerEvent) -> dict[str, Any]:
    """An event the workflow forwards to the workers (``ToolCallStarted``, ``ToolCallFinished``,
    ``ApprovalDecided``, ``HookDecided``, ``LoopFinished``, and a ``SubRunEvent`` wrapping one) as
    JSON values; ``read_event`` reads it back."""
    if isinstance(event, SubRunEvent):
        return {"type": "SubRunEvent", "path": list(event.path), "event": event_data(event.event)}
    if isinstance(event, ToolCallStarted):
        return {"type": "ToolCallStarted", "call": call_data(event.call), "early": event.early}
    if isinstance(event, ToolCallFinished):
        return {
            "type": "ToolCallFinished",
            "call": call_data(event.call),
            "duration": event.duration,
            "is_error": event.is_error,
        }
    if isinstance(event, ApprovalDecided):
        return {
            "type": "ApprovalDecided",
            "call": call_data(event.call),
            "decision": event.decision,
            "by": event.by,
            "input": event.input,
            "reason": event.reason,
            "via": event.via,
        }
    if isinstance(event, HookDecided):
        return {
            "type": "HookDecided",
            "hook": event.hook,
            "call": None if event.call is None else call_data(event.call),
            "decision": event.decision,
            "input": event.input,
            "reason": event.reason,
        }
    if isinstance(event, LoopFinished):
        message = event.message
        return {
            "type": "LoopFinished",
            "message": None
            if message is None
            else message.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False),
            "beta": isinstance(message, BetaMessage),
            "reason": event.reason,
        }
    raise ValueError(f"the workflow does not forward {type(event).__name__!r} events")


def read_event(data: dict[str, Any]) -> RunnerEvent:
    """Read ``event_data``'s values."""
    kind = data["type"]
    if kind == "SubRunEvent":
        return SubRunEvent(tuple(data["path"]), read_event(data["event"]))
    if kind == "ToolCallStarted":
        return ToolCallStarted(call=read_call(data["call"]), early=data["early"])
    if kind == "ToolCallFinished":
        return ToolCallFinished(
            call=read_call(data["call"]), duration=data["duration"], is_error=data["is_error"]
        )
    if kind == "ApprovalDecided":
        return ApprovalDecided(
            call=read_call(data["call"]),
            decision=data["decision"],
            by=data.get("by"),
            input=data.get("input"),
            reason=data.get("reason"),
            via=data.get("via"),
        )
    if kind == "HookDecided":
        call = data["call"]
        return HookDecided(
            hook=data["hook"],
            call=None if call is None else read_call(call),
            decision=data["decision"],
            input=data.get("input"),
            reason=data.get("reason"),
        )
    message = data["message"]
    return LoopFinished(
        message=None
        if message is None
        else (BetaMessage if data["beta"] else Message).model_validate(message),
        reason=data["reason"],
    )

"""Scripts written as JSON, for `python -m toolrunner.testing serve --script FILE`; no I/O.

A script is a list of entries, answered in order:

    {"text": "Hello."}                                            a text reply
    {"tool_calls": [{"name": "get_weather", "input": {...}, "id": "toolu_1"}], "text": "Let me check."}
    {"tool_calls": [...], "truncated": true}                      a reply cut by max_tokens mid-input
    {"content": [...blocks...], "stop_reason": "end_turn"}        any content, any stop reason
    {"fault": {"status": 429, "retry_after": 1}}                  an HTTP error
    {"disconnect": true}                                          a dropped connection
    {"stream_cut": {"after_events": 3, "reply": {"text": "..."}}} a stream that breaks off
    {"automatic": true}                                           last: answer automatically from here on

Replies take optional "usage", "delay" and (text and content replies) "stop_reason"; content
replies also take "container".
"""

from __future__ import annotations

from typing import Any, cast

from ._replies import (
    ScriptedReply,
    ScriptEntry,
    disconnect,
    fault,
    message_reply,
    stream_cut,
    text_reply,
    tool_call,
    tool_reply,
    truncated_tool_reply,
)

__all__ = ["load_script"]


def load_script(data: Any) -> tuple[list[ScriptEntry], bool]:
    """The entries of a JSON script, and whether the fake answers automatically after them.

    Raises:
        ValueError: Naming the entry that is not one of the forms above.
    """
    if isinstance(data, dict) and cast(dict[str, Any], data).get("automatic") is True:
        return [], True
    if not isinstance(data, list):
        kind = type(cast(object, data)).__name__
        raise ValueError(f"A script must be a JSON list of entries (or {{'automatic': true}}), not {kind}.")
    entries: list[ScriptEntry] = []
    items = cast(list[Any], data)
    for number, item in enumerate(items):
        if not isinstance(item, dict):
            raise ValueError(f"Script entry #{number + 1} must be a JSON object, not {item!r}.")
        item = cast(dict[str, Any], item)
        if item.get("automatic") is True:
            if number != len(items) - 1:
                raise ValueError(f"Script entry #{number + 1} {{'automatic': true}} must be the last entry.")
            return entries, True
        try:
            entries.append(_entry(item))
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"Script entry #{number + 1} {item!r} is not a valid entry: {error}.") from error
    return entries, False


def _entry(item: dict[str, Any]) -> ScriptEntry:
    if "fault" in item:
        spec = cast(dict[str, Any], item["fault"])
        return fault(
            int(spec.get("status", 500)),
            retry_after=spec.get("retry_after"),
            error_type=spec.get("error_type"),
            message=spec.get("message"),
        )
    if item.get("disconnect") is True:
        return disconnect()
    if "stream_cut" in item:
        spec = cast(dict[str, Any], item["stream_cut"])
        reply = _reply(cast(dict[str, Any], spec["reply"])) if "reply" in spec else None
        return stream_cut(reply, after_events=int(spec["after_events"]))
    return _reply(item)


def _reply(item: dict[str, Any]) -> ScriptedReply:
    usage = item.get("usage")
    delay = float(item.get("delay", 0.0))
    if "tool_calls" in item:
        calls = [
            tool_call(str(call["name"]), call.get("input", {}), id=call.get("id"))
            for call in cast(list[dict[str, Any]], item["tool_calls"])
        ]
        if item.get("truncated") is True:
            return truncated_tool_reply(*calls, text=item.get("text"), usage=usage, delay=delay)
        return tool_reply(*calls, text=item.get("text"), usage=usage, delay=delay)
    if "content" in item:
        return message_reply(
            item["content"],
            stop_reason=item.get("stop_reason"),
            usage=usage,
            container=item.get("container"),
            delay=delay,
        )
    if "text" in item:
        return text_reply(
            str(item["text"]), stop_reason=item.get("stop_reason", "end_turn"), usage=usage, delay=delay
        )
    raise ValueError(
        'expected one of "text", "tool_calls", "content", "fault", "disconnect", "stream_cut", "automatic"'
    )

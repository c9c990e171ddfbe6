"""A message as the service's server-sent events, in the service's order; pure, no I/O.

message_start (empty content) -> per block: content_block_start, deltas, content_block_stop
(a `ping` follows the first content_block_start) -> message_delta (stop_reason, usage) -> message_stop
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["count_events", "encode_event", "message_events"]

_PIECES = 3  # how many deltas a text, thinking or input JSON is split into (fewer if it is short)
# Blocks whose input the SDK accumulates from input_json_delta events; other blocks arrive whole.
_INPUT_BLOCKS = frozenset({"tool_use", "server_tool_use"})

_PING = b'event: ping\ndata: {"type": "ping"}\n\n'
_dumps = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False).encode


def encode_event(name: str, data: dict[str, Any]) -> bytes:
    """One SSE event as bytes."""
    return f"event: {name}\ndata: {_dumps(data)}\n\n".encode()


def message_events(message: dict[str, Any], *, partial_json: str | None = None) -> list[bytes]:
    """The SSE events that stream `message` (a complete Message as wire JSON).

    Args:
        message: The message; it is not modified.
        partial_json: When given, the last block's input is streamed as this (unfinished) JSON text
            and the block gets no content_block_stop, as when the service stops at `max_tokens`.
    """
    usage: dict[str, Any] = message["usage"]
    start: dict[str, Any] = {**message, "content": [], "stop_reason": None, "stop_sequence": None}
    start["usage"] = {**usage, "output_tokens": min(1, usage.get("output_tokens", 0))}
    events = [encode_event("message_start", {"type": "message_start", "message": start})]
    blocks: list[dict[str, Any]] = message["content"]
    last = len(blocks) - 1
    for index, block in enumerate(blocks):
        kind = block.get("type")
        truncated = partial_json is not None and index == last
        start_at = len(events)
        if kind == "text":
            events.append(_block_start(index, {**block, "text": ""}))
            events.extend(
                _delta(index, {"type": "text_delta", "text": piece}) for piece in _split(block["text"])
            )
        elif kind == "thinking":
            events.append(_block_start(index, {**block, "thinking": "", "signature": ""}))
            events.extend(
                _delta(index, {"type": "thinking_delta", "thinking": piece})
                for piece in _split(block["thinking"])
            )
            events.append(_delta(index, {"type": "signature_delta", "signature": block.get("signature", "")}))
        elif kind in _INPUT_BLOCKS:
            events.append(_block_start(index, {**block, "input": {}}))
            text = partial_json if truncated and partial_json is not None else _dumps(block.get("input", {}))
            events.append(_delta(index, {"type": "input_json_delta", "partial_json": ""}))
            events.extend(
                _delta(index, {"type": "input_json_delta", "partial_json": piece}) for piece in _split(text)
            )
        else:
            events.append(_block_start(index, block))
        if index == 0:
            # The service sends a ping right after the first content_block_start.
            events.insert(start_at + 1, _PING)
        if not truncated:
            events.append(encode_event("content_block_stop", {"type": "content_block_stop", "index": index}))
    delta: dict[str, Any] = {"stop_reason": message["stop_reason"], "stop_sequence": message["stop_sequence"]}
    if message.get("container") is not None:
        delta["container"] = message["container"]
    events.append(encode_event("message_delta", {"type": "message_delta", "delta": delta, "usage": usage}))
    events.append(encode_event("message_stop", {"type": "message_stop"}))
    return events


def count_events(message: dict[str, Any]) -> int:
    """How many events `message_events(message)` makes, without making them."""
    count = 3  # message_start, message_delta, message_stop
    for index, block in enumerate(message["content"]):
        kind = block.get("type")
        count += 2 + (index == 0)
        if kind == "text":
            count += len(_split(block["text"]))
        elif kind == "thinking":
            count += len(_split(block["thinking"])) + 1
        elif kind in _INPUT_BLOCKS:
            count += 1 + len(_split(_dumps(block.get("input", {}))))
    return count


def _block_start(index: int, block: dict[str, Any]) -> bytes:
    return encode_event(
        "content_block_start", {"type": "content_block_start", "index": index, "content_block": block}
    )


def _delta(index: int, delta: dict[str, Any]) -> bytes:
    return encode_event(
        "content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta}
    )


def _split(text: str) -> list[str]:
    """`text` in up to `_PIECES` pieces (one piece, possibly empty, if it is very short)."""
    if len(text) < _PIECES:
        return [text]
    size = -(-len(text) // _PIECES)
    return [text[start : start + size] for start in range(0, len(text), size)]

"""Content, in the shapes of the GenAI conventions' JSON schemas (gen-ai-input-messages.json, ...),
for the spans' ``gen_ai.input.messages``, ``gen_ai.output.messages``, ``gen_ai.system_instructions``
and ``gen_ai.tool.call.result`` (``otel``, ``subrun_spans``)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import cast

from .._core.messages import field
from .attributes import json_attribute as _json

__all__ = ["chat_messages", "output_messages", "parts", "result_content"]


def chat_messages(messages: Iterable[object]) -> list[dict[str, object]]:
    """History messages (params or SDK messages) as the conventions' ``ChatMessage`` objects."""
    return [
        {"role": field(message, "role"), "parts": parts(field(message, "content"))} for message in messages
    ]


def output_messages(reply: object) -> list[dict[str, object]]:
    """A reply as the conventions' ``gen_ai.output.messages``."""
    return [
        {
            "role": "assistant",
            "parts": parts(field(reply, "content")),
            "finish_reason": field(reply, "stop_reason"),
        }
    ]


def parts(content: object) -> list[dict[str, object]]:
    """Content (a string or blocks) as message parts: text, reasoning, tool calls and their
    responses keep their content; any other block keeps only its type (no images or files)."""
    if isinstance(content, str):
        return [{"type": "text", "content": content}]
    if not isinstance(content, Sequence):
        return []
    parts: list[dict[str, object]] = []
    for block in cast("Sequence[object]", content):
        kind = field(block, "type")
        if kind == "text":
            parts.append({"type": "text", "content": field(block, "text")})
        elif kind == "thinking":
            parts.append({"type": "reasoning", "content": field(block, "thinking")})
        elif kind == "tool_use":
            parts.append(
                {
                    "type": "tool_call",
                    "id": field(block, "id"),
                    "name": field(block, "name"),
                    "arguments": field(block, "input"),
                }
            )
        elif kind == "tool_result":
            parts.append(
                {
                    "type": "tool_call_response",
                    "id": field(block, "tool_use_id"),
                    "response": _result_parts(field(block, "content")),
                }
            )
        else:
            parts.append({"type": str(kind)})
    return parts


def _result_parts(content: object) -> object:
    return content if isinstance(content, str) or content is None else parts(content)


def result_content(content: object) -> str:
    """A tool_result block's content for ``gen_ai.tool.call.result``: its text as it is, or its
    blocks as JSON (text kept, other blocks as their type only)."""
    return content if isinstance(content, str) else _json(_result_parts(content))

"""Histories in other shapes: Anthropic messages as an OpenAI-style chat history (``to_openai``),
tool ids the service accepts, and the text and thinking of a message. The other direction,
``from_openai``, is ``_core.history_import``.

Pure functions of the messages; nothing here does I/O.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, cast

from .errors import HistoryError
from .messages import TOOL_ID_PATTERN, field

__all__ = [
    "TOOL_ID_PATTERN",
    "sanitize_tool_id",
    "text_of",
    "thinking_text",
    "to_openai",
]


_INVALID_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")
_DIGEST_CHARS = 12


def sanitize_tool_id(tool_id: str) -> str:
    """A tool call id the service accepts (``^[a-zA-Z0-9_-]{1,128}$``), the same for the same input.

    A valid id is returned unchanged. Otherwise other characters become ``_``, the id is cut to
    fit, and ``_`` plus a hash of the original id is appended, so that two ids that differ only in
    the replaced characters stay apart. The result is valid, so sanitising twice changes nothing.
    """
    if TOOL_ID_PATTERN.fullmatch(tool_id):
        return tool_id
    digest = hashlib.sha256(tool_id.encode("utf-8", "surrogatepass")).hexdigest()[:_DIGEST_CHARS]
    kept = _INVALID_ID_CHARS.sub("_", tool_id)[: 128 - _DIGEST_CHARS - 1]
    return f"{kept}_{digest}"


def to_openai(
    messages: Sequence[object], *, system: str | Iterable[Mapping[str, Any]] | None = None
) -> list[dict[str, Any]]:
    """Convert Anthropic messages (params, or SDK ``Message`` objects) into an OpenAI-style history.

    ``system`` (text, or a list of text blocks) becomes a first ``system`` message. Tool calls become
    ``tool_calls`` with JSON ``arguments``; each ``tool_result`` becomes a ``tool`` message right
    after the assistant message, before the rest of its user message. Images and PDF documents
    become ``image_url`` and ``file`` parts. OpenAI has no place for some things, which are left out:
    thinking blocks, server tool blocks, and the ``is_error`` flag of a result; images in a tool
    result become a note, since a ``tool`` message holds text only.

    Raises:
        HistoryError: A message has a role or (in a user message) a block that cannot be converted.
    """
    out: list[dict[str, Any]] = []
    if system is not None:
        text = (
            system
            if isinstance(system, str)
            else "\n\n".join(str(field(block, "text") or "") for block in system)
        )
        if text:
            out.append({"role": "system", "content": text})
    for index, message in enumerate(messages):
        role = field(message, "role")
        content = field(message, "content")
        if role not in ("user", "assistant"):
            raise HistoryError(
                f"messages[{index}] has role {role!r}; Anthropic messages are 'user' or 'assistant'."
            )
        if isinstance(content, str):
            out.append({"role": role, "content": content})
        elif role == "user":
            out.extend(_user_to_openai(cast("Sequence[object]", content or ()), index))
        else:
            assistant = _assistant_to_openai(cast("Sequence[object]", content or ()))
            if assistant is not None:
                out.append(assistant)
    return out


def _user_to_openai(blocks: Sequence[object], index: int) -> list[dict[str, Any]]:
    tool_messages: list[dict[str, Any]] = []
    parts: list[dict[str, Any]] = []
    for position, block in enumerate(blocks):
        kind = field(block, "type")
        if kind == "tool_result":
            tool_messages.append(
                {
                    "role": "tool",
                    "tool_call_id": field(block, "tool_use_id"),
                    "content": _result_text(field(block, "content")),
                }
            )
        else:
            parts.append(_openai_part(block, f"messages[{index}].content[{position}]"))
    if not parts:
        return tool_messages
    if len(parts) == 1 and parts[0]["type"] == "text":
        return [*tool_messages, {"role": "user", "content": parts[0]["text"]}]
    return [*tool_messages, {"role": "user", "content": parts}]


def _openai_part(block: object, where: str) -> dict[str, Any]:
    kind = field(block, "type")
    source = field(block, "source")
    source_type = field(source, "type")
    if kind == "text":
        return {"type": "text", "text": field(block, "text")}
    if kind == "image" and source_type == "base64":
        url = f"data:{field(source, 'media_type')};base64,{field(source, 'data')}"
        return {"type": "image_url", "image_url": {"url": url}}
    if kind == "image" and source_type == "url":
        return {"type": "image_url", "image_url": {"url": field(source, "url")}}
    if kind == "document" and source_type == "base64":
        file: dict[str, Any] = {
            "file_data": f"data:{field(source, 'media_type')};base64,{field(source, 'data')}"
        }
        title = field(block, "title")
        if title:
            file["filename"] = title
        return {"type": "file", "file": file}
    if kind == "document" and source_type == "text":
        return {"type": "text", "text": field(source, "data")}
    detail = kind if source_type is None else f"{kind} ({source_type} source)"
    raise HistoryError(
        f"{where} is a {detail!s} block, which has no OpenAI equivalent; remove or replace it."
    )


def _result_text(content: object) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    texts: list[str] = []
    for block in cast("Sequence[object]", content):
        kind = field(block, "type")
        if kind == "text":
            texts.append(str(field(block, "text")))
        elif kind == "document" and field(field(block, "source"), "type") == "text":
            texts.append(str(field(field(block, "source"), "data")))
        else:
            texts.append(f"[{kind} omitted: OpenAI tool messages hold text only]")
    return "\n".join(texts)


def _assistant_to_openai(blocks: Sequence[object]) -> dict[str, Any] | None:
    texts: list[str] = []
    tool_calls: list[dict[str, Any]] = []
    for block in blocks:
        kind = field(block, "type")
        if kind == "text":
            texts.append(str(field(block, "text")))
        elif kind == "tool_use":
            tool_calls.append(
                {
                    "id": field(block, "id"),
                    "type": "function",
                    "function": {
                        "name": field(block, "name"),
                        "arguments": json.dumps(field(block, "input"), ensure_ascii=False),
                    },
                }
            )
    if not texts and not tool_calls:
        return None
    message: dict[str, Any] = {"role": "assistant", "content": "".join(texts) if texts else None}
    if tool_calls:
        message["tool_calls"] = tool_calls
    return message


def text_of(message: object) -> str:
    """The text of a message (an SDK ``Message``, or a param dict), without its thinking.

    Text blocks are joined as they are: the service splits one answer into several blocks (around
    citations, for example), so no separator is added.
    """
    content = field(message, "content")
    if isinstance(content, str):
        return content
    return "".join(str(field(block, "text")) for block in content or () if field(block, "type") == "text")


def thinking_text(message: object) -> str:
    """The thinking of a message: the text of its ``thinking`` blocks, separated by blank lines.

    ``redacted_thinking`` blocks hold no readable text and are skipped. Keep thinking blocks in the
    history as they are; this only reads them.
    """
    content = field(message, "content")
    if isinstance(content, str) or not content:
        return ""
    return "\n\n".join(
        str(field(block, "thinking")) for block in content if field(block, "type") == "thinking"
    )

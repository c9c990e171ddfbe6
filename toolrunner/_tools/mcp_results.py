"""What an MCP tool call returns, as a tool's value: pure functions, no I/O.

A ``CallToolResult`` becomes what the runner's result adapter takes from any tool:

- each content block becomes a content block the Messages API takes: text as text; an image as
  an image block (PNG, JPEG, GIF and WebP; a short note for another type); an embedded resource
  as a document (text, and PDF) or an image, titled with its URI; a resource link as JSON text;
  audio, which the API cannot take, as a short note;
- the structured content is kept: as JSON text after the content, unless a text block of the
  content already holds that same JSON (the spec asks servers to send it so); as the whole result
  when there is no content;
- a single text block is returned as a plain string, so that the adapter's text limit applies;
  no content at all is an empty success;
- ``isError`` raises a ``ToolError`` with the same content, which the runner sends as an
  ``is_error`` tool_result.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any

from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock as MCPContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from .._core.errors import ToolError
from .._core.result_blocks import IMAGE_MEDIA_TYPES
from .._core.results import ContentBlock

__all__ = ["content_block", "result_value"]

_PDF = "application/pdf"


def result_value(result: CallToolResult, name: str) -> str | list[ContentBlock] | None:
    """The value an MCP tool call returned, for the result adapter; ``name`` is the tool's name.

    Raises:
        ToolError: The server flagged the result ``isError``; its content is the result's.
    """
    blocks = [content_block(item) for item in result.content]
    structured: object = result.structured_content
    if structured is not None and not any(_holds_json(block, structured) for block in blocks):
        blocks.append({"type": "text", "text": json.dumps(structured, ensure_ascii=False)})
    value: str | list[ContentBlock] | None
    if not blocks:
        value = None
    elif len(blocks) == 1 and blocks[0]["type"] == "text":
        value = str(blocks[0]["text"])
    else:
        value = blocks
    if result.is_error:
        raise ToolError(
            value if value is not None else f"Tool {name!r} failed, and its server gave no reason."
        )
    return value


def content_block(item: MCPContentBlock) -> ContentBlock:
    """One MCP content block as a content block of a tool_result."""
    if isinstance(item, TextContent):
        return _text(item.text)
    if isinstance(item, ImageContent):
        return _image(item.data, item.mime_type, "an image")
    if isinstance(item, EmbeddedResource):
        return _resource(item.resource)
    if isinstance(item, ResourceLink):
        link = item.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"meta", "annotations", "icons"}
        )
        return _text(json.dumps(link, ensure_ascii=False))
    if isinstance(item, AudioContent):
        return _text(f"[The tool returned audio ({item.mime_type}), which cannot be shown here.]")
    kind: object = getattr(item, "type", type(item).__name__)
    return _text(f"[The tool returned a {kind!s} block, which cannot be shown here.]")


def _resource(resource: TextResourceContents | BlobResourceContents) -> ContentBlock:
    """An embedded resource: text and PDFs as documents titled with the URI, images as images."""
    uri, media_type = str(resource.uri), resource.mime_type
    if isinstance(resource, TextResourceContents):
        return _text_document(resource.text, uri)
    if media_type in IMAGE_MEDIA_TYPES:
        return _image(resource.blob, media_type, f"the image {uri!r}")
    if media_type == _PDF:
        return {
            "type": "document",
            "source": {"type": "base64", "media_type": _PDF, "data": resource.blob},
            "title": uri,
        }
    if media_type is None or media_type.startswith("text/"):
        try:
            return _text_document(base64.b64decode(resource.blob, validate=True).decode("utf-8"), uri)
        except (binascii.Error, UnicodeDecodeError):
            pass
    what = f"of type {media_type}" if media_type else "that is not UTF-8 text"
    return _text(f"[The tool returned the resource {uri!r} {what}, which cannot be shown here.]")


def _image(data: str, media_type: str, what: str) -> ContentBlock:
    if media_type not in IMAGE_MEDIA_TYPES:
        return _text(f"[The tool returned {what} of type {media_type}, which cannot be shown here.]")
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _text_document(text: str, title: str) -> ContentBlock:
    return {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": text},
        "title": title,
    }


def _text(text: str) -> ContentBlock:
    return {"type": "text", "text": text}


def _holds_json(block: ContentBlock, value: object) -> bool:
    """Whether ``block`` is text whose JSON is ``value`` (the copy the spec asks servers to send)."""
    if block["type"] != "text":
        return False
    try:
        decoded: Any = json.loads(str(block["text"]))
    except ValueError:
        return False
    return bool(decoded == value)

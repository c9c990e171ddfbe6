"""The content blocks a tool_result holds: their types, whether a dict is one the service takes,
and the media types of the files that become image and document blocks. Pure, no I/O."""

from __future__ import annotations

import codecs
import functools
from collections.abc import Mapping
from typing import Annotated, Any, cast

import pydantic
from anthropic.types.beta.beta_tool_result_block_param import Content as BetaToolResultContent

__all__ = [
    "CONTENT_BLOCK_TYPES",
    "IMAGE_MEDIA_TYPES",
    "PDF",
    "SNIFF_BYTES",
    "block_schema",
    "has_block_type",
    "is_empty_text",
    "is_valid_block",
    "looks_binary",
    "sniff",
]

# The block types a tool_result may hold (the SDK's ``ToolResultBlockParam`` content union, and its
# beta twin). ``tests/tools/test_results.py`` checks this against the installed SDK.
CONTENT_BLOCK_TYPES: frozenset[str] = frozenset(
    {"text", "image", "document", "search_result", "tool_reference", "browser_state"}
)


# Media types the service accepts for image blocks, by their magic numbers.
IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
PDF = "application/pdf"
SNIFF_BYTES = 8192


def sniff(head: bytes) -> str | None:
    """The media type of a file from its first bytes, for the formats that matter here."""
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return "image/png"
    if head.startswith(b"\xff\xd8\xff"):
        return "image/jpeg"
    if head.startswith((b"GIF87a", b"GIF89a")):
        return "image/gif"
    if head[:4] == b"RIFF" and head[8:12] == b"WEBP":
        return "image/webp"
    if head.startswith(b"%PDF-"):
        return PDF
    # Images the service does not accept; recognised so the fallback can say what they are.
    if head[:2] == b"BM" and head[6:10] == b"\0\0\0\0":
        return "image/bmp"
    if head.startswith((b"II*\x00", b"MM\x00*")):
        return "image/tiff"
    if head[4:8] == b"ftyp":
        brand = head[8:12]
        if brand in (b"avif", b"avis"):
            return "image/avif"
        if brand in (b"heic", b"heix", b"hevc", b"heim", b"heis", b"mif1", b"msf1"):
            return "image/heic"
    if head.startswith(b"\x00\x00\x01\x00"):
        return "image/x-icon"
    if head.startswith((b"\xff\x0a", b"\x00\x00\x00\x0cJXL \r\n\x87\n")):
        return "image/jxl"
    if head.startswith(b"8BPS"):
        return "image/vnd.adobe.photoshop"
    return None


def looks_binary(head: bytes) -> bool:
    """Whether a file's first bytes are not UTF-8 text."""
    if b"\x00" in head:
        return True
    try:
        # Not final: the prefix may end inside a multi-byte character.
        codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
    except UnicodeDecodeError:
        return True
    return False


def has_block_type(value: object) -> bool:
    """Whether ``value`` is a dict whose ``type`` is one a tool_result's content may hold."""
    if not isinstance(value, Mapping):
        return False
    kind = cast("Mapping[str, object]", value).get("type")
    return isinstance(kind, str) and kind in CONTENT_BLOCK_TYPES


def is_empty_text(value: object) -> bool:
    """An empty text block, which the service refuses: the adapter takes it as an empty string."""
    if not isinstance(value, Mapping):
        return False
    block = cast("Mapping[str, object]", value)
    return block.get("type") == "text" and block.get("text") == ""


def is_valid_block(block: Mapping[str, object]) -> bool:
    """Whether the service takes ``block`` as a block of a tool_result's content: its type's SDK
    param type accepts it (``block_schema``), and it is no empty text block."""
    if block.get("type") == "text" and block.get("text") == "":
        return False
    try:
        block_schema().validate_python(block)
    except pydantic.ValidationError:
        return False
    return True


@functools.cache
def block_schema() -> pydantic.TypeAdapter[Any]:
    """The SDK's own types of a tool_result's content blocks (the beta union: a superset), checked
    as the service checks them: strictly, with no field the type lacks. Built on first use."""
    return pydantic.TypeAdapter(
        Annotated[BetaToolResultContent, pydantic.Field(discriminator="type")],
        config=pydantic.ConfigDict(strict=True, extra="forbid"),
    )

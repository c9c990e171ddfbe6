"""What tools return, turned into ``tool_result`` content.

The runner hands every value a tool returns to one :class:`ToolResultAdapter`; the adapter decides
what the model reads. :func:`tool_result_block` wraps that content in a ``tool_result`` block.
:class:`Image`, :class:`File` and :class:`Link` are small wrappers a tool may return.
"""

from __future__ import annotations

import base64
import dataclasses
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import anthropic
import pydantic

from .._core.errors import ResultTooLargeError, ToolError
from .._core.result_blocks import (
    CONTENT_BLOCK_TYPES,
    IMAGE_MEDIA_TYPES,
    PDF,
    SNIFF_BYTES,
    has_block_type,
    is_empty_text,
    is_valid_block,
    looks_binary,
    sniff,
)
from .._core.results import ContentBlock, ToolResultContent, json_text, tool_result_block
from .._core.unicode import sendable, sendable_text

__all__ = [
    "CONTENT_BLOCK_TYPES",
    "DEFAULT_ADAPTER",
    "ContentBlock",
    "File",
    "Image",
    "Link",
    "ResultTooLargeError",
    "ToolResultAdapter",
    "ToolResultContent",
    "tool_result_block",
]

_ELLIPSIS = "…"


@dataclasses.dataclass(frozen=True, slots=True)
class Image:
    """An image a tool returns: raw bytes, or the path of a file to read.

    The image type is read from the bytes (PNG, JPEG, GIF and WebP can be sent); ``name`` only
    labels the image in fallbacks and logs.
    """

    data: bytes | Path
    name: str | None = dataclasses.field(default=None, kw_only=True)


@dataclasses.dataclass(frozen=True, slots=True)
class File:
    """A file a tool returns: raw bytes, or the path of a file to read.

    Images become image blocks, PDFs document blocks, UTF-8 text a text document; other files
    become a short note with the name and size. ``name`` becomes the document's title.
    """

    data: bytes | Path
    name: str | None = dataclasses.field(default=None, kw_only=True)


@dataclasses.dataclass(frozen=True, slots=True)
class Link:
    """A named link; the model reads it as JSON text ``{"name": ..., "url": ...}``."""

    name: str
    url: str


def _label(name: str | None, what: str) -> str:
    return f"{what} {name!r}" if name else f"an unnamed {what}"


class ToolResultAdapter:
    """Turns what a tool returns into tool_result content. Subclass or replace it; the runner takes one.

    Mapping (:meth:`to_content`):

    * ``str`` is sent as is; ``None`` is an empty success (a tool_result without content).
    * dicts, lists and tuples, pydantic models and dataclasses are sent as JSON text; so is a
      :class:`Link`. NaN and infinities, which JSON has no numbers for, become the strings
      ``"NaN"``, ``"Infinity"`` and ``"-Infinity"``.
    * ``bytes``, a ``pathlib.Path``, :class:`Image` and :class:`File` are sniffed from their bytes:
      PNG, JPEG, GIF and WebP become base64 image blocks, PDFs a PDF document block, UTF-8 text a
      text document; other images and files become a short text note naming them.
    * A content block (a dict whose ``"type"`` is a tool_result block type such as ``"text"`` or
      ``"image"`` and that the SDK's type for that block accepts, checked strictly and with no
      field the type lacks; or an SDK model of such a block) is sent as a one-block list, unchanged
      (only copied to repair lone surrogates, below). A dict that only looks like one (the Notion
      API's ``{"type": "text", "text": {...}}``) is data: JSON text. An empty text block is an
      empty string.
    * A list or tuple holding any block, bytes, path, :class:`Image` or :class:`File` becomes
      blocks in order: strings become text blocks, ``None`` is skipped, and other items become
      text blocks of JSON.
    * Lone surrogates, which UTF-8 cannot encode, become U+FFFD in all of the above.

    Contract with the runner: call :meth:`needs_thread` first and, when it is true, call
    :meth:`to_content` in a worker thread (it reads files). :meth:`to_content` raises
    :class:`ResultTooLargeError` when a result exceeds a limit: answer the call with an
    ``is_error`` tool_result whose content is ``str(error)``. It raises ``TypeError`` for a value it
    cannot send and lets ``OSError`` from reading a path propagate; treat both like an exception
    raised by the tool.

    Args:
        max_image_bytes: Largest image, in raw bytes. The service takes images of up to 5 MB
            (5,242,880 bytes) of base64 text, which is 3,932,160 raw bytes.
        max_document_bytes: Largest PDF, in raw bytes. The service takes requests of up to 32 MB,
            base64 adds a third, and the rest of the history needs room: 20 MiB by default.
        max_text_chars: Longest text result (a string, JSON text or a text document), in
            characters: 100,000 by default (about 25,000 tokens).
        plain_text_chars: Longest rendering :meth:`to_plain_text` gives before it truncates.

    Each limit can be ``None`` for no limit.
    """

    def __init__(
        self,
        *,
        max_image_bytes: int | None = 3_932_160,
        max_document_bytes: int | None = 20 * 1024 * 1024,
        max_text_chars: int | None = 100_000,
        plain_text_chars: int | None = 2_000,
    ) -> None:
        self.max_image_bytes = max_image_bytes
        self.max_document_bytes = max_document_bytes
        self.max_text_chars = max_text_chars
        self.plain_text_chars = plain_text_chars

    # -- the mapping -------------------------------------------------------------------------

    def to_content(self, value: object) -> ToolResultContent | None:
        """The tool_result content for ``value``; ``None`` means an empty success (omit ``content``).

        Text that UTF-8 cannot encode (lone surrogates) is repaired, as :func:`sendable` says.

        Raises:
            ResultTooLargeError: ``value`` exceeds one of the adapter's size limits.
            TypeError: ``value`` (or something inside it) cannot be sent.
            OSError: a path in ``value`` cannot be read.
        """
        if type(value) is str and type(self)._content is _MAPPING:  # text, nearly every result: no frames
            text = self._text(value)  # as the general mapping does, with a subclass's own limit check too
            return text if type(text) is str and text.isascii() else sendable(text)
        return sendable(self._content(value))

    def error_content(self, error: ToolError) -> ToolResultContent:
        """The content of the ``is_error`` tool_result for a :class:`ToolError` a tool raised."""
        content = self.to_content(error.content)
        return "" if content is None else content

    def needs_thread(self, value: object) -> bool:
        """Whether :meth:`to_content` would read a file for ``value`` (run it in a worker thread)."""
        if isinstance(value, str) or value is None:
            return False
        if isinstance(value, list | tuple):
            return any(self._reads_file(item) for item in cast("Sequence[object]", value))
        return self._reads_file(value)

    def to_plain_text(self, value: object) -> str:
        """A short human-readable rendering of a result or of tool_result content, for logs and UIs.

        It reads no files and never raises; text longer than ``plain_text_chars`` is cut.
        """
        try:
            text = self._plain(value)
        except Exception:
            text = _safe_repr(value)
        limit = self.plain_text_chars
        if limit is not None and len(text) > limit:
            text = f"{text[:limit]}{_ELLIPSIS} ({len(text) - limit:,} more characters)"
        return sendable_text(text)

    # -- internals (subclasses override the public methods above) -------------------------------

    def _content(self, value: object) -> ToolResultContent | None:
        if isinstance(value, str):
            return self._text(value)
        if value is None:
            return None
        if isinstance(value, list | tuple):
            items = cast("Sequence[object]", value)
            if any(self._is_rich(item) for item in items):
                return [block for item in items for block in self._blocks(item)]
            return self._text(self._json_text(items))
        if self._is_block(value):
            return [self._block(value)]
        if is_empty_text(value):
            return self._text("")  # as an empty string is
        if isinstance(value, bytes | bytearray | Path | Image | File):
            return self._file(value)
        return self._text(self._json_text(value))

    def _is_block(self, value: object) -> bool:
        """Whether ``value`` is a content block the service takes in a tool_result: a dict that the
        SDK's type for its ``type`` accepts, or an SDK model of such a block. A dict that only looks
        like one (``{"type": "text", "text": {...}}``, as the Notion API returns) is data."""
        if isinstance(value, Mapping):
            block = cast("Mapping[str, object]", value)
            return has_block_type(block) and is_valid_block(block)
        if isinstance(value, anthropic.BaseModel):
            # Only the SDK's own models: a user's model with a ``type`` field is data.
            return getattr(value, "type", None) in CONTENT_BLOCK_TYPES
        return False

    def _json_text(self, value: object) -> str:
        return json_text(value)

    def _is_rich(self, value: object) -> bool:
        return isinstance(value, bytes | bytearray | Path | Image | File) or self._is_block(value)

    def _reads_file(self, value: object) -> bool:
        return isinstance(value, Path) or (isinstance(value, Image | File) and isinstance(value.data, Path))

    def _block(self, value: object) -> ContentBlock:
        if isinstance(value, dict):
            return cast("ContentBlock", value)
        if isinstance(value, pydantic.BaseModel):
            # SDK response models (``TextBlock``, ...) become the equivalent param dicts.
            return value.model_dump(mode="json", exclude_none=True)
        return dict(cast("Mapping[str, Any]", value))

    def _blocks(self, item: object) -> list[ContentBlock]:
        """The blocks for one item of a mixed list."""
        if item is None or (isinstance(item, str) and not item) or is_empty_text(item):
            return []
        if self._is_block(item):
            return [self._block(item)]
        if isinstance(item, bytes | bytearray | Path | Image | File):
            content = self._file(item)
        else:
            content = self._text(item if isinstance(item, str) else self._json_text(item))
        return [{"type": "text", "text": content}] if isinstance(content, str) else content

    def _text(self, text: str) -> str:
        limit = self.max_text_chars
        if limit is not None and len(text) > limit:
            raise ResultTooLargeError(
                f"The tool result is {len(text):,} characters of text, more than the limit of "
                f"{limit:,}, so it was not sent; ask for a smaller part of it."
            )
        return text

    def _file(self, value: bytes | bytearray | Path | Image | File) -> ToolResultContent:
        as_image = isinstance(value, Image)
        name: str | None = None
        if isinstance(value, Image | File):
            name, value = value.name, value.data
            if not isinstance(value, bytes | bytearray | Path):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise TypeError(
                    f"{type(value).__name__!r} is not bytes or a pathlib.Path; give Image and File the "
                    "bytes, or the file's path as pathlib.Path(...)."
                )
        if isinstance(value, Path):
            name = name or value.name
            data = self._read(value, name, as_image=as_image)
            if isinstance(data, str):
                return data
        else:
            data = bytes(value)
        return self._file_content(data, name, as_image=as_image)

    def _read(self, path: Path, name: str, *, as_image: bool) -> bytes | str:
        """The bytes of ``path``, reading no more than a limit allows; a fallback note instead when
        the file will not be sent whole (the checks in ``_file_content`` then give the same answer)."""
        with path.open("rb") as file:
            size = os.fstat(file.fileno()).st_size
            head = file.read(SNIFF_BYTES)
            kind = sniff(head)
            if kind in IMAGE_MEDIA_TYPES:
                limit = self.max_image_bytes
            elif kind == PDF and not as_image:
                limit = self.max_document_bytes
            elif kind is not None or as_image or looks_binary(head):
                return self._fallback(kind, name, size, as_image=as_image)
            else:
                limit = None if self.max_text_chars is None else 4 * self.max_text_chars
            if limit is not None and size > limit:
                self._check_size(kind, name, size)
                raise ResultTooLargeError(  # text: at 4 bytes a character at most, still too long
                    f"The tool result file {name!r} is {size:,} bytes of text, more than the limit of "
                    f"{self.max_text_chars:,} characters, so it was not sent; ask for a smaller part of it."
                )
            rest = file.read() if limit is None else file.read(max(0, limit + 1 - len(head)))
        return head + rest

    def _file_content(self, data: bytes, name: str | None, *, as_image: bool) -> ToolResultContent:
        kind = sniff(data[:64])
        if kind in IMAGE_MEDIA_TYPES:
            self._check_size(kind, name, len(data))
            return [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": kind, "data": base64.b64encode(data).decode()},
                }
            ]
        if kind == PDF and not as_image:
            self._check_size(kind, name, len(data))
            block: ContentBlock = {
                "type": "document",
                "source": {"type": "base64", "media_type": PDF, "data": base64.b64encode(data).decode()},
            }
            if name:
                block["title"] = name
            return [block]
        if kind is None and not as_image and data and b"\x00" not in data:
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError:
                pass
            else:
                block = {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": self._text(text)},
                }
                if name:
                    block["title"] = name
                return [block]
        return self._fallback(kind, name, len(data), as_image=as_image)

    def _check_size(self, kind: str | None, name: str | None, size: int) -> None:
        is_image = kind in IMAGE_MEDIA_TYPES
        limit = self.max_image_bytes if is_image else self.max_document_bytes
        if limit is not None and size > limit:
            what = _label(name, "image" if is_image else "PDF")
            raise ResultTooLargeError(
                f"The tool result {what} is {size:,} bytes, more than the limit of {limit:,} bytes, "
                f"so it was not sent; ask for a smaller {'image' if is_image else 'document'}."
            )

    def _fallback(self, kind: str | None, name: str | None, size: int, *, as_image: bool) -> str:
        """The note the model reads in place of a file that cannot be sent."""
        if size == 0:
            return f"The tool returned {_label(name, 'file')}, which is empty."
        if kind is not None and kind.startswith("image/"):
            return (
                f"The tool returned {_label(name, 'image')} ({size:,} bytes) that was not sent: it is "
                f"{kind}, and only PNG, JPEG, GIF and WebP images can be sent."
            )
        if as_image:
            return (
                f"The tool returned {_label(name, 'image')} ({size:,} bytes) that was not sent: its "
                "bytes are not a PNG, JPEG, GIF or WebP image."
            )
        return (
            f"The tool returned {_label(name, 'file')} ({size:,} bytes) that was not sent: it is "
            "neither an image, a PDF nor UTF-8 text."
        )

    def _plain(self, value: object) -> str:
        if isinstance(value, str):
            return value
        if value is None:
            return ""
        if isinstance(value, ToolError):
            return f"Error: {self._plain(value.content)}"
        if isinstance(value, Link):
            return f"{value.name} <{value.url}>"
        if isinstance(value, Image | File):
            what = "image" if isinstance(value, Image) else "file"
            return f"[{what} {value.name or _source_label(value.data)}]"
        if isinstance(value, bytes | bytearray | Path):
            return f"[file {_source_label(value)}]"
        if isinstance(value, list | tuple):
            items = cast("Sequence[object]", value)
            if any(self._is_rich(item) for item in items):
                return "\n".join(self._plain(item) for item in items if item is not None)
            return self._json_text(items)
        if has_block_type(value) or (isinstance(value, anthropic.BaseModel) and self._is_block(value)):
            return _block_text(self._block(value))  # a rendering: blocks the service would refuse too
        return self._json_text(value)


def _safe_repr(value: object) -> str:
    try:
        return repr(value)
    except Exception:
        return object.__repr__(value)


def _source_label(data: bytes | bytearray | Path) -> str:
    return str(data) if isinstance(data, Path) else f"{len(data):,} bytes"


def _block_text(block: Mapping[str, Any]) -> str:
    kind = block.get("type")
    if kind == "text":
        return str(block.get("text", ""))
    source: object = block.get("source")
    media_type = (
        cast("Mapping[str, object]", source).get("media_type") if isinstance(source, Mapping) else None
    )
    title = block.get("title")
    details = ", ".join(str(part) for part in (title, media_type) if part)
    return f"[{kind}: {details}]" if details else f"[{kind}]"


_MAPPING = ToolResultAdapter._content  # pyright: ignore[reportPrivateUsage]
"""The general mapping; ``to_content`` maps text without it unless a subclass gives its own."""

DEFAULT_ADAPTER = ToolResultAdapter()
"""The adapter the runner uses when it is given none."""

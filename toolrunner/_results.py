"""What tools return, turned into ``tool_result`` content.

The runner hands every value a tool returns to one :class:`ToolResultAdapter`; the adapter decides
what the model reads. :func:`tool_result_block` wraps that content in a ``tool_result`` block.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, TypeAlias, cast

import pydantic
import pydantic_core
from anthropic.types import ToolResultBlockParam

from ._errors import ToolError, ToolRunnerError

__all__ = [
    "DEFAULT_ADAPTER",
    "ContentBlock",
    "ResultTooLargeError",
    "ToolResultAdapter",
    "ToolResultContent",
    "tool_result_block",
]

ContentBlock: TypeAlias = dict[str, Any]
"""One content block as the service reads it (``{"type": "text", "text": ...}``, ...)."""

ToolResultContent: TypeAlias = str | list[ContentBlock]
"""The ``content`` of a tool_result block: text, or content blocks in order."""

# The block types a tool_result may hold (the SDK's ``ToolResultBlockParam`` content union, and its
# beta twin). ``tests/test_results.py`` checks this against the installed SDK.
CONTENT_BLOCK_TYPES: frozenset[str] = frozenset(
    {"text", "image", "document", "search_result", "tool_reference", "browser_state"}
)


class ResultTooLargeError(ToolRunnerError, ValueError):
    """A tool's result is larger than the adapter's limits allow.

    The runner answers the tool call with an ``is_error`` tool_result whose text is ``str(error)``,
    so the message is written for the model: what was too large, by how much, and the limit.
    """


class ToolResultAdapter:
    """Turns what a tool returns into tool_result content. Subclass or replace it; the runner takes one.

    Mapping (``to_content``):

    * ``str`` is sent as is; ``None`` is an empty success (a tool_result without content).
    * A content block (a dict whose ``"type"`` is a tool_result block type such as ``"text"`` or
      ``"image"``, which includes the SDK's ``*BlockParam`` dicts) is sent as a one-block list; a list
      of content blocks is sent as it is. Dicts are passed on unchanged, not copied.
    * Other dicts, lists and tuples, pydantic models and dataclasses are sent as JSON text.

    Contract with the runner: call :meth:`needs_thread` first and, when it is true, call
    :meth:`to_content` in a worker thread (it reads files). :meth:`to_content` raises
    :class:`ResultTooLargeError` when a result exceeds a limit (the runner answers with an
    ``is_error`` result holding the message) and ``TypeError`` for values it cannot send.
    """

    def to_content(self, value: object) -> ToolResultContent | None:
        """The tool_result content for ``value``; ``None`` means an empty success (omit ``content``).

        Raises:
            TypeError: ``value`` (or something inside it) cannot be sent.
            ResultTooLargeError: ``value`` exceeds one of the adapter's size limits.
        """
        if isinstance(value, str):
            return value
        if value is None:
            return None
        if isinstance(value, list | tuple):
            items = cast("list[object] | tuple[object, ...]", value)
            if items and all(self._is_block(item) for item in items):
                return [self._block(item) for item in items]
            return self._json_text(items)
        if self._is_block(value):
            return [self._block(value)]
        return self._json_text(value)

    def error_content(self, error: ToolError) -> ToolResultContent:
        """The content of the ``is_error`` tool_result for a :class:`ToolError` a tool raised."""
        content = self.to_content(error.content)
        return "" if content is None else content

    def to_plain_text(self, value: object) -> str:
        """A short human-readable rendering of a result, for logs and UIs; never raises."""
        if isinstance(value, str):
            return value
        if value is None:
            return ""
        try:
            return self._json_text(value)
        except (TypeError, ValueError):
            return repr(value)

    def needs_thread(self, value: object) -> bool:
        """Whether :meth:`to_content` would do file I/O for ``value`` (run it in a worker thread)."""
        return False

    def _is_block(self, value: object) -> bool:
        if isinstance(value, Mapping):
            kind = cast("Mapping[str, object]", value).get("type")
            return isinstance(kind, str) and kind in CONTENT_BLOCK_TYPES
        if isinstance(value, pydantic.BaseModel):
            return getattr(value, "type", None) in CONTENT_BLOCK_TYPES
        return False

    def _block(self, value: object) -> ContentBlock:
        if isinstance(value, dict):
            return cast("ContentBlock", value)
        if isinstance(value, pydantic.BaseModel):
            # SDK response models (``TextBlock``, ...) become the equivalent param dicts.
            return value.model_dump(mode="json", exclude_none=True)
        return dict(cast("Mapping[str, Any]", value))

    def _json_text(self, value: object) -> str:
        if isinstance(value, pydantic.BaseModel):
            value = value.model_dump(mode="json")
        elif dataclasses.is_dataclass(value) and not isinstance(value, type):
            value = dataclasses.asdict(value)
        return json.dumps(value, ensure_ascii=False, default=_jsonable)


def _jsonable(value: object) -> object:
    """``json.dumps`` hook: pydantic's encoders (models, dataclasses, datetimes, UUIDs, sets, ...)."""
    try:
        return pydantic_core.to_jsonable_python(value)
    except pydantic_core.PydanticSerializationError:
        raise TypeError(
            f"Cannot send a {type(value).__qualname__!r} as a tool result; return a str, dict, list, "
            "pydantic model, dataclass or content blocks, or subclass ToolResultAdapter to convert it."
        ) from None


DEFAULT_ADAPTER = ToolResultAdapter()
"""The adapter the runner uses when it is given none."""


def tool_result_block(
    tool_use_id: str, content: ToolResultContent | None, *, is_error: bool = False
) -> ToolResultBlockParam:
    """A ``tool_result`` block answering ``tool_use_id``.

    ``content=None`` (the empty success) leaves out the ``content`` key; ``is_error`` is only set
    when true.
    """
    block: dict[str, object] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if content is not None:
        block["content"] = content
    if is_error:
        block["is_error"] = True
    return cast("ToolResultBlockParam", block)

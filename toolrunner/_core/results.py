"""A ``tool_result`` block, as the service takes it (``tool_result_block``): pure, no I/O.

What a tool returns becomes content through a ``ToolResultAdapter`` (``_tools/results.py``, which
reads files and converts images); this module holds what the orchestration itself needs to answer
a call: the block, made sendable whatever made its content, and JSON text as results write it.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import Any, TypeAlias, cast

import pydantic
import pydantic_core
from anthropic.types import ToolResultBlockParam

from .result_blocks import has_block_type, is_empty_text, is_valid_block
from .unicode import sendable

__all__ = ["ContentBlock", "ToolResultContent", "json_text", "tool_result_block"]

ContentBlock: TypeAlias = dict[str, Any]
"""One content block as the service reads it (``{"type": "text", "text": ...}``, ...)."""

ToolResultContent: TypeAlias = str | list[ContentBlock]
"""The ``content`` of a tool_result block: text, or content blocks in order."""


def json_text(value: object) -> str:
    """``value`` as JSON text, as a tool's data is sent to the model: pydantic models and dataclasses
    as their fields, other values through pydantic's encoders; a NaN or an infinity as a string."""
    if isinstance(value, pydantic.BaseModel):
        value = value.model_dump(mode="json")
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False, default=_jsonable)
    except ValueError:
        pass
    # Rare: a NaN or an infinity, for which JSON has no number (json writes the non-JSON tokens
    # NaN and Infinity). Read those back as the strings "NaN", "Infinity" and "-Infinity". A
    # circular reference, the other ValueError, raises again here.
    text = json.dumps(value, ensure_ascii=False, default=_jsonable)
    return json.dumps(json.loads(text, parse_constant=str), ensure_ascii=False)


def _is_block_or_model(item: object) -> bool:
    if not isinstance(item, Mapping):
        return True
    block = cast("Mapping[str, object]", item)
    return has_block_type(block) and is_valid_block(block)


def _as_data(item: object) -> Any:
    """A block of a tool_result's content as the service takes it: itself, or, for a dict it would
    refuse as a block, a text block of the dict's JSON."""
    if _is_block_or_model(item):
        return item
    return {"type": "text", "text": json_text(item)}


def _jsonable(value: object) -> object:
    """``json.dumps`` hook: pydantic's encoders (models, dataclasses, datetimes, UUIDs, sets, ...)."""
    try:
        # "constants" keeps NaN and infinities as floats, for _json_text's one rule about them.
        return pydantic_core.to_jsonable_python(value, inf_nan_mode="constants")
    except pydantic_core.PydanticSerializationError:
        raise TypeError(
            f"Cannot send a {type(value).__qualname__!r} as a tool result; return a str, dict, list, "
            "pydantic model, dataclass, bytes, Path, Image, File, Link or content blocks, or subclass "
            "ToolResultAdapter to convert it."
        ) from None


def tool_result_block(
    tool_use_id: str, content: ToolResultContent | None, *, is_error: bool = False
) -> ToolResultBlockParam:
    """A ``tool_result`` block answering ``tool_use_id``.

    ``content=None`` (the empty success) leaves out the ``content`` key; ``is_error`` is only set
    when true. The content is made sendable whichever adapter made it: lone surrogates are
    repaired (:func:`sendable`), and in a list of blocks, a dict the service would refuse as a
    block (see ``ToolResultAdapter``) becomes a text block of its JSON, as the adapter sends such
    data, and an empty text block is left out.

    Raises:
        TypeError: Such a dict holds a value JSON cannot carry.
    """
    block: dict[str, object] = {"type": "tool_result", "tool_use_id": tool_use_id}
    if isinstance(content, list) and not all(_is_block_or_model(item) for item in content):
        content = [_as_data(item) for item in cast("list[object]", content) if not is_empty_text(item)]
    if content is not None:  # ASCII text (nearly every result) is sendable as it is: no call
        block["content"] = content if type(content) is str and content.isascii() else sendable(content)
    if is_error:
        block["is_error"] = True
    return block  # type: ignore[return-value]  # a ToolResultBlockParam (no cast call per result)

# FROZEN as of commit 8cff606: toolrunner/_core/result_blocks.py, less what the legacy body never reaches.
# Never edit: see ``_legacy/__init__.py``.
"""The content blocks a tool_result holds: their types, whether a dict is one the service takes,
and the media types of the files that become image and document blocks. Pure, no I/O."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from typing import Annotated, Any, cast

import pydantic
from anthropic.types.beta.beta_tool_result_block_param import Content as BetaToolResultContent

__all__ = ["CONTENT_BLOCK_TYPES", "block_schema", "has_block_type", "is_empty_text", "is_valid_block"]

# The block types a tool_result may hold (the SDK's ``ToolResultBlockParam`` content union, and its
# beta twin). ``tests/test_results.py`` checks this against the installed SDK.
CONTENT_BLOCK_TYPES: frozenset[str] = frozenset(
    {"text", "image", "document", "search_result", "tool_reference", "browser_state"}
)


# Media types the service accepts for image blocks, by their magic numbers.


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

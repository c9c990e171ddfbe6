"""A ``@tool`` tool's input as the model gives it: a JSON object, and the messages the model reads
when it is not one, or does not match the tool's schema."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

import pydantic

from .._core.errors import ToolInputError

__all__ = ["JSON_TYPES", "error_path", "input_mapping", "short_repr", "validation_message"]

JSON_TYPES: dict[type, str] = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
"""The JSON name of the type of a value ``json.loads`` returns."""
# Validation messages list at most this many errors, and values up to this many characters.
_MAX_ERRORS = 20
_MAX_VALUE_CHARS = 100


def input_mapping(name: str, raw: object) -> Mapping[str, Any]:
    """The input of tool ``name``: a mapping, or a str holding a JSON object.

    Raises:
        ToolInputError: Anything else; the message is written for the model.
    """
    if type(raw) is dict or isinstance(raw, Mapping):  # the exact type first: an ABC check costs more
        return cast("Mapping[str, Any]", raw)
    what = f"a {type(raw).__name__}"
    if isinstance(raw, str):
        try:
            decoded: object = json.loads(raw)
        except ValueError:
            what = "a str that is not valid JSON"
        else:
            if isinstance(decoded, dict):
                return cast("dict[str, Any]", decoded)
            what = f"a str holding a JSON {JSON_TYPES.get(type(decoded), type(decoded).__name__)}"
    raise ToolInputError(
        f"The input for tool {name!r} must be a JSON object matching its input_schema, but it was "
        f"{what}: {short_repr(raw)}. Call {name} again with an object as its input."
    )


def validation_message(name: str, error: pydantic.ValidationError) -> str:
    """What the model reads when its input for tool ``name`` does not match the schema."""
    errors = error.errors(include_url=False)
    count = f"{len(errors)} error" if len(errors) == 1 else f"{len(errors)} errors"
    lines = [f"The input for tool {name!r} is invalid ({count}):"]
    for item in errors[:_MAX_ERRORS]:
        line = f"- {error_path(item['loc'])}: {item['msg']}"
        # For a missing field, pydantic's "input" is the enclosing object: not worth repeating.
        if item["type"] != "missing":
            line += f" (received {short_repr(item['input'])})"
        lines.append(line)
    if len(errors) > _MAX_ERRORS:
        lines.append(f"- ... and {len(errors) - _MAX_ERRORS} more")
    lines.append(f"Call {name} again with corrected input.")
    return "\n".join(lines)


def error_path(loc: tuple[int | str, ...]) -> str:
    """Where in the input a validation error is, as ``items.0.quantity``."""
    return ".".join(str(part) for part in loc) or "(input)"


def short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."

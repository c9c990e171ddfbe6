"""A ``@tool`` tool's ``definition=`` fields: the fields of the SDK's tool definition it may set
besides the three ``@tool`` owns, checked once, at decoration, against the installed SDK's types."""

from __future__ import annotations

import functools
from collections.abc import Iterable, Mapping
from typing import Any, cast

import pydantic
from anthropic.types import ToolParam
from anthropic.types.beta import BetaToolParam
from pydantic import BaseModel

from .._core.errors import ToolDefinitionError
from .inputs import error_path, short_repr

__all__ = ["DEFINITION_FIELDS", "check_param", "definition_fields"]

# Set by @tool itself, from its options, the signature and the docstring.
_OWNED_FIELDS = {
    "name": "pass name=... to @tool",
    "description": "pass description=... to @tool",
    "input_schema": "it comes from the signature, or from input_model=...",
}


def definition_fields(name: str, definition: object, model: type[BaseModel]) -> dict[str, object]:
    """The ``definition`` fields, their names checked; ``input_examples`` checked against the tool's
    own input model, and made a list (it may be any iterable)."""
    if not isinstance(definition, Mapping):
        raise ToolDefinitionError(
            f"The definition {definition!r} of tool {name!r} is not a dict; pass the extra fields of the "
            'tool definition as one, such as definition={"strict": True}.'
        )
    fields = {str(key): value for key, value in cast("Mapping[object, object]", definition).items()}
    for key in fields:
        _check_field_name(name, key)
    if "input_examples" in fields:
        fields["input_examples"] = _input_examples(name, fields["input_examples"], model)
    return fields


def _check_field_name(name: str, key: str) -> None:
    if key in _OWNED_FIELDS:
        raise ToolDefinitionError(
            f"The definition field {key!r} of tool {name!r} is set by @tool; {_OWNED_FIELDS[key]}."
        )
    if key not in DEFINITION_FIELDS:
        raise ToolDefinitionError(
            f"The definition field {key!r} of tool {name!r} is not a field of a custom tool in the "
            f"installed anthropic SDK; the fields are: {', '.join(sorted(DEFINITION_FIELDS))}."
        )


def _input_examples(name: str, given: object, model: type[BaseModel]) -> list[object]:
    examples = list(cast("Iterable[object]", given))
    for index, example in enumerate(examples):
        try:
            model.model_validate(example)
        except pydantic.ValidationError as error:
            problems = "; ".join(
                f"{error_path(item['loc'])}: {item['msg']}" for item in error.errors(include_url=False)
            )
            raise ToolDefinitionError(
                f"The input example {index} of tool {name!r} does not match its input_schema "
                f"({problems}); correct it or leave it out."
            ) from None
    return examples


def check_param(name: str, param: dict[str, object]) -> None:
    """Check a definition's values against the SDK's type for it, so a wrong one fails here rather
    than in every request."""
    sdk_type = ToolParam if param.keys() <= _fields_of(ToolParam) else BetaToolParam
    try:
        _adapter(sdk_type).validate_python(param, strict=True)
    except pydantic.ValidationError as error:
        item = error.errors(include_url=False)[0]
        raise ToolDefinitionError(
            f"The definition field {error_path(item['loc'])!r} of tool {name!r} is invalid: {item['msg']} "
            f"(received {short_repr(item['input'])}); give it a value of the type the SDK's "
            f"{sdk_type.__name__} declares for it."
        ) from None


def _fields_of(typed_dict: Any) -> frozenset[str]:
    return frozenset(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


@functools.cache
def _adapter(sdk_type: Any) -> pydantic.TypeAdapter[Any]:
    return pydantic.TypeAdapter(sdk_type)


DEFINITION_FIELDS: frozenset[str] = (_fields_of(ToolParam) | _fields_of(BetaToolParam)) - _OWNED_FIELDS.keys()
"""The fields ``definition=`` may set: those the installed SDK's ``ToolParam`` and ``BetaToolParam``
declare, less the three ``@tool`` owns. Read from the SDK, so a field a newer SDK adds is known."""

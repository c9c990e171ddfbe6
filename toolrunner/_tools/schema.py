"""A tool's input: the pydantic model that validates it and the JSON schema the model reads.

Built once per tool, at decoration, from the function's signature or from an ``input_model``.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import Annotated, Any, cast, get_origin

import pydantic
from pydantic import BaseModel, ConfigDict
from pydantic.fields import FieldInfo
from pydantic.json_schema import GenerateJsonSchema, JsonSchemaValue
from pydantic_core import core_schema

from .._core.errors import ToolDefinitionError

__all__ = ["input_model_param", "json_schema", "read_parameters", "signature_model"]


def read_parameters(name: str, function: Callable[..., Any]) -> list[inspect.Parameter]:
    """The parameters of ``function``'s signature, its annotations evaluated; refuses those a JSON
    object cannot fill (``*args``, ``**kwargs``, positional-only)."""
    try:
        signature = inspect.signature(function, eval_str=True)
    except (NameError, AttributeError, SyntaxError, TypeError) as error:
        raise ToolDefinitionError(
            f"The annotations of tool {name!r} cannot be evaluated ({error}); define the types they name "
            "at module level, before the function, where its globals can see them."
        ) from error
    except ValueError as error:
        raise ToolDefinitionError(
            f"The signature of tool {name!r} cannot be read ({error}); wrap it in a Python function."
        ) from error
    parameters = list(signature.parameters.values())
    for parameter in parameters:
        if parameter.kind in (parameter.VAR_POSITIONAL, parameter.VAR_KEYWORD):
            star = "*" if parameter.kind is parameter.VAR_POSITIONAL else "**"
            raise ToolDefinitionError(
                f"The parameter {star}{parameter.name} of tool {name!r} is not supported; the input is a JSON "
                "object with named fields, so declare each one as a parameter (or use input_model=...)."
            )
        if parameter.kind is parameter.POSITIONAL_ONLY:
            raise ToolDefinitionError(
                f"The parameter {parameter.name!r} of tool {name!r} is positional-only; tools are called "
                "with keyword arguments, so remove the '/' from the signature."
            )
    return parameters


def input_model_param(name: str, input_model: object, inputs: list[inspect.Parameter]) -> str:
    """The parameter that receives the ``input_model`` instance, once the model is checked."""
    if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
        raise ToolDefinitionError(
            f"The input_model {input_model!r} of tool {name!r} is not a pydantic model; pass a subclass of "
            "pydantic.BaseModel."
        )
    if issubclass(input_model, pydantic.RootModel):
        raise ToolDefinitionError(
            f"The input_model {input_model.__name__} of tool {name!r} is a RootModel; a tool's input is a "
            "JSON object, so pass a BaseModel with fields."
        )
    if len(inputs) != 1:
        names = ", ".join(p.name for p in inputs) or "none"
        raise ToolDefinitionError(
            f"The tool {name!r} has input_model={input_model.__name__}, so its function must take exactly one "
            f"parameter (besides a ToolContext) to receive the {input_model.__name__} instance; it takes: "
            f"{names}."
        )
    return inputs[0].name


def signature_model(
    name: str, inputs: list[inspect.Parameter], arg_docs: Mapping[str, str]
) -> tuple[type[BaseModel], dict[str, str], frozenset[str]]:
    """A pydantic model with one field per parameter, its field names -> parameter names, and the
    fields to pass even when the input leaves them out.

    Fields get neutral names (``p0``, ``p1``, ...) and the parameter name as alias, so that parameters
    may be called anything (``json``, ``schema``, ``_id``) without clashing with BaseModel's namespace.
    A parameter whose default is a ``Field(...)``, or that has none (``Annotated[int, Field(default=1)]``),
    has no default the function could use: it always gets the value pydantic validated or defaulted.
    """
    definitions: dict[str, Any] = {}
    fields: dict[str, str] = {}
    always: set[str] = set()
    for index, parameter in enumerate(inputs):
        if parameter.annotation is parameter.empty:
            raise ToolDefinitionError(
                f"The parameter {parameter.name!r} of tool {name!r} has no type annotation; add one (for "
                f"example `{parameter.name}: str`) so the schema can tell the model what to send. For a "
                "method, decorate the bound method: tool(instance.method)."
            )
        user_fields = list(_field_infos(parameter))
        alias = next((f.alias for f in user_fields if f.alias), parameter.name)
        # Our FieldInfo comes after the user's in the merge: it must set nothing they set.
        ours = pydantic.Field(alias=alias)
        if parameter.name in arg_docs and not any(f.description for f in user_fields):
            ours = pydantic.Field(alias=alias, description=arg_docs[parameter.name])
        field = f"p{index}"
        annotation = cast(Any, Annotated)[
            parameter.annotation, ours
        ]  # a run-time type, which mypy cannot read
        if parameter.default is parameter.empty:
            definitions[field] = annotation  # required, unless a Field in Annotated gives a default
            always.add(field)
        else:
            definitions[field] = (annotation, parameter.default)
            if isinstance(parameter.default, FieldInfo):
                always.add(field)
        fields[field] = parameter.name
    try:
        model = pydantic.create_model(name, __config__=ConfigDict(extra="forbid"), **definitions)
    except (pydantic.PydanticUserError, TypeError, ValueError) as error:
        raise ToolDefinitionError(
            f"The signature of tool {name!r} cannot be made into a schema ({error}); use types pydantic "
            "can validate (str, int, list[...], Literal, pydantic models, ...)."
        ) from error
    return model, fields, frozenset(always)


def _field_infos(parameter: inspect.Parameter) -> Iterator[FieldInfo]:
    if get_origin(parameter.annotation) is Annotated:
        yield from (m for m in parameter.annotation.__metadata__ if isinstance(m, FieldInfo))
    if isinstance(parameter.default, FieldInfo):
        yield parameter.default


class _SchemaGenerator(GenerateJsonSchema):
    # No titles made up from field names ("City" for city): they cost tokens and say nothing.
    # Titles given explicitly with Field(title=...) stay.
    def field_title_should_be_set(self, schema: Any) -> bool:
        return False

    # A stdlib dataclass takes ``extra="forbid"`` from the model around it, so it refuses fields it
    # does not name; pydantic writes that into its schema from 2.14 on, earlier releases leave it out.
    def dataclass_schema(self, schema: core_schema.DataclassSchema) -> JsonSchemaValue:
        json_schema = super().dataclass_schema(schema)
        config = schema.get("config") or {}
        if config.get("extra_fields_behavior") == "forbid" and json_schema.get("type") == "object":
            json_schema.setdefault("additionalProperties", False)
        return json_schema


def json_schema(name: str, model: type[BaseModel]) -> dict[str, Any]:
    """The input_schema for ``model``: an object at the root, without titles that say nothing."""
    try:
        schema = model.model_json_schema(schema_generator=_SchemaGenerator)
    except pydantic.PydanticUserError as error:
        raise ToolDefinitionError(
            f"The input of tool {name!r} cannot be described as a JSON schema ({error}); use JSON types."
        ) from error
    # Titles that only repeat a class name: the model's own, and those of $defs under that name.
    if schema.get("title") == model.__name__:
        del schema["title"]
    for key, definition in schema.get("$defs", {}).items():
        if definition.get("title") == key:
            del definition["title"]
    # A recursive model's schema is a bare "$ref" into $defs, but the API wants an object at the root:
    # inline the definition there, and keep it in $defs for the references inside it.
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        del schema["$ref"]
        schema.update(schema["$defs"][ref.removeprefix("#/$defs/")])
    first = ("type", "properties", "required", "additionalProperties")
    return {key: schema[key] for key in first if key in schema} | {
        key: value for key, value in schema.items() if key not in first
    }

"""``@tool``: Python functions as Claude tools.

A ``Tool`` holds what the runner needs to offer a function to the model and to call it: the
``ToolParam`` sent on every request (name, description, JSON schema), the pydantic model that checks
the model's input, and the options that say how to run it. The schema comes from the signature
through pydantic (``_tools/schema.py``), the descriptions from a Google-style docstring
(``_tools/docstrings.py``). Everything is worked out once, at decoration; per call there is only
validation.

Running tools, timeouts and turning return values into tool_result blocks live elsewhere.
"""

from __future__ import annotations

import functools
import inspect
import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, cast, get_args, overload

import pydantic
from anthropic.types import ToolParam
from anthropic.types.beta import BetaToolParam
from pydantic import BaseModel
from typing_extensions import ParamSpec, TypeVar

from .._core.errors import ToolDefinitionError, ToolInputError
from .._core.types import RunnerView, ToolCall
from .docstrings import parse_docstrings
from .schema import input_model_param, json_schema, read_parameters, signature_model

__all__ = ["DEFINITION_FIELDS", "ApprovalGate", "Tool", "ToolContext", "as_tool", "tool"]

ApprovalGate: TypeAlias = bool | Callable[[ToolCall], bool | Awaitable[bool]]
"""Whether a tool's calls wait for a decision: always, never, or a function of the call."""

P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)

# What the Messages API accepts as a tool name.
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")
JSON_TYPES: dict[type, str] = {
    list: "array",
    str: "string",
    int: "number",
    float: "number",
    bool: "boolean",
    type(None): "null",
}
# Validation messages list at most this many errors, and values up to this many characters.
_MAX_ERRORS = 20
_MAX_VALUE_CHARS = 100


@dataclass(frozen=True, slots=True)
class ToolContext:
    """What a tool may learn about the call it answers: declare a parameter annotated with it.

    Attributes:
        call: The tool_use block being answered (id, name, raw input).
        runner: The runner driving this call.
    """

    call: ToolCall
    runner: RunnerView


class Tool(Generic[P, R]):
    """A function offered to the model as a tool; made by ``@tool``.

    Calling a ``Tool`` calls the function, so decorated functions can be tested as they are.
    Treat the attributes as read-only: the runner relies on them not changing. To run another
    implementation in a test, use ``toolrunner.testing.override_tool``.

    Attributes:
        name: The name the model calls the tool by.
        description: What the model reads about the tool.
        input_schema: The JSON schema (type object) of the tool's input.
        function: The decorated callable.
        is_async: Whether calling ``function`` returns an awaitable.
        sequential: Run this tool alone, never concurrently with other tool calls.
        timeout: Seconds one call may take, or None for no limit.
        start_early: Whether streaming may start the tool before the reply is complete.
        idempotent: Whether a call that a crash interrupted may simply run again on resume.
        requires_approval: Whether a call waits for a person's decision before it runs: a bool,
            or a function of the ``ToolCall`` (sync or async) that says so per call.
    """

    __name__: str
    __qualname__: str
    __wrapped__: Callable[P, R]
    name: str
    description: str
    input_schema: dict[str, Any]
    function: Callable[P, R]
    is_async: bool
    sequential: bool
    timeout: float | None
    start_early: bool
    idempotent: bool
    requires_approval: ApprovalGate

    def __init__(
        self,
        function: Callable[P, R],
        *,
        name: str | None = None,
        description: str | None = None,
        input_model: type[BaseModel] | None = None,
        sequential: bool = False,
        timeout: float | None = None,
        start_early: bool = True,
        idempotent: bool = False,
        requires_approval: ApprovalGate = False,
        definition: Mapping[str, Any] | None = None,
    ) -> None:
        if isinstance(function, Tool):
            function = function.function  # re-decorating: start from the source
        if not callable(function):
            raise ToolDefinitionError(
                f"{function!r} is not callable; @tool needs a function, a functools.partial or an object "
                "with a __call__ method."
            )
        # A function's __dict__ holds its attributes; a callable object's holds its state: not ours.
        functools.update_wrapper(
            self, function, updated=("__dict__",) if inspect.isfunction(function) else ()
        )
        self.name = _check_name(name if name is not None else _default_name(function))
        # Partials and callable objects have no __name__ for update_wrapper to copy.
        self.__dict__.setdefault("__name__", self.name)
        self.__dict__.setdefault("__qualname__", self.name)
        callee = _callee(function)
        summary, arg_docs = parse_docstrings(_docstrings(function, callee))
        self.description = _check_description(self.name, description, summary)
        self.function = function
        _refuse_generator(self.name, callee)
        self.is_async = inspect.iscoroutinefunction(callee)
        self.sequential = sequential
        self.timeout = _check_timeout(self.name, timeout)
        self.start_early = start_early
        self.idempotent = idempotent
        if not isinstance(requires_approval, bool) and not callable(requires_approval):
            raise ToolDefinitionError(
                f"requires_approval of tool {self.name!r} must be a bool or a function of the ToolCall, not "
                f"{type(requires_approval).__name__!r}."
            )
        self.requires_approval = requires_approval

        # What a partial binds by keyword stays in the signature, with its value as default: it must
        # neither reach the schema (it may be a secret) nor be accepted from the model.
        bound = _bound_keywords(function)
        parameters = [p for p in read_parameters(self.name, function) if p.name not in bound]
        self._context_param = _context_param(self.name, parameters)
        inputs = [p for p in parameters if p.name != self._context_param]
        if input_model is not None:
            self._model_param: str | None = input_model_param(self.name, input_model, inputs)
            self._model = input_model
            # Internal field name -> keyword argument; unused for input_model tools.
            self._fields: dict[str, str] = {}
            # Fields passed even when the model leaves them out: their default is pydantic's to apply.
            self._always: frozenset[str] = frozenset()
        else:
            self._model_param = None
            self._model, self._fields, self._always = signature_model(self.name, inputs, arg_docs)
        self.input_schema = json_schema(self.name, self._model)
        param: dict[str, object] = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }
        if definition is not None:
            param.update(_definition(self.name, definition, self._model))
            _check_param(self.name, param)
        self._param = cast("ToolParam", param)

    def __call__(self, *args: P.args, **kwargs: P.kwargs) -> R:
        return self.function(*args, **kwargs)

    def __repr__(self) -> str:
        return (
            f"Tool(name={self.name!r}, is_async={self.is_async}, sequential={self.sequential}, "
            f"timeout={self.timeout}, start_early={self.start_early}, idempotent={self.idempotent})"
        )

    def to_param(self) -> ToolParam:
        """The tool's definition for the ``tools`` request param, with the ``definition`` fields.

        Built once; every call returns the same dict: treat it as read-only. To send more fields,
        pass ``definition=`` to ``@tool``.
        """
        return self._param

    def parse_input(self, raw: object) -> dict[str, Any]:
        """Validate the model's input and return the keyword arguments for ``function``.

        The context argument is not included (``call_kwargs`` adds it). Parameters the model left
        out are left out here too, so the function's own defaults apply; those whose default is a
        ``pydantic.Field`` get the value pydantic gives them. For an ``input_model`` tool the result
        is ``{param: validated model instance}``.

        Args:
            raw: The tool_use block's input: a dict, or a string holding a JSON object.

        Raises:
            ToolInputError: The input is not an object or does not match the schema; the message is
                written for the model.
        """
        data = self._input_object(raw)
        try:
            validated = self._model.model_validate(data)
        except pydantic.ValidationError as error:
            raise ToolInputError(self._validation_message(error)) from None
        if self._model_param is not None:
            return {self._model_param: validated}
        given, always = validated.model_fields_set, self._always
        return {
            param: getattr(validated, field)
            for field, param in self._fields.items()
            if field in given or field in always
        }

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        """The keyword arguments to call ``function`` with: ``arguments`` (from ``parse_input``) plus
        the context, when the function declares a ``ToolContext`` parameter."""
        if self._context_param is None:
            return dict(arguments)
        return {**arguments, self._context_param: context}

    def _input_object(self, raw: object) -> Mapping[str, Any]:
        if isinstance(raw, Mapping):
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
            f"The input for tool {self.name!r} must be a JSON object matching its input_schema, but it was "
            f"{what}: {_short_repr(raw)}. Call {self.name} again with an object as its input."
        )

    def _validation_message(self, error: pydantic.ValidationError) -> str:
        errors = error.errors(include_url=False)
        count = f"{len(errors)} error" if len(errors) == 1 else f"{len(errors)} errors"
        lines = [f"The input for tool {self.name!r} is invalid ({count}):"]
        for item in errors[:_MAX_ERRORS]:
            line = f"- {_path(item['loc'])}: {item['msg']}"
            # For a missing field, pydantic's "input" is the enclosing object: not worth repeating.
            if item["type"] != "missing":
                line += f" (received {_short_repr(item['input'])})"
            lines.append(line)
        if len(errors) > _MAX_ERRORS:
            lines.append(f"- ... and {len(errors) - _MAX_ERRORS} more")
        lines.append(f"Call {self.name} again with corrected input.")
        return "\n".join(lines)


@overload
def tool(
    function: Callable[P, R],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_model: type[BaseModel] | None = None,
    sequential: bool = False,
    timeout: float | None = None,
    start_early: bool = True,
    idempotent: bool = False,
    requires_approval: ApprovalGate = False,
    definition: Mapping[str, Any] | None = None,
) -> Tool[P, R]: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    input_model: type[BaseModel] | None = None,
    sequential: bool = False,
    timeout: float | None = None,
    start_early: bool = True,
    idempotent: bool = False,
    requires_approval: ApprovalGate = False,
    # Any, not object: the values are wire data that the SDK's TypedDicts type and that are checked
    # against them at decoration; with object, pyright strict rejects literals such as [] in them.
    definition: Mapping[str, Any] | None = None,
) -> Callable[[Callable[P, R]], Tool[P, R]]: ...
def tool(  # type: ignore[misc]  # mypy: "cannot satisfy signature 1" with ParamSpec overloads; pyright checks it
    function: Callable[P, R] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_model: type[BaseModel] | None = None,
    sequential: bool = False,
    timeout: float | None = None,
    start_early: bool = True,
    idempotent: bool = False,
    requires_approval: ApprovalGate = False,
    definition: Mapping[str, Any] | None = None,
) -> Tool[P, R] | Callable[[Callable[P, R]], Tool[P, R]]:
    """Make a function into a tool; use as ``@tool`` or ``@tool(...)``.

    Args:
        function: The function (sync or async), a ``functools.partial``, or a callable object.
        name: The tool's name; defaults to the function's ``__name__``.
        description: What the model reads; defaults to the docstring's text before its sections.
        input_model: A pydantic model that is the whole input; the function takes one instance of it.
        sequential: Run this tool alone, never concurrently with other tool calls.
        timeout: Seconds one call may take; the runner stops it after that.
        start_early: Whether streaming may start the tool before the reply ends; pass False for
            tools with side effects.
        idempotent: Running the tool twice does no harm, so a call that a crash interrupted (see
            ``ToolRunner.resume``) runs again instead of getting an "interrupted" error result.
        requires_approval: A call waits for a person's decision before it runs
            (``runner.approve``/``deny``/``answer``, or the runner's ``approve=`` callback). A bool,
            or a function of the ``ToolCall`` (sync or async) that decides per call; if it raises,
            the call is denied.
        definition: More fields of the tool's definition, sent with it on every request:
            ``{"strict": True, "cache_control": {"type": "ephemeral"}}``, ... Any field the installed
            SDK's ``ToolParam`` (or ``BetaToolParam``) has, except the three ``@tool`` sets (name,
            description, input_schema); values are checked against the SDK's types, and
            ``input_examples`` against the tool's schema.

    Raises:
        ToolDefinitionError: The function cannot be made into a tool; the message says why.
    """

    def decorate(function: Callable[P, R]) -> Tool[P, R]:
        return Tool(
            function,
            name=name,
            description=description,
            input_model=input_model,
            sequential=sequential,
            timeout=timeout,
            start_early=start_early,
            idempotent=idempotent,
            requires_approval=requires_approval,
            definition=definition,
        )

    if function is not None:
        return decorate(function)
    return decorate


def as_tool(obj: object) -> Tool:
    """Return ``obj`` if it is a ``Tool``, else make it one with the default options.

    Raises:
        ToolDefinitionError: ``obj`` cannot be made into a tool.
    """
    if isinstance(obj, Tool):
        return cast(Tool, obj)
    if not callable(obj):
        raise ToolDefinitionError(
            f"{obj!r} is not a tool; pass a function decorated with @tool, a plain function, or a "
            "ToolParam dict."
        )
    return Tool(obj)


# Definition fields -----------------------------------------------------------------------------

# Set by @tool itself, from its options, the signature and the docstring.
_OWNED_FIELDS = {
    "name": "pass name=... to @tool",
    "description": "pass description=... to @tool",
    "input_schema": "it comes from the signature, or from input_model=...",
}


def _definition(name: str, definition: object, model: type[BaseModel]) -> dict[str, object]:
    """The ``definition`` fields, their names checked; ``input_examples`` checked against the tool's
    own input model, and made a list (it may be any iterable)."""
    if not isinstance(definition, Mapping):
        raise ToolDefinitionError(
            f"The definition {definition!r} of tool {name!r} is not a dict; pass the extra fields of the "
            'tool definition as one, such as definition={"strict": True}.'
        )
    fields = {str(key): value for key, value in cast("Mapping[object, object]", definition).items()}
    for key in fields:
        if key in _OWNED_FIELDS:
            raise ToolDefinitionError(
                f"The definition field {key!r} of tool {name!r} is set by @tool; {_OWNED_FIELDS[key]}."
            )
        if key not in DEFINITION_FIELDS:
            raise ToolDefinitionError(
                f"The definition field {key!r} of tool {name!r} is not a field of a custom tool in the "
                f"installed anthropic SDK; the fields are: {', '.join(sorted(DEFINITION_FIELDS))}."
            )
    if "input_examples" in fields:
        examples = list(cast("Iterable[object]", fields["input_examples"]))
        for index, example in enumerate(examples):
            try:
                model.model_validate(example)
            except pydantic.ValidationError as error:
                problems = "; ".join(
                    f"{_path(item['loc'])}: {item['msg']}" for item in error.errors(include_url=False)
                )
                raise ToolDefinitionError(
                    f"The input example {index} of tool {name!r} does not match its input_schema "
                    f"({problems}); correct it or leave it out."
                ) from None
        fields["input_examples"] = examples
    return fields


def _check_param(name: str, param: dict[str, object]) -> None:
    """Check a definition's values against the SDK's type for it, so a wrong one fails here rather
    than in every request."""
    sdk_type = ToolParam if param.keys() <= _fields_of(ToolParam) else BetaToolParam
    try:
        _adapter(sdk_type).validate_python(param, strict=True)
    except pydantic.ValidationError as error:
        item = error.errors(include_url=False)[0]
        raise ToolDefinitionError(
            f"The definition field {_path(item['loc'])!r} of tool {name!r} is invalid: {item['msg']} "
            f"(received {_short_repr(item['input'])}); give it a value of the type the SDK's "
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


# Signature -------------------------------------------------------------------------------------


def _unwrap_partial(function: object) -> object:
    while isinstance(function, functools.partial):
        function = function.func
    return function


def _bound_keywords(function: object) -> frozenset[str]:
    """The names that a ``functools.partial``, or a chain of them, binds by keyword.

    Arguments bound by position are already gone from the partial's signature.
    """
    names: set[str] = set()
    while isinstance(function, functools.partial):
        partial = cast("functools.partial[object]", function)
        names.update(partial.keywords)
        function = partial.func
    return frozenset(names)


def _default_name(function: object) -> str:
    source = _unwrap_partial(function)
    return str(getattr(source, "__name__", type(source).__name__))


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolDefinitionError(
            f"The tool name {name!r} is invalid: the API accepts 1 to 128 letters, digits, '_' and '-'; "
            "pass name=... to @tool."
        )
    return name


def _check_description(name: str, description: str | None, summary: str) -> str:
    text = (description if description is not None else summary).strip()
    if not text:
        raise ToolDefinitionError(
            f"The tool {name!r} has no description; write a docstring that says what it does, or pass "
            "description=... to @tool. The model reads it to decide when to call the tool."
        )
    return text


def _check_timeout(name: str, timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolDefinitionError(
            f"The timeout {timeout!r} of tool {name!r} is invalid; pass a positive number of seconds, "
            "or None for no limit."
        )
    return float(timeout)


def _callee(function: object) -> object:
    """What runs when ``function`` is called: the function under any partials, or, for a callable
    object, its class's ``__call__``."""
    function = _unwrap_partial(function)
    if inspect.isroutine(function) or inspect.isclass(function):
        return function
    return type(function).__call__


def _docstrings(function: object, callee: object) -> list[object]:
    """The docstrings that describe ``function``, most preferred first."""
    source = _unwrap_partial(function)
    if callee is source:
        return [getattr(source, "__doc__", None)]
    # A callable object: __call__ says what calling it does; the class docstring fills in the rest.
    return [getattr(callee, "__doc__", None), getattr(source, "__doc__", None)]


def _refuse_generator(name: str, callee: object) -> None:
    # Refused here, not at the first call: an async generator cannot be awaited, and a sync one's
    # items would only reach the model as whatever pydantic's JSON encoder makes of them.
    if inspect.isasyncgenfunction(callee) or inspect.isgeneratorfunction(callee):
        kind = "an async generator" if inspect.isasyncgenfunction(callee) else "a generator"
        raise ToolDefinitionError(
            f"The tool {name!r} is {kind} function; a tool returns its result once: collect what it "
            "yields into a list and return the list."
        )


def _context_param(name: str, parameters: list[inspect.Parameter]) -> str | None:
    for parameter in parameters:
        if parameter.annotation is not ToolContext and _mentions_context(parameter.annotation):
            raise ToolDefinitionError(
                f"The parameter {parameter.name!r} of tool {name!r} is annotated {parameter.annotation!r}; "
                "annotate the context parameter exactly `ToolContext`: the runner always passes one."
            )
    found = [p.name for p in parameters if p.annotation is ToolContext]
    if len(found) > 1:
        raise ToolDefinitionError(
            f"The tool {name!r} has {len(found)} ToolContext parameters ({', '.join(found)}); declare one."
        )
    return found[0] if found else None


def _mentions_context(annotation: object) -> bool:
    return annotation is ToolContext or any(_mentions_context(arg) for arg in get_args(annotation))


def _path(loc: tuple[int | str, ...]) -> str:
    """Where in the input a validation error is, as ``items.0.quantity``."""
    return ".".join(str(part) for part in loc) or "(input)"


def _short_repr(value: object) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_VALUE_CHARS else text[: _MAX_VALUE_CHARS - 3] + "..."

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
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeAlias, cast, get_args, overload

import pydantic
from anthropic.types import ToolParam
from pydantic import BaseModel
from typing_extensions import ParamSpec, TypeVar

from .._core.errors import ToolDefinitionError, ToolInputError
from .._core.types import RunnerView, ToolCall
from .callables import (
    bound_keywords,
    callee,
    check_approval,
    check_description,
    check_name,
    check_timeout,
    default_name,
    docstrings,
    refuse_generator,
)
from .definition import check_param, definition_fields
from .docstrings import parse_docstrings
from .inputs import input_mapping, validation_message
from .schema import input_model_param, json_schema, read_parameters, signature_model

__all__ = ["ApprovalGate", "Tool", "ToolContext", "as_tool", "tool"]

ApprovalGate: TypeAlias = bool | Callable[[ToolCall], bool | Awaitable[bool]]
"""Whether a tool's calls wait for a decision: always, never, or a function of the call."""

P = ParamSpec("P", default=...)
R = TypeVar("R", default=Any)


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
        arg_docs = self._describe(function, name, description)
        self.sequential = sequential
        self.timeout = check_timeout(self.name, timeout)
        self.start_early = start_early
        self.idempotent = idempotent
        check_approval(self.name, requires_approval)
        self.requires_approval = requires_approval
        self._read_signature(function, input_model, arg_docs)
        self._param = self._definition(definition)

    def _describe(
        self, function: Callable[P, R], name: str | None, description: str | None
    ) -> dict[str, str]:
        """The function, its name and its description; whether it is async. Returns the docstring's
        descriptions of the arguments."""
        if not callable(function):
            raise ToolDefinitionError(
                f"{function!r} is not callable; @tool needs a function, a functools.partial or an object "
                "with a __call__ method."
            )
        # A function's __dict__ holds its attributes; a callable object's holds its state: not ours.
        functools.update_wrapper(
            self, function, updated=("__dict__",) if inspect.isfunction(function) else ()
        )
        self.name = check_name(name if name is not None else default_name(function))
        # Partials and callable objects have no __name__ for update_wrapper to copy.
        self.__dict__.setdefault("__name__", self.name)
        self.__dict__.setdefault("__qualname__", self.name)
        called = callee(function)
        summary, arg_docs = parse_docstrings(docstrings(function, called))
        self.description = check_description(self.name, description, summary)
        self.function = function
        refuse_generator(self.name, called)
        self.is_async = inspect.iscoroutinefunction(called)
        return arg_docs

    def _read_signature(
        self, function: Callable[P, R], input_model: type[BaseModel] | None, arg_docs: dict[str, str]
    ) -> None:
        """The context parameter, the input model and the input schema, from the signature."""
        # What a partial binds by keyword stays in the signature, with its value as default: it must
        # neither reach the schema (it may be a secret) nor be accepted from the model.
        bound = bound_keywords(function)
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
        # Its validator, called directly (``model_validate``'s frame does nothing more with no
        # options), unless the model's class gives its own ``model_validate``.
        own_validate = getattr(self._model.model_validate, "__func__", None) is not _MODEL_VALIDATE
        self._validate: Callable[[Any], BaseModel] = (
            self._model.model_validate if own_validate else self._model.__pydantic_validator__.validate_python
        )
        self.input_schema = json_schema(self.name, self._model)

    def _definition(self, definition: Mapping[str, Any] | None) -> ToolParam:
        param: dict[str, object] = {
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        }
        if definition is not None:
            param.update(definition_fields(self.name, definition, self._model))
            check_param(self.name, param)
        return cast("ToolParam", param)

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
        data = raw if type(raw) is dict else input_mapping(self.name, raw)  # pyright: ignore[reportUnknownVariableType]
        try:
            validated = self._validate(data)
        except pydantic.ValidationError as error:
            raise ToolInputError(validation_message(self.name, error)) from None
        if self._model_param is not None:
            return {self._model_param: validated}
        given, always = validated.__pydantic_fields_set__, self._always
        arguments: dict[str, Any] = {}  # a loop, not a comprehension: no frame of its own per call
        for field, param in self._fields.items():
            if field in given or field in always:
                arguments[param] = getattr(validated, field)
        return arguments

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        """The keyword arguments to call ``function`` with: ``arguments`` (from ``parse_input``) plus
        the context, when the function declares a ``ToolContext`` parameter."""
        if self._context_param is None:
            return dict(arguments)
        return {**arguments, self._context_param: context}

    def _kwargs_for(
        self, raw: object, call: ToolCall, context: Callable[[ToolCall], ToolContext]
    ) -> dict[str, Any]:
        """``call_kwargs(parse_input(raw), context(call))`` without its copy, and with the context made
        only when the function declares a ``ToolContext`` parameter (the runner's path for a call:
        ``_tools.execution``; not public).

        Raises:
            ToolInputError: As ``parse_input``.
        """
        arguments = self.parse_input(raw)  # a new dict: the context goes into it
        if self._context_param is not None:
            arguments[self._context_param] = context(call)
        return arguments


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


_MODEL_VALIDATE: object = cast(Any, BaseModel.model_validate).__func__
"""pydantic's own ``model_validate``: a model that does not define its own is validated directly."""


# The context parameter -------------------------------------------------------------------------


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

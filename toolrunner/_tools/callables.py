"""What ``@tool`` reads from the callable it is given (a function, a ``functools.partial``, an object
with a ``__call__`` method): its name, its docstrings, what runs when it is called, the keywords a
partial binds; and the checks of the options that do not depend on its signature."""

from __future__ import annotations

import functools
import inspect
import re
from typing import cast

from .._core.errors import ToolDefinitionError

__all__ = [
    "bound_keywords",
    "callee",
    "check_approval",
    "check_description",
    "check_name",
    "check_timeout",
    "default_name",
    "docstrings",
    "refuse_generator",
]

# What the Messages API accepts as a tool name.
_NAME = re.compile(r"[a-zA-Z0-9_-]{1,128}")


def _unwrap_partial(function: object) -> object:
    while isinstance(function, functools.partial):
        function = function.func
    return function


def bound_keywords(function: object) -> frozenset[str]:
    """The names that a ``functools.partial``, or a chain of them, binds by keyword.

    Arguments bound by position are already gone from the partial's signature.
    """
    names: set[str] = set()
    while isinstance(function, functools.partial):
        partial = cast("functools.partial[object]", function)
        names.update(partial.keywords)
        function = partial.func
    return frozenset(names)


def default_name(function: object) -> str:
    source = _unwrap_partial(function)
    return str(getattr(source, "__name__", type(source).__name__))


def check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.fullmatch(name):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolDefinitionError(
            f"The tool name {name!r} is invalid: the API accepts 1 to 128 letters, digits, '_' and '-'; "
            "pass name=... to @tool."
        )
    return name


def check_description(name: str, description: str | None, summary: str) -> str:
    text = (description if description is not None else summary).strip()
    if not text:
        raise ToolDefinitionError(
            f"The tool {name!r} has no description; write a docstring that says what it does, or pass "
            "description=... to @tool. The model reads it to decide when to call the tool."
        )
    return text


def check_timeout(name: str, timeout: float | None) -> float | None:
    if timeout is None:
        return None
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise ToolDefinitionError(
            f"The timeout {timeout!r} of tool {name!r} is invalid; pass a positive number of seconds, "
            "or None for no limit."
        )
    return float(timeout)


def callee(function: object) -> object:
    """What runs when ``function`` is called: the function under any partials, or, for a callable
    object, its class's ``__call__``."""
    function = _unwrap_partial(function)
    if inspect.isroutine(function) or inspect.isclass(function):
        return function
    return type(function).__call__


def docstrings(function: object, callee: object) -> list[object]:
    """The docstrings that describe ``function``, most preferred first."""
    source = _unwrap_partial(function)
    if callee is source:
        return [getattr(source, "__doc__", None)]
    # A callable object: __call__ says what calling it does; the class docstring fills in the rest.
    return [getattr(callee, "__doc__", None), getattr(source, "__doc__", None)]


def refuse_generator(name: str, callee: object) -> None:
    # Refused here, not at the first call: an async generator cannot be awaited, and a sync one's
    # items would only reach the model as whatever pydantic's JSON encoder makes of them.
    if inspect.isasyncgenfunction(callee) or inspect.isgeneratorfunction(callee):
        kind = "an async generator" if inspect.isasyncgenfunction(callee) else "a generator"
        raise ToolDefinitionError(
            f"The tool {name!r} is {kind} function; a tool returns its result once: collect what it "
            "yields into a list and return the list."
        )


def check_approval(name: str, requires_approval: object) -> None:
    if not isinstance(requires_approval, bool) and not callable(requires_approval):
        raise ToolDefinitionError(
            f"requires_approval of tool {name!r} must be a bool or a function of the ToolCall, not "
            f"{type(requires_approval).__name__!r}."
        )

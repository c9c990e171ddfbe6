"""The string formats pydantic writes into a tool's input schema, checked as pydantic checks them.

A ``@tool`` function's parameter typed ``datetime`` is ``{"type": "string", "format": "date-time"}``
in its schema, and the tool refuses a string pydantic cannot read as a ``datetime``. A store checks
an edited input against the schema saved with the call (``_stores.deciding.input_problems``), without the
tool: ``format_checker()`` makes it refuse the same strings, because each format's check *is*
pydantic's validation of the type that writes that format (``TypeAdapter(datetime)``), in the mode
a tool validates its input in (Python, lax). Agreement by construction, not by a second parser.

A format names a type, not every constraint on it: ``AwareDatetime`` and ``FutureDate`` write
``date-time`` and ``date`` too, and ``HttpUrl`` writes ``uri``; the store checks what the format
says (a date-time, a URL), the tool also the rest. Formats that depend on the app's machine
(``file-path``, ``directory-path``, ...) or that take any string (``path``, ``binary``,
``password``) are not
checked; nor is ``email`` (and ``name-email``) unless pydantic's e-mail support (the
``email-validator`` package) is installed where the store's check runs.

The ``pattern`` keyword is checked the same way (``with_pattern``): by pydantic's validation of a
string with that pattern, in its default regex engine (Rust's ``regex``, which a ``@tool``'s
``Field(pattern=...)`` uses), not by ``jsonschema``'s ``re.search``. They differ: in Python's
``re``, ``$`` also matches before a trailing newline, so ``"abc\n"`` fits ``^abc$`` for ``re``
and not for the tool (nor for JSON Schema's own regex dialect, ECMA-262's). A pattern the Rust
engine cannot compile (a look-around, a backreference: only a tool whose model asks for
``regex_engine="python-re"`` can have one) is checked with ``re.search``, as pydantic's Python
engine would.
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import ipaddress
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import pydantic
import pydantic_core
from pydantic_core import core_schema

__all__ = ["FORMATS", "format_checker", "with_pattern"]


def _formats() -> dict[str, Any]:
    formats: dict[str, Any] = {
        "date-time": datetime.datetime,
        "date": datetime.date,
        "time": datetime.time,
        "duration": datetime.timedelta,
        "uuid": uuid.UUID,
        "uri": pydantic.AnyUrl,
        "multi-host-uri": pydantic_core.MultiHostUrl,
        "ipv4": ipaddress.IPv4Address,
        "ipv6": ipaddress.IPv6Address,
        "ipvanyaddress": pydantic.IPvAnyAddress,
        "ipv4network": ipaddress.IPv4Network,
        "ipv6network": ipaddress.IPv6Network,
        "ipvanynetwork": pydantic.IPvAnyNetwork,
        "ipv4interface": ipaddress.IPv4Interface,
        "ipv6interface": ipaddress.IPv6Interface,
        "ipvanyinterface": pydantic.IPvAnyInterface,
        "regex": re.Pattern,
        "base64": pydantic.Base64Bytes,
        "base64url": pydantic.Base64UrlBytes,
    }
    for version in range(1, 9):  # UUID1 ... UUID8 (each pydantic version that names them)
        if hasattr(pydantic, f"UUID{version}"):
            formats[f"uuid{version}"] = getattr(pydantic, f"UUID{version}")
    if importlib.util.find_spec("email_validator") is not None:
        formats["email"] = pydantic.EmailStr
        formats["name-email"] = pydantic.NameEmail
    return formats


FORMATS: dict[str, Any] = _formats()
"""Each format checked, and the type whose pydantic validation checks it."""


def _check(adapter: pydantic.TypeAdapter[Any], instance: object) -> bool:
    if isinstance(instance, str):  # a format says nothing of other types (the schema's "type" does)
        adapter.validate_python(instance)  # raises pydantic.ValidationError, a ValueError
    return True


@functools.cache
def format_checker() -> Any:
    """A ``jsonschema.FormatChecker`` of ``FORMATS`` (and no others), made once (``jsonschema`` is
    imported when an edited input is first checked)."""
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    for name, kind in FORMATS.items():
        check: Callable[[object], bool] = functools.partial(_check, pydantic.TypeAdapter(kind))
        # RecursionError: a regex nested too deeply for Python's parser (the tool's own check raises it)
        checker.checks(name, raises=(ValueError, RecursionError))(check)
    return checker


@functools.lru_cache(maxsize=256)
def _pattern_check(pattern: str) -> Callable[[str], bool]:
    """Whether a string fits ``pattern`` as pydantic's validation of a ``@tool``'s parameter
    checks it (made once for each pattern)."""
    try:
        validator = pydantic_core.SchemaValidator(core_schema.str_schema(pattern=pattern))
    except pydantic_core.SchemaError:  # not for the Rust engine: Python's, as pydantic's "python-re"
        compiled = re.compile(pattern)
        return lambda text: compiled.search(text) is not None

    def fits(text: str) -> bool:
        try:
            validator.validate_python(text)
        except pydantic.ValidationError:
            return False
        return True

    return fits


def _pattern(validator: Any, pattern: str, instance: object, schema: object) -> Iterator[Any]:
    """The ``pattern`` keyword, checked by ``_pattern_check`` (a ``jsonschema`` keyword function)."""
    import jsonschema

    if isinstance(instance, str) and not _pattern_check(pattern)(instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


@functools.cache
def with_pattern(validator_class: Any) -> Any:
    """``validator_class`` (a ``jsonschema`` validator class) with its ``pattern`` keyword checked
    as pydantic checks it (``_pattern_check``), made once for each class."""
    validators: Any = importlib.import_module("jsonschema.validators")
    return validators.extend(validator_class, {"pattern": _pattern})

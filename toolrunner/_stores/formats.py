"""The string formats pydantic writes into a tool's input schema, checked as pydantic checks them.

A ``@tool`` function's parameter typed ``datetime`` is ``{"type": "string", "format": "date-time"}``
in its schema, and the tool refuses a string pydantic cannot read as a ``datetime``. A store checks
an edited input against the schema saved with the call (``_runs.input_problems``), without the
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
"""

from __future__ import annotations

import datetime
import functools
import importlib.util
import ipaddress
import re
import uuid
from collections.abc import Callable
from typing import Any

import pydantic
import pydantic_core

__all__ = ["FORMATS", "format_checker"]


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

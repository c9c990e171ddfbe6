"""What ``--app module:function`` (``toolrunner resume``) and ``--replay module:name``
(``toolrunner replay``) name: an object of the app's code, imported as ``python -m`` would (the
working directory first on the path), with a message that says what to give when it cannot be."""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass

from .._core.errors import ParamsError, message_of

__all__ = ["Wanted", "load_object"]


@dataclass(frozen=True, slots=True)
class Wanted:
    """What an option names, for its messages: ``option`` (``--app``), ``form``
    (``module:function``), ``command`` (``resume``: run from the app's directory), ``example``
    (``myapp.agents:resume_run``), ``what`` (``its factory``) and ``described`` (what it must be)."""

    option: str
    form: str
    command: str
    example: str
    what: str
    described: str


def load_object(spec: str, wanted: Wanted) -> object:
    """The object that ``spec`` (``module:name``, the name perhaps dotted) names.

    Raises:
        ParamsError: It is not ``module:name``, or the module or the name cannot be found or
            imported (the message names which).
    """
    option = wanted.option
    module_name, colon, name = spec.partition(":")
    if not colon or not module_name.strip() or not name.strip():
        raise ParamsError(
            f"{option} {spec!r} is not {wanted.form}; name the module and {wanted.what}, for example "
            f"{option} {wanted.example}."
        )
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and (module_name == error.name or module_name.startswith(error.name + ".")):
            raise ParamsError(
                f"{option} {spec!r}: there is no module {module_name!r} (looked in {os.getcwd()!r} and on the "
                f"Python path); run toolrunner {wanted.command} from the app's directory, or add it to PYTHONPATH."
            ) from None
        raise ParamsError(
            f"{option} {spec!r}: importing the module {module_name!r} failed: {type(error).__name__}: "
            f"{message_of(error)}."
        ) from None
    except Exception as error:
        raise ParamsError(
            f"{option} {spec!r}: importing the module {module_name!r} failed: {type(error).__name__}: "
            f"{message_of(error)}."
        ) from None
    found: object = module
    for part in name.split("."):
        if not hasattr(found, part):
            raise ParamsError(
                f"{option} {spec!r}: the module {module_name!r} has no {name!r}; give the name of {wanted.what}, "
                f"{wanted.described}."
            )
        found = getattr(found, part)
    return found

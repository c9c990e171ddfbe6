"""A faster ``__init__`` for the frozen, slotted dataclasses a turn makes (``frozen_init``).

A frozen dataclass's ``__init__`` sets each field with ``object.__setattr__(self, name, value)``,
which looks the name up again for every field. The effects, calls and usage records of a turn are
made several times a request, so they set their fields through their slots' descriptors instead,
each found once, when the class is made. The signature, the defaults (factories too), the values
and the errors for a wrong call are the dataclass's own; ``tests/core/test_frozen_init.py`` checks
that every decorated class makes instances equal to those the dataclass's own ``__init__`` makes.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar, cast

__all__ = ["frozen_init"]

T = TypeVar("T")


def frozen_init(cls: type[T]) -> type[T]:
    """Give the frozen, slotted dataclass ``cls`` an ``__init__`` that sets its fields through
    their slots' descriptors (see the module docstring); ``cls`` itself, changed.

    Raises:
        TypeError: ``cls`` is not a frozen dataclass with slots and no ``__post_init__``.
    """
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"frozen_init takes a frozen dataclass with slots=True, not {cls.__name__!r}")
    if hasattr(cls, "__post_init__"):
        raise TypeError(f"frozen_init does not run __post_init__ ({cls.__name__!r} has one)")
    namespace: dict[str, Any] = {"_new_default": _FACTORY}
    positional: list[str] = []
    keyword: list[str] = []
    body: list[str] = []
    for index, item in enumerate(dataclasses.fields(cast(Any, cls))):
        if not item.init:
            raise TypeError(f"frozen_init does not take a field with init=False ({cls.__name__}.{item.name})")
        name = item.name
        namespace[f"_set_{index}"] = getattr(cls, name).__set__
        if item.default is not dataclasses.MISSING:
            namespace[f"_default_{index}"] = item.default
            param = f"{name}=_default_{index}"
        elif item.default_factory is not dataclasses.MISSING:
            namespace[f"_factory_{index}"] = item.default_factory
            param = f"{name}=_new_default"
            body.append(f"    if {name} is _new_default:\n        {name} = _factory_{index}()")
        else:
            param = name
        (keyword if item.kw_only else positional).append(param)
        body.append(f"    _set_{index}(self, {name})")
    signature = ", ".join(["self", *positional, *(["*", *keyword] if keyword else [])])
    source = f"def __init__({signature}) -> None:\n" + "\n".join(body or ["    pass"])
    exec(source, namespace)  # code made from the class's own field names, as dataclasses does
    init = namespace["__init__"]
    init.__module__, init.__qualname__ = cls.__module__, f"{cls.__qualname__}.__init__"
    init.__doc__ = cls.__init__.__doc__
    # the dataclass's annotations, for help() and get_type_hints
    init.__annotations__ = dict(cls.__init__.__annotations__)
    setattr(cls, "__init__", init)  # noqa: B010  # a class attribute set on purpose
    return cls


class _Factory:
    """The default of a field whose default is made by a factory (each instance gets a new one)."""

    def __repr__(self) -> str:
        return "<factory>"


_FACTORY: object = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None) or _Factory()
"""The dataclass's own marker of a default made by a factory (so the signatures are equal), or ours."""

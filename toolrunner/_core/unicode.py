"""Text a request can carry: lone surrogates, which UTF-8 cannot encode, replaced.

Python strings may hold lone surrogates: ``os.listdir`` gives them for file names that are not
UTF-8 (``b"caf\\xe9.txt"`` becomes ``"caf\\udce9.txt"``), as do ``os.environ``, ``sys.argv`` and any
``decode(errors="surrogateescape")``. The SDK encodes a request as UTF-8 JSON, so one such string in
the history would make that request, and every later one, fail with ``UnicodeEncodeError``.

A store keeps such text exactly instead: ``store_json`` writes it as ``\\udcXX`` escapes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TypeVar, cast

__all__ = ["sendable", "sendable_text", "store_json"]

T = TypeVar("T")


def sendable(value: T) -> T:
    """``value`` (text, or dicts and lists holding text) with every lone surrogate replaced by U+FFFD,
    the replacement character; a surrogate pair becomes the character it stands for.

    A value without any is returned as it is, not copied: the check costs nothing for ASCII text and
    one encoding pass for other text. A value with some comes back as a copy (tuples as lists).
    """
    if isinstance(value, str):
        return value if value.isascii() else cast("T", sendable_text(value))
    if _is_sendable(value):
        return value
    return cast("T", _repaired(value))


def sendable_text(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD; ``text`` itself when it has none."""
    if _is_sendable_text(text):
        return text
    # Through UTF-16, a surrogate pair becomes the character it stands for, and a lone one U+FFFD.
    return text.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "replace")


def store_json(value: object) -> str:
    """``value`` as JSON text a store can keep as UTF-8: every column a store writes as JSON goes
    through it. A lone surrogate (a tool's input can hold one, as ``os.listdir`` gives them) is
    written as a ``\\udcXX`` escape, which reads back as the same string."""
    text = json.dumps(value, ensure_ascii=False)
    return text if sendable_text(text) is text else json.dumps(value)


def _is_sendable(value: object) -> bool:
    # One loop over a stack, with ASCII strings (nearly all) checked inline and numbers, booleans
    # and ``None`` never pushed: this runs on every reply and every result, where a call per item
    # would cost more than the check (``Any`` items, so that no ``cast`` call is made per item).
    stack: list[Any] = [value]
    while stack:
        item: Any = stack.pop()
        kind: type[Any] = type(item)  # pyright: ignore[reportUnknownVariableType]
        if kind is str:
            if not item.isascii() and not _is_sendable_text(item):
                return False
        elif kind is dict or isinstance(item, dict):
            for key, inner in item.items():  # pyright: ignore[reportUnknownVariableType]
                if type(key) is not str or not key.isascii():  # pyright: ignore[reportUnknownArgumentType]
                    stack.append(key)
                inner_kind: type[Any] = type(inner)  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
                if inner_kind is str:
                    if not inner.isascii():  # pyright: ignore[reportUnknownMemberType]
                        stack.append(inner)
                elif inner_kind not in _PLAIN:
                    stack.append(inner)
        elif kind is list or isinstance(item, list | tuple):
            stack.extend(item)  # pyright: ignore[reportUnknownArgumentType]
        elif kind not in _PLAIN and isinstance(item, str) and not _is_sendable_text(item):  # a str subclass
            return False
    return True


_PLAIN: frozenset[type] = frozenset((int, float, bool, type(None)))
"""Types that hold no text (exactly these, not subclasses: a subclass is looked at)."""


def _is_sendable_text(text: str) -> bool:
    if text.isascii():  # O(1) on CPython: a string knows whether it is ASCII
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _repaired(value: object) -> object:
    """A copy of ``value`` with its text made sendable; only called when some of it is not."""
    if isinstance(value, str):
        return sendable_text(value)
    if isinstance(value, dict):
        items = cast("dict[object, object]", value).items()
        return {_repaired(key): _repaired(item) for key, item in items}
    if isinstance(value, list | tuple):
        return [_repaired(item) for item in cast("Sequence[object]", value)]
    return value

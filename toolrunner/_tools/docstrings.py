"""Reading Google-style docstrings: a tool's description and its parameters' descriptions."""

from __future__ import annotations

import inspect
import re
from collections.abc import Iterable

__all__ = ["parse_docstring", "parse_docstrings"]

# Google-style section headers; the tool description is the text before the first one.
_SECTION = re.compile(
    r"(Args|Arguments|Parameters|Params|Keyword Args|Keyword Arguments|Other Parameters|Returns?|"
    r"Yields?|Raises|Examples?|Notes?|Warnings?|See Also|References|Todo|Attributes):\s*"
)
_ARGS_SECTIONS = {"Args", "Arguments", "Parameters", "Params", "Keyword Args", "Keyword Arguments"}
_ARG_ENTRY = re.compile(r"\*{0,2}(\w+)\s*(?:\([^)]*\))?\s*:(.*)")


def parse_docstring(docstring: object) -> tuple[str, dict[str, str]]:
    """The summary (text before the first section) and the ``Args:`` entries of a Google-style
    docstring."""
    if not isinstance(docstring, str):
        return "", {}
    lines = inspect.cleandoc(docstring).splitlines()
    summary: list[str] = []
    args: dict[str, str] = {}
    index = 0
    while index < len(lines) and not _SECTION.fullmatch(lines[index]):
        summary.append(lines[index])
        index += 1
    while index < len(lines):
        header = _SECTION.fullmatch(lines[index])
        index += 1
        body: list[str] = []
        # A section's body is indented; it ends at the next line that is not.
        while index < len(lines) and (not lines[index].strip() or lines[index][0].isspace()):
            body.append(lines[index])
            index += 1
        if header is not None and header.group(1) in _ARGS_SECTIONS:
            args.update(_parse_args(body))
    return "\n".join(summary).strip(), args


def parse_docstrings(docstrings: Iterable[object]) -> tuple[str, dict[str, str]]:
    """Several docstrings, most preferred first, read as one: the first summary that is not empty,
    and for each parameter the first ``Args:`` entry that describes it."""
    summary = ""
    args: dict[str, str] = {}
    for docstring in docstrings:
        more_summary, more_args = parse_docstring(docstring)
        summary = summary or more_summary
        args = more_args | args
    return summary, args


def _parse_args(body: list[str]) -> dict[str, str]:
    entries: dict[str, list[str]] = {}
    indent: int | None = None
    current: list[str] | None = None
    for line in body:
        if not line.strip():
            if current is not None:
                current.append("")
            continue
        width = len(line) - len(line.lstrip())
        if indent is None:
            indent = width
        entry = _ARG_ENTRY.fullmatch(line.strip()) if width <= indent else None
        if entry is not None:
            current = entries[entry.group(1)] = [entry.group(2).strip()]
        elif current is not None:
            current.append(line.strip())
    return {name: _join(parts) for name, parts in entries.items()}


def _join(parts: list[str]) -> str:
    """Continuation lines joined with spaces; blank lines kept as paragraph breaks."""
    paragraphs: list[list[str]] = [[]]
    for part in parts:
        if part:
            paragraphs[-1].append(part)
        elif paragraphs[-1]:
            paragraphs.append([])
    return "\n\n".join(" ".join(p) for p in paragraphs if p)

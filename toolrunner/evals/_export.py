"""Runs read from an export file (``read_runs``): what ``toolrunner runs show --json RUN`` prints
(an object with the run's ``summary`` and ``state``), a JSON list of those, or JSON Lines of them;
bare states too. What ``replay_runs(runs=...)`` and ``toolrunner replay --from-file`` take.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import cast

from .._core.errors import ParamsError, StateError, message_of
from .._core.state import RunState

__all__ = ["read_runs"]

_EXPECTED = (
    'expected a run as `toolrunner runs show --json RUN` prints it (an object with its "summary" and '
    '"state"), or a run\'s state'
)


def read_runs(path: str | Path) -> list[RunState]:
    """The runs of an export file (see the module docstring), in the file's order.

    Raises:
        ParamsError: The file cannot be read, or it holds something else: the message names the
            line or the entry, and what was expected.
    """
    where_file = repr(str(path))
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        why = error.strerror if isinstance(error, OSError) else "it is not UTF-8 text"
        raise ParamsError(f"cannot read the export {where_file} ({why}).") from None
    states = [_state(where_file, where, entry) for where, entry in _entries(where_file, text)]
    if not states:
        raise ParamsError(f"the export {where_file} holds no run; {_EXPECTED}.")
    return states


def _entries(path: str, text: str) -> list[tuple[str, object]]:
    """Each entry of the file, with where it is (for the messages)."""
    try:
        data: object = json.loads(text)
    except ValueError as whole:
        lines = [(number, line) for number, line in enumerate(text.splitlines(), 1) if line.strip()]
        if not lines:
            raise ParamsError(f"the export {path} is empty; {_EXPECTED}.") from None
        entries: list[tuple[str, object]] = []
        for index, (number, line) in enumerate(lines):
            try:
                entries.append((f"line {number}", json.loads(line)))
            except ValueError as error:
                if index == 0:  # not JSON Lines either: the JSON document's own error
                    raise ParamsError(f"the export {path} is not JSON: {whole}; {_EXPECTED}.") from None
                raise ParamsError(
                    f"the export {path}: line {number} is not JSON ({error}); {_EXPECTED}."
                ) from None
        return entries
    if isinstance(data, list):
        items = cast("list[object]", data)
        return [(f"entry {index} of the list", entry) for index, entry in enumerate(items)]
    return [("the object", data)]


def _state(path: str, where: str, entry: object) -> RunState:
    if not isinstance(entry, dict):
        raise ParamsError(f"the export {path}: {where} is {_kind(entry)}; {_EXPECTED}.")
    fields = cast("dict[str, object]", entry)
    data = fields["state"] if "state" in fields and "summary" in fields else fields
    try:
        state = RunState.from_dict(data)
    except StateError as error:
        raise ParamsError(f"the export {path}: {where}: {message_of(error)}") from None
    if not state.run_id:
        raise ParamsError(
            f"the export {path}: {where} has no run_id; a replay is saved under its record's id, as an "
            "exported run has it."
        )
    return state


_KINDS: dict[type, str] = {list: "list", str: "string", type(None): "null", bool: "boolean", float: "number"}


def _kind(value: object) -> str:
    name = _KINDS.get(type(value), type(value).__name__)
    return name if name == "null" else f"{'an' if name[0] in 'aeiou' else 'a'} {name}"

"""Which tools a history leaves available: its tool changes, folded, as the SDK's runner folds them.

Tools change mid-run in ``tool_addition`` / ``tool_removal`` blocks: in ``role: "system"``
messages, and in the ``tool_changes`` of a ``compaction`` block (which stands in for the system
messages of the turns it summarized). A ``tool_reference`` or a ``tool_definition`` names a tool;
other references (MCP, unknown types) and other blocks are ignored. The last change of a name
decides: a removed tool is not run (a call to it is answered like a call to an unknown tool); a
tool_addition makes a runnable tool of its name available again.

Pure functions with no I/O; ``tests/core/test_availability.py`` checks them against the SDK's
``available_tool_names`` on generated histories.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from .messages import field

__all__ = [
    "added_definitions",
    "addition",
    "available_tools",
    "last_changes",
    "pending_message",
    "removal",
    "removed_by",
    "removed_tools",
]


def addition(definition: Mapping[str, Any]) -> dict[str, Any]:
    """The ``tool_addition`` block that gives the model the tool ``definition`` (its param)."""
    return {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": dict(definition)}}


def removal(name: str) -> dict[str, Any]:
    """The ``tool_removal`` block that takes the tool ``name`` away from the model."""
    return {"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}


def pending_message(changes: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The ``role: "system"`` message that sends ``changes`` (the pending tool changes)."""
    return {"role": "system", "content": list(changes)}


def _change_blocks(messages: Iterable[object]) -> Iterator[object]:
    """The tool_addition / tool_removal candidates of ``messages``, in order."""
    # Nearly every message and block is a plain dict (the runner's own appends are): those are read
    # without field(), which this fold of every turn would call for each (``Any``: no cast per item).
    message: Any
    for message in messages:
        plain = type(message) is dict
        role = message.get("role") if plain else field(message, "role")
        if role not in ("system", "assistant"):
            continue
        content = message.get("content") if plain else field(message, "content")
        if content is None or isinstance(content, str):
            continue
        block: Any
        for block in content:
            if role == "system":
                yield block
            elif (block.get("type") if type(block) is dict else field(block, "type")) == "compaction":  # pyright: ignore[reportUnknownMemberType, reportUnknownArgumentType]
                yield from field(block, "tool_changes") or ()  # pyright: ignore[reportUnknownArgumentType]


def _changed(block: object) -> tuple[str, bool] | None:
    """The tool name a block changes and whether it is added (``None``: not a change of a named tool)."""
    kind = field(block, "type")
    if kind not in ("tool_addition", "tool_removal"):
        return None
    tool = field(block, "tool")
    tool_type = field(tool, "type")
    if tool_type == "tool_reference":
        name = field(tool, "name")
    elif tool_type == "tool_definition":
        name = field(field(tool, "definition"), "name")
    else:
        return None
    return (name, kind == "tool_addition") if isinstance(name, str) else None


def last_changes(messages: Iterable[object]) -> dict[str, bool]:
    """The last change of each tool name the history changes: ``True`` added, ``False`` removed."""
    changes: dict[str, bool] = {}
    for block in _change_blocks(messages):
        changed = _changed(block)
        if changed is not None:
            changes[changed[0]] = changed[1]
    return changes


def removed_tools(messages: Iterable[object]) -> frozenset[str]:
    """The names the history has removed (and not added again since)."""
    return removed_by(last_changes(messages))


def removed_by(changes: Mapping[str, bool]) -> frozenset[str]:
    """The names that ``last_changes``' result leaves removed."""
    return frozenset(name for name, added in changes.items() if not added)


def available_tools(messages: Iterable[object], names: Iterable[str]) -> frozenset[str]:
    """``names`` (the runnable tools) with the history's changes applied, as the SDK's
    ``available_tool_names`` gives them: an added name counts even without a tool (a call to it
    still needs one)."""
    changes = last_changes(messages)
    return frozenset(
        {name for name in names if changes.get(name, True)}
        | {name for name, added in changes.items() if added}
    )


def added_definitions(messages: Iterable[object]) -> dict[str, Mapping[str, Any]]:
    """The definitions the history's tool_addition blocks gave by value, by name, for the names
    whose last change is an addition (a resumed run registers the tools given again for them)."""
    definitions: dict[str, Mapping[str, Any]] = {}
    for block in _change_blocks(messages):
        changed = _changed(block)
        if changed is None:
            continue
        name, added = changed
        tool = field(block, "tool")
        definition = field(tool, "definition")
        if added and field(tool, "type") == "tool_definition" and isinstance(definition, Mapping):
            definitions[name] = definition  # pyright: ignore[reportUnknownArgumentType]
        else:
            definitions.pop(name, None)
    return definitions

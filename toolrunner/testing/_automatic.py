"""The automatic responder: call every offered tool once, then summarise the results; no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._replies import ScriptedReply, text_reply, tool_call, tool_reply

__all__ = ["answer_automatically", "example_for_schema", "offered_tools"]

_MAX_DEPTH = 8  # recursive schemas ($ref to itself) stop here with an empty value


def answer_automatically(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ScriptedReply:
    """The automatic mode's reply to a request with these messages and tools.

    It calls each offered client tool (one with an `input_schema`) once, all in one reply, or says
    hello in text when none is offered. When the last message answers tool calls, it calls the
    tools offered since (by a `tool_addition`) that the conversation has not called yet, or, when
    there are none, answers with a text naming each tool with its result. System messages are not
    turns of the conversation here: they only change which tools are offered.
    """
    conversation = [message for message in messages if message.get("role") != "system"]
    offered = [tool for tool in offered_tools(messages, tools) if isinstance(tool.get("input_schema"), dict)]
    results = _tool_results(conversation)
    if results is not None:
        called = {
            block.get("name")
            for message in conversation
            for block in _blocks(message)
            if block.get("type") == "tool_use"
        }
        offered = [tool for tool in offered if tool.get("name") not in called]
        if not offered:
            return text_reply("\n".join(results) or "Done.")
    if not offered:
        return text_reply("Hello from FakeMessagesAPI.automatic().")
    calls = [
        tool_call(str(tool["name"]), example_for_schema(tool["input_schema"]))  # pyright: ignore[reportArgumentType]
        for tool in offered
    ]
    return tool_reply(*calls)


def offered_tools(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool definitions offered to the model after these messages, in the order they were offered.

    Every tool of `tools` except those with `defer_loading: true`, then the `tool_addition` and
    `tool_removal` blocks of system messages (and of `compaction` blocks' `tool_changes`) in order:
    a `tool_reference` offers or withdraws a tool by name, a `tool_definition` offers a new one.
    MCP references are left alone: the fake has no MCP tools to offer.
    """
    by_name = {str(tool["name"]): tool for tool in tools if isinstance(tool.get("name"), str)}
    offered = {name: tool for name, tool in by_name.items() if tool.get("defer_loading") is not True}
    for message in messages:
        for block in _blocks(message):
            changes = [block] if message.get("role") == "system" else _compaction_changes(block)
            for change in changes:
                name = _changed_tool_name(change, by_name)
                if name is None:
                    continue
                offered.pop(name, None)
                if change["type"] == "tool_addition":
                    offered[name] = by_name[name]
    return list(offered.values())


def _changed_tool_name(change: dict[str, Any], by_name: dict[str, dict[str, Any]]) -> str | None:
    """The name of the tool a `tool_addition` / `tool_removal` block changes, if it is one the fake knows.

    A `tool_definition` adds its definition to `by_name` first.
    """
    tool: Any = change.get("tool")
    if change.get("type") not in ("tool_addition", "tool_removal") or not isinstance(tool, dict):
        return None
    tool = cast(dict[str, Any], tool)
    if tool.get("type") == "tool_definition":
        definition: Any = tool.get("definition")
        name = cast(dict[str, Any], definition).get("name") if isinstance(definition, dict) else None
        if isinstance(name, str):
            by_name[name] = cast(dict[str, Any], definition)
            return name
        return None
    name = tool.get("name") if tool.get("type") == "tool_reference" else None
    return name if isinstance(name, str) and name in by_name else None


def _compaction_changes(block: dict[str, Any]) -> list[dict[str, Any]]:
    changes: Any = block.get("tool_changes") if block.get("type") == "compaction" else None
    if not isinstance(changes, list):
        return []
    return [cast(dict[str, Any], change) for change in cast(list[Any], changes) if isinstance(change, dict)]


def _tool_results(messages: list[dict[str, Any]]) -> list[str] | None:
    """'name: result' lines when the last message answers tool calls of the one before, else None."""
    if len(messages) < 2 or messages[-1].get("role") != "user" or messages[-2].get("role") != "assistant":
        return None
    names = {
        block.get("id"): block.get("name")
        for block in _blocks(messages[-2])
        if block.get("type") == "tool_use"
    }
    lines = [
        f"{names.get(block.get('tool_use_id'), 'unknown tool')}: {_result_text(block.get('content'))}"
        for block in _blocks(messages[-1])
        if block.get("type") == "tool_result"
    ]
    return lines or None


def _blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The content blocks of a message (none when its content is a string)."""
    content: Any = message.get("content")
    if not isinstance(content, list):
        return []
    return [cast(dict[str, Any], block) for block in cast(list[Any], content) if isinstance(block, dict)]


def _result_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    blocks = _blocks({"content": content})
    return " ".join(str(block.get("text", f"[{block.get('type')}]")) for block in blocks)


def example_for_schema(schema: Mapping[str, Any], *, defs: Mapping[str, Any] | None = None) -> Any:
    """A value that satisfies a JSON schema: defaults and enums first, then the simplest valid value.

    Handles `type` (one or a list), `enum`, `const`, `default`, `$ref` into `$defs`/`definitions`,
    `anyOf`/`oneOf`/`allOf`, `minimum`, `minLength`, `minItems`, nested objects and arrays. Objects get
    every listed property, so optional ones are exercised too.
    """
    return _example(schema, defs if defs is not None else _definitions(schema), 0)


def _definitions(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    return {**schema.get("definitions", {}), **schema.get("$defs", {})}


def _example(schema: Mapping[str, Any], defs: Mapping[str, Any], depth: int) -> Any:
    given = _given_value(schema)
    if given is not _NO_VALUE:
        return given
    if depth > _MAX_DEPTH:
        return None
    resolved = _resolved(schema, defs)
    if resolved is not None:
        return _example(resolved, defs, depth + 1)
    return _typed_example(schema, _kind(schema), defs, depth)


_NO_VALUE: Any = object()


def _given_value(schema: Mapping[str, Any]) -> Any:
    """The value the schema names itself (its default, const, or first enum value), or ``_NO_VALUE``."""
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    return _NO_VALUE


def _resolved(schema: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The schema a ``$ref``, ``anyOf``/``oneOf`` (its first option that is not null) or ``allOf``
    (its parts merged) stands for; None if it has none of them."""
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1], {})
        return {**target, **{k: v for k, v in schema.items() if k != "$ref"}}
    for key in ("anyOf", "oneOf"):
        options = cast(list[Mapping[str, Any]], schema.get(key) or [])
        if options:
            return next((option for option in options if option.get("type") != "null"), options[0])
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in cast(list[Mapping[str, Any]], schema["allOf"]):
            merged.update(part)
        return merged
    return None


def _kind(schema: Mapping[str, Any]) -> Any:
    """The schema's type; of a list of types, the first that is not null."""
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in cast(list[str], kind) if k != "null"]
        kind = kinds[0] if kinds else "null"
    return kind


def _typed_example(schema: Mapping[str, Any], kind: Any, defs: Mapping[str, Any], depth: int) -> Any:
    """The simplest value of type ``kind`` that the schema's bounds allow."""
    if kind == "object" or (kind is None and "properties" in schema):
        properties = cast(Mapping[str, Mapping[str, Any]], schema.get("properties", {}))
        return {name: _example(sub, defs, depth + 1) for name, sub in properties.items()}
    if kind == "array":
        items = schema.get("items")
        count = max(1, int(schema.get("minItems", 1)))
        if not isinstance(items, dict):
            return []
        return [_example(cast(Mapping[str, Any], items), defs, depth + 1) for _ in range(count)]
    if kind == "string":
        return "example".ljust(int(schema.get("minLength", 0)), "x")
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum", 0))
        value = max(1, low + (1 if "exclusiveMinimum" in schema else 0))
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return True
    return None

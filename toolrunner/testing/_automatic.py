"""The automatic responder: call every offered tool once, then summarise the results; no I/O."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from ._replies import ScriptedReply, text_reply, tool_call, tool_reply

__all__ = ["answer_automatically", "example_for_schema"]

_MAX_DEPTH = 8  # recursive schemas ($ref to itself) stop here with an empty value


def answer_automatically(messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ScriptedReply:
    """The automatic mode's reply to a request with these messages and tools.

    When the last message answers tool calls, the reply is a text naming each tool with its result;
    otherwise it calls each client tool (a tool with an `input_schema`) once, all in one reply, or
    says hello in text when no client tool is offered.
    """
    results = _tool_results(messages)
    if results is not None:
        return text_reply("\n".join(results) or "Done.")
    client_tools = [tool for tool in tools if isinstance(tool.get("input_schema"), dict)]
    if not client_tools:
        return text_reply("Hello from FakeMessagesAPI.automatic().")
    calls = [
        tool_call(str(tool["name"]), example_for_schema(tool["input_schema"]))  # pyright: ignore[reportArgumentType]
        for tool in client_tools
    ]
    return tool_reply(*calls)


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
    if "default" in schema:
        return schema["default"]
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    if depth > _MAX_DEPTH:
        return None
    ref = schema.get("$ref")
    if isinstance(ref, str):
        target = defs.get(ref.rsplit("/", 1)[-1], {})
        return _example({**target, **{k: v for k, v in schema.items() if k != "$ref"}}, defs, depth + 1)
    for key in ("anyOf", "oneOf"):
        options = cast(list[Mapping[str, Any]], schema.get(key) or [])
        if options:
            chosen = next((option for option in options if option.get("type") != "null"), options[0])
            return _example(chosen, defs, depth + 1)
    if schema.get("allOf"):
        merged: dict[str, Any] = {}
        for part in cast(list[Mapping[str, Any]], schema["allOf"]):
            merged.update(part)
        return _example(merged, defs, depth + 1)
    kind = schema.get("type")
    if isinstance(kind, list):
        kinds = [k for k in cast(list[str], kind) if k != "null"]
        kind = kinds[0] if kinds else "null"
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

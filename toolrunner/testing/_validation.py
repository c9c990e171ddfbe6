"""Request checks the real Messages API makes, with its wording; pure functions, no I/O.

Like the service, consecutive messages with the same role are merged into one turn before the
tool checks, so `messages.N` in those messages counts merged turns (the recorded service answer in
`missing_assistant_turn_400.json` says `messages.0.content.1` for the second of two user messages).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

__all__ = ["find_invalid_request"]

_ROLES = ("user", "assistant")


def find_invalid_request(body: Mapping[str, Any]) -> str | None:
    """The service's error message for the first problem found in a Messages request body, or None."""
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return f"{name}: Field required"
    messages = body["messages"]
    if not isinstance(messages, list):
        return "messages: Input should be a valid list"
    messages = cast(list[Any], messages)
    if not messages:
        return "messages: at least one message is required"
    turns: list[tuple[str, list[Any]]] = []
    last = len(messages) - 1
    for index, message in enumerate(messages):
        if not isinstance(message, dict):
            return f"messages.{index}: Input should be a valid dictionary"
        message = cast(dict[str, Any], message)
        role = message.get("role")
        if role not in _ROLES:
            return f"messages.{index}.role: Input should be 'user' or 'assistant'"
        content = message.get("content")
        if isinstance(content, str):
            blocks: list[Any] = [{"type": "text", "text": content}] if content else []
        elif isinstance(content, list):
            blocks = cast(list[Any], content)
        else:
            return f"messages.{index}.content: Input should be a valid list"
        if not blocks and not (index == last and role == "assistant"):
            return f"messages.{index}: all messages must have non-empty content except for the optional final assistant message"
        if turns and turns[-1][0] == role:
            turns[-1][1].extend(blocks)
        else:
            turns.append((role, list(blocks)))
    if turns[0][0] != "user":
        return 'messages: first message must use the "user" role'
    return _find_unpaired_tool_blocks(turns)


def _find_unpaired_tool_blocks(turns: list[tuple[str, list[Any]]]) -> str | None:
    asked: list[str] = []  # tool_use ids of the previous assistant turn, in order
    for index, (role, blocks) in enumerate(turns):
        if role == "assistant":
            asked = [_field(block, "id") for block in blocks if _field(block, "type") == "tool_use"]
            if asked and index == len(turns) - 1:
                return _missing_results(index, asked)
            continue
        answered: set[str] = set()
        for position, block in enumerate(blocks):
            if _field(block, "type") != "tool_result":
                continue
            tool_use_id = _field(block, "tool_use_id")
            if tool_use_id not in asked:
                return (
                    f"messages.{index}.content.{position}: unexpected `tool_use_id` found in `tool_result` "
                    f"blocks: {tool_use_id}. Each `tool_result` block must have a corresponding `tool_use` "
                    "block in the previous message."
                )
            answered.add(tool_use_id)
        missing = [tool_use_id for tool_use_id in asked if tool_use_id not in answered]
        if missing:
            return _missing_results(index - 1, missing)
        leading = 0
        while leading < len(blocks) and _field(blocks[leading], "type") == "tool_result":
            leading += 1
        if leading < len(asked):
            return (
                f"messages.{index}: Did not find {len(asked)} `tool_result` block(s) at the beginning of this "
                "message. Messages following `tool_use` blocks must begin with a matching number of "
                "`tool_result` blocks."
            )
        asked = []
    return None


def _missing_results(index: int, ids: list[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def _field(block: Any, name: str) -> Any:
    return cast(dict[str, Any], block).get(name) if isinstance(block, dict) else None

"""Request checks the real Messages API makes, with its wording; pure functions, no I/O.

Like the service, consecutive messages with the same role are merged into one turn before the
tool checks, so `messages.N` in those messages counts merged turns (the recorded service answer in
`missing_assistant_turn_400.json` says `messages.0.content.1` for the second of two user messages).

`role: "system"` messages (mid-conversation system messages, and the `tool_addition` /
`tool_removal` blocks of mid-conversation tool changes) follow the service's documented rules
(https://platform.claude.com/docs/en/build-with-claude/mid-conversation-system-messages, "Limitations"):
a run of consecutive system messages is one section that must follow a user message or an
assistant message ending in a server tool result, and must precede an assistant message or end
the array; it is never first. Their errors count positions in the array as sent, not merged turns,
as the service's answers quoted below do. A section counts as one turn in the tool checks.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, cast

from ._caching import find_invalid_breakpoints

__all__ = ["find_invalid_request"]

_ROLES = ("user", "assistant", "system")
_SYSTEM_BLOCKS = ("text", "tool_addition", "tool_removal")

# The service's answers for misplaced and malformed system messages, quoted from 400s that
# third-party emulators of the API recorded from it (claude-opus-5-5, October 2026); every
# placement message ends with this note.
_DIRECTIVE_NOTE = "; the directive-only form (content: [] with output_config) is accepted at any position"
_FIRST = "use the top-level 'system' parameter for the initial system prompt" + _DIRECTIVE_NOTE
_MUST_FOLLOW = (
    "role 'system' must follow a 'user' message or an 'assistant' message ending in a server tool result"
    + _DIRECTIVE_NOTE
)
_MUST_PRECEDE = "role 'system' must precede an 'assistant' message or end the array" + _DIRECTIVE_NOTE


def find_invalid_request(body: Mapping[str, Any]) -> str | None:
    """The service's error message for the first problem found in a Messages request body, or None."""
    problem = _find_malformed_body(body)
    if problem is not None:
        return problem
    messages = cast(list[Any], body["messages"])
    turns: list[tuple[str, list[Any]]] = []
    known_tools = _declared_tool_names(body.get("tools"))
    last = _last_conversation_index(messages)
    for index, message in enumerate(messages):
        read = _read_message(index, message, index == last, known_tools)
        if isinstance(read, str):
            return read
        role, blocks = read
        if role != "system":
            known_tools |= _compacted_tool_definitions(blocks)
        _add_to_turns(turns, role, blocks)
    # Every message is a dict with a role by now.
    problem = _find_misplaced_system_section(cast(list[dict[str, Any]], messages))
    if problem is not None:
        return problem
    conversation = [turn for turn in turns if turn[0] != "system"]
    if not conversation or (conversation[0][0] != "user" and not _starts_with_compaction(conversation[0])):
        return 'messages: first message must use the "user" role'
    return _find_unpaired_tool_blocks(turns) or find_invalid_breakpoints(body)


def _find_malformed_body(body: Mapping[str, Any]) -> str | None:
    """A required field missing, or ``messages`` not a list of at least one message."""
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return f"{name}: Field required"
    messages = body["messages"]
    if not isinstance(messages, list):
        return "messages: Input should be a valid list"
    if not messages:
        return "messages: at least one message is required"
    return None


def _read_message(
    index: int, message: object, is_last: bool, known_tools: set[str]
) -> tuple[str, list[Any]] | str:
    """A message's role and content blocks (none for a system message), or the problem with it."""
    if not isinstance(message, dict):
        return f"messages.{index}: Input should be a valid dictionary"
    message = cast(dict[str, Any], message)
    role = message.get("role")
    if role not in _ROLES:
        # pydantic's wording for a literal; the service's own for this case is not recorded.
        return f"messages.{index}.role: Input should be 'user', 'assistant' or 'system'"
    if role == "system":
        return _find_invalid_system_message(index, message, known_tools) or ("system", [])
    content = message.get("content")
    if isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}] if content else []
    elif isinstance(content, list):
        blocks = cast(list[Any], content)
    else:
        return f"messages.{index}.content: Input should be a valid list"
    # Lenient where the service's rule is not known: a trailing system message does not stop
    # the assistant message before it from being "the final assistant message".
    if not blocks and not (is_last and role == "assistant"):
        return f"messages.{index}: all messages must have non-empty content except for the optional final assistant message"
    if _has_empty_text(blocks):
        return "messages: text content blocks must be non-empty"
    return _find_invalid_tool_use_id(index, blocks) or (str(role), blocks)


def _add_to_turns(turns: list[tuple[str, list[Any]]], role: str, blocks: list[Any]) -> None:
    """Consecutive messages of one role make one turn; a run of system messages, one section."""
    if turns and turns[-1][0] == role:
        turns[-1][1].extend(blocks)
    else:
        turns.append((role, list(blocks)))


def _has_empty_text(blocks: list[Any]) -> bool:
    """Whether a text block is empty, in the content or in a tool_result's content (the service
    refuses both: `messages: text content blocks must be non-empty`)."""
    for block in blocks:
        if _field(block, "type") == "text" and _field(block, "text") == "":
            return True
        inner = _field(block, "content") if _field(block, "type") == "tool_result" else None
        if isinstance(inner, list) and _has_empty_text(cast(list[Any], inner)):
            return True
    return False


def _starts_with_compaction(turn: tuple[str, list[Any]]) -> bool:
    """Whether a turn is an assistant turn that opens with a ``compaction`` block: the service takes
    a history that goes on from a compaction (the reply to a compaction request, or to one paused
    after server-side compaction), as the SDK's runner and toolrunner send it after compacting."""
    role, blocks = turn
    return role == "assistant" and bool(blocks) and _field(blocks[0], "type") == "compaction"


# -- system messages ------------------------------------------------------------------------------


def _find_invalid_system_message(index: int, message: dict[str, Any], known_tools: set[str]) -> str | None:
    """What is wrong with the content of one system message; adds the tools it defines to `known_tools`."""
    content = message.get("content")
    if content is None or isinstance(content, str):
        blocks: list[Any] = [{"type": "text", "text": content}] if content else []
    elif isinstance(content, list):
        blocks = cast(list[Any], content)
    else:
        return f"messages.{index}.content: Input should be a valid list"
    if not blocks:
        # The directive-only form: no content, only per-turn `output_config` (the SDK's
        # BetaSystemMessageParam: "a message with neither content nor output_config fields is
        # rejected"). Lenient: any non-empty output_config object makes it one.
        if _is_directive_only(message):
            return None
        return f"messages.{index}: system content must contain at least one block"
    for position, block in enumerate(blocks):
        kind = _field(block, "type")
        if kind not in _SYSTEM_BLOCKS:
            return (
                f"messages.{index}: role 'system' supports text, tool_addition, and tool_removal blocks only"
            )
        if kind == "text" and not _field(block, "text"):
            return "messages: text content blocks must be non-empty"
        if kind in ("tool_addition", "tool_removal"):
            problem = _find_unknown_tool_reference(index, position, block, known_tools)
            if problem is not None:
                return problem
    return None


def _find_unknown_tool_reference(index: int, position: int, block: Any, known_tools: set[str]) -> str | None:
    """A `tool_reference` must name a tool of `tools` or one an earlier `tool_definition` defined.

    The docs say "Referencing a name that is not declared in `tools` returns a 400 error"; the
    SDK's `BetaToolChangeToolReferenceParam` adds tools defined by an earlier `tool_addition`
    (the inline-tools beta). The service's wording for this error is not known, so the message is
    the fake's own. MCP references and unknown kinds are accepted: the fake cannot check them.
    """
    tool = _field(block, "tool")
    kind = _field(tool, "type")
    if kind == "tool_definition":
        name = _field(_field(tool, "definition"), "name")
        if isinstance(name, str):
            known_tools.add(name)
        return None
    name = _field(tool, "name")
    if kind != "tool_reference" or not isinstance(name, str) or name in known_tools:
        return None
    return (
        f"messages.{index}.content.{position}.tool: {_field(block, 'type')} names {name!r}, which is "
        "neither declared in `tools` nor defined by an earlier `tool_addition`; declare it in `tools` "
        "(`defer_loading: true` holds it back until a `tool_addition`) or define it in an earlier one."
    )


def _find_misplaced_system_section(messages: list[dict[str, Any]]) -> str | None:
    """Where a run of consecutive system messages stands against the service's placement rule.

    Docs: "Consecutive system messages are accepted and treated as a single system section, which
    follows the same placement rule as a whole." The service names the section's first message
    when what precedes it is wrong and its last when what follows it is wrong (checked in that
    order). A section of directive-only messages only may stand anywhere.
    """
    index = 0
    while index < len(messages):
        if messages[index].get("role") != "system":
            index += 1
            continue
        first = index
        while index < len(messages) and messages[index].get("role") == "system":
            index += 1
        if all(_is_directive_only(message) for message in messages[first:index]):
            continue
        if first == 0:
            return f"messages.0: {_FIRST}"
        before = messages[first - 1]
        if before.get("role") != "user" and not _ends_in_server_tool_result(before):
            return f"messages.{first}: {_MUST_FOLLOW}"
        if index < len(messages) and messages[index].get("role") != "assistant":
            return f"messages.{index - 1}: {_MUST_PRECEDE}"
    return None


def _ends_in_server_tool_result(message: dict[str, Any]) -> bool:
    """Whether an assistant message's last block is a server tool's result (`web_search_tool_result`, ...)."""
    content = message.get("content")
    if not isinstance(content, list) or not content:
        return False
    kind = _field(cast(list[Any], content)[-1], "type")
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"


def _is_directive_only(message: dict[str, Any]) -> bool:
    content = message.get("content")
    config = message.get("output_config")
    return not content and isinstance(config, dict) and len(cast(dict[str, Any], config)) > 0


def _declared_tool_names(tools: Any) -> set[str]:
    if not isinstance(tools, list):
        return set()
    names = (_field(tool, "name") for tool in cast(list[Any], tools))
    return {name for name in names if isinstance(name, str)}


def _compacted_tool_definitions(blocks: list[Any]) -> set[str]:
    """Tools defined by value in the `tool_changes` of `compaction` blocks, which stand for system messages."""
    names: set[str] = set()
    for block in blocks:
        changes = _field(block, "tool_changes") if _field(block, "type") == "compaction" else None
        for change in cast(list[Any], changes) if isinstance(changes, list) else []:
            tool = _field(change, "tool")
            name = _field(_field(tool, "definition"), "name")
            if _field(tool, "type") == "tool_definition" and isinstance(name, str):
                names.add(name)
    return names


def _last_conversation_index(messages: list[Any]) -> int:
    """The index of the last message that is not a system message (or -1)."""
    for index in range(len(messages) - 1, -1, -1):
        if _field(messages[index], "role") != "system":
            return index
    return -1


# -- tool_use / tool_result pairing ---------------------------------------------------------------


_TOOL_USE_ID = re.compile(r"[a-zA-Z0-9_-]+")


def _find_invalid_tool_use_id(index: int, blocks: list[Any]) -> str | None:
    """The service checks each tool_use id against a pattern (pydantic's wording for a pattern)."""
    for position, block in enumerate(blocks):
        if _field(block, "type") == "tool_use":
            tool_use_id = _field(block, "id")
            if not isinstance(tool_use_id, str) or not _TOOL_USE_ID.fullmatch(tool_use_id):
                return (
                    f"messages.{index}.content.{position}.tool_use.id: String should match pattern "
                    "'^[a-zA-Z0-9_-]+$'"
                )
    return None


def _find_unpaired_tool_blocks(turns: list[tuple[str, list[Any]]]) -> str | None:
    asked: list[str] = []  # tool_use ids of the last assistant turn, in order, until answered
    asked_at = 0
    for index, (role, blocks) in enumerate(turns):
        if role == "system":
            continue  # placement keeps system sections from standing between tool_use and tool_result
        if role == "assistant":
            if asked:
                return _missing_results(asked_at, asked)
            asked = [_field(block, "id") for block in blocks if _field(block, "type") == "tool_use"]
            asked_at = index
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
            if tool_use_id in answered:
                return (
                    f"messages.{index}.content.{position}: each `tool_use` must have a single result. Found "
                    f"multiple `tool_result` blocks with id: {tool_use_id}"
                )
            answered.add(tool_use_id)
        missing = [tool_use_id for tool_use_id in asked if tool_use_id not in answered]
        if missing:
            return _missing_results(asked_at, missing)
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
    if asked:
        return _missing_results(asked_at, asked)
    return None


def _missing_results(index: int, ids: list[str]) -> str:
    return (
        f"messages.{index}: `tool_use` ids were found without `tool_result` blocks immediately after: "
        f"{', '.join(ids)}. Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def _field(block: Any, name: str) -> Any:
    return cast(dict[str, Any], block).get(name) if isinstance(block, dict) else None

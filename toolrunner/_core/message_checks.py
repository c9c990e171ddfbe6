"""Checking messages as the service would, before they are sent: a reply the history is to take
(``check_reply``), a history (``check_history``), a system message where it stands
(``check_system_message``). Pure functions, no I/O; reading messages is ``_core.messages``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from .errors import HistoryError, MalformedReplyError, UnansweredToolUseError
from .messages import (
    REPLY_TYPES,
    TOOL_ID_PATTERN,
    client_tool_calls,
    content_blocks,
    field,
    preview,
    tool_result_ids,
)
from .types import ToolCall

__all__ = ["check_history", "check_reply", "check_system_message"]


def _duplicate(ids: Sequence[str]) -> str | None:
    seen: set[str] = set()
    for tool_use_id in ids:
        if tool_use_id in seen:
            return tool_use_id
        seen.add(tool_use_id)
    return None


def _malformed_id(ids: Sequence[object]) -> object | None:
    return next((tool_use_id for tool_use_id in ids if not _is_tool_id(tool_use_id)), None)


def _is_tool_id(tool_use_id: object) -> bool:
    return isinstance(tool_use_id, str) and TOOL_ID_PATTERN.fullmatch(tool_use_id) is not None


def check_reply(reply: object) -> None:
    """Refuse a reply the history must not take: what is not a whole assistant message (a proxy's
    page answered with a 200, say), or a message that calls one tool_use id twice, which the
    service would never accept back.

    Raises:
        MalformedReplyError: Nothing of the reply is kept; the request can be sent again.
    """
    if not (
        isinstance(reply, REPLY_TYPES)
        and getattr(reply, "role", None) == "assistant"
        and isinstance(getattr(reply, "content", None), list)
        and hasattr(reply, "stop_reason")
    ):
        raise MalformedReplyError(
            f"the service answered with something that is not a message ({preview(reply)}); nothing was "
            "appended, and iterating the runner again sends the same request again."
        )
    ids: list[str] = []  # a loop, not a comprehension: no frame of its own for every reply
    for block in reply.content:
        if block.type == "tool_use":
            ids.append(block.id)
    if not ids:
        return
    if len(ids) == 1:  # the common case, checked inline
        only = ids[0]
        if isinstance(only, str) and TOOL_ID_PATTERN.fullmatch(only) is not None:  # pyright: ignore[reportUnnecessaryIsInstance]  # what the service sent
            return
    duplicate = _duplicate(ids)
    malformed = _malformed_id(ids)
    if duplicate is not None or malformed is not None:
        problem = (
            f"two tool_use blocks with the id {duplicate!r}"
            if duplicate is not None
            else f"a tool_use id the service does not accept ({malformed!r}; ids match {TOOL_ID_PATTERN.pattern})"
        )
        raise MalformedReplyError(
            f"the reply has {problem}, so the service would reject it if it were sent back; nothing was run or "
            "appended, and iterating the runner again sends the same request again."
        )


def check_history(messages: Sequence[object], start: int = 0, *, open_end: bool = False) -> None:
    """Check a history from index ``start`` on, as the service would, before it is sent.

    With ``open_end``, the history is one the loop body is still writing (steering): the client
    tool_use blocks of its last message may wait for their results (the run answers them, or the
    body pushes them next). Everything else is checked as for sending, so a steered history that
    can never be sent is refused when it is made, and nothing of it is kept.

    Raises ``UnansweredToolUseError`` if an assistant message has a client tool_use that the
    message after it does not answer (the last message has none after it), and ``HistoryError``
    if a user message has a tool_result for no tool_use of the message before it or after another
    block, if a message's content is empty (only a final assistant message may be) or holds an
    empty text block, if one message calls a tool_use id twice or answers one twice, if the history is empty, or if it
    starts with an assistant message (other than one that goes on from a compaction). The runner
    checks only what changed since its last check, so a long history adds nothing to a request's
    cost. ``toolrunner.testing``'s fake refuses the same histories (``_validation.py``).
    """
    if not messages:
        raise HistoryError(
            "the history is empty, and the service would reject a request without messages with a 400; give "
            "messages=[{'role': 'user', 'content': '...'}]."
        )
    if start <= 0:
        _check_first_message(messages)
    for index in range(max(start, 0), len(messages)):
        if field(messages[index], "role") == "system":
            check_system_message(messages, index)
        else:
            _check_message(messages, index, open_end=open_end)


def _check_message(messages: Sequence[object], index: int, *, open_end: bool) -> None:
    """Check the user or assistant message at ``index``: its content, its calls, its results."""
    message = messages[index]
    last = index == len(messages) - 1
    if not field(message, "content") and not (last and field(message, "role") == "assistant"):
        raise HistoryError(
            f"messages[{index}] has empty content; the service accepts that only for a final assistant "
            "message and would reject this history with a 400. Remove that message or give it content."
        )
    _check_text_blocks(index, content_blocks(message))
    calls = client_tool_calls(message)
    if calls:
        _check_call_ids(index, [call.id for call in calls])
        if not (open_end and last):
            _check_answered(messages, index, calls)
    results = tool_result_ids(message)
    if results:
        _check_results(messages, index, results)


def _check_call_ids(index: int, ids: Sequence[str]) -> None:
    """The tool_use ids of the message at ``index`` are each used once, and the service takes them."""
    duplicate = _duplicate(ids)
    if duplicate is not None:
        raise HistoryError(
            f"messages[{index}] has two tool_use blocks with the id {duplicate!r}; the service would "
            "reject this history with a 400. Give each tool_use its own id."
        )
    malformed = _malformed_id(ids)
    if malformed is not None:
        raise HistoryError(
            f"messages[{index}] has a tool_use id the service does not accept ({malformed!r}; ids match "
            f"{TOOL_ID_PATTERN.pattern}); it would reject this history with a 400. Fix the id with "
            "toolrunner.sanitize_tool_id(), in the tool_use and in its tool_result."
        )


def _check_answered(messages: Sequence[object], index: int, calls: Sequence[ToolCall]) -> None:
    """The message after the one at ``index`` answers each of its ``calls``."""
    last = len(messages) - 1
    answered = tool_result_ids(messages[index + 1]) if index < last else set[str]()
    missing = [call.id for call in calls if call.id not in answered]
    if missing:
        where = f"messages[{index + 1}] does not answer" if index < last else "no message answers"
        raise UnansweredToolUseError(
            f"messages[{index}] has tool_use block(s) {missing!r} that {where}; the service would reject "
            "this history with a 400. Follow that assistant message with a user message that starts with "
            "a tool_result for each of those ids, or remove the tool_use blocks. For the latest reply, "
            "`await runner.generate_tool_response()` gives the results; the calls of a reply that stopped "
            "for another reason than tool_use (max_tokens may have cut an input) are never run, so answer "
            'them yourself, for example {"type": "tool_result", "tool_use_id": ..., "is_error": True, '
            '"content": "The input was cut off; call the tool again."}.'
        )


def _check_results(messages: Sequence[object], index: int, results: set[str]) -> None:
    """The message at ``index`` answers the tool_use ids ``results``: first in it, each once, each
    a call of the message before it."""
    blocks = content_blocks(messages[index])
    _check_results_first(index, blocks)
    twice = _duplicate(
        [field(block, "tool_use_id") for block in blocks if field(block, "type") == "tool_result"]
    )
    if twice is not None:
        raise HistoryError(
            f"messages[{index}] has two tool_result blocks for {twice!r}; the service takes a single "
            "result for each tool_use and would reject this history with a 400. Keep one of them."
        )
    asked = {call.id for call in client_tool_calls(messages[index - 1])} if index > 0 else set[str]()
    stray = sorted(results - asked)
    if stray:
        raise HistoryError(
            f"messages[{index}] has tool_result block(s) for {stray!r}, but "
            + (
                f"messages[{index - 1}] has no tool_use with those ids"
                if index > 0
                else "no message comes before it"
            )
            + "; the service would reject this history with a 400. Put each tool_result right after the "
            "assistant message whose tool_use it answers, or remove it."
        )


def _check_first_message(messages: Sequence[object]) -> None:
    """The conversation starts with a user message, or goes on from a compaction (an assistant
    message that opens with a ``compaction`` block, as a compaction leaves the history)."""
    for index, message in enumerate(messages):
        role = field(message, "role")
        if role == "system":
            continue  # a system message at the start is refused by check_system_message
        blocks = content_blocks(message)
        if role == "user" or (role == "assistant" and blocks and field(blocks[0], "type") == "compaction"):
            return
        raise HistoryError(
            f"messages[{index}] is the first message and has the role {role!r}; the service takes a history "
            "that starts with a user message and would reject this one with a 400. Start with the user's "
            "message (an assistant's text can be quoted in it)."
        )


def _check_text_blocks(index: int, blocks: Sequence[object]) -> None:
    """No text block is empty, at the top level of a message or in a tool_result's content."""
    for position, block in enumerate(blocks):
        kind = field(block, "type")
        if kind == "text" and field(block, "text") == "":
            raise HistoryError(
                f"messages[{index}].content[{position}] is an empty text block, which the service rejects with a "
                "400; remove the block or give it text."
            )
        if kind == "tool_result":
            inner = field(block, "content")
            if isinstance(inner, list | tuple):
                for item in cast("Sequence[object]", inner):
                    if field(item, "type") == "text" and field(item, "text") == "":
                        raise HistoryError(
                            f"messages[{index}].content[{position}] is a tool_result with an empty text block, "
                            "which the service rejects with a 400; remove that block or give it text."
                        )


def _check_results_first(index: int, blocks: Sequence[object]) -> None:
    """In the message that answers tool calls, the tool_result blocks come first (invariant 1 of
    docs/reliability.md): the service rejects one after another block."""
    other: object = None  # the type of the first block that is not a tool_result
    seen = False
    for block in blocks:
        kind = field(block, "type")
        if kind != "tool_result":
            if not seen:
                seen, other = True, kind
        elif seen:
            raise HistoryError(
                f"messages[{index}] has a tool_result after a {other!r} block; the service takes the tool_result "
                "blocks first in the message that answers tool calls and would reject this history with a 400. "
                "Put the tool_result blocks first, then the other blocks."
            )


def check_system_message(messages: Sequence[object], index: int) -> None:
    """Check a ``role: "system"`` message where it stands, by the service's documented rules: a run
    of system messages is one section that is never first, follows a user message (or an assistant
    message ending in a server tool's result), and precedes an assistant message or ends the
    history; its content is text, tool_addition and tool_removal blocks. A directive-only message
    (no content, only ``output_config``) may stand anywhere.

    Raises:
        HistoryError: The service would reject the history with a 400; the message says why.
    """
    message = messages[index]
    content = field(message, "content")
    if not content:
        if field(message, "output_config"):
            return
        raise HistoryError(
            f"messages[{index}] is a system message with no content; give it text, tool_addition or tool_removal "
            "blocks (or only an output_config), or remove it."
        )
    if not isinstance(content, str):
        for block in cast("Sequence[object]", content):
            kind = field(block, "type")
            if kind not in ("text", "tool_addition", "tool_removal"):
                raise HistoryError(
                    f"messages[{index}] is a system message with a {kind!r} block; system messages hold text, "
                    "tool_addition and tool_removal blocks only. Move that block to a user message."
                )
    if index == 0 or all(field(m, "role") == "system" for m in messages[:index]):
        raise HistoryError(
            f"messages[{index}] is a system message at the start of the history, which the service rejects; pass "
            "the initial system prompt as the system= param instead."
        )
    before = messages[index - 1]
    if field(before, "role") == "assistant" and not _ends_in_server_tool_result(before):
        raise HistoryError(
            f"messages[{index}] is a system message right after an assistant message, which the service rejects; "
            "put it after a user message (the runner sends its tool changes after the tool results)."
        )
    if index + 1 < len(messages) and field(messages[index + 1], "role") == "user":
        raise HistoryError(
            f"messages[{index}] is a system message followed by a user message, which the service rejects: a system "
            "message precedes an assistant message or ends the history. Put it after that user message."
        )


def _ends_in_server_tool_result(message: object) -> bool:
    blocks = content_blocks(message)
    kind = field(blocks[-1], "type") if blocks else None
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"

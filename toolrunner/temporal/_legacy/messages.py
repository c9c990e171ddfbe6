# FROZEN as of commit 8cff606: toolrunner/_core/messages.py, less what the legacy body never reaches.
# Never edit: see ``_legacy/__init__.py``.
"""Reading, checking and keeping messages: pure functions with no I/O.

Messages may hold content blocks as dicts (what users write) or as SDK models (what the SDK
returns and ``Message.to_param()`` keeps); ``field()`` reads either. The history keeps replies as
plain data (``reply_param``), dumped once, the way the SDK dumps them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from anthropic.types import Message
from anthropic.types.beta import BetaMessage
from pydantic import BaseModel

from .errors import HistoryError, UnansweredToolUseError
from .log import WARNING, log
from .types import Reply, ToolCall
from .unicode import sendable

__all__ = [
    "TOOL_ID_PATTERN",
    "check_history",
    "check_system_message",
    "client_tool_calls",
    "field",
    "reply_param",
    "tool_result_ids",
]


TOOL_ID_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,128}")
"""What the service accepts as a ``tool_use`` id (use with ``fullmatch``)."""


def field(item: object, name: str) -> Any:
    """Read ``name`` from a dict or from an SDK model; ``None`` when absent."""
    # The exact type first: nearly every item is a plain dict, and an ABC check costs more.
    if type(item) is dict or isinstance(item, Mapping):
        return cast("Mapping[str, Any]", item).get(name)
    return getattr(item, name, None)


def _blocks(message: object) -> Sequence[object]:
    content = field(message, "content")
    if isinstance(content, str) or content is None:
        return ()
    return content  # type: ignore[no-any-return]


def client_tool_calls(message: object) -> tuple[ToolCall, ...]:
    """The client ``tool_use`` blocks of a message, in order.

    Server tool calls (``server_tool_use``, ``mcp_tool_use``, ...) are the service's to answer and
    are not included. An input holding lone surrogates has them as U+FFFD, as the history and a
    saved reply keep it (``reply_param``): a call is the same call live, resumed and in a store.
    """
    if isinstance(message, Message | BetaMessage):  # a reply: typed blocks, read without field()
        return tuple(
            ToolCall(
                id=block.id,
                name=block.name,
                input=sendable(block.input),
                toolset_name=getattr(block, "toolset_name", None),
            )
            for block in message.content
            if block.type == "tool_use"
        )
    if field(message, "role") != "assistant":
        return ()
    return tuple(
        ToolCall(
            id=field(block, "id"),
            name=field(block, "name"),
            input=sendable(field(block, "input")),
            toolset_name=field(block, "toolset_name"),
        )
        for block in _blocks(message)
        if field(block, "type") == "tool_use"
    )


def tool_result_ids(message: object) -> set[str]:
    """The tool_use ids that a (user) message answers with tool_result blocks."""
    if field(message, "role") != "user":
        return set()
    return {
        field(block, "tool_use_id") for block in _blocks(message) if field(block, "type") == "tool_result"
    }


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
    empty text block, if one message calls a tool_use id twice, if the history is empty, or if it
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
    last = len(messages) - 1
    for index in range(max(start, 0), len(messages)):
        message = messages[index]
        if field(message, "role") == "system":
            check_system_message(messages, index)
            continue
        content = field(message, "content")
        if not content and not (index == last and field(message, "role") == "assistant"):
            raise HistoryError(
                f"messages[{index}] has empty content; the service accepts that only for a final assistant "
                "message and would reject this history with a 400. Remove that message or give it content."
            )
        _check_text_blocks(index, _blocks(message))
        calls = client_tool_calls(message)
        if calls:
            duplicate = _duplicate([call.id for call in calls])
            if duplicate is not None:
                raise HistoryError(
                    f"messages[{index}] has two tool_use blocks with the id {duplicate!r}; the service would "
                    "reject this history with a 400. Give each tool_use its own id."
                )
            malformed = _malformed_id([call.id for call in calls])
            if malformed is not None:
                raise HistoryError(
                    f"messages[{index}] has a tool_use id the service does not accept ({malformed!r}; ids match "
                    f"{TOOL_ID_PATTERN.pattern}); it would reject this history with a 400. Fix the id with "
                    "toolrunner.sanitize_tool_id(), in the tool_use and in its tool_result."
                )
            answered = tool_result_ids(messages[index + 1]) if index < last else set[str]()
            missing = [call.id for call in calls if call.id not in answered]
            if missing and not (open_end and index == last):
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
        results = tool_result_ids(message)
        if results:
            _check_results_first(index, _blocks(message))
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
        blocks = _blocks(message)
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


def reply_param(reply: Reply) -> dict[str, Any]:
    """A reply as the history keeps it: plain data, dumped once, the way the SDK dumps a model.

    ``Message.to_param()`` keeps the content blocks as SDK models, and the SDK dumps every model in
    the params again on every request: with a long history, most of a request's cost. The dump is
    the SDK's (JSON mode, aliases, the fields the service sent, less ``__api_exclude__``), so the
    request bytes are the same; thinking blocks keep their signatures exactly. An input nested
    deeper than pydantic's serializer goes is taken as parsed. Text that is not valid Unicode (lone
    surrogates) is kept as U+FFFD, so the history can always be encoded. ``warnings=False``: a
    malformed block (a tool_use input that is not an object) gets an error result, not a warning.
    """
    content = [_block_param(block) for block in reply.content]
    repaired = sendable(content)
    if repaired is not content:
        log(
            WARNING,
            "Reply %r holds lone surrogates (text that is not valid Unicode); the history keeps them as U+FFFD "
            "so that the next request can be encoded.",
            reply.id,
        )
    return {"role": reply.role, "content": repaired}


def reply_data(reply: Reply) -> dict[str, Any]:
    """A whole reply as JSON-able data, as a saved state keeps it: the fields the service sent
    (none added as nulls), the content as ``reply_param`` dumps it (deep inputs taken as parsed,
    lone surrogates kept as U+FFFD). ``read_reply`` makes the reply again."""
    data = reply.model_dump(
        mode="json", by_alias=True, exclude_unset=True, exclude={"content"}, warnings=False
    )
    data["content"] = [_block_param(block) for block in reply.content]
    return sendable(data)


def read_reply(data: Mapping[str, Any], *, beta: bool) -> Reply:
    """The reply ``reply_data`` gave, built as the SDK builds a response it parses (``construct``):
    blocks of a type this SDK does not know are kept, as they were when the reply came.

    Raises:
        ValueError: ``data`` is not a message's data.
    """
    content = data.get("content")
    if data.get("role") != "assistant" or not isinstance(content, list):
        raise ValueError("a saved reply is an assistant message with a list of content blocks")
    if not all(isinstance(block, Mapping) and isinstance(block.get("type"), str) for block in content):  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        raise ValueError("each content block of a saved reply is an object with a type")
    model = BetaMessage if beta else Message
    return model.construct(**data)


def _block_param(block: BaseModel) -> dict[str, Any]:
    exclude = getattr(type(block), "__api_exclude__", None)
    try:
        return block.model_dump(
            mode="json", by_alias=True, exclude_unset=True, exclude=exclude, warnings=False
        )
    except ValueError:  # nested deeper than pydantic's serializer goes, or text JSON cannot encode
        pass
    # The block is what the service's JSON parsed into, so its Python form is JSON data already. The
    # input, which may be nested too deep for the serializer, is taken as parsed, in its place.
    raw_input = "input" in block.model_fields_set
    rest = block.model_dump(
        mode="python",
        by_alias=True,
        exclude_unset=True,
        exclude={*(exclude or ()), *(("input",) if raw_input else ())},
        warnings=False,
    )
    if not raw_input:
        return rest
    order = list(type(block).model_fields)
    data = {
        key: value for key, value in rest.items() if key in order and order.index(key) < order.index("input")
    }
    data["input"] = getattr(block, "input")  # noqa: B009  # the attribute every block with an input has
    return data | rest


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
    blocks = _blocks(message)
    kind = field(blocks[-1], "type") if blocks else None
    return isinstance(kind, str) and kind.endswith("_tool_result") and kind != "tool_result"

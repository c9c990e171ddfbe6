"""Reading and keeping messages: pure functions with no I/O (checking them is ``_core.message_checks``).

Messages may hold content blocks as dicts (what users write) or as SDK models (what the SDK
returns and ``Message.to_param()`` keeps); ``field()`` reads either. The history keeps replies as
plain data (``reply_param``), dumped once, the way the SDK dumps them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

from anthropic.types import Message
from anthropic.types.beta import BetaMessage
from pydantic import BaseModel

from .errors import HistoryError
from .log import WARNING, log
from .types import Reply, ToolCall
from .unicode import sendable

REPLY_TYPES = (Message, BetaMessage)
"""The SDK's reply classes, for ``isinstance`` (a tuple: ``Message | BetaMessage`` is a new union at
every call, and these checks run for every reply)."""

__all__ = [
    "REPLY_TYPES",
    "ROLES",
    "TOOL_ID_PATTERN",
    "api_exclude",
    "client_tool_calls",
    "content_blocks",
    "field",
    "message_param",
    "preview",
    "reply_param",
    "tool_result_ids",
]


TOOL_ID_PATTERN = re.compile(r"[a-zA-Z0-9_-]{1,128}")
"""What the service accepts as a ``tool_use`` id (use with ``fullmatch``)."""

ROLES = ("user", "assistant", "system")
"""The roles a history message may have (anthropic 2.12's ``MessageParam`` has ``system`` too)."""


def field(item: object, name: str) -> Any:
    """Read ``name`` from a dict or from an SDK model; ``None`` when absent."""
    # The exact type first: nearly every item is a plain dict, and an ABC check costs more.
    if type(item) is dict or isinstance(item, Mapping):
        return item.get(name)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType, reportAttributeAccessIssue]
    return getattr(item, name, None)


def content_blocks(message: object) -> Sequence[object]:
    """A message's content blocks; none when its content is a string or missing."""
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
    if isinstance(message, REPLY_TYPES):  # a reply: typed blocks, read without field()
        # A loop, not a generator, and the calls made with positional arguments: this runs for
        # every reply, and a keyword call of a frozen dataclass's __init__ costs more.
        calls: list[ToolCall] = []
        for block in message.content:
            if block.type == "tool_use":
                toolset_name = getattr(block, "toolset_name", None)
                calls.append(ToolCall(block.id, block.name, sendable(block.input), toolset_name))
        return tuple(calls)
    if field(message, "role") != "assistant":
        return ()
    return tuple(
        ToolCall(
            id=field(block, "id"),
            name=field(block, "name"),
            input=sendable(field(block, "input")),
            toolset_name=field(block, "toolset_name"),
        )
        for block in content_blocks(message)
        if field(block, "type") == "tool_use"
    )


def tool_result_ids(message: object) -> set[str]:
    """The tool_use ids that a (user) message answers with tool_result blocks."""
    if field(message, "role") != "user":
        return set()
    return {
        field(block, "tool_use_id")
        for block in content_blocks(message)
        if field(block, "type") == "tool_result"
    }


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
    content: list[dict[str, Any]] = []  # a loop, not a comprehension: no frame of its own per reply
    for block in reply.content:
        content.append(_block_param(block))
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


_API_EXCLUDES: dict[type[BaseModel], Any] = {}


def api_exclude(model: type[BaseModel]) -> Any:
    """The fields the SDK leaves out when it sends a model of this class (``__api_exclude__``), or
    ``None``. Read once per class: a missing class attribute goes through pydantic's metaclass
    ``__getattr__``, which raises, and a reply's every block asks."""
    try:
        return _API_EXCLUDES[model]
    except KeyError:
        exclude = _API_EXCLUDES[model] = getattr(model, "__api_exclude__", None)
        return exclude


def _block_param(block: BaseModel) -> dict[str, Any]:
    kind = type(block)
    exclude = _API_EXCLUDES[kind] if kind in _API_EXCLUDES else api_exclude(kind)  # once per class
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


def message_param(message: object, index: int) -> Any:
    """A message as the history keeps it: SDK messages become plain params; dicts are checked, not copied."""
    if isinstance(message, REPLY_TYPES):
        return reply_param(message)
    if not isinstance(message, Mapping):
        raise HistoryError(
            f"message {index} is a {type(message).__name__!r}; a message is a dict like "
            "{'role': 'user', 'content': '...'} or an SDK Message."
        )
    message = cast("Mapping[str, Any]", message)
    role = message.get("role")
    if role not in ROLES:
        raise HistoryError(
            f"message {index} has role {role!r}; a message's role is 'user', 'assistant' or 'system' "
            "(for the system prompt, use the system= param)."
        )
    content = message.get("content")
    if content is None and role == "system" and message.get("output_config"):
        return message  # the directive-only form: no content, only per-turn output_config
    if not isinstance(content, str | list | tuple):
        raise HistoryError(
            f"message {index} has content of type {type(content).__name__!r}; content is a string or a list of "
            "content blocks."
        )
    if sendable(cast(object, content)) is not content:
        raise HistoryError(
            f"message {index} holds text with lone surrogates (as os.listdir gives for names that are not UTF-8), "
            "which cannot be sent as UTF-8; replace them first, for example with "
            "text.encode('utf-16-le', 'surrogatepass').decode('utf-16-le', 'replace')."
        )
    if not _is_json(message):
        where, problem = _first_non_json(message)
        raise HistoryError(
            f"message {index} holds {problem} at {where}, which JSON cannot carry, so no request could be sent "
            "(nor the run saved); replace it with JSON data (str, numbers, lists, dicts) first."
        )
    return message


def _is_json(value: object) -> bool:
    """Whether ``value`` is JSON data a request (and a saved state) can carry: str, finite numbers,
    bools, None, dicts with str keys, lists and tuples of them, and the SDK's models (dumped by
    the SDK). One loop over a stack: this runs on every message given to a runner."""
    stack = [value]
    while stack:
        value = stack.pop()
        kind = type(value)
        if kind is str or kind is int or kind is bool or value is None:
            continue
        if isinstance(value, float):
            if not math.isfinite(value):
                return False
        elif isinstance(value, Mapping):
            items = cast("Mapping[object, object]", value)
            if not all(type(key) is str for key in items):
                return False
            stack.extend(items.values())
        elif isinstance(value, list | tuple):
            stack.extend(cast("Sequence[object]", value))
        elif not isinstance(value, str | int | BaseModel):  # subclasses of str and int are JSON too
            return False
    return True


def _first_non_json(value: object, where: str = "") -> tuple[str, str]:
    """Where ``_is_json`` fails in ``value``, and what is there (only called when it does)."""
    if isinstance(value, float):
        return where, f"a NaN or infinite number ({value!r})"
    if isinstance(value, Mapping):
        for key, item in cast("Mapping[object, object]", value).items():
            if not isinstance(key, str):
                return (
                    where or "the message",
                    f"the key {preview(key)} (a {type(key).__name__!r}; JSON keys are str)",
                )
            if not _is_json(item):
                return _first_non_json(item, f"{where}[{key!r}]")
    if isinstance(value, list | tuple):
        for position, item in enumerate(cast("Sequence[object]", value)):
            if not _is_json(item):
                return _first_non_json(item, f"{where}[{position}]")
    return where, f"a {type(cast(object, value)).__name__!r}"


def preview(value: object) -> str:
    """``value``'s repr for an error message, cut to 120 characters."""
    try:
        text = repr(value)
    except Exception:  # a foreign object's __repr__ may raise; the problem is still reported
        text = f"a {type(value).__name__!r}"
    return text if len(text) <= 120 else text[:117] + "..."

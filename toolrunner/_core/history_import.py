"""An OpenAI-style chat history as Anthropic params: ``from_openai`` (the other direction,
``to_openai``, is ``_core.history``). A pure function of the messages; nothing here does I/O.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, TypeAlias, cast

from anthropic.types import MessageParam

from .errors import HistoryError
from .history import sanitize_tool_id
from .messages import field

__all__ = ["NO_RESULT", "ImportedHistory", "from_openai"]


NO_RESULT = "No result was recorded for this tool call."
"""The text of the ``is_error`` tool_result that :func:`from_openai` gives a call with no result."""

_IMAGE_MEDIA_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
_DATA_URL = re.compile(
    r"data:(?P<media_type>[\w.+-]+/[\w.+-]+)(?P<params>(?:;[^,;]*)*),(?P<data>.*)", re.DOTALL
)

_Block: TypeAlias = dict[str, Any]
_Chat: TypeAlias = dict[str, Any]


class ImportedHistory(NamedTuple):
    """An OpenAI-style history as Anthropic params: ``system, messages = from_openai(...)``."""

    system: str | None
    """The text of the system and developer messages, or ``None`` when there were none."""
    messages: list[MessageParam]
    """The conversation, ready for ``client.messages.create(messages=...)``."""


def from_openai(
    messages: Sequence[Mapping[str, Any]], *, keep_trailing_calls: bool = False
) -> ImportedHistory:
    """Convert an OpenAI-style chat history into an Anthropic system prompt and message params.

    * ``system`` and ``developer`` messages become the system text, joined by blank lines,
      wherever they stood.
    * ``user`` content is text or a list of parts: ``text``, ``image_url`` (``data:`` URLs become
      base64 image blocks, ``http(s)`` URLs URL image blocks) and ``file`` parts holding a PDF as a
      ``data:`` URL.
    * ``assistant`` ``tool_calls`` become ``tool_use`` blocks, their JSON ``arguments`` parsed.
    * Consecutive ``tool`` results become one user message of ``tool_result`` blocks, in the order
      of the calls; a user message right after them joins that message after the results.
    * A call with no result gets an ``is_error`` result saying so. With
      ``keep_trailing_calls=True``, the calls of a last assistant message that no result
      follows are left unanswered, for you to answer (a runner given such a history raises
      ``UnansweredToolUseError`` before sending: it runs only the calls of its replies).
    * Tool ids go through :func:`sanitize_tool_id` on both sides, so each pair still matches.

    Raises:
        HistoryError: A message cannot be converted; the message says which one (its index in
            ``messages``) and what to fix.
    """
    return _Importer(keep_trailing_calls=keep_trailing_calls).run(messages)


class _Importer:
    def __init__(self, *, keep_trailing_calls: bool) -> None:
        self.keep_trailing_calls = keep_trailing_calls
        self.system: list[str] = []
        self.out: list[_Chat] = []
        # Invariant: the calls of the last assistant message, in order, until a message other
        # than a tool result (or a system message) closes them; ``results`` holds their answers.
        self.pending: list[str] = []
        self.results: dict[str, _Block] = {}
        self.pending_index = -1
        # Sanitised id -> the original id and the index of the message that made the call.
        self.calls: dict[str, tuple[str, int]] = {}

    def run(self, messages: Sequence[Mapping[str, Any]]) -> ImportedHistory:
        for index, message in enumerate(messages):
            if not isinstance(message, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise HistoryError(
                    f"messages[{index}] is a {type(message).__name__!r}, not a dict; give each message "
                    "as a dict with a 'role'."
                )
            self.add(index, message)
        if not (self.keep_trailing_calls and not self.results):
            self.close()
        system = "\n\n".join(self.system) if self.system else None
        return ImportedHistory(system, [_collapse(message) for message in self.out])

    def add(self, index: int, message: Mapping[str, Any]) -> None:
        role = message.get("role")
        if role in ("system", "developer"):
            text = _plain_text(message.get("content"), index)
            if text:
                self.system.append(text)
        elif role == "tool":
            self.add_result(index, message)
        elif role == "user":
            self.close()
            self.append("user", _user_blocks(message.get("content"), index))
        elif role == "assistant":
            self.close()
            self.add_assistant(index, message)
        elif role == "function":
            raise HistoryError(
                f"messages[{index}] has role 'function', the legacy OpenAI function-calling format, which "
                "is not supported; write it as an assistant message with 'tool_calls' and 'tool' results."
            )
        else:
            raise HistoryError(
                f"messages[{index}] has role {role!r}; use 'system', 'developer', 'user', 'assistant' "
                "or 'tool'."
            )

    def append(self, role: str, blocks: list[_Block]) -> None:
        if not blocks:
            return
        if self.out and self.out[-1]["role"] == role:
            self.out[-1]["content"].extend(blocks)
        else:
            self.out.append({"role": role, "content": blocks})

    def add_assistant(self, index: int, message: Mapping[str, Any]) -> None:
        if message.get("function_call") is not None:
            raise HistoryError(
                f"messages[{index}] has a 'function_call', the legacy OpenAI function-calling format, "
                "which is not supported; use 'tool_calls' instead."
            )
        blocks = _user_blocks(message.get("content"), index, assistant=True)
        tool_calls: object = message.get("tool_calls") or []
        if not isinstance(tool_calls, list):
            raise HistoryError(f"messages[{index}].tool_calls is not a list; give a list of tool calls.")
        for position, call in enumerate(cast("list[object]", tool_calls)):
            blocks.append(self.tool_use(index, position, call))
        self.append("assistant", blocks)
        self.pending_index = index

    def tool_use(self, index: int, position: int, call: object) -> _Block:
        where = f"messages[{index}].tool_calls[{position}]"
        function = field(call, "function")
        raw_id = field(call, "id")
        name = field(function, "name")
        arguments = field(function, "arguments")
        if not isinstance(raw_id, str) or not isinstance(name, str):
            raise HistoryError(f"{where} needs a string 'id' and a string 'function.name'.")
        if arguments is None or arguments == "":
            arguments = "{}"
        if not isinstance(arguments, str):
            raise HistoryError(
                f"{where} ({name!r}) has arguments that are not a JSON string; give them as a string."
            )
        try:
            parsed: object = json.loads(arguments)
        except json.JSONDecodeError as error:
            raise HistoryError(
                f"{where} ({name!r}) has arguments that are not valid JSON ({error.msg} at character "
                f"{error.pos}): {_shorten(arguments)!r}; fix the arguments or remove the call."
            ) from None
        if not isinstance(parsed, dict):
            raise HistoryError(
                f"{where} ({name!r}) has arguments that are JSON but not an object: {_shorten(arguments)!r}; "
                "tool input must be a JSON object."
            )
        tool_id = sanitize_tool_id(raw_id)
        if tool_id in self.calls:
            other, other_index = self.calls[tool_id]
            same = "uses the same id" if other == raw_id else f"has an id that sanitises like {other!r}"
            raise HistoryError(
                f"{where} {same} as a call in messages[{other_index}] ({raw_id!r}); give each tool call "
                "its own id."
            )
        self.calls[tool_id] = (raw_id, index)
        self.pending.append(tool_id)
        return {"type": "tool_use", "id": tool_id, "name": name, "input": parsed}

    def add_result(self, index: int, message: Mapping[str, Any]) -> None:
        raw_id = message.get("tool_call_id")
        if not isinstance(raw_id, str):
            raise HistoryError(f"messages[{index}] is a tool result without a string 'tool_call_id'.")
        tool_id = sanitize_tool_id(raw_id)
        if tool_id in self.results:
            raise HistoryError(
                f"messages[{index}] answers tool call {raw_id!r} a second time; keep one result per call."
            )
        if tool_id not in self.pending:
            known = tool_id in self.calls
            raise HistoryError(
                f"messages[{index}] answers tool call {raw_id!r}, "
                + (
                    f"which messages[{self.calls[tool_id][1]}] made but "
                    "which other messages have since closed; put tool results right after the assistant "
                    "message with their calls."
                    if known
                    else "which no earlier assistant message made; fix its 'tool_call_id' or remove it."
                )
            )
        block: _Block = {"type": "tool_result", "tool_use_id": tool_id}
        content = message.get("content")
        if isinstance(content, str):
            if content:
                block["content"] = content
        elif content is not None:
            blocks = _user_blocks(content, index)
            if blocks:
                block["content"] = blocks
        self.results[tool_id] = block

    def close(self) -> None:
        """Answer the pending calls: their results in call order, an error for each one missing."""
        if not self.pending:
            return
        blocks = [
            self.results.get(tool_id)
            or {"type": "tool_result", "tool_use_id": tool_id, "content": NO_RESULT, "is_error": True}
            for tool_id in self.pending
        ]
        self.pending, self.results = [], {}
        self.append("user", blocks)


def _collapse(message: _Chat) -> MessageParam:
    """A message of one plain text block as a string, the way people write it."""
    content: list[_Block] = message["content"]
    if len(content) == 1 and content[0].keys() == {"type", "text"} and content[0]["type"] == "text":
        return cast("MessageParam", {"role": message["role"], "content": content[0]["text"]})
    return cast("MessageParam", message)


def _shorten(text: str, limit: int = 200) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"


def _plain_text(content: object, index: int) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "\n".join(block["text"] for block in _user_blocks(content, index, assistant=True))


def _user_blocks(content: object, index: int, *, assistant: bool = False) -> list[_Block]:
    """Anthropic blocks for OpenAI message content: a string or a list of parts."""
    if content is None:
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}] if content else []
    if not isinstance(content, list):
        raise HistoryError(
            f"messages[{index}].content is a {type(content).__name__!r}; give a string or a list of parts."
        )
    blocks: list[_Block] = []
    for position, part in enumerate(cast("list[object]", content)):
        block = _part_block(part, f"messages[{index}].content[{position}]", assistant=assistant)
        if block is not None:
            blocks.append(block)
    return blocks


def _part_block(part: object, where: str, *, assistant: bool) -> _Block | None:
    kind = field(part, "type")
    if kind == "text" or (assistant and kind == "refusal"):
        text = field(part, "text" if kind == "text" else "refusal")
        if not isinstance(text, str):
            raise HistoryError(f"{where} is a {kind} part without a string {kind!r}.")
        return {"type": "text", "text": text} if text else None
    if assistant:
        raise HistoryError(f"{where} is a {kind!r} part; assistant and system content can only hold text.")
    if kind == "image_url":
        image = field(part, "image_url")
        url = image if isinstance(image, str) else field(image, "url")
        if not isinstance(url, str):
            raise HistoryError(f"{where} is an image_url part without a URL.")
        if url.startswith(("http://", "https://")):
            return {"type": "image", "source": {"type": "url", "url": url}}
        media_type, data = _data_url(url, where)
        if media_type not in _IMAGE_MEDIA_TYPES:
            raise HistoryError(
                f"{where} is a {media_type} image; the service takes PNG, JPEG, GIF and WebP images."
            )
        return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}
    if kind == "file":
        file = field(part, "file")
        file_data = field(file, "file_data")
        if not isinstance(file_data, str):
            raise HistoryError(
                f"{where} is a file part without 'file_data' (OpenAI file ids mean nothing to Anthropic); "
                "give the file as a data: URL."
            )
        media_type, data = _data_url(file_data, where)
        if media_type != "application/pdf":
            raise HistoryError(f"{where} is a {media_type} file; only PDF files can be converted.")
        block: _Block = {
            "type": "document",
            "source": {"type": "base64", "media_type": media_type, "data": data},
        }
        filename = field(file, "filename")
        if isinstance(filename, str) and filename:
            block["title"] = filename
        return block
    raise HistoryError(
        f"{where} is a {kind!r} part, which cannot be converted; use text, image_url or file parts."
    )


def _data_url(url: str, where: str) -> tuple[str, str]:
    """The media type and base64 data of a ``data:`` URL."""
    match = _DATA_URL.fullmatch(url)
    if match is None or ";base64" not in match["params"]:
        raise HistoryError(
            f"{where} has {_shorten(url, 60)!r}, which is neither an http(s) URL nor a base64 data: URL."
        )
    data = match["data"]
    try:
        base64.b64decode(data, validate=True)
    except binascii.Error:
        raise HistoryError(f"{where} has a data: URL whose data is not valid base64.") from None
    return match["media_type"].lower(), data

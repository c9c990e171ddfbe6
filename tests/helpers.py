"""Small helpers shared by the runner tests."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from toolrunner.testing import FakeMessagesAPI

MODEL = "claude-sonnet-4-6"  # claude-sonnet-4-5 warns: deprecated in this SDK
USER = {"role": "user", "content": "Weather in Paris and in Berlin?"}


def plain(value: object) -> Any:
    """A history or block as plain JSON data (SDK models dumped the way the SDK sends them)."""
    return json.loads(json.dumps(value, default=_dump))


def _dump(value: object) -> Any:
    model_dump = getattr(value, "model_dump", None)
    if model_dump is None:
        raise TypeError(f"cannot dump {type(value).__name__}")
    return model_dump(mode="json", exclude_none=True)


def sent_messages(fake: FakeMessagesAPI) -> list[list[Any]]:
    """The ``messages`` of every request the fake received."""
    return [request.body["messages"] for request in fake.requests]


def roles(messages: Sequence[Any]) -> list[str]:
    return [plain(message)["role"] for message in messages]


def results_of(message: Any) -> list[tuple[str, Any, bool]]:
    """(tool_use_id, content, is_error) of each tool_result block of a user message."""
    return [
        (block["tool_use_id"], block.get("content"), bool(block.get("is_error")))
        for block in plain(message)["content"]
        if block["type"] == "tool_result"
    ]

"""Small helpers shared by the runner tests, and the one way they build a runner on the fake
Messages API (``make_runner``, ``make_sync_runner``); the mistakes tests' own runner (``build``, with
``ping`` and ``TEA_USER``); a store that fails one save (``FailOnce``)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from toolrunner import Checkpoint, MemoryCheckpointer, SyncToolRunner, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI

MODEL = "claude-sonnet-4-6"  # claude-sonnet-4-5 warns: deprecated in this SDK
USER = {"role": "user", "content": "Weather in Paris and in Berlin?"}


def make_runner(fake: FakeMessagesAPI | None = None, *tools: Any, **options: Any) -> ToolRunner[Any]:
    """The tests' runner: a ``ToolRunner`` on ``fake``'s async client (a new, empty fake when none is
    given) with ``MODEL``, ``max_tokens=64``, ``[USER]`` and ``tools``. Any option is passed on, over
    these defaults (``messages=``, ``max_tokens=``, ``checkpointer=``, ...)."""
    settings: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [USER], "tools": list(tools)}
    settings.update(options)
    return ToolRunner((fake or FakeMessagesAPI()).async_client(), **settings)


def make_sync_runner(fake: FakeMessagesAPI | None = None, *tools: Any, **options: Any) -> SyncToolRunner:
    """``make_runner``'s blocking twin: a ``SyncToolRunner`` on ``fake``'s sync client."""
    settings: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [USER], "tools": list(tools)}
    settings.update(options)
    return SyncToolRunner((fake or FakeMessagesAPI()).client(), **settings)


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


# -- the mistakes tests' runner (tests/runner/test_program_mistakes.py, tests/tools/test_tool_failures.py)

TEA_USER = {"role": "user", "content": "Ship the tea."}


@tool
async def ping() -> str:
    """Answer pong."""
    return "pong"


def build(fake: FakeMessagesAPI | None = None, **overrides: Any) -> ToolRunner:
    """A ``ToolRunner`` on ``fake``'s async client with ``MODEL``, ``max_tokens=64``, ``[TEA_USER]`` and
    the ``ping`` tool; ``overrides`` replace any of these or add options."""
    options: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [TEA_USER], "tools": [ping]}
    options.update(overrides)
    return ToolRunner((fake or FakeMessagesAPI()).async_client(), **options)


def results(runner: ToolRunner, index: int = 2) -> list[tuple[str, Any, bool]]:
    """(tool_use_id, content, is_error) of every block of ``runner.messages[index]``; unlike
    ``results_of``, it does not skip blocks that are not tool_result."""
    return [
        (block["tool_use_id"], block.get("content"), bool(block.get("is_error")))
        for block in plain(runner.messages[index])["content"]
    ]


# -- stores -----------------------------------------------------------------------------------------


class FailOnce(MemoryCheckpointer):
    """A store whose save number ``fail_at`` (from 0) raises once, as a full disk would."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at = fail_at
        self.attempts = 0

    async def save(self, checkpoint: Checkpoint) -> None:
        attempt, self.attempts = self.attempts, self.attempts + 1
        if attempt == self.fail_at:
            raise OSError(28, "No space left on device")
        await super().save(checkpoint)


# -- recorded exchanges -------------------------------------------------------------------------------

RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded" / "python-sdk" / "tool_runner"

# The recordings name the models they were made with, and a replay sends those names again, as the
# runner sends the model it is given. The SDK warns (DeprecationWarning) about each model it has
# since deprecated: claude-sonnet-4-5, claude-opus-4-5 from anthropic 2.13 on, more to come. That is
# a warning about the recorded data, not about the runner: the replay tests ignore it for the
# recorded models only. Anywhere else it stays an error, and the recordings stay as recorded.
RECORDED_MODELS = sorted(
    {
        exchange["request"]["body"]["model"]
        for path in RECORDED.glob("*.json")
        for exchange in json.loads(path.read_text())
    }
)
replays_recorded_models = pytest.mark.filterwarnings(
    f"ignore:The model '({'|'.join(map(re.escape, RECORDED_MODELS))})' is deprecated:DeprecationWarning"
)

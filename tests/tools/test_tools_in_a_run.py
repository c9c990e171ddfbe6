"""@tool and the result adapter through the runner: what a tool is bound to, is given and returns.

Each test drives a ``ToolRunner`` against the fake Messages API, which encodes every request body
the way the SDK does (as UTF-8 JSON), and looks at what was sent.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import pytest
from pydantic import Field

from tests.support.helpers import MODEL, results_of
from toolrunner import ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


async def run(tools: list[Any], *calls: Any) -> FakeMessagesAPI:
    """Run one turn of tool calls and a final answer; the fake as it ended."""
    fake = FakeMessagesAPI([tool_reply(*calls), text_reply("Done.")])
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=256,
        messages=[{"role": "user", "content": "Go."}],
        tools=tools,
    )
    await runner.until_done()
    fake.assert_complete()
    return fake


def last_results(fake: FakeMessagesAPI) -> list[tuple[str, Any, bool]]:
    return results_of(fake.requests[-1].body["messages"][-1])


@tool
def list_files() -> list[str]:
    """List the files in the working directory."""
    return ["caf\udce9.txt", "notes.txt"]  # as os.listdir gives a Latin-1 name on a UTF-8 system


async def test_a_name_that_is_not_utf8_does_not_break_the_next_request() -> None:
    fake = await run([list_files], tool_call("list_files", {}, id="toolu_1"))
    assert last_results(fake) == [("toolu_1", '["caf\ufffd.txt", "notes.txt"]', False)]
    json.dumps(fake.requests[-1].body, ensure_ascii=False).encode("utf-8")


def search(query: str, api_key: str) -> str:
    """Search the index."""
    return f"{api_key[:3]}: results for {query}"


async def test_a_bound_secret_is_never_sent_and_cannot_be_overridden() -> None:
    search_tool = tool(functools.partial(search, api_key="sk-secret"))
    fake = await run(
        [search_tool],
        tool_call("search", {"query": "tea"}, id="toolu_1"),
        tool_call("search", {"query": "tea", "api_key": "sk-model"}, id="toolu_2"),
    )
    assert all("sk-secret" not in json.dumps(request.body) for request in fake.requests)
    (_, first, first_failed), (_, second, second_failed) = last_results(fake)
    assert (first, first_failed) == ("sk-: results for tea", False)
    assert second_failed
    assert "- api_key: Extra inputs are not permitted (received 'sk-model')" in second


@tool
def estimate(task: str, hours: float = Field(1.5, gt=0)) -> str:
    """Estimate a task."""
    return f"{task}: {hours} h"


async def test_a_field_default_reaches_the_tool_as_its_value() -> None:
    fake = await run([estimate], tool_call("estimate", {"task": "review"}, id="toolu_1"))
    assert last_results(fake) == [("toolu_1", "review: 1.5 h", False)]


@tool(definition={"cache_control": {"type": "ephemeral"}, "strict": True})
def ping() -> str:
    """Check that the service is up."""
    return "pong"


async def test_definition_fields_are_sent_and_the_tool_still_runs() -> None:
    fake = await run([ping], tool_call("ping", {}, id="toolu_1"))
    for request in fake.requests:
        (sent,) = request.body["tools"]
        assert sent["cache_control"] == {"type": "ephemeral"}
        assert sent["strict"] is True
    assert last_results(fake) == [("toolu_1", "pong", False)]

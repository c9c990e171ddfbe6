"""Issues 10 and 11 through the runner: what a tool is given and returns never breaks a request.

Each test drives a ``ToolRunner`` against the fake Messages API, which encodes every request body
the way the SDK does: as UTF-8 JSON.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers import MODEL, results_of
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

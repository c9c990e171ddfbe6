"""Large data stays out of workflow history: a run of 300 turns with 10 KB tool results stays far
under Temporal's limits (2 MB a payload, 50 MB and 50K events a history)."""

from __future__ import annotations

from typing import Any

import pytest
from temporalio.api.history.v1 import History
from temporalio.testing import WorkflowEnvironment

from tests.temporal.temporal_helpers import start, worker
from toolrunner import tool
from toolrunner.temporal import MemoryPayloadStore
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

TURNS = 300
PAGE = 10_000  # bytes of each tool result

MB = 1024 * 1024
PAYLOAD_LIMIT = 2 * MB
HISTORY_LIMIT = 50 * MB
EVENT_LIMIT = 50_000


@tool(idempotent=True)
async def read_page(number: int) -> str:
    """Read one page of the archive."""
    return f"page {number}: " + "0123456789" * (PAGE // 10)


def one_page_per_turn(request: RecordedRequest) -> ScriptedReply:
    turn = len(request.messages) // 2  # user, then (assistant, tool results) per turn
    if turn < TURNS:
        return tool_reply(tool_call("read_page", {"number": turn}, id=f"call_{turn}"))
    return text_reply(f"I read {turn} pages.")


async def test_300_turns_of_10_kb_results_stay_far_under_temporals_limits(
    temporal_env: WorkflowEnvironment,
) -> None:
    fake, store = FakeMessagesAPI(responder=one_page_per_turn), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[read_page]) as queue:
        handle = await start(temporal_env.client, queue, run_id="long-run", tools=[read_page])
        result = await handle.result()
        history = await handle.workflow.fetch_history()

    assert result.end_reason == "model"
    assert result.requests == TURNS + 1
    # Each request carried the whole history: the last one all 300 pages, read back from the store.
    last: list[Any] = fake.requests[-1].body["messages"]
    assert len(last) == 1 + 2 * TURNS
    assert all(len(message["content"][0]["content"]) > PAGE for message in last[2::2])

    size = History(events=history.events).ByteSize()
    largest = max(event.ByteSize() for event in history.events)
    print(
        f"\n{TURNS} turns: {len(history.events)} events, {size / MB:.2f} MiB, largest event {largest} bytes"
    )
    assert len(history.events) < EVENT_LIMIT / 4
    assert size < HISTORY_LIMIT / 20
    assert size < TURNS * PAGE / 2  # far less than the tool results alone: they are in the store
    assert largest < PAGE  # no event holds a page, let alone a history
    assert largest < PAYLOAD_LIMIT / 100
    assert len(store.payloads) >= TURNS  # the pages, and the history nodes

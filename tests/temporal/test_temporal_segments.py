"""A long run continues as new: each segment's history stays small, the next one's input carries a
window of the latest messages, and the run goes on as a ``ToolRunner`` would, whatever the
segments: the same requests, the tools the history removed still removed, the requests counted
toward ``max_iterations`` across segments, client-side compaction splitting where it would.

The 10,000-turn run prints the largest segment's size and event count.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import Any

import pytest
from anthropic.types import Message
from temporalio import activity
from temporalio.api.history.v1 import History
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import UnsandboxedWorkflowRunner, Worker

from tests.support.helpers import plain
from tests.temporal.temporal_helpers import run_plainly, start, task_queue, worker
from toolrunner import CompactionControl, tool
from toolrunner._core.state import request_usage_data
from toolrunner._core.usage import DEFAULT_PRICES, request_usage
from toolrunner.temporal import MemoryPayloadStore, RunHandle, ToolRunnerWorkflow
from toolrunner.temporal._activities import Activities
from toolrunner.temporal._data import RequestInput, RequestOutput, SummaryInput, SummaryOutput
from toolrunner.temporal._names import REQUEST_ACTIVITY, SUMMARY_ACTIVITY
from toolrunner.temporal._payloads import Payloads
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

MB = 1024 * 1024
PAYLOAD_LIMIT = 2 * MB
HISTORY_LIMIT = 50 * MB
EVENT_LIMIT = 50_000
BIG = {"input_tokens": 900, "output_tokens": 200}
SUMMARY_PROMPT = "Sum up."


async def segments(env: WorkflowEnvironment, run: RunHandle) -> list[WorkflowHistory]:
    """The histories of the run's segments, first to last (each names the one it continued)."""
    histories: list[WorkflowHistory] = []
    run_id: str | None = None  # the latest
    while True:
        history = await env.client.get_workflow_handle(run.run_id, run_id=run_id).fetch_history()
        histories.append(history)
        continued = history.events[0].workflow_execution_started_event_attributes.continued_execution_run_id
        if not continued:
            return histories[::-1]
        run_id = continued


def segment_input(history: WorkflowHistory) -> dict[str, Any]:
    """The (JSON) input the segment started with."""
    import json

    payload = history.events[0].workflow_execution_started_event_attributes.input.payloads[0]
    return json.loads(payload.data)


# -- a run cut into segments, against a ToolRunner ----------------------------------------------------


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


@tool(sequential=True)
def note(line: str) -> str:
    """Note a line."""
    return "noted"


REMOVAL = {
    "role": "system",
    "content": [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": "weather"}}],
}
TURNS = 45


def segmented() -> Callable[[RecordedRequest], ScriptEntry]:
    """A model that calls tools turn after turn: notes, and the weather (which the history removed)
    at turns 1 and 40; text for the last request a limit allows."""
    turns = itertools.count()

    def respond(request: RecordedRequest) -> ScriptEntry:
        if request.body.get("tool_choice") == {"type": "none"}:
            return text_reply("That is all.")
        turn = next(turns)
        usage = BIG if turn == 25 else None
        if turn in (1, 40):
            return tool_reply(tool_call("weather", {"city": f"city {turn}"}), usage=usage)
        return tool_reply(
            tool_call("note", {"line": f"line {turn}"}), tool_call("note", {"line": "again"}), usage=usage
        )

    return respond


async def test_a_run_in_segments_sends_what_a_tool_runner_sends(temporal_env: WorkflowEnvironment) -> None:
    messages = [
        {"role": "user", "content": "Hi."},
        {"role": "assistant", "content": "Hello."},
        {"role": "user", "content": "Go."},
        REMOVAL,
    ]
    options: dict[str, Any] = {
        "max_iterations": TURNS,
        "on_limit": "final_answer",
    }
    plain_fake = FakeMessagesAPI(responder=segmented())
    runner = await run_plainly(plain_fake, tools=[weather, note], messages=messages, **options)

    fake, store = FakeMessagesAPI(responder=segmented()), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[weather, note]) as queue:
        run = await start(
            temporal_env.client,
            queue,
            run_id="segmented",
            tools=[weather, note],
            messages=messages,
            continue_as_new_events=100,
            **options,
        )
        result = await run.result()
        histories = await segments(temporal_env, run)

    assert len(histories) >= 4
    assert [request.body for request in fake.requests] == [request.body for request in plain_fake.requests]
    assert await result.messages(store) == plain(runner.messages)
    assert (result.end_reason, result.requests, result.total) == (
        runner.end_reason,
        runner.requests_sent,
        runner.usage.total,
    )
    assert all(len(history.events) < 150 for history in histories)
    # The weather, removed by the first segment's history, is refused in the last one too.
    results = [request.body["messages"][-1]["content"] for request in fake.requests]
    assert "There is no tool named 'weather'" in results[2][0]["content"]
    assert "There is no tool named 'weather'" in results[41][0]["content"]
    assert segment_input(histories[-1])["segment"]["elided"]["changes"] == {"weather": False}
    assert fake.requests[-1].body["tool_choice"] == {"type": "none"}  # the limit, counted across segments


# -- 10,000 turns ------------------------------------------------------------------------------------

LONG = 10_000
MODEL = "claude-sonnet-4-6"


class Model:
    """Stands in for the ``toolrunner.request`` and ``toolrunner.summarize`` activities, so that
    10,000 turns measure the workflow, not the SDK (other tests send real requests): it writes each
    request's history node to the store as the real activity does, and answers as a model that
    works for ``turns`` turns, handing the turn back (``pause_turn``) after each piece. Every 50th
    reply crosses the compaction threshold, so the history is summarized and stays short, as a
    long run's must (no context window holds 10,000 turns)."""

    def __init__(self, store: MemoryPayloadStore, turns: int) -> None:
        self.payloads = Payloads(store)
        self.turns = turns
        self.done = 0
        self.summaries = 0

    def output(
        self, content: list[dict[str, Any]], stop_reason: str, usage: dict[str, int]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        reply = {
            "id": f"msg_{self.done}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }
        return reply, request_usage_data(request_usage(Message.model_validate(reply), DEFAULT_PRICES))

    @activity.defn(name=REQUEST_ACTIVITY)
    async def request(self, input: RequestInput) -> RequestOutput:
        key, _ = await self.payloads.save_history(
            input.base, params=input.params, tools=input.tools, messages=input.messages
        )
        turn, self.done = self.done, self.done + 1
        usage = BIG if turn % 50 == 49 else {"input_tokens": 10, "output_tokens": 5}
        if turn == self.turns - 1:
            reply, data = self.output(
                [{"type": "text", "text": f"Done after {self.turns} turns."}], "end_turn", usage
            )
        else:
            reply, data = self.output([{"type": "text", "text": f"step {turn}"}], "pause_turn", usage)
        return RequestOutput(reply=reply, beta=False, usage=data, history=key)

    @activity.defn(name=SUMMARY_ACTIVITY)
    async def summarize(self, input: SummaryInput) -> SummaryOutput:
        self.summaries += 1
        reply, data = self.output(
            [{"type": "text", "text": "<summary>Worked on it.</summary>"}],
            "end_turn",
            {"input_tokens": 10, "output_tokens": 5},
        )
        return SummaryOutput(reply=reply, beta=False, usage=data)


async def test_10_000_turns_in_segments_far_under_temporals_limits(temporal_env: WorkflowEnvironment) -> None:
    control: CompactionControl = {
        "enabled": True,
        "context_token_threshold": 1000,
        "summary_prompt": SUMMARY_PROMPT,
    }
    store = MemoryPayloadStore()
    model = Model(store, LONG)
    handlers = Activities(FakeMessagesAPI().async_client(), tools=[], store=store)
    queue = task_queue()
    async with Worker(
        temporal_env.client,
        task_queue=queue,
        workflows=[ToolRunnerWorkflow],
        activities=[
            model.request,
            model.summarize,
            handlers.tool,
            handlers.gate,
            handlers.decision,
            handlers.events,
        ],
        # The sandbox re-checks each workflow task's imports: 20,000 of them would measure it, not the run.
        workflow_runner=UnsandboxedWorkflowRunner(),
    ):
        run = await start(
            temporal_env.client, queue, run_id="ten-thousand", tools=[], compaction_control=control
        )
        result = await run.result()
        histories = await segments(temporal_env, run)

    assert result.end_reason == "model"
    assert result.requests == LONG + model.summaries  # every turn's request, and the summaries'
    assert model.summaries == (LONG - 1) // 50
    sizes = [History(events=history.events).ByteSize() for history in histories]
    events = [len(history.events) for history in histories]
    largest_event = max(event.ByteSize() for history in histories for event in history.events)
    print(
        f"\n{LONG:,} turns: {len(histories)} segments; the largest: {max(events):,} events, "
        f"{max(sizes) / MB:.2f} MiB; the largest event: {largest_event:,} bytes"
    )
    assert max(events) < EVENT_LIMIT / 4
    assert max(sizes) < HISTORY_LIMIT / 10
    assert largest_event < PAYLOAD_LIMIT / 100
    # Each segment started from a window of the history, not all of it.
    inputs = [segment_input(history) for history in histories[1:]]
    assert all(len(data["state"]["messages"]) < 10 for data in inputs)
    assert [data["segment"]["number"] for data in inputs] == list(range(1, len(histories)))
    whole = await result.messages(store)
    assert whole[0]["content"][0]["text"] == "<summary>Worked on it.</summary>"

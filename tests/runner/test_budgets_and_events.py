"""Usage, budgets (tokens, cost, final answer) and the event stream for UIs."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import anthropic
import pytest

from tests.support.helpers import MODEL, USER, make_runner, results_of, roles
from toolrunner import ToolRunner, tool
from toolrunner._core.events import (
    LoopFinished,
    MessageFinished,
    RunnerEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from toolrunner._core.usage import Price
from toolrunner.testing import FakeMessagesAPI, fault, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@tool
async def step(n: int) -> str:
    """Take a step."""
    return f"step {n}"


def usage(input_tokens: int, output_tokens: int) -> dict[str, int]:
    return {"input_tokens": input_tokens, "output_tokens": output_tokens}


def steps(count: int, *, tokens: tuple[int, int] = (100, 10)) -> list[Any]:
    return [tool_reply(tool_call("step", {"n": n}, id=f"s{n}"), usage=usage(*tokens)) for n in range(count)]


def runner_for(fake: FakeMessagesAPI, **options: Any) -> ToolRunner:
    return make_runner(fake, step, **options)


# -- usage ----------------------------------------------------------------------------------------


async def test_usage_per_request_and_in_total_with_cost() -> None:
    fake = FakeMessagesAPI([*steps(2), text_reply("done", usage=usage(300, 20))])
    price = Price(input="3", output="15", cache_read="0.3", cache_write="3.75")
    runner = runner_for(fake, prices={MODEL: price})
    await runner.until_done()
    assert [r.usage.input_tokens for r in runner.usage.requests] == [100, 100, 300]
    assert runner.usage.total.input_tokens == 500
    assert runner.usage.total.output_tokens == 40
    assert runner.usage.cost == Decimal(500 * 3 + 40 * 15) / 1_000_000


async def test_a_model_without_a_price_counts_tokens_and_has_no_cost() -> None:
    fake = FakeMessagesAPI([text_reply("hi", usage=usage(5, 1))])
    runner = runner_for(fake, model="my-own-model")
    await runner.until_done()
    assert runner.usage.total.total_tokens == 6
    assert runner.usage.cost is None


# -- budgets --------------------------------------------------------------------------------------


async def test_end_reason_is_model_when_the_model_stops() -> None:
    fake = FakeMessagesAPI([text_reply("hi")])
    runner = runner_for(fake)
    assert runner.end_reason is None
    await runner.until_done()
    assert runner.end_reason == "model"


async def test_max_iterations_end_reason() -> None:
    runner = runner_for(FakeMessagesAPI(steps(5)), max_iterations=2)
    await runner.until_done()
    assert runner.end_reason == "max_iterations"


async def test_a_token_budget_stops_after_appending_the_pending_results() -> None:
    fake = FakeMessagesAPI(steps(5))  # 110 tokens each
    runner = runner_for(fake, max_total_tokens=300)
    final = await runner.until_done()
    assert len(fake.requests) == 3  # 330 >= 300 after the third
    assert runner.end_reason == "token_budget"
    assert final.stop_reason == "tool_use"
    assert roles(runner.messages)[-2:] == ["assistant", "user"]  # results appended: resumable
    assert results_of(runner.messages[-1]) == [("s2", "step 2", False)]


async def test_a_cost_budget_stops_the_loop() -> None:
    fake = FakeMessagesAPI(steps(5, tokens=(1_000_000, 0)))  # $1 per request at $1 per million
    price = Price(input="1", output="1", cache_read="0.1", cache_write="1.25")
    runner = runner_for(fake, prices={MODEL: price}, max_cost="2.5")
    await runner.until_done()
    assert len(fake.requests) == 3
    assert runner.end_reason == "cost_budget"
    assert runner.usage.cost == Decimal(3)


async def test_final_answer_mode_sends_one_last_request_without_tools() -> None:
    fake = FakeMessagesAPI([*steps(2), text_reply("Here is what I found so far.")])
    runner = runner_for(fake, max_iterations=2, on_limit="final_answer")
    final = await runner.until_done()
    assert len(fake.requests) == 3
    assert "tool_choice" not in fake.requests[1].body
    assert fake.requests[2].body["tool_choice"] == {"type": "none"}
    assert fake.requests[2].body["tools"]  # still defined: the history holds tool_use blocks
    assert final.content[0].type == "text"
    assert runner.end_reason == "max_iterations"
    assert roles(runner.messages)[-1] == "assistant"


async def test_final_answer_mode_is_not_used_when_the_model_already_finished() -> None:
    fake = FakeMessagesAPI([steps(1)[0], text_reply("done")])
    runner = runner_for(fake, max_iterations=2, on_limit="final_answer")
    await runner.until_done()
    assert len(fake.requests) == 2
    assert runner.end_reason == "model"


# -- events ---------------------------------------------------------------------------------------


def kinds(events: list[RunnerEvent]) -> list[str]:
    return [type(event).__name__ for event in events]


async def test_on_event_reports_text_messages_tools_and_the_end() -> None:
    events: list[RunnerEvent] = []
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("step", {"n": 1}, id="a"), text="Stepping."), text_reply("done")]
    )
    await runner_for(fake, on_event=events.append).until_done()
    assert kinds(events) == [
        "TextDelta",
        "MessageFinished",
        "ToolCallStarted",
        "ToolCallFinished",
        "TextDelta",
        "MessageFinished",
        "LoopFinished",
    ]
    assert events[0] == TextDelta(text="Stepping.", index=0)
    started, finished = events[2], events[3]
    assert isinstance(started, ToolCallStarted)
    assert started.call.id == "a"
    assert not started.early
    assert isinstance(finished, ToolCallFinished)
    assert finished.duration >= 0
    assert not finished.is_error
    end = events[-1]
    assert isinstance(end, LoopFinished)
    assert end.reason == "model"
    assert isinstance(events[-2], MessageFinished)
    assert end.message is events[-2].message


async def test_streamed_text_arrives_in_pieces_and_eager_calls_say_so() -> None:
    events: list[RunnerEvent] = []
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("step", {"n": 1}, id="a"), text="A longer text that streams in pieces.", delay=0.002
            ),
            text_reply("ok"),
        ]
    )
    async with ToolRunner(
        fake.async_client(),
        stream=True,
        run_tools_eagerly=True,
        on_event=events.append,
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[step],
    ) as runner:
        await runner.until_done()
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) > 2
    assert "".join(deltas) == "A longer text that streams in pieces.ok"
    [started] = [e for e in events if isinstance(e, ToolCallStarted)]
    assert started.early
    assert kinds(events).count("MessageFinished") == 2


async def test_events_context_runs_the_loop_and_yields_events_live() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("step", {"n": 1}, id="a")), text_reply("done")])
    runner = runner_for(fake)
    seen: list[RunnerEvent] = []
    async with runner.events() as events:
        async for event in events:
            seen.append(event)
    assert kinds(seen)[-1] == "LoopFinished"
    assert "ToolCallFinished" in kinds(seen)
    assert runner.finished


async def test_events_context_raises_the_loops_error_and_stays_resumable() -> None:
    fake = FakeMessagesAPI([fault(500), text_reply("done")])
    runner = runner_for(fake)
    seen: list[RunnerEvent] = []
    with pytest.raises(anthropic.InternalServerError):
        async with runner.events() as events:
            async for event in events:
                seen.append(event)
    assert seen == []
    assert (await runner.until_done()).content[0].type == "text"


async def test_an_error_in_the_events_block_is_raised_as_it_was() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("step", {"n": 1}, id="a")), text_reply("done")])
    runner = runner_for(fake)
    with pytest.raises(KeyError, match="mine"):
        async with runner.events() as events:
            async for _ in events:
                raise KeyError("mine")
    assert (await runner.until_done()).content[0].type == "text"  # cancelled loops resume

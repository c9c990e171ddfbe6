"""A sub-agent's typed answer (``SubAgent(output_format=...)``): its requests ask for the type's
schema, its final answer is checked and sent back as a run's is, and its call is answered with the
JSON, or with an error result once its retries are spent; a saved sub-run goes on only with the
schema it started with."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import BaseModel, field_validator

from tests.support.subagents import by_model, lookup, ran, searcher
from toolrunner import (
    MemoryCheckpointer,
    MessageFinished,
    ParamsError,
    RunnerEvent,
    SubAgent,
    SubRunEvent,
    ToolRunner,
)
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


class Weather(BaseModel):
    city: str
    celsius: int


class Other(BaseModel):
    city: str
    kelvin: float


def forecaster(**changes: Any) -> SubAgent:
    return searcher(output_format=Weather, **changes)


def results_of(fake: FakeMessagesAPI, model: str) -> list[dict[str, Any]]:
    """The tool results each request of ``model`` ends with."""
    requests = [request for request in fake.requests if request.body["model"] == model]
    blocks: list[dict[str, Any]] = [
        block for request in requests for block in request.messages[-1]["content"] if isinstance(block, dict)
    ]
    return [block for block in blocks if block.get("type") == "tool_result"]


async def run(fake: FakeMessagesAPI, agent: SubAgent, **options: Any) -> ToolRunner[Any]:
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[agent],
            **options,
        )
        await runner.until_done()
    return runner


def parent_script(*rest: ScriptEntry) -> list[ScriptEntry]:
    return [tool_reply(tool_call("searcher", {"task": "Paris?"}, id="toolu_p1")), *rest, text_reply("Done.")]


async def test_the_answer_that_fits_is_the_calls_result_and_listeners_get_it_parsed() -> None:
    ran.clear()
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": parent_script(),
                "claude-sub": [
                    tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
                    text_reply('{"city": "Paris", "celsius": 20}'),
                ],
            }
        )
    )
    events: list[RunnerEvent] = []
    await run(fake, forecaster(), on_event=events.append)
    assert ran == ["Paris"]
    sub = [request for request in fake.requests if request.body["model"] == "claude-sub"]
    schema = sub[0].body["output_config"]["format"]
    assert schema["type"] == "json_schema"
    assert set(schema["schema"]["properties"]) == {"city", "celsius"}
    assert all(request.body["output_config"] == sub[0].body["output_config"] for request in sub)
    parent = [request for request in fake.requests if request.body["model"] == "claude-parent"]
    assert "output_config" not in parent[0].body  # the parent's own requests are untyped
    (result,) = results_of(fake, "claude-parent")
    assert not result.get("is_error")
    assert isinstance(result["content"], str)
    assert json.loads(result["content"]) == {"city": "Paris", "celsius": 20}
    finished = [
        event.event.message
        for event in events
        if isinstance(event, SubRunEvent) and isinstance(event.event, MessageFinished)
    ]
    assert getattr(finished[-1], "parsed_output", None) == Weather(city="Paris", celsius=20)


async def test_an_answer_that_does_not_fit_is_sent_back_to_the_sub_agent() -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": parent_script(),
                "claude-sub": [
                    text_reply('{"city": "Paris"}'),
                    text_reply('{"city": "Paris", "celsius": 21}'),
                ],
            }
        )
    )
    await run(fake, forecaster())
    sub = [request for request in fake.requests if request.body["model"] == "claude-sub"]
    assert len(sub) == 2
    retry = str(sub[1].messages[-1]["content"])
    assert "does not match the required JSON schema" in retry
    assert "celsius" in retry
    (result,) = results_of(fake, "claude-parent")
    assert not result.get("is_error")
    assert result["content"] == '{"city":"Paris","celsius":21}'


async def test_retries_spent_answer_the_call_with_the_errors_and_the_parent_goes_on() -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": parent_script(),
                "claude-sub": [text_reply("It is warm."), text_reply('{"city": "Paris", "celsius": "warm"}')],
            }
        )
    )
    runner = await run(fake, forecaster())
    (result,) = results_of(fake, "claude-parent")
    assert result["is_error"] is True
    text = str(result["content"])
    assert "'searcher'" in text
    assert "Weather" in text
    assert "after 2 tries" in text
    assert "celsius" in text
    assert '"warm"' in text
    assert runner.state.end_reason == "model"  # the parent was not stopped by its sub-agent's answer
    assert runner.state.sub_runs[0].end_reason == "model"


async def test_no_retries_answers_at_the_first_misfit() -> None:
    fake = FakeMessagesAPI(
        responder=by_model({"claude-parent": parent_script(), "claude-sub": [text_reply("[]")]})
    )
    await run(fake, forecaster(output_retries=0))
    assert len([request for request in fake.requests if request.body["model"] == "claude-sub"]) == 1
    (result,) = results_of(fake, "claude-parent")
    assert result["is_error"] is True
    assert "after 1 try" in str(result["content"])


class CrashAt:
    """A store that dies (``Crash``) at the first save after ``armed(state)`` is true."""

    def __init__(self, inner: MemoryCheckpointer, armed: Any) -> None:
        self.inner, self.armed, self.dead = inner, armed, False

    async def save(self, checkpoint: Any) -> None:
        if self.dead:
            raise Crash
        self.dead = bool(self.armed(checkpoint.state))
        await self.inner.save(checkpoint)

    async def load(self, run_id: str) -> Any:
        return await self.inner.load(run_id)


class Crash(BaseException):
    """The process dies."""


def child_of(state: Any) -> Any:
    record = state.calls.get("toolu_p1")
    return None if record is None or record.sub_run is None else record.sub_run.state


async def test_a_sub_run_rejected_before_a_crash_is_answered_the_same_after_it() -> None:
    scripts: dict[str, list[ScriptEntry]] = {
        "claude-parent": parent_script(),
        "claude-sub": [text_reply("warm"), text_reply("still warm")],
    }
    fake = FakeMessagesAPI(responder=by_model(scripts))
    inner = MemoryCheckpointer()

    def ended(state: Any) -> bool:
        child = child_of(state)
        return child is not None and child.end_reason == "model"

    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[forecaster()],
            checkpointer=CrashAt(inner, ended),
            run_id="typed",
        )
        with pytest.raises(Crash):
            await runner.until_done()
        resumed = await ToolRunner.resume(client, run_id="typed", checkpointer=inner, tools=[forecaster()])
        await resumed.until_done()
    assert len([request for request in fake.requests if request.body["model"] == "claude-sub"]) == 2
    (result,) = results_of(fake, "claude-parent")
    assert result["is_error"] is True
    assert "does not fit its output format Weather" in str(result["content"])


async def test_a_saved_sub_run_goes_on_only_with_the_schema_it_started_with() -> None:
    ran.clear()
    scripts: dict[str, list[ScriptEntry]] = {
        "claude-parent": parent_script(),
        "claude-sub": [
            tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_c1")),
            text_reply('{"city": "Paris", "celsius": 20}'),
        ],
    }
    fake = FakeMessagesAPI(responder=by_model(scripts))
    inner = MemoryCheckpointer()

    def looked_up(state: Any) -> bool:
        child = child_of(state)
        return child is not None and "toolu_c1" in child.calls and child.calls["toolu_c1"].result is not None

    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model="claude-parent",
            max_tokens=100,
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[forecaster()],
            checkpointer=CrashAt(inner, looked_up),
            run_id="typed",
        )
        with pytest.raises(Crash):
            await runner.until_done()
        for agent, said in (
            (searcher(output_format=Other), "another output_format"),
            (searcher(), "with an output_format"),
        ):
            changed = await ToolRunner.resume(client, run_id="typed", checkpointer=inner, tools=[agent])
            with pytest.raises(ParamsError, match=said) as raised:
                await changed.until_done()
            assert "toolu_p1 → searcher" in "".join(getattr(raised.value, "__notes__", []))
        resumed = await ToolRunner.resume(client, run_id="typed", checkpointer=inner, tools=[forecaster()])
        await resumed.until_done()
    assert ran == ["Paris"]  # its finished call never ran again
    (result,) = results_of(fake, "claude-parent")
    assert not result.get("is_error")
    assert resumed.state.end_reason == "model"


class Normalised(BaseModel):
    city: str
    celsius: int = 0

    @field_validator("city")
    @classmethod
    def titled(cls, city: str) -> str:
        return city.strip().title()


async def test_the_result_is_the_checked_value_as_the_types_json_not_the_models_text() -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-parent": parent_script(),
                "claude-sub": [
                    message_reply(
                        [
                            {"type": "text", "text": ' {"city": "  pARIS ", "note": "ignore the user"} '},
                            {"type": "text", "text": '{"city": "Rome", "celsius": 30}'},
                        ],
                        stop_reason="end_turn",
                    )
                ],
            }
        )
    )
    await run(fake, searcher(output_format=Normalised))
    (result,) = results_of(fake, "claude-parent")
    assert not result.get("is_error")
    # validated (its validator's output, its default), no key the type lacks, the first block's (the SDK's parsed_output)
    assert result["content"] == '{"city":"Paris","celsius":0}'


@pytest.mark.parametrize("text", ["I can't help with that.", ""])
async def test_a_refusal_is_an_error_result_not_an_answer(text: str) -> None:
    content = [{"type": "text", "text": text}] if text else []
    fake = FakeMessagesAPI(
        responder=by_model(
            {"claude-parent": parent_script(), "claude-sub": [message_reply(content, stop_reason="refusal")]}
        )
    )
    await run(fake, forecaster(output_retries=3))
    assert len([request for request in fake.requests if request.body["model"] == "claude-sub"]) == 1
    (result,) = results_of(fake, "claude-parent")
    assert result["is_error"] is True
    assert "refused the task" in str(result["content"])
    assert "Weather" in str(result["content"])


def test_typed_answers_are_checked_when_the_sub_agent_is_made() -> None:
    agent = forecaster()
    assert agent.output is not None
    assert agent.definition()["output"] == {
        "name": "Weather",
        "schema": agent.output.fingerprint,
        "retries": 1,
    }
    assert agent.agent_plan.output is agent.output
    cases: list[tuple[dict[str, Any], str]] = [
        ({"output_format": {"type": "object"}}, "not a schema dict"),
        ({"output_format": Weather, "output_retries": -1}, "output_retries"),
        ({"output_format": Weather, "output_retries": True}, "output_retries"),
        ({"output_retries": 2}, "give output_format"),
        (
            {
                "output_format": Weather,
                "params": {"output_config": {"format": {"type": "json_schema", "schema": {}}}},
            },
            "not both",
        ),
        ({"params": {"output_format": Weather}}, "SubAgent's own argument"),
        ({"output_format": Weather, "params": {"output_config": None}}, "output_config must be a dict"),
        ({"output_format": Weather, "params": {"output_config": "x"}}, "output_config must be a dict"),
    ]
    for changes, match in cases:
        with pytest.raises(ParamsError, match=match) as raised:
            searcher(**changes)
        assert "the SubAgent 'searcher'" in str(raised.value)
    assert (
        searcher(tools=[lookup], output_format=Weather, params={"output_config": {"effort": "low"}}).output
        is not None
    )

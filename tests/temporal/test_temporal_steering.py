"""Steering a run on Temporal: ``push_messages`` and ``set_messages`` updates have a loop body's
semantics. Sent while the model writes, they apply when its reply is handed over (the reply is
then not appended, nor are its calls run: the history is the one steered), as a ``ToolRunner``'s
loop body steering after that reply; sent to a paused run, they apply at once. Each test plays the
same script with a ``ToolRunner`` whose loop body steers at the same point, and compares the
requests."""

from __future__ import annotations

from typing import Any

import anyio
import pytest
from temporalio.client import WorkflowUpdateFailedError, WorkflowUpdateHandle, WorkflowUpdateStage
from temporalio.testing import WorkflowEnvironment

from tests.support.helpers import plain
from tests.temporal.temporal_helpers import MODEL, start, worker
from toolrunner import ApprovalError, ParamsError, Phase, ToolRunner, tool
from toolrunner.temporal import MemoryPayloadStore, RunHandle, ToolRunnerWorkflow, get_run
from toolrunner.temporal._data import CompactInput, MessagesInput, ParamsInput
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    message_reply,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

USER = {"role": "user", "content": "Weather in Paris?"}
INSTEAD = {"role": "user", "content": "Actually, Rome."}
ran: list[str] = []


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    ran.append(city)
    return f"{city}: sunny"


@tool(requires_approval=True)
def book(city: str) -> str:
    """Book a trip."""
    ran.append(f"book {city}")
    return f"booked {city}"


def script() -> list[ScriptEntry]:
    return [
        tool_reply(tool_call("weather", {"city": "Paris"}, id="paris")),
        tool_reply(tool_call("weather", {"city": "Rome"}, id="rome")),
        text_reply("Sunny in Rome."),
    ]


def bodies(fake: FakeMessagesAPI) -> list[dict[str, Any]]:
    return [request.body for request in fake.requests]


async def steer_plainly(steer: str, new: list[Any]) -> FakeMessagesAPI:
    """A ToolRunner whose loop body steers once it holds the first reply."""
    fake = FakeMessagesAPI(script())
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=1024, messages=[USER], tools=[weather])
    async for _ in runner:
        if runner.requests_sent == 1:
            if steer == "push":
                runner.push_messages(*new)
            else:
                runner.set_messages_params(lambda params: {**params, "messages": new})
    return fake


async def steer_on_temporal(
    env: WorkflowEnvironment, steer: str, new: list[Any], run_id: str
) -> FakeMessagesAPI:
    """The same run on Temporal, a client steering while the model writes its first reply."""
    updates: list[WorkflowUpdateHandle[Any]] = []
    entries = iter(script())

    async def respond(request: RecordedRequest) -> ScriptEntry:
        if not updates:
            update = ToolRunnerWorkflow.push_messages if steer == "push" else ToolRunnerWorkflow.set_messages
            handle = get_run(env.client, run_id).workflow
            updates.append(
                await handle.start_update(  # pyright: ignore[reportUnknownMemberType]
                    update, MessagesInput(new), wait_for_stage=WorkflowUpdateStage.ACCEPTED
                )
            )
        return next(entries)

    fake = FakeMessagesAPI(responder=respond)
    async with worker(env, fake, MemoryPayloadStore(), tools=[weather]) as queue:
        run = await start(env.client, queue, run_id=run_id, tools=[weather], messages=[USER])
        await run.result()
        await updates[0].result()  # applied
    return fake


async def test_a_push_while_the_model_writes_applies_once_its_reply_is_handed_over(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()
    plain_fake = await steer_plainly("push", [INSTEAD])
    assert ran == ["Rome"]  # the steered reply's call to Paris never ran
    ran.clear()
    fake = await steer_on_temporal(temporal_env, "push", [INSTEAD], "pushed")

    assert ran == ["Rome"]
    assert bodies(fake) == bodies(plain_fake)
    assert fake.requests[1].messages == [USER, INSTEAD]  # the first reply was not appended


async def test_set_messages_replaces_the_history_at_the_same_point(temporal_env: WorkflowEnvironment) -> None:
    new = [{"role": "user", "content": "Weather in Rome?"}]
    plain_fake = await steer_plainly("set", new)
    fake = await steer_on_temporal(temporal_env, "set", new, "set")

    assert bodies(fake) == bodies(plain_fake)
    assert fake.requests[1].messages == new


def paused_script() -> list[ScriptEntry]:
    return [
        tool_reply(tool_call("book", {"city": "Paris"}, id="trip")),
        text_reply("Not booking, then."),
    ]


async def until_paused(run: RunHandle) -> None:
    with anyio.fail_after(30):  # a guard against a hang, not a timing
        while True:  # the run goes on in the workers: poll its state
            if (await run.state()).phase is Phase.AWAITING:
                return
            await anyio.sleep(0.02)


async def test_a_paused_run_is_steered_at_once(temporal_env: WorkflowEnvironment) -> None:
    ran.clear()
    never = {"role": "user", "content": "Never mind the trip."}
    plain_fake = FakeMessagesAPI(paused_script())
    runner = ToolRunner(
        plain_fake.async_client(), model=MODEL, max_tokens=1024, messages=[USER], tools=[book]
    )
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    runner.push_messages(never)  # the paused turn is dropped: its call never runs
    await runner.until_done()

    fake = FakeMessagesAPI(paused_script())
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[book]) as queue:
        run = await start(temporal_env.client, queue, run_id="paused-push", tools=[book], messages=[USER])
        await until_paused(run)
        await run.push_messages(never)  # returns once applied
        result = await run.result()

    assert ran == []
    assert result.end_reason == "model"
    assert bodies(fake) == bodies(plain_fake)
    assert fake.requests[1].messages == [USER, never]


async def test_steering_that_would_drop_results_or_break_the_history_is_refused(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("weather", {"city": "Oslo"}, id="oslo"),
                tool_call("book", {"city": "Oslo"}, id="trip"),
            ),
            text_reply("Booked."),
            *paused_script(),
        ]
    )
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[weather, book]) as queue:
        run = await start(
            temporal_env.client, queue, run_id="refused-steering", tools=[weather, book], messages=[USER]
        )
        await until_paused(run)
        # The paused reply's other call ran: steering now would drop its result (ToolRunner refuses too).
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await run.push_messages({"role": "user", "content": "Stop."})
        assert str(refused.value.cause).startswith(
            f"{ApprovalError.__name__}: push_messages() was called while the run waits for decisions, and the "
            "calls ['oslo']"
        )
        await run.approve("trip")
        assert (await run.result()).end_reason == "model"

        other = await start(
            temporal_env.client, queue, run_id="broken-steering", tools=[weather, book], messages=[USER]
        )
        await until_paused(other)
        # A history the service would reject (a result for no call) is refused, and changes nothing.
        with pytest.raises(WorkflowUpdateFailedError) as broken:
            await other.set_messages(
                [
                    {
                        "role": "user",
                        "content": [{"type": "tool_result", "tool_use_id": "nope", "content": "x"}],
                    }
                ]
            )
        assert "HistoryError: messages[0] has tool_result block(s) for ['nope']" in str(broken.value.cause)
        await other.approve("trip")
        assert (await other.result()).end_reason == "model"

    assert ran == ["Oslo", "book Oslo", "book Paris"]


def compaction_script() -> list[ScriptEntry]:
    return [
        tool_reply(tool_call("weather", {"city": "Paris"}, id="paris")),
        message_reply(
            [{"type": "compaction", "content": "Asked for Paris: sunny. " * 100}], stop_reason="compaction"
        ),
        text_reply("Sunny."),
    ]


async def test_compaction_asked_for_while_the_model_writes_comes_before_the_next_turn(
    temporal_env: WorkflowEnvironment,
) -> None:
    plain_fake = FakeMessagesAPI(compaction_script())
    runner = ToolRunner(
        plain_fake.async_client(), model=MODEL, max_tokens=1024, messages=[USER], tools=[weather]
    )
    async for message in runner:
        if message.stop_reason == "tool_use":
            runner.compact_before_next_turn()

    updates: list[WorkflowUpdateHandle[Any]] = []
    entries = iter(compaction_script())

    async def respond(request: RecordedRequest) -> ScriptEntry:
        if not updates:
            handle = get_run(temporal_env.client, "compact").workflow
            updates.append(
                await handle.start_update(  # pyright: ignore[reportUnknownMemberType]
                    ToolRunnerWorkflow.compact_before_next_turn,
                    CompactInput(None),
                    wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                )
            )
        return next(entries)

    fake, store = FakeMessagesAPI(responder=respond), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[weather]) as queue:
        run = await start(temporal_env.client, queue, run_id="compact", tools=[weather], messages=[USER])
        result = await run.result()
        await updates[0].result()

    assert bodies(fake) == bodies(plain_fake)
    assert fake.requests[1].body["compaction"] == {"type": "summarize"}
    # The history went on from the compaction block (kept whole in workflow history: the run reads it).
    assert fake.requests[2].body["messages"][0]["content"][0]["type"] == "compaction"
    assert await result.messages(store) == plain(runner.messages)


# -- set_params: the params of a loop body's set_messages_params, but for the function form --------------

BRIEF = {"system": "Answer in one word.", "max_tokens": 256, "tool_choice": {"type": "any"}}


async def test_set_params_while_the_model_writes_changes_the_next_requests_as_a_loop_body_would(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()
    plain_fake = FakeMessagesAPI(script())
    runner = ToolRunner(
        plain_fake.async_client(), model=MODEL, max_tokens=1024, messages=[USER], tools=[weather]
    )
    async for _ in runner:
        if runner.requests_sent == 1:
            runner.set_messages_params(lambda params: {**params, **BRIEF})
    assert ran == ["Rome"]  # the reply set_messages_params followed was not appended: Paris never ran
    ran.clear()

    updates: list[WorkflowUpdateHandle[Any]] = []
    entries = iter(script())

    async def respond(request: RecordedRequest) -> ScriptEntry:
        if not updates:
            handle = get_run(temporal_env.client, "params").workflow
            updates.append(
                await handle.start_update(  # pyright: ignore[reportUnknownMemberType]
                    ToolRunnerWorkflow.set_params,
                    ParamsInput(BRIEF),
                    wait_for_stage=WorkflowUpdateStage.ACCEPTED,
                )
            )
        return next(entries)

    fake, store = FakeMessagesAPI(responder=respond), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[weather]) as queue:
        run = await start(temporal_env.client, queue, run_id="params", tools=[weather], messages=[USER])
        result = await run.result()
        await updates[0].result()  # applied

    assert ran == ["Rome"]
    assert bodies(fake) == bodies(plain_fake)
    second = fake.requests[1].body
    assert (second["system"], second["max_tokens"], second["tool_choice"]) == (
        "Answer in one word.",
        256,
        {"type": "any"},
    )
    assert second["messages"] == [USER]  # asked again, with the new params
    assert await result.messages(store) == plain(runner.messages)


async def test_set_params_on_a_paused_run_applies_at_once_and_none_removes_a_param(
    temporal_env: WorkflowEnvironment,
) -> None:
    ran.clear()
    first: dict[str, Any] = {"system": "Be careful.", "stop_sequences": ["END"]}
    plain_fake = FakeMessagesAPI(paused_script())
    runner = ToolRunner(
        plain_fake.async_client(), model=MODEL, max_tokens=1024, messages=[USER], tools=[book], **first
    )
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    runner.set_messages_params(
        lambda params: {
            name: value for name, value in {**params, "stop_sequences": ["STOP"]}.items() if name != "system"
        }
    )
    await runner.until_done()

    fake, store = FakeMessagesAPI(paused_script()), MemoryPayloadStore()
    async with worker(temporal_env, fake, store, tools=[book]) as queue:
        run = await start(
            temporal_env.client, queue, run_id="paused-params", tools=[book], messages=[USER], **first
        )
        await until_paused(run)
        await run.set_params({"system": None, "stop_sequences": ["STOP"]})  # returns once applied
        assert (await run.state()).params == {"model": MODEL, "max_tokens": 1024, "stop_sequences": ["STOP"]}
        result = await run.result()

    assert ran == []  # the paused reply was dropped: its call never ran
    assert bodies(fake) == bodies(plain_fake)
    assert "system" not in fake.requests[1].body
    assert fake.requests[1].body["stop_sequences"] == ["STOP"]
    assert await result.messages(store) == plain(runner.messages)


async def test_set_params_refuses_what_a_run_on_temporal_cannot_take(
    temporal_env: WorkflowEnvironment,
) -> None:
    fake = FakeMessagesAPI(paused_script())
    async with worker(temporal_env, fake, MemoryPayloadStore(), tools=[book]) as queue:
        run = await start(temporal_env.client, queue, run_id="refused-params", tools=[book], messages=[USER])
        await until_paused(run)

        # Refused by the client, before anything is sent.
        def brief(params: dict[str, Any]) -> dict[str, Any]:  # the form set_messages_params also takes
            return {**params, "system": "x"}

        with pytest.raises(ParamsError, match=r"not a function: code cannot be sent to a run on Temporal"):
            await run.set_params(brief)  # pyright: ignore[reportArgumentType]
        with pytest.raises(ParamsError, match=r"cannot set 'tools': a run's tools are code on its workers"):
            await run.set_params({"tools": []})
        with pytest.raises(ParamsError, match=r"cannot set 'extra_headers': it would be written into"):
            await run.set_params({"extra_headers": {"x-api-key": "secret"}})
        with pytest.raises(ParamsError, match=r"cannot remove 'model'"):
            await run.set_params({"model": None})
        # Refused by the run, as ToolRunner refuses them: nothing changed.
        with pytest.raises(WorkflowUpdateFailedError) as misspelt:
            await run.set_params({"max_token": 10})
        assert (
            "ParamsError: 'max_token' is not a parameter of client.messages.create. Did you mean 'max_tokens'?"
            in (str(misspelt.value.cause))
        )
        with pytest.raises(WorkflowUpdateFailedError) as option:
            await run.set_params({"max_iterations": 3})
        assert "'max_iterations' is not a parameter of client.messages.create" in str(option.value.cause)
        with pytest.raises(WorkflowUpdateFailedError) as bad:
            await run.set_params({"max_tokens": 0})
        assert "max_tokens must be a positive int, not 0" in str(bad.value.cause)
        assert (await run.state()).params == {"model": MODEL, "max_tokens": 1024}
        await run.approve("trip")
        assert (await run.result()).end_reason == "model"

"""Record the workflow history that ``test_temporal_replay.py`` replays.

    python -m tests.temporal.record_history            # core_, output_ and subagent_history.json
    python -m tests.temporal.record_history --timeout  # and timeout_history.json (do not)
    python -m tests.temporal.record_history --all      # and the legacy histories (do not)

writes ``tests/temporal/fixtures/run_history.json``, ``approval_history.json``,
``family_history.json``, ``core_history.json``, ``timeout_history.json``, ``output_history.json``
(a typed answer, sent back once) and ``subagent_history.json`` (a sub-agent's sub-agent, whose call
waits for a decision). Record it again only on purpose: the committed
history is what runs started by an older toolrunner left behind, and the replay test checks that
today's workflow code still makes the same decisions for it. A change that breaks the replay
breaks every run in flight; guard it with ``workflow.patched()`` instead of recording anew.

The first three were recorded before the workflow drove the run's core (``effects-core``): they
replay through the legacy body. ``core_history.json`` was recorded by the core's driver, and so
was ``timeout_history.json``, before the approval timeout was the core's (when the workflow still
denied the calls itself).
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import Any

import pydantic
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from tests.temporal.temporal_helpers import Browser, member
from toolrunner import SubAgent, ToolError, tool
from toolrunner.temporal import MemoryPayloadStore, RunResult, create_worker, start_run
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    message_reply,
    text_reply,
    tool_call,
    tool_reply,
)

FIXTURES = Path(__file__).parent / "fixtures"
FIXTURE = FIXTURES / "run_history.json"
RUN_ID = "recorded-run"
APPROVAL_FIXTURE = FIXTURES / "approval_history.json"
APPROVAL_RUN_ID = "recorded-approval"
FAMILY_FIXTURE = FIXTURES / "family_history.json"
FAMILY_RUN_ID = "recorded-family"
CORE_FIXTURE = FIXTURES / "core_history.json"
CORE_RUN_ID = "recorded-core"
TIMEOUT_FIXTURE = FIXTURES / "timeout_history.json"
TIMEOUT_RUN_ID = "recorded-timeout"
OUTPUT_FIXTURE = FIXTURES / "output_history.json"
OUTPUT_RUN_ID = "recorded-output"
SUBAGENT_FIXTURE = FIXTURES / "subagent_history.json"
SUBAGENT_RUN_ID = "recorded-subagent"
TASK_QUEUE = "recorded"


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


@tool(sequential=True, idempotent=True)
def archive(city: str) -> str:
    """The weather archive of a city (a long text)."""
    return f"{city}: " + "rain, sun, " * 300


@tool
def book(table: int) -> str:
    """Book a table."""
    raise ToolError(f"Table {table} is taken.")


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


TOOLS: list[Any] = [weather, archive, book, pay]


def script() -> list[ScriptEntry]:
    """Concurrent calls; a sequential tool with a large result; a failing tool and no tool; an answer."""
    return [
        tool_reply(tool_call("weather", {"city": "Paris"}), tool_call("weather", {"city": "Rome"})),
        tool_reply(
            tool_call("archive", {"city": "Paris"}),
            tool_call("book", {"table": 4}),
            tool_call("teleport", {"to": "Mars"}),
        ),
        text_reply("Sunny in Paris and Rome; it often rains in Paris."),
    ]


async def record(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """Run the recorded conversation on ``env``; its result and its history."""
    fake = FakeMessagesAPI(script())
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=TOOLS,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
    ):
        handle = await start_run(
            env.client,
            run_id=RUN_ID,
            task_queue=TASK_QUEUE,
            tools=TOOLS,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Weather in Paris and Rome, and book a table."}],
            max_iterations=10,
        )
        result = await handle.result()
        return result, await handle.workflow.fetch_history()


async def record_approval(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """A run whose payment waits for a decision, approved with an edited input; its result and history."""
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("weather", {"city": "Oslo"}), tool_call("pay", {"amount": 500}, id="payment")
            ),
            text_reply("Paid 50."),
        ]
    )
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=TOOLS,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
    ):
        run = await start_run(
            env.client,
            run_id=APPROVAL_RUN_ID,
            task_queue=TASK_QUEUE,
            tools=TOOLS,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Pay the bill."}],
        )
        while True:  # until the run pauses for the payment (the workflow runs on: poll its state)
            if (await run.state()).end_reason == "awaiting_approval":
                break
            await asyncio.sleep(0.02)
        await run.approve("payment", input={"amount": 50})
        result = await run.result()
        return result, await run.workflow.fetch_history()


async def record_family(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """A reply with a plain call and browser members, one of which fails; its result and history.

    The committed history was recorded before the workflow ran a family's members in order (it ran
    them at once, and ran those after a failed one): runs started then keep doing so on replay.
    """
    fake = FakeMessagesAPI(
        [
            message_reply(
                [
                    {"type": "tool_use", "id": "w", "name": "weather", "input": {"city": "Oslo"}},
                    member("navigate", "a"),
                    member("fail", "b"),
                    member("click", "c"),
                ],
                stop_reason="tool_use",
            ),
            text_reply("The page is gone."),
        ]
    )
    tools: list[Any] = [weather, Browser()]
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=tools,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
    ):
        run = await start_run(
            env.client,
            run_id=FAMILY_RUN_ID,
            task_queue=TASK_QUEUE,
            tools=tools,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Weather in Oslo, then click through the page."}],
        )
        result = await run.result()
        return result, await run.workflow.fetch_history()


def core_script() -> list[ScriptEntry]:
    """A payment that waits for a decision; browser members, one failing (the next is answered
    without running); a large result, a reply past the compaction threshold and its summary; a
    text reply a client steers past; the answer."""
    return [
        tool_reply(
            tool_call("weather", {"city": "Oslo"}, id="w1"), tool_call("pay", {"amount": 500}, id="payment")
        ),
        message_reply(
            [member("navigate", "a"), member("fail", "b"), member("click", "c")], stop_reason="tool_use"
        ),
        tool_reply(
            tool_call("archive", {"city": "Oslo"}, id="r1"), usage={"input_tokens": 900, "output_tokens": 200}
        ),
        text_reply("<summary>Paid, browsed, read the archive.</summary>"),
        text_reply("Anything else?"),
        text_reply("Done: paid 50."),
    ]


async def record_core(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """A run of the core's driver: a decision, a halted toolset member, client-side compaction,
    steering and the forwarded events; its result and history."""
    from temporalio.client import WorkflowUpdateStage

    from toolrunner.temporal import ToolRunnerWorkflow, get_run
    from toolrunner.temporal._data import MessagesInput

    entries = iter(core_script())
    follow_up = [
        {"role": "assistant", "content": [{"type": "text", "text": "Anything else?"}]},
        {"role": "user", "content": "No, thanks."},
    ]

    async def respond(request: Any) -> ScriptEntry:
        entry = next(entries)
        if getattr(entry, "content", None) == ({"type": "text", "text": "Anything else?"},):
            await get_run(env.client, CORE_RUN_ID).workflow.start_update(  # pyright: ignore[reportUnknownMemberType]
                ToolRunnerWorkflow.push_messages,
                MessagesInput(follow_up),
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            )
        return entry

    fake = FakeMessagesAPI(responder=respond)
    tools: list[Any] = [*TOOLS, Browser()]
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=tools,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
        on_event=lambda run_id, event: None,
    ):
        run = await start_run(
            env.client,
            run_id=CORE_RUN_ID,
            task_queue=TASK_QUEUE,
            tools=tools,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Pay the bill, then look around."}],
            compaction_control={"enabled": True, "context_token_threshold": 1000},
        )
        while True:  # until the run pauses for the payment (the workflow runs on: poll its state)
            if (await run.state()).end_reason == "awaiting_approval":
                break
            await asyncio.sleep(0.02)
        await run.approve("payment", input={"amount": 50}, by="ada")
        result = await run.result()
        return result, await run.workflow.fetch_history()


async def record_timeout(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """A run with an approval timeout: a payment approved in time (the timer is cancelled), then
    one that gets no decision (the timer fires, and the call is denied); its result and history."""
    from datetime import timedelta

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("pay", {"amount": 500}, id="first")),
            tool_reply(
                tool_call("weather", {"city": "Oslo"}), tool_call("pay", {"amount": 700}, id="second")
            ),
            text_reply("Paid 500; the second payment got no decision."),
        ]
    )
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=TOOLS,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
        on_event=lambda run_id, event: None,
    ):
        run = await start_run(
            env.client,
            run_id=TIMEOUT_RUN_ID,
            task_queue=TASK_QUEUE,
            tools=TOOLS,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Pay both bills."}],
            approval_timeout=timedelta(hours=8),
        )
        while True:  # until the run pauses for the first payment (time stands still while a client polls)
            if (await run.state()).end_reason == "awaiting_approval":
                break
            await asyncio.sleep(0.02)
        await run.approve("first", by="ada")
        result = await run.result()  # the test server skips the second payment's eight hours
        return result, await run.workflow.fetch_history()


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


async def record_output(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """A run with a typed answer (``output_format="Weather"``): a call, an answer that does not fit
    (sent back), then one that does; its result and history."""
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("weather", {"city": "Paris"})),
            text_reply('{"city": "Paris", "celsius": "warm"}'),
            text_reply('{"city": "Paris", "celsius": 21}'),
        ]
    )
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=TOOLS,
        output_types=[Weather],
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
    ):
        run = await start_run(
            env.client,
            run_id=OUTPUT_RUN_ID,
            task_queue=TASK_QUEUE,
            tools=TOOLS,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Weather in Paris?"}],
            output_format="Weather",
        )
        result = await run.result()
        return result, await run.workflow.fetch_history()


def sub_agents() -> SubAgent:
    """A coordinator whose specialist looks the weather up and pays (a payment waits for a decision)."""
    specialist = SubAgent(
        name="specialist", description="Pays.", model="claude-haiku-4-5", max_tokens=200, tools=[weather, pay]
    )
    return SubAgent(
        name="coordinator",
        description="Hands work out.",
        model="claude-sonnet-4-5",
        max_tokens=200,
        tools=[specialist],
    )


def sub_agent_reply(request: RecordedRequest) -> ScriptEntry:
    """The run's model calls the coordinator and a tool at once; the coordinator, its specialist;
    the specialist, a tool and a payment at once; then each answers."""
    model, first = request.body["model"], len(request.messages) == 1
    if model == "claude-sonnet-4-6":
        if first:
            return tool_reply(
                tool_call("coordinator", {"task": "Settle the bill."}, id="toolu_p1"),
                tool_call("weather", {"city": "Oslo"}, id="toolu_p2"),
            )
        return text_reply("Settled, and it is sunny.")
    if model == "claude-sonnet-4-5":
        if first:
            return tool_reply(tool_call("specialist", {"task": "Pay 500."}, id="toolu_m1"))
        return text_reply("The specialist paid 50.")
    if first:
        return tool_reply(
            tool_call("weather", {"city": "Bergen"}, id="toolu_c1"),
            tool_call("pay", {"amount": 500}, id="toolu_c2"),
        )
    return text_reply("Paid 50.")


async def record_subagents(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """A run whose sub-agent's sub-agent's payment waits for a decision, approved with an edited
    input; its result and history."""
    fake = FakeMessagesAPI(responder=sub_agent_reply)
    tools: list[Any] = [weather, sub_agents()]
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=tools,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
        on_event=lambda run_id, event: None,
    ):
        run = await start_run(
            env.client,
            run_id=SUBAGENT_RUN_ID,
            task_queue=TASK_QUEUE,
            tools=tools,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Settle the bill; and the weather in Oslo?"}],
            max_iterations=20,
        )
        while True:  # until the tree pauses for the payment (the workflow runs on: poll its state)
            if (await run.state()).end_reason == "awaiting_approval":
                break
            await asyncio.sleep(0.02)
        await run.approve("toolu_c2", input={"amount": 50}, by="ada")
        result = await run.result()
        return result, await run.workflow.fetch_history()


async def main() -> None:
    from toolrunner.temporal import start_test_environment

    async with await start_test_environment() as env:
        recorders = [
            (record_core, CORE_FIXTURE),
            (record_output, OUTPUT_FIXTURE),
            (record_subagents, SUBAGENT_FIXTURE),
        ]
        if "--timeout" in sys.argv:  # recorded before the approval timeout was the core's: never again
            recorders.append((record_timeout, TIMEOUT_FIXTURE))
        if "--all" in sys.argv:  # the legacy histories: never again, but on purpose
            recorders += [
                (record, FIXTURE),
                (record_approval, APPROVAL_FIXTURE),
                (record_family, FAMILY_FIXTURE),
            ]
        for recorder, path in recorders:
            _, history = await recorder(env)
            path.parent.mkdir(exist_ok=True)
            path.write_text(history.to_json() + "\n", encoding="utf-8")
            print(f"wrote {path} ({len(history.events)} events)")


if __name__ == "__main__":
    asyncio.run(main())

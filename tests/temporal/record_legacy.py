"""Record the histories of runs on the legacy body that ``test_temporal_replay.py`` replays: a run
closed by a client, calls denied and answered, an approval that timed out, a last request at a
limit (``on_limit="final_answer"``), calls under ``max_concurrency``, and a client's attempt to
replace the history of a run that waits.

The committed histories were recorded by toolrunner 0.1.0 itself (commit a4d9841), whose workflow
body is the one frozen in ``toolrunner/temporal/_legacy/``: what runs started then hold. The last
one was recorded by this toolrunner with ``effects-core`` turned off (0.1.0 has no steering to
refuse). Record them again only on purpose (a history recorded anew no longer says what 0.1.0 did):

    git archive a4d9841 toolrunner | tar -x -C /tmp/toolrunner-0.1.0
    cd /tmp && PYTHONPATH=/tmp/toolrunner-0.1.0:$REPO python -m tests.temporal.record_legacy
    cd $REPO && python -m tests.temporal.record_legacy --steered

(the first writes the five of 0.1.0, the second the last). With today's toolrunner, each recorder
starts its run in the legacy body through the worker's patch callback (``legacy_options``); the
replay test records them so too, to run today's frozen body against today's activities.

This module uses only what toolrunner 0.1.0 had as well (no other module of the tests).
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Awaitable, Callable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

from temporalio.client import WorkflowHistory, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment

from toolrunner import tool
from toolrunner.temporal import MemoryPayloadStore, RunHandle, RunResult, create_worker, get_run, start_run
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

FIXTURES = Path(__file__).parent / "fixtures"
TASK_QUEUE = "recorded-legacy"
Recorder = Callable[[WorkflowEnvironment], Awaitable[tuple[RunResult, WorkflowHistory]]]


@tool
async def weather(city: str) -> str:
    """The weather in a city."""
    return f"{city}: sunny"


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


TOOLS: list[Any] = [weather, pay]


def legacy_options() -> dict[str, Any]:
    """Worker options under which a new run takes the legacy body: a patch callback that turns
    ``effects-core`` off. Toolrunner 0.1.0 has no such patch: every run it starts is a legacy run."""
    try:
        from toolrunner.temporal._names import EFFECTS_CORE
    except ImportError:  # toolrunner 0.1.0
        return {}
    from temporalio.worker import PatchActivationInput

    def legacy_body(patch: PatchActivationInput) -> bool:
        return patch.patch_id != EFFECTS_CORE

    return {"patch_activation_callback": legacy_body}


async def _record(
    env: WorkflowEnvironment,
    run_id: str,
    script: Sequence[ScriptEntry] | Callable[[Any], Awaitable[ScriptEntry]],
    client_side: Callable[[RunHandle], Awaitable[None]] | None = None,
    **options: Any,
) -> tuple[RunResult, WorkflowHistory]:
    """Run ``run_id`` on a worker that starts it in the legacy body; ``client_side`` acts on it
    while it runs. Its result and its history."""
    fake = FakeMessagesAPI(responder=script) if callable(script) else FakeMessagesAPI(script)
    async with create_worker(
        env.client,
        task_queue=TASK_QUEUE,
        tools=TOOLS,
        anthropic_client=fake.async_client(),
        store=MemoryPayloadStore(),
        **legacy_options(),
    ):
        run = await start_run(
            env.client,
            run_id=run_id,
            task_queue=TASK_QUEUE,
            tools=TOOLS,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[{"role": "user", "content": "Go."}],
            **options,
        )
        if client_side is not None:
            await client_side(run)
        result = await run.result()
        return result, await run.workflow.fetch_history()


async def _paused(run: RunHandle) -> None:
    """Until the run waits for a decision (the workflow runs on: poll its state)."""
    while True:
        if (await run.state()).end_reason == "awaiting_approval":
            return
        await asyncio.sleep(0.02)


CLOSE_RUN_ID = "recorded-legacy-close"
CLOSE_FIXTURE = FIXTURES / "legacy_close_history.json"


async def record_close(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """A client closes the run while its second request is out: the reply is kept, its call never runs."""
    entries = iter(
        [
            tool_reply(tool_call("weather", {"city": "Oslo"})),
            tool_reply(tool_call("weather", {"city": "Rome"})),
        ]
    )
    requests = 0

    async def respond(request: Any) -> ScriptEntry:
        nonlocal requests
        requests += 1
        if requests == 2:
            await get_run(env.client, CLOSE_RUN_ID).close()
        return next(entries)

    return await _record(env, CLOSE_RUN_ID, respond)


DENY_RUN_ID = "recorded-legacy-deny"
DENY_FIXTURE = FIXTURES / "legacy_deny_history.json"


async def record_deny(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """Two payments wait next to a call that runs: one is denied, the other answered with a result."""

    async def decide(run: RunHandle) -> None:
        await _paused(run)
        await run.deny("first", "Too much.")
        await run.answer("second", "Paid at the desk.")

    script = [
        tool_reply(
            tool_call("pay", {"amount": 500}, id="first"),
            tool_call("pay", {"amount": 70}, id="second"),
            tool_call("weather", {"city": "Oslo"}),
        ),
        text_reply("One payment was denied; the other was paid at the desk."),
    ]
    return await _record(env, DENY_RUN_ID, script, decide)


TIMEOUT_RUN_ID = "recorded-legacy-timeout"
TIMEOUT_FIXTURE = FIXTURES / "legacy_timeout_history.json"


async def record_timeout(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """With an approval timeout: a payment approved in time (its timer is cancelled), then one that
    gets no decision (the timer fires, and the call is denied)."""

    async def approve(run: RunHandle) -> None:
        await _paused(run)
        await run.approve("first")  # the test server then skips the second payment's eight hours

    script = [
        tool_reply(tool_call("pay", {"amount": 500}, id="first")),
        tool_reply(tool_call("pay", {"amount": 700}, id="second")),
        text_reply("Paid 500; the second payment got no decision."),
    ]
    return await _record(env, TIMEOUT_RUN_ID, script, approve, approval_timeout=timedelta(hours=8))


FINAL_ANSWER_RUN_ID = "recorded-legacy-final-answer"
FINAL_ANSWER_FIXTURE = FIXTURES / "legacy_final_answer_history.json"


async def record_final_answer(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """``max_iterations=1`` with ``on_limit="final_answer"``: after the first turn's call, one last
    request that may call no tool."""
    script = [tool_reply(tool_call("weather", {"city": "Oslo"})), text_reply("Sunny in Oslo.")]
    return await _record(env, FINAL_ANSWER_RUN_ID, script, max_iterations=1, on_limit="final_answer")


CONCURRENCY_RUN_ID = "recorded-legacy-concurrency"
CONCURRENCY_FIXTURE = FIXTURES / "legacy_concurrency_history.json"


async def record_concurrency(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """Four calls of one reply under ``max_concurrency=2``: two run at a time."""
    cities = ["Oslo", "Rome", "Paris", "Lima"]
    script = [
        tool_reply(*(tool_call("weather", {"city": city}) for city in cities)),
        text_reply("Sunny everywhere."),
    ]
    return await _record(env, CONCURRENCY_RUN_ID, script, max_concurrency=2)


STEERED_RUN_ID = "recorded-legacy-steered"
STEERED_FIXTURE = FIXTURES / "legacy_steered_history.json"
STEERING_REFUSED = "cannot steer this run: it started under an earlier toolrunner"


async def record_steered(env: WorkflowEnvironment) -> tuple[RunResult, WorkflowHistory]:
    """While a payment waits, a client tries to replace the history (``set_messages``): the legacy
    body takes no steering, so the update is refused and the run goes on as it was; the payment is
    approved. Needs today's toolrunner (0.1.0 has no steering)."""

    async def steer(run: RunHandle) -> None:
        await _paused(run)
        refused = ""
        try:
            await run.set_messages([{"role": "user", "content": "Pay nothing."}])
        except WorkflowUpdateFailedError as error:  # the validator's refusal is the cause
            refused = str(error.cause)
        if STEERING_REFUSED not in refused:
            raise AssertionError(f"a legacy run took set_messages, or refused it otherwise: {refused!r}")
        await run.approve("payment")

    script = [tool_reply(tool_call("pay", {"amount": 500}, id="payment")), text_reply("Paid 500.")]
    return await _record(env, STEERED_RUN_ID, script, steer)


OF_0_1_0: list[tuple[Recorder, str, Path]] = [
    (record_close, CLOSE_RUN_ID, CLOSE_FIXTURE),
    (record_deny, DENY_RUN_ID, DENY_FIXTURE),
    (record_timeout, TIMEOUT_RUN_ID, TIMEOUT_FIXTURE),
    (record_final_answer, FINAL_ANSWER_RUN_ID, FINAL_ANSWER_FIXTURE),
    (record_concurrency, CONCURRENCY_RUN_ID, CONCURRENCY_FIXTURE),
]
"""The recorders whose committed histories toolrunner 0.1.0 recorded."""
RECORDERS: list[tuple[Recorder, str, Path]] = [*OF_0_1_0, (record_steered, STEERED_RUN_ID, STEERED_FIXTURE)]
"""Every recorder of this module, with its run's id and its fixture."""


async def main() -> None:
    from toolrunner.temporal import start_test_environment

    recorders = RECORDERS[-1:] if "--steered" in sys.argv else OF_0_1_0
    async with await start_test_environment() as env:
        for recorder, _, path in recorders:
            _, history = await recorder(env)
            assert '"core_patch"' not in history.to_json(), f"{path.name} was recorded by the core's driver"
            path.write_text(history.to_json() + "\n", encoding="utf-8")
            print(f"wrote {path} ({len(history.events)} events)")


if __name__ == "__main__":
    asyncio.run(main())

"""The app of the sub-agents' process tests (``tests/subagents/test_subagent_processes.py``): runs
whose work is done by sub-agents, started, resumed and killed in processes of their own.

Two conversations, each played by a fake Messages API whose answer is a pure function of the
request (the agent, told by its system prompt, and how many replies it has had), so that any
process goes on with the same conversation:

- **The office** (``start``, and ``factory`` for ``toolrunner resume --app
  tests.support.subagent_app:factory``): a coordinator hands work to two specialists in one reply,
  ``researcher`` (``lookup``) and ``payer`` (``pay``, which needs approval). The researcher
  finishes; the payer's call of ``pay`` waits for a person, so the run pauses.
- **The errands** (``errands``, then ``resume-errands``): the parent calls ``note`` and the
  sub-agent ``worker`` in one reply; the worker calls ``note`` (which finishes), then ``charge``
  and ``fetch`` (idempotent) in one reply, and both hang the first time they start (the test kills
  the process there).

Everything it records and every marker it makes is a file in ``$RESUMER_TEST_DIR`` (as
``resumer_app``): each tool appends ``start <call id>`` to ``ledger.txt`` when it begins and
``finish <call id>`` when it ends (one ``O_APPEND`` write a line, whole or absent after SIGKILL); a
hanging tool first makes ``inside-<call id>``. The office's resumed runner appends ``decided ...``
for each decision it hears of inside a sub-agent (who decided, and through what).

    python -m tests.support.subagent_app start URL RUN_ID BACKEND  # the office, to its pause (JSON out)
    python -m tests.support.subagent_app errands URL BACKEND   # the errands, until killed
    python -m tests.support.subagent_app resume-errands URL BACKEND  # after a line on stdin
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from typing import Any

import anyio

from tests.support.resumer_app import directory, first_time
from toolrunner import (
    ApprovalDecided,
    RunnerEvent,
    RunStore,
    SubAgent,
    SubRunEvent,
    ToolContext,
    ToolRunner,
    open_store,
    tool,
)
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

__all__ = [
    "ERRANDS",
    "LOOKUP_TASK",
    "PAY_TASK",
    "USAGE",
    "errands",
    "factory",
    "payer",
    "researcher",
    "start",
    "worker",
]

MODEL = "claude-sonnet-4-6"
SPECIALIST = "claude-haiku-4-5"
ERRANDS = "errands"
"""The run id of the errands."""
LOOKUP_TASK = "What is the weather in Paris?"
PAY_TASK = "Pay the 40 EUR invoice."
"""The tasks the coordinator gives its two specialists."""


def record(line: str) -> None:
    """Append a line to the ledger: one write, so it is whole or absent after SIGKILL."""
    descriptor = os.open(directory() / "ledger.txt", os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        os.write(descriptor, f"{line}\n".encode())
    finally:
        os.close(descriptor)


async def _work(context: ToolContext, result: str, *, hangs: bool = False) -> str:
    call = context.call.id
    record(f"start {call}")
    if hangs and first_time(directory() / f"inside-{call}"):
        await anyio.sleep_forever()  # the test kills the process here
    record(f"finish {call}")
    return result


# -- the office -----------------------------------------------------------------------------------


@tool
async def lookup(city: str, context: ToolContext) -> str:
    """Look up the weather of a city.

    Args:
        city: The city.
    """
    return await _work(context, f"{city}: 20 C, sunny")


@tool(requires_approval=True)
async def pay(amount: int, context: ToolContext) -> str:
    """Pay an amount.

    Args:
        amount: In euros.
    """
    return await _work(context, f"paid {amount} EUR")


researcher = SubAgent(
    name="researcher",
    description="Finds facts about places.",
    model=SPECIALIST,
    max_tokens=256,
    system="You research.",
    tools=[lookup],
)
payer = SubAgent(
    name="payer", description="Pays bills.", model=SPECIALIST, max_tokens=256, system="You pay.", tools=[pay]
)

# -- the errands ----------------------------------------------------------------------------------


@tool
async def note(text: str, context: ToolContext) -> str:
    """Write a note.

    Args:
        text: What to note.
    """
    return await _work(context, f"noted {text}")


@tool
async def charge(order: str, context: ToolContext) -> str:
    """Charge a card (not idempotent): it hangs the first time.

    Args:
        order: The order.
    """
    return await _work(context, f"charged {order}", hangs=True)


@tool(idempotent=True)
async def fetch(page: str, context: ToolContext) -> str:
    """Fetch a page (idempotent): it hangs the first time.

    Args:
        page: The page.
    """
    return await _work(context, f"fetched {page}", hangs=True)


worker = SubAgent(
    name="worker",
    description="Runs errands.",
    model=SPECIALIST,
    max_tokens=256,
    system="You work.",
    tools=[note, charge, fetch],
)

# -- the fake -------------------------------------------------------------------------------------

SCRIPTS: dict[str, list[ScriptedReply]] = {
    "You coordinate.": [
        tool_reply(
            tool_call("researcher", {"task": LOOKUP_TASK}, id="toolu_research"),
            tool_call("payer", {"task": PAY_TASK}, id="toolu_payer"),
            text="I ask both specialists.",
        )
    ],
    "You research.": [tool_reply(tool_call("lookup", {"city": "Paris"}, id="toolu_lookup"))],
    "You pay.": [tool_reply(tool_call("pay", {"amount": 40}, id="toolu_pay"), text="I pay 40 EUR.")],
    "You run errands.": [
        tool_reply(
            tool_call("note", {"text": "errands begun"}, id="toolu_note_parent"),
            tool_call("worker", {"task": "Charge order 7 and fetch its page."}, id="toolu_worker"),
        )
    ],
    "You work.": [
        tool_reply(tool_call("note", {"text": "order 7"}, id="toolu_note_first")),
        tool_reply(
            tool_call("charge", {"order": "7"}, id="toolu_charge"),
            tool_call("fetch", {"page": "order-7"}, id="toolu_fetch"),
        ),
    ],
}
"""Each agent's replies but its last, by its system prompt; its last says what its calls returned."""
USAGE = {
    "You coordinate.": (100, 10),
    "You research.": (20, 2),
    "You pay.": (30, 3),
    "You run errands.": (100, 10),
    "You work.": (20, 2),
}
"""The input and output tokens of each of an agent's replies."""


def respond(request: RecordedRequest) -> ScriptEntry:
    """The reply to a request follows from the request alone: its agent and its number of replies."""
    agent = str(request.body["system"])
    turn = sum(1 for message in request.messages if message["role"] == "assistant")
    script = SCRIPTS[agent]
    inputs, outputs = USAGE[agent]
    usage = {"input_tokens": inputs, "output_tokens": outputs}
    if turn < len(script):
        return dataclasses.replace(script[turn], usage=usage)
    results = [block for block in request.messages[-1]["content"] if block["type"] == "tool_result"]
    said = "; ".join(
        ("error: " if block.get("is_error") else "") + str(block["content"]) for block in results
    )
    return text_reply(f"Done ({said}).", usage=usage)


def client() -> Any:
    return FakeMessagesAPI(responder=respond).async_client()


# -- the processes --------------------------------------------------------------------------------


def heard(event: RunnerEvent) -> None:
    """The office's resumed runner: a decision inside a sub-agent, as the run heard of it."""
    if isinstance(event, SubRunEvent) and isinstance(event.event, ApprovalDecided):
        decided = event.event
        record(
            f"decided {' '.join(event.path)} {decided.call.id} {decided.decision} by {decided.by} via {decided.via}"
        )


async def factory(run_id: str, store: RunStore) -> ToolRunner:
    """The app's part of ``toolrunner resume``: the runner that goes on with the office."""
    return await ToolRunner.resume(
        client(), checkpointer=store, run_id=run_id, tools=[researcher, payer], on_event=heard
    )


async def start(url: str, run_id: str) -> dict[str, Any]:
    """Run the office until it pauses; what it ended with and the calls that wait."""
    store = open_store(url)
    try:
        runner = ToolRunner(
            client(),
            model=MODEL,
            max_tokens=256,
            system="You coordinate.",
            messages=[{"role": "user", "content": "Check the weather in Paris and pay the invoice."}],
            tools=[researcher, payer],
            checkpointer=store,
            run_id=run_id,
        )
        async for _ in runner:
            pass
        return {
            "end_reason": runner.end_reason,
            "waiting": [
                {"id": call.id, "name": call.name, "path": list(call.path)}
                for call in runner.pending_approvals
            ],
        }
    finally:
        getattr(store, "close", lambda: None)()


async def errands(url: str, *, resume: bool) -> dict[str, Any]:
    """Start the errands (a process the test kills inside them), or resume them to their end."""
    store = open_store(url)
    try:
        tools = [note, worker]
        if resume:
            runner = await ToolRunner.resume(client(), checkpointer=store, run_id=ERRANDS, tools=tools)
        else:
            runner = ToolRunner(
                client(),
                model=MODEL,
                max_tokens=256,
                system="You run errands.",
                messages=[{"role": "user", "content": "Run the errands."}],
                tools=tools,
                checkpointer=store,
                run_id=ERRANDS,
            )
        await runner.until_done()
        return {"end_reason": runner.end_reason}
    finally:
        getattr(store, "close", lambda: None)()


def main(argv: list[str]) -> None:
    match argv:
        case ["start", url, run_id, backend]:
            print(json.dumps(anyio.run(start, url, run_id, backend=backend)))
        case ["errands", url, backend]:
            anyio.run(lambda: errands(url, resume=False), backend=backend)
        case ["resume-errands", url, backend]:
            sys.stdin.readline()  # imported and ready: the test says when to go on (the first process is dead)
            print(json.dumps(anyio.run(lambda: errands(url, resume=True), backend=backend)))
        case _:
            raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])

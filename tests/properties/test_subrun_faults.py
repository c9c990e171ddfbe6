"""The fault property inside sub-runs (issue 30): a fault at any effect of a run whose work is done
by sub-agents two levels down, and the promises hold.

A coordinator calls a ``researcher`` sub-agent (and a plain tool); the researcher calls two
``searcher`` sub-agents at once (and a plain tool); each searcher calls a tool. Every plain tool is
not idempotent and records each time it begins and completes. The run is played once as it is, and
once with one fault at one effect, counted across every program the run drives (most of them
effects of the sub-runs, mapped onto the parent's: ``_core.subruns``), as ``test_effect_faults``
models them:

- ``crash``: the process dies there (SIGKILL: every effect its tasks reach after fails, the store
  takes no more saves); a new runner resumes the run from its last save. At a tool's execution it
  strikes before the tool begins or, generated, once it completed (its result never saved);
- ``raise``: a save or a request fails once, before it took place or, generated, after (the store
  wrote, the service answered, and the answer is lost); the loop body iterates again.

Then no tool runs twice (a call whose tool began is answered "interrupted" if its result was lost),
the sub-runs go on where they were (the researcher's answer reaches the coordinator, not an error),
and the final answer arrives.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tests.support.effect_scripts import Crash, Glitch
from tests.support.helpers import plain
from toolrunner import Checkpoint, MemoryCheckpointer, SubAgent, ToolRunner, text_of, tool
from toolrunner._core.drive import Performing, intercepted
from toolrunner._core.effects import Execute, Save, Send
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

FaultKind = Literal["crash", "raise"]

FINAL = "All done."


@dataclass(frozen=True)
class Fault:
    at: int
    kind: FaultKind
    after: bool


@dataclass
class Ledger:
    began: Counter[str] = field(default_factory=Counter[str])
    completed: Counter[str] = field(default_factory=Counter[str])


def make_tools(ledger: Ledger) -> list[Any]:
    async def work(what: str) -> str:
        ledger.began[what] += 1
        await anyio.lowlevel.checkpoint()
        ledger.completed[what] += 1
        return f"{what}: done"

    @tool
    async def note(text: str) -> str:
        """Write a note.

        Args:
            text: The note.
        """
        return await work(f"note {text}")

    @tool
    async def lookup(topic: str) -> str:
        """Look a topic up.

        Args:
            topic: The topic.
        """
        return await work(f"lookup {topic}")

    searcher = SubAgent(
        name="searcher", description="Finds facts.", model="claude-sub", max_tokens=100, tools=[lookup]
    )
    researcher = SubAgent(
        name="researcher",
        description="Researches, with searchers.",
        model="claude-mid",
        max_tokens=100,
        tools=[searcher, note],
    )
    return [researcher, note]


def task_of(request: RecordedRequest) -> str:
    content = request.messages[0]["content"]
    return content if isinstance(content, str) else str(content)


def respond(request: RecordedRequest) -> ScriptEntry:
    """Each agent's reply, from its model and how far its conversation is: the same request gets
    the same reply, whatever was sent again after a fault."""
    model, first = request.body["model"], len(request.messages) == 1
    if model == "claude-top":
        if first:
            return tool_reply(
                tool_call("researcher", {"task": "Paris"}, id="toolu_top_r"),
                tool_call("note", {"text": "top"}, id="toolu_top_n"),
            )
        return text_reply(FINAL)
    if model == "claude-mid":
        if first:
            return tool_reply(
                tool_call("searcher", {"task": "weather"}, id="toolu_mid_w"),
                tool_call("searcher", {"task": "food"}, id="toolu_mid_f"),
                tool_call("note", {"text": "mid"}, id="toolu_mid_n"),
            )
        return text_reply("Research done.")
    task = task_of(request)
    if first:
        return tool_reply(tool_call("lookup", {"topic": task}, id=f"toolu_sub_{task}"))
    return text_reply(f"Found {task}.")


class Store(MemoryCheckpointer):
    """A store in memory that a dead process cannot write to."""

    def __init__(self) -> None:
        super().__init__()
        self.dead = False

    async def save(self, checkpoint: Checkpoint) -> None:
        if self.dead:
            raise Crash()
        await super().save(checkpoint)


class Injector:
    """Counts the effects a run performs and strikes once at ``fault.at``."""

    def __init__(self, fault: Fault | None, store: Store) -> None:
        self.fault = fault
        self.store = store
        self.effects: list[str] = []
        self.dead = False
        self.crash = Crash()

    async def intercept(self, performing: Performing) -> Any:
        if self.dead:
            raise self.crash
        effect: Any = performing.effect
        index = len(self.effects)
        depth = len(effect.request.agent_path) if isinstance(effect, Send) else None
        depth = len(effect.agent_path) if isinstance(effect, Execute) else depth
        self.effects.append(type(effect).__name__ + ("" if depth is None else f"@{depth}"))
        fault = self.fault
        if fault is None or index != fault.at:
            return await performing.perform()
        self.fault = None  # once
        if fault.kind == "raise" and not isinstance(effect, Save | Send):
            return await performing.perform()
        if fault.after and isinstance(effect, Save | Send | Execute):
            await performing.perform()  # the store wrote, the service answered, the tool completed
        if fault.kind == "crash":
            self.dead = self.store.dead = True
            raise self.crash
        raise Glitch("failed once")


@dataclass
class Outcome:
    final: str
    end_reason: str | None
    messages: list[Any]
    ledger: Ledger
    effects: list[str]


async def play(fault: Fault | None) -> Outcome:
    ledger = Ledger()
    store = Store()
    fake = FakeMessagesAPI(responder=respond)
    options: dict[str, Any] = {
        "tools": make_tools(ledger),
        "checkpointer": store,
        "run_id": "run",
        "max_iterations": 20,
    }

    def start() -> ToolRunner[Any]:
        return ToolRunner(
            fake.async_client(),
            model="claude-top",
            max_tokens=100,
            messages=[{"role": "user", "content": "Research Paris."}],
            **options,
        )

    injector = Injector(fault, store)
    runner = start()
    final = ""
    with intercepted(injector.intercept):
        for _ in range(20):
            try:
                async for message in runner:
                    final = text_of(message)
            except Crash:
                injector.dead = store.dead = False  # a new process
                saved = await store.load("run")
                runner = (
                    start()
                    if saved is None
                    else cast("ToolRunner[Any]", await ToolRunner.resume(fake.async_client(), **options))
                )
                continue
            except Glitch:
                continue
            break
    return Outcome(final, runner.end_reason, plain(runner.messages), ledger, injector.effects)


def result_of(messages: list[Any], call_id: str) -> Any:
    for message in messages:
        if message["role"] == "user" and isinstance(message["content"], list):
            for block in message["content"]:
                if block.get("type") == "tool_result" and block["tool_use_id"] == call_id:
                    return block
    raise AssertionError(f"no result for {call_id}")


def check(clean: Outcome, faulty: Outcome) -> None:
    assert clean.end_reason == "model"
    assert clean.final == FINAL
    assert sorted(clean.ledger.completed) == ["lookup food", "lookup weather", "note mid", "note top"]
    assert faulty.end_reason == "model", faulty.messages
    assert faulty.final == FINAL
    # No tool runs twice: a finished call (or one whose tool began) never runs again.
    assert all(count == 1 for count in faulty.ledger.began.values()), faulty.ledger
    assert all(count <= 1 for count in faulty.ledger.completed.values()), faulty.ledger
    # The sub-runs went on where they were: the researcher answered, with no error result.
    researcher = result_of(faulty.messages, "toolu_top_r")
    assert researcher.get("is_error") is not True, researcher
    assert researcher["content"] in ("Research done.", [{"type": "text", "text": "Research done."}])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@settings(
    max_examples=30,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
@given(data=st.data())
def test_a_fault_at_any_effect_inside_sub_runs_two_levels_down(backend: str, data: st.DataObject) -> None:
    clean = anyio.run(play, None, backend=backend)
    assert any(effect.endswith("@2") for effect in clean.effects)  # it does reach two levels down
    kind: FaultKind = data.draw(st.sampled_from(["crash", "raise"]), label="kind")
    places = [
        index
        for index, effect in enumerate(clean.effects)
        if kind == "crash" or effect.startswith(("Save", "Send"))
    ]
    fault = Fault(
        at=data.draw(st.sampled_from(places), label="at"),
        kind=kind,
        after=data.draw(st.booleans(), label="after"),
    )
    faulty = anyio.run(play, fault, backend=backend)
    check(clean, faulty)

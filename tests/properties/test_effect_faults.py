"""One property over faults at every effect: the promises hold whatever fails where.

A generated script (replies with calls to ordinary, idempotent, sequential and gated tools, text
replies the loop body steers past with a follow-up, decisions on the gated calls, a concurrency
limit; in some scripts, hooks and a call limit: ``effect_scripts.HookScript``) runs twice with
``ToolRunner``: once as it is, once with one generated fault at one effect of the run's
orchestration (``_core.effects``, the hooks' effects among them), counted across every program the
run drives:

- ``crash``: the process dies there; the run is resumed from the last save by a new runner;
- ``raise``: a save or a request fails once (``Glitch``); the loop body iterates again;
- ``cancel``: the iteration is cancelled there; the loop body iterates again.

A fault at a save or a request strikes before it took place or, generated, after (the store wrote,
the service answered, and the answer is lost). A fault at a tool's execution strikes inside the
tool, once it began. Then:

- a call whose tool began never runs again (it completed, or it is answered "interrupted"), unless
  its tool is idempotent;
- a call that never began is never reported "interrupted", unless the process died right after the
  save that journaled it; and at every save, no more calls are journaled as started and not yet
  begun than there are concurrency slots (a call waiting for a slot has not started);
- a decision, with its edited input, is what runs, whatever restarted the call;
- a call the ``before_tool_call`` hook denied, or over its tool's ``max_calls``, never runs; a call
  the hook rewrote runs only with the hook's input (after a person's edit, on the edited one);
- the ``before_tool_call`` hook answers once per call. It is asked again (once) only about a call
  whose answer the run lost, which the code allows in two ways: the process died before a save
  holding the answer was written (a denial is held by any later save; a start, from its own save
  on: ``saveable`` leaves it out of the others), its tasks getting answers until they meet the
  death; or, for a call let run or rewritten, the iteration ended with a failure or a cancellation
  before the call's own start save came back (``_unstart`` undoes the start with its answer, even
  if the store wrote it). A denial, kept in memory once answered, is never asked again but after
  a death. The ``after_tool_call`` hook answers at most once each time the call's tool completed
  (a call cut off while it is asked is cut off as in its tool);
- no more calls of a limited tool start (``RunState.call_counts``), begin or complete (counting an
  idempotent call run again once) than its ``max_calls``;
- the loop body saw every reply the run appended, and no request was one the service rejects
  (the fake validates as the service does);
- the run ends as the run without the fault did: the same history (the hooks' denials, rewritten
  inputs, replaced results, answers over a limit, a final answer ``check_output`` sent back), but
  for the results of calls reported interrupted.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Literal, cast

import anyio
import anyio.lowlevel
import pytest
from hypothesis import given, strategies as st

from tests.support._hypothesis_profiles import property_settings
from tests.support.effect_scripts import (
    Crash,
    Glitch,
    Ledger,
    Script,
    decide,
    follow_up,
    make_hooks,
    make_tools,
    scripts,
)
from tests.support.helpers import MODEL, plain
from toolrunner import CallStatus, Checkpoint, Deny, MemoryCheckpointer, Reply, ToolRunner
from toolrunner._core.drive import Performing, intercepted
from toolrunner._core.effects import BeforeToolCall, Execute, Save, Send
from toolrunner._core.hook_types import LIMITED
from toolrunner._core.transitions import INTERRUPTED
from toolrunner.testing import FakeMessagesAPI

USER = {"role": "user", "content": "Do the things."}

FaultKind = Literal["crash", "raise", "cancel"]


@dataclass(frozen=True)
class Fault:
    at: int
    kind: FaultKind
    after: bool


@dataclass
class Outcome:
    messages: list[Any]
    end_reason: str | None
    delivered: list[Any]
    ledger: Ledger
    effects: list[str]
    interrupted: set[str]
    allowed_interrupted: set[str] = field(default_factory=set[str])
    violations: list[str] = field(default_factory=list[str])
    verdicts: dict[str, str] = field(default_factory=dict[str, str])
    """The hooks' verdict on each call the saves wrote (``CallRecord.hook``)."""
    call_counts: dict[str, int] = field(default_factory=dict[str, int])


class Store(MemoryCheckpointer):
    """A store in memory that a dead process cannot write to."""

    def __init__(self) -> None:
        super().__init__()
        self.dead = False
        self.crash = Crash()

    async def save(self, checkpoint: Checkpoint) -> None:
        if self.dead:
            raise self.crash
        await super().save(checkpoint)


class Injector:
    """Counts the effects a run performs, checks the saves, and strikes once at ``fault.at``."""

    def __init__(self, fault: Fault | None, ledger: Ledger, script: Script, store: Store) -> None:
        self.fault = fault
        self.ledger = ledger
        self.script = script
        self.effects: list[str] = []
        self.scope: anyio.CancelScope | None = None
        self.allowed_interrupted: set[str] = set()
        self.violations: list[str] = []
        self.dead = False
        self.store: Store = store
        self.written_starts: set[str] = set()
        self.crash = Crash()  # one death: the tasks that meet it raise the same exception
        self.runner: ToolRunner[Any] | None = None
        self.unsaved_starts: set[str] = set()
        """Calls the ``before_tool_call`` hook let run (or rewrote) whose start save has not come back."""
        self.lost: set[str] = set()
        """Calls whose ``before_tool_call`` answer a fault lost: the hook may be asked once more."""
        self.verdicts: dict[str, str] = {}
        """The hooks' verdict on each call, as the saves wrote it (a turn's records go with it)."""

    def install(self, runner: ToolRunner[Any]) -> None:
        """Watch ``runner``'s effects; once a crash strikes, the runner (the process) is dead: any
        effect its other tasks still reach fails at once, and nothing more is saved."""
        self.dead = False
        self.runner = runner

    def checked(self, effect: Save) -> Save:
        """The save, writing what ``RunCore.saveable`` gives, checked: no call journaled as started
        and not begun, but the one this save journals and those whose own save was written."""
        state_of = effect.state
        starting = effect.starting

        def state() -> Any:
            state = state_of()
            idle = {
                call_id
                for call_id, record in state.calls.items()
                if record.status is CallStatus.STARTED and self.ledger.began[call_id] == 0
            }
            stray = idle - {starting} - self.written_starts
            if stray:
                self.violations.append(f"a save wrote {sorted(stray)} as started before their own save")
            if starting is not None:
                self.written_starts.add(starting)
            self.verdicts |= {call_id: record.hook for call_id, record in state.calls.items() if record.hook}
            return state

        return dataclasses.replace(effect, state=state)

    async def intercept(self, performing: Performing) -> Any:
        """Every effect of the run's programs (``intercepted``): counted, checked, struck once."""
        effect: Any = performing.effect

        async def perform(effect: Any, *, comes_back: bool = True) -> Any:
            outcome = await performing.perform(effect)
            self._performed(effect, outcome, comes_back=comes_back)
            return outcome

        if self.dead:
            raise self.crash
        index = len(self.effects)
        self.effects.append(type(effect).__name__)
        if isinstance(effect, Save):
            assert self.runner is not None
            self._check_save(self.runner)
            effect = self.checked(effect)
        fault = self.fault
        if fault is None or index != fault.at:
            return await perform(effect)
        self.fault = None  # once
        if isinstance(effect, Execute):
            if fault.kind == "raise":  # a tool's exception is its result: not a fault of the run
                return await perform(effect)
            self.ledger.fault_in, self.ledger.interrupt = (
                effect.call.id,
                partial(self._strike, fault.kind),
            )
            return await perform(effect)
        if fault.kind == "raise" and not isinstance(effect, Save | Send):
            return await perform(effect)
        if fault.after and isinstance(effect, Save | Send):
            outcome = await perform(effect, comes_back=False)  # the store wrote; the core gets the fault
            await self._strike(fault.kind)
            return outcome
        await self._strike(fault.kind)
        raise AssertionError("unreachable")

    def _performed(self, effect: Any, outcome: Any, *, comes_back: bool) -> None:
        """Follow the ``before_tool_call`` answers: a call asked again must be one whose answer a
        fault lost (once); a start save that came back keeps the answer it holds."""
        if isinstance(effect, BeforeToolCall):
            call_id = effect.info.id
            if self.ledger.before_answers[call_id] > 1:
                if call_id in self.lost:
                    self.lost.discard(call_id)
                else:
                    self.violations.append(
                        f"before_tool_call was asked again about {call_id}, answered and kept"
                    )
            if not isinstance(outcome, Deny):
                self.unsaved_starts.add(call_id)
        elif isinstance(effect, Save) and effect.starting is not None and comes_back:
            self.unsaved_starts.discard(effect.starting)

    def cut_short(self) -> None:
        """An iteration ended with a failure or a cancellation: the starts whose own save did not
        come back are undone with the hook's answer (``_unstart``), also an answer a sibling task
        got after the fault struck."""
        self.lost |= self.unsaved_starts
        self.unsaved_starts.clear()

    def reborn(self, saved: Checkpoint | None) -> None:
        """After a death, the run goes on from ``saved``: a ``before_tool_call`` answer it does not
        hold is lost with the process, whether given before the death or after (by a hook the dying
        process's other tasks were still asking)."""
        held: set[str] = set()
        if saved is not None:
            held |= {call_id for call_id, record in saved.state.calls.items() if record.hook is not None}
            held |= {block["tool_use_id"] for block in results(plain(saved.state.messages))}  # turns done
        self.lost |= set(self.ledger.before_answers) - held
        self.unsaved_starts.clear()

    def _journaled_not_begun(self, runner: ToolRunner[Any]) -> set[str]:
        return {
            call_id
            for call_id, record in runner.state.calls.items()
            if record.status is CallStatus.STARTED and self.ledger.began[call_id] == 0
        }

    def _check_save(self, runner: ToolRunner[Any]) -> None:
        idle = self._journaled_not_begun(runner)
        limit = self.script.max_concurrency
        if limit is not None and len(idle) > limit:
            self.violations.append(f"saved {sorted(idle)} as started, not begun, with {limit} slot(s)")

    async def _strike(self, kind: FaultKind) -> None:
        if kind == "crash":
            self.dead = self.store.dead = True
            self.store.crash = self.crash
            # The store cannot tell a call whose start it holds from one whose tool began: a death
            # between the two reports it interrupted, rightly. Only a call journaled by its own
            # save can be in that window (``saveable`` leaves pending starts out of other saves).
            saved = await self.store.load("run")
            if saved is not None:
                self.allowed_interrupted |= {
                    call_id
                    for call_id, record in saved.state.calls.items()
                    if record.status is CallStatus.STARTED
                    and self.ledger.began[call_id] == 0
                    and call_id in self.written_starts
                }
            raise self.crash
        if kind == "raise":
            raise Glitch("failed once")
        assert self.scope is not None
        self.scope.cancel()
        await anyio.lowlevel.checkpoint()
        raise AssertionError("the cancellation did not strike")


def text_index(message: Reply) -> int | None:
    """The index of a text reply ("text 3"), or ``None`` for a reply with tool calls."""
    if message.stop_reason != "end_turn":
        return None
    block: Any = message.content[0]
    return int(block.text.split()[1])


def results(messages: list[Any]) -> list[Any]:
    """The tool_result blocks of a history (as plain data)."""
    return [
        block
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]


async def run_script(script: Script, fault: Fault | None) -> Outcome:
    """Play ``script`` with ``ToolRunner``, as a loop body would, surviving ``fault``."""
    ledger = Ledger()
    tools = make_tools(ledger)
    store = Store()
    fake = FakeMessagesAPI(responder=script.respond)
    injector = Injector(fault, ledger, script, store)
    options: dict[str, Any] = {
        "tools": tools,
        "max_concurrency": script.max_concurrency,
        "checkpointer": store,
        "run_id": "run",
        "max_iterations": 40,
        **make_hooks(script, ledger),
    }

    def start() -> ToolRunner[Reply]:
        return ToolRunner(fake.async_client(), model=MODEL, max_tokens=256, messages=[USER], **options)

    runner = start()  # replaced by a resumed one after a crash
    injector.install(runner)
    delivered: list[Any] = []
    with intercepted(injector.intercept):
        for _ in range(60):
            try:
                with anyio.CancelScope() as scope:
                    injector.scope = scope
                    async for message in runner:
                        delivered.append(plain(message.content))
                        index = text_index(message)
                        if index is not None and script.steered(index):
                            runner.push_messages(message, follow_up(index))
                if scope.cancelled_caught:
                    injector.cut_short()
                    continue
            except Crash:
                store.dead = False  # a new process
                saved = await store.load("run")
                injector.reborn(saved)
                if saved is None:  # it died before its first save: start it again
                    runner = start()
                else:
                    runner = cast(
                        "ToolRunner[Reply]", await ToolRunner.resume(fake.async_client(), **options)
                    )
                injector.install(runner)
                continue
            except Glitch:
                injector.cut_short()
                continue
            if runner.end_reason == "awaiting_approval":
                decide(runner, script)
                continue
            break
    interrupted = {
        block["tool_use_id"]
        for block in results(plain(runner.messages))
        if str(block.get("content", "")).startswith("The call to")
    }
    return Outcome(
        messages=plain(runner.messages),
        end_reason=runner.end_reason,
        delivered=delivered,
        ledger=ledger,
        effects=injector.effects,
        interrupted=interrupted,
        allowed_interrupted=injector.allowed_interrupted,
        violations=injector.violations,
        verdicts=injector.verdicts,
        call_counts=dict(runner.state.call_counts),
    )


def check(script: Script, clean: Outcome, faulty: Outcome, fault: Fault | None = None) -> None:
    assert clean.end_reason == "model"
    assert faulty.end_reason == "model", faulty.messages
    assert not clean.violations
    assert not faulty.violations, faulty.violations
    ledger = faulty.ledger
    # A call that completed never runs again (an idempotent one may, after a crash); nor does one
    # whose tool began, whatever cut it off (its start was saved first: it is answered interrupted).
    for call_id, count in ledger.completed.items():
        if call_id not in script.idempotent_ids:
            assert count <= 1, f"{call_id} completed {count} times"
    for call_id, count in ledger.began.items():
        if call_id not in script.idempotent_ids:
            assert count <= 1, f"{call_id} began {count} times"
    # A failed save or request cuts no call off: a tool that began runs to its end.
    if fault is not None and fault.kind == "raise":
        assert not faulty.interrupted, f"a failure once cut {sorted(faulty.interrupted)} off"
    # A call reported interrupted had begun (or was journaled right before the process died).
    for call_id in faulty.interrupted:
        assert ledger.began[call_id] >= 1 or call_id in faulty.allowed_interrupted, (
            f"{call_id} was reported interrupted but never began"
        )
    # A decision, with its edited input, is what runs; a hook's rewritten input, if it rewrote it.
    tools = dict(script.calls)
    hooks = script.hooks
    for call_id, inputs in ledger.inputs.items():
        if tools[call_id] == "gated":
            kind = script.decision_of(call_id)
            assert kind in ("approve", "edit"), f"{call_id} ran though it was {kind}"
        expected = script.input_of(call_id)
        assert inputs == [expected] * len(inputs), f"{call_id} ran with {inputs}, not {expected}"
    # A call a hook denied, or over its tool's limit, never runs.
    for call_id, verdict in faulty.verdicts.items():
        if verdict in ("denied", "limited"):
            assert ledger.began[call_id] == 0, f"{call_id} ran though it was {verdict}"
    stopped = LIMITED.split("{")[0], "the hook denies"
    for block in results(faulty.messages):
        if str(block.get("content", "")).startswith(stopped):
            assert ledger.began[block["tool_use_id"]] == 0, f"{block['tool_use_id']} ran: {block['content']}"
    if hooks is not None and hooks.before is not None:
        for call_id, kind in hooks.before:
            if kind == "deny":
                assert ledger.began[call_id] == 0, f"{call_id} ran though the hook denies it"
    # The after_tool_call hook answers at most once each time the call's tool completed.
    for call_id, count in ledger.after_answers.items():
        assert count <= ledger.completed[call_id], f"after_tool_call answered {count} times on {call_id}"
    # No more calls of a limited tool start, begin or complete than its limit.
    if hooks is not None and hooks.limit is not None:
        name, limit = hooks.limit
        assert faulty.call_counts.get(name, 0) <= limit, f"{faulty.call_counts} over {name}'s limit {limit}"
        began = [call_id for call_id, count in ledger.began.items() if count and tools[call_id] == name]
        completed = [
            call_id for call_id, count in ledger.completed.items() if count and tools[call_id] == name
        ]
        assert len(began) <= limit, f"{began} began, over {name}'s limit {limit}"
        assert len(completed) <= limit, f"{completed} completed, over {name}'s limit {limit}"
    # The body saw every reply the run appended.
    for message in faulty.messages:
        if message["role"] == "assistant":
            assert message["content"] in faulty.delivered, f"appended unseen: {message['content']}"
    # The run ends as it would have without the fault, but for results of interrupted calls.
    assert len(faulty.messages) == len(clean.messages)
    for mine, theirs in zip(faulty.messages, clean.messages, strict=True):
        if mine == theirs:
            continue
        assert mine["role"] == theirs["role"] == "user"
        for block, expected in zip(mine["content"], theirs["content"], strict=True):
            if block != expected:
                assert block["tool_use_id"] in faulty.interrupted
                assert str(block["content"]).startswith(INTERRUPTED.split("{")[0])


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
@property_settings
@given(script=scripts(hooks=True), data=st.data())
def test_a_fault_at_any_effect_keeps_every_promise(backend: str, script: Script, data: st.DataObject) -> None:
    clean = anyio.run(run_script, script, None, backend=backend)
    # The kind, then the effect, then which of its occurrences: a tool's execution is as likely a
    # place as a save. Only a save or a request can fail (``raise``) as such.
    kind: FaultKind = data.draw(st.sampled_from(["crash", "raise", "cancel"]), label="kind")
    names = sorted(set(clean.effects) & ({"Save", "Send"} if kind == "raise" else set(clean.effects)))
    name = data.draw(st.sampled_from(names), label="effect")
    places = [index for index, effect in enumerate(clean.effects) if effect == name]
    fault = Fault(
        at=data.draw(st.sampled_from(places), label="at"),
        kind=kind,
        after=data.draw(st.booleans(), label="after"),
    )
    faulty = anyio.run(run_script, script, fault, backend=backend)
    check(script, clean, faulty, fault)

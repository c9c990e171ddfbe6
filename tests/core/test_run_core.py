"""``RunCore`` driven directly, fast: its programs run through the trampoline every driver uses
(``_core.drive.drive``) with a scripted performer, a plain object that answers each effect from a
script. No fake HTTP, no event loop, no threads: the performer never awaits, so ``drive`` returns
at its first step (``run`` checks it did).

Each test pins the exact history, results or effect sequence, so a change in what the core decides
or in the order of its effects fails it. The drivers' own tests (``tests/runner/``, the Temporal
ones) check that they perform these effects as the core asks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, cast

from anthropic.types import Message

from toolrunner import RunnerEvent, RunState, ToolCallFinished
from toolrunner._core.drive import drive
from toolrunner._core.effects import (
    Ask,
    AwaitDecisions,
    Decisions,
    Effect,
    Execute,
    Gate,
    Gated,
    LoopStopped,
    OpenTools,
    Program,
    ReadDecisions,
    RunCalls,
    Save,
    Send,
    StateDerived,
)
from toolrunner._core.reasons import DENIED
from toolrunner._core.results import tool_result_block
from toolrunner._core.run import RunCore
from toolrunner._core.transitions import Limits
from toolrunner._core.usage import RequestUsage, Usage
from toolrunner._tools.execution import ExecutionOptions
from toolrunner._tools.results import DEFAULT_ADAPTER
from toolrunner._tools.tool import tool
from toolrunner._tools.toolsets import RunnableTool

MODEL = "claude-sonnet-4-6"
USER = {"role": "user", "content": "Weather in Paris and in Berlin?"}


@tool
def weather(city: str) -> str:
    """The weather in a city."""
    raise AssertionError("the scripted performer answers Execute itself")


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    raise AssertionError("the scripted performer answers Execute itself")


TOOLS: dict[str, RunnableTool] = {"weather": cast(RunnableTool, weather), "pay": cast(RunnableTool, pay)}


def reply(n: int, *content: dict[str, Any]) -> Message:
    stop = "tool_use" if any(block["type"] == "tool_use" for block in content) else "end_turn"
    return Message.model_validate(
        {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": list(content),
            "stop_reason": stop,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def use(id: str, name: str, **input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": id, "name": name, "input": input}


class Scripted:
    """Answers each effect from a script: ``replies`` to ``Send`` in order, ``behaviours`` (a plain
    function a tool name, returning the result's text or raising) to ``Execute``, ``verdicts`` (by
    tool_use id) to ``Ask``. ``effects`` is every effect performed, in order, as a short name."""

    def __init__(
        self,
        core: RunCore[Any],
        replies: list[Message],
        behaviours: Mapping[str, Callable[[Any], str]] | None = None,
        verdicts: Mapping[str, object] | None = None,
    ) -> None:
        self.core = core
        self.replies = iter(replies)
        self.behaviours = behaviours or {}
        self.verdicts = verdicts or {}
        self.effects: list[str] = []
        self.sent: list[list[Any]] = []
        """The history each request carried."""
        self.saved: list[str] = []
        """The phase of each state a ``Save`` gave, with its call journal: ``phase call=status``."""

    async def perform(self, effect: Effect) -> Any:  # never awaits: ``run`` needs no event loop
        self.effects.append(self.name(effect))
        if isinstance(effect, Send):
            self.sent.append(list(effect.request.state.messages))
            return next(self.replies)
        if isinstance(effect, Gate):
            return Gated(waiting=[call for call in effect.calls if TOOLS[call.name].requires_approval])
        if isinstance(effect, Ask):
            return self.verdicts[effect.call.id]
        if isinstance(effect, RunCalls):
            for call in effect.calls:  # one after another: the order is the script's
                run(self.core.call(call), self)
            return None
        if isinstance(effect, Execute):
            try:
                content = self.behaviours[effect.call.name](effect.input)
            except Exception as error:
                return tool_result_block(effect.call.id, f"Error: {error}", is_error=True), 0.0
            return tool_result_block(effect.call.id, content), 0.0
        if isinstance(effect, AwaitDecisions):
            return Decisions.PAUSED
        if isinstance(effect, ReadDecisions):
            return ()
        if isinstance(effect, Save):
            state = effect.state()
            calls = " ".join(f"{id}={record.status.value}" for id, record in sorted(state.calls.items()))
            self.saved.append(f"{state.phase.value} {calls}".strip())
            return None
        assert isinstance(effect, StateDerived | OpenTools | LoopStopped), effect
        return None

    @staticmethod
    def name(effect: Effect) -> str:
        if isinstance(effect, RunCalls | Gate):
            return f"{type(effect).__name__}({','.join(call.id for call in effect.calls)})"
        if isinstance(effect, Execute | Ask):
            return f"{type(effect).__name__}({effect.call.id})"
        if isinstance(effect, Save) and effect.starting is not None:
            return f"Save(starting={effect.starting})"
        return type(effect).__name__


def run(program: Program[Any], performer: Scripted) -> Any:
    """Drive ``program`` through ``drive`` with ``performer``, synchronously: the performer never
    awaits, so the coroutine finishes at its first step."""
    coroutine = drive(program, performer.perform, core=performer.core)
    try:
        coroutine.send(None)
    except StopIteration as stop:
        return stop.value
    coroutine.close()
    raise AssertionError("drive suspended, but the scripted performer never awaits")


def core_of(
    *, durable: bool = True, opens: bool = True, asks: bool = False, max_iterations: int | None = None
) -> RunCore[Any]:
    """A core with a store (``durable``) and tools to open (``opens``) unless told otherwise: then
    every effect the core can yield is in the sequences the tests read."""
    return RunCore(
        RunState(params={"model": MODEL, "max_tokens": 64}, messages=(USER,)),
        tools=ExecutionOptions(tools=TOOLS, adapter=DEFAULT_ADAPTER, gated=True, opens=opens),
        usage_of=lambda _: RequestUsage(model=MODEL, usage=Usage(10, 5), cost=None),
        limits=Limits(max_iterations=max_iterations),
        durable=durable,
        asks=asks,
    )


def until_done(core: RunCore[Any], performer: Scripted, *, guard: int = 20) -> list[Any]:
    """Iterate as a loop body that does nothing would: each iteration a step; what each gave."""
    items: list[Any] = []
    for _ in range(guard):
        item = run(core.step(core.iteration()), performer)
        if item is None:
            return items
        items.append(item)
    raise AssertionError(f"no end after {guard} iterations")


def history(core: RunCore[Any]) -> list[Any]:
    """The history as plain data (replies dumped as the SDK sends them)."""
    return [
        message if isinstance(message, dict) else message.model_dump(mode="json", exclude_none=True)
        for message in core.state.messages
    ]


def results(message: Any) -> list[tuple[str, Any, bool]]:
    return [
        (block["tool_use_id"], block.get("content"), bool(block.get("is_error")))
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


def test_a_reply_without_tool_calls_ends_the_run() -> None:
    core = core_of()
    performer = Scripted(core, [reply(0, text("Sunny."))])
    [item] = until_done(core, performer)
    assert item.id == "msg_0"
    assert core.state.finished
    assert core.state.end_reason == "model"
    assert history(core) == [USER, {"role": "assistant", "content": [text("Sunny.")]}]
    assert performer.effects == ["OpenTools", "Save", "Send", "OpenTools", "Save", "Save", "LoopStopped"]


def test_a_reply_with_two_tool_calls_gets_both_results_appended_in_order() -> None:
    core = core_of()
    performer = Scripted(
        core,
        [
            reply(0, use("a", "weather", city="Paris"), use("b", "weather", city="Berlin")),
            reply(1, text("Both sunny.")),
        ],
        behaviours={"weather": lambda input: f"{input['city']}: sunny"},
    )
    until_done(core, performer)
    assert results(history(core)[2]) == [("a", "Paris: sunny", False), ("b", "Berlin: sunny", False)]
    assert [message["role"] for message in history(core)] == ["user", "assistant", "user", "assistant"]
    assert performer.sent[1] == list(core.state.messages[:3])  # the second request carried both results
    assert performer.effects[4:14] == [
        "Gate(a,b)",
        "Save",
        "OpenTools",
        "RunCalls(a,b)",
        "Save(starting=a)",
        "Execute(a)",
        "Save",
        "Save(starting=b)",
        "Execute(b)",
        "Save",
    ]


def test_a_tool_error_becomes_an_is_error_result_and_the_loop_goes_on() -> None:
    def broken(input: Any) -> str:
        raise ValueError(f"no weather for {input['city']}")

    core = core_of()
    heard: list[RunnerEvent] = []
    core.listener = heard.append
    performer = Scripted(
        core,
        [reply(0, use("a", "weather", city="Atlantis")), reply(1, text("Sorry."))],
        behaviours={"weather": broken},
    )
    until_done(core, performer)
    assert results(history(core)[2]) == [("a", "Error: no weather for Atlantis", True)]
    assert [event.is_error for event in heard if isinstance(event, ToolCallFinished)] == [True]
    assert core.state.end_reason == "model"


def test_max_iterations_stops_the_run_before_the_next_request() -> None:
    core = core_of(max_iterations=2)
    performer = Scripted(
        core,
        [reply(n, use(f"c{n}", "weather", city="Paris")) for n in range(5)],
        behaviours={"weather": lambda input: "sunny"},
    )
    items = until_done(core, performer)
    assert [item.id for item in items] == ["msg_0", "msg_1"]
    assert core.state.end_reason == "max_iterations"
    assert performer.effects.count("Send") == 2
    assert [message["role"] for message in history(core)] == [
        "user",
        "assistant",
        "user",
        "assistant",
        "user",
    ]
    assert results(history(core)[4]) == [
        ("c1", "sunny", False)
    ]  # the last call ran; no request took its result


def test_a_call_the_approval_gate_denies_gets_the_denial_and_never_runs() -> None:
    core = core_of(asks=True)
    performer = Scripted(
        core,
        [
            reply(0, use("p", "pay", amount=500), use("w", "weather", city="Paris")),
            reply(1, text("Not paid.")),
        ],
        behaviours={"weather": lambda input: "sunny"},
        verdicts={"p": False},
    )
    until_done(core, performer)
    assert results(history(core)[2]) == [
        (
            "p",
            "A person denied this call to 'pay'; it did not run. Do not call it again in the same way.",
            True,
        ),
        ("w", "sunny", False),
    ]
    assert results(history(core)[2])[0][1] == DENIED.format(name="pay")
    assert "Execute(p)" not in performer.effects
    assert performer.effects[4:12] == [
        "Gate(p,w)",
        "Save",
        "OpenTools",
        "Ask(p)",
        "RunCalls(w)",
        "Save(starting=w)",
        "Execute(w)",
        "Save",
    ]


def test_a_save_is_issued_at_each_step_when_there_is_a_store_and_none_without() -> None:
    script = [reply(0, use("a", "weather", city="Paris")), reply(1, text("Sunny."))]
    behaviours: dict[str, Callable[[Any], str]] = {"weather": lambda input: "sunny"}
    stored = core_of()
    with_store = Scripted(stored, script, behaviours)
    until_done(stored, with_store)
    plain_core = core_of(durable=False, opens=False)
    without = Scripted(plain_core, script, behaviours)
    until_done(plain_core, without)
    # A save before each request, after each reply, as each call starts and finishes, after the
    # turn, and at the end: what each would write, by phase and call journal.
    assert with_store.effects == [
        "OpenTools",
        "Save",
        "Send",
        "OpenTools",
        "Gate(a)",
        "Save",
        "OpenTools",
        "RunCalls(a)",
        "Save(starting=a)",
        "Execute(a)",
        "Save",
        "StateDerived",
        "OpenTools",
        "Save",
        "Send",
        "OpenTools",
        "Save",
        "Save",
        "LoopStopped",
    ]
    assert with_store.saved == [
        "ready",
        "received",
        "with_body a=started",
        "with_body a=finished",
        "ready",
        "received",
        "done",
    ]
    assert history(stored) == history(plain_core)
    # Without a store there is nothing to save, and with nothing to open no tool is opened: a turn
    # is its request, its gate and its call.
    assert without.effects == ["Send", "Gate(a)", "RunCalls(a)", "Execute(a)", "Send", "LoopStopped"]
    assert without.saved == []

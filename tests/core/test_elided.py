"""``RunCore.elide``: a driver that keeps only a window of the history (a Temporal run across
continue-as-new) gets the same decisions as one that keeps it all: the elided tool changes still
count, and so do the elided requests toward ``max_iterations``."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, cast

from anthropic.types import Message

from toolrunner import RunState
from toolrunner._core.effects import Execute, Gate, Gated, Program, RunCalls, Send, Summarize
from toolrunner._core.results import tool_result_block
from toolrunner._core.run import Elided, RunCore
from toolrunner._core.transitions import Limits
from toolrunner._core.types import ToolCall
from toolrunner._core.usage import RequestUsage, Usage
from toolrunner._tools.execution import ExecutionOptions
from toolrunner._tools.results import DEFAULT_ADAPTER
from toolrunner._tools.tool import tool
from toolrunner._tools.toolsets import RunnableTool

MODEL = "claude-sonnet-4-6"


@tool
def act(n: int) -> str:
    """Act."""
    return str(n)


TOOLS: dict[str, RunnableTool] = {"act": cast(RunnableTool, act)}


def reply(turn: int, *, calls: int = 1) -> Message:
    content: list[dict[str, Any]] = [
        {"type": "tool_use", "id": f"t{turn}_{n}", "name": "act", "input": {"n": n}} for n in range(calls)
    ]
    stop = "tool_use" if calls else "end_turn"
    if not calls:
        content = [{"type": "text", "text": "done"}]
    return Message.model_validate(
        {
            "id": f"msg_{turn}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": stop,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


def usage(_: Any) -> RequestUsage:
    return RequestUsage(model=MODEL, usage=Usage(10, 5), cost=None)


def drive(
    core: RunCore[Any], program: Program[Any], replies: Iterator[Message], executed: list[ToolCall]
) -> Any:
    """Perform ``program``'s effects at once: replies from ``replies``; a call to a tool that is
    not removed runs (it is listed in ``executed``) and answers "ok"."""
    outcome: Any = None
    while True:
        try:
            effect = program.send(outcome)
        except StopIteration as stop:
            return stop.value
        outcome = None
        if isinstance(effect, Send | Summarize):
            outcome = next(replies)
        elif isinstance(effect, Gate):
            outcome = Gated()
        elif isinstance(effect, RunCalls):
            for call in effect.calls:
                drive(core, core.call(call), replies, executed)
        elif isinstance(effect, Execute):
            tools = ExecutionOptions(tools=TOOLS, adapter=DEFAULT_ADAPTER, removed=effect.removed)
            found = tools.find(effect.call) is not None
            if found:
                executed.append(effect.call)
            outcome = (
                tool_result_block(effect.call.id, "ok" if found else "unknown", is_error=not found),
                0.0,
            )


def run(core: RunCore[Any], replies: list[Message]) -> list[ToolCall]:
    """Iterate ``core`` to its end; the calls whose tool ran."""
    executed: list[ToolCall] = []
    source = iter(replies)
    while drive(core, core.iteration(), source, executed) is not None:
        pass
    return executed


def core_of(state: RunState, *, max_iterations: int | None = None) -> RunCore[Any]:
    return RunCore(
        state,
        tools=ExecutionOptions(tools=TOOLS, adapter=DEFAULT_ADAPTER),
        usage_of=usage,
        limits=Limits(max_iterations=max_iterations),
    )


USER = {"role": "user", "content": "Go."}
FOLLOW_UP = {"role": "user", "content": "Go on."}
REMOVAL = {
    "role": "system",
    "content": [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": "act"}}],
}


def history() -> tuple[Any, ...]:
    """A turn, the removal of ``act``, a text reply, a follow-up."""
    first = reply(0).model_dump(mode="json", exclude_unset=True)
    results = {"role": "user", "content": [tool_result_block("t0_0", "ok")]}
    answer = {"role": "assistant", "content": [{"type": "text", "text": "Removed."}]}
    return (USER, {"role": "assistant", "content": first["content"]}, results, REMOVAL, answer, FOLLOW_UP)


def test_an_elided_removal_still_keeps_its_tool_from_running() -> None:
    whole = core_of(RunState(params={"model": MODEL, "max_tokens": 10}, messages=history()))
    windowed = core_of(RunState(params={"model": MODEL, "max_tokens": 10}, messages=history()))
    windowed.elide(4, 0)

    assert windowed.elided.messages == 4
    assert windowed.elided.changes == {"act": False}
    assert len(windowed.state.messages) == 2
    assert windowed.removed() == whole.removed() == frozenset({"act"})
    assert run(whole, [reply(1), reply(2, calls=0)]) == run(windowed, [reply(1), reply(2, calls=0)]) == []


def test_elided_requests_count_toward_max_iterations() -> None:
    def started() -> RunCore[Any]:
        core = core_of(
            RunState(params={"model": MODEL, "max_tokens": 10}, messages=(USER,)), max_iterations=4
        )
        run_until = iter([reply(0), reply(1), reply(2)])
        executed: list[ToolCall] = []
        for _ in range(3):  # three requests and their calls; the loop goes on
            drive(core, core.iteration(), run_until, executed)
        return core

    whole, windowed = started(), started()
    windowed.elide(0, 3)
    assert windowed.elided == Elided(requests=3, counted=3)
    assert len(windowed.state.usage) == 0

    for core in (whole, windowed):
        run(core, [reply(3), reply(4)])
    assert whole.state.end_reason == windowed.state.end_reason == "max_iterations"
    assert whole.state.requests_sent == 4
    assert windowed.state.requests_sent + windowed.elided.requests == 4
    assert whole.state.messages[-4:] == windowed.state.messages[-4:]


def test_a_new_history_stands_whole() -> None:
    core = core_of(RunState(params={"model": MODEL, "max_tokens": 10}, messages=history()))
    core.elide(4, 0)
    core.apply_params({"messages": (USER,)}, steer=True)

    assert core.elided == Elided()
    assert core.removed() == frozenset()

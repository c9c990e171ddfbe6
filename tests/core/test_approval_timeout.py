"""The core's approval timeout (``RunCore._settle_turn``): a driver that waits for decisions and
runs out of time answers ``AwaitDecisions`` with ``TIMED_OUT``; the core then denies the calls
still waiting, with ``TIMED_OUT``'s reason, reports each denial once, and goes on with the turn in
the same iteration. (``ToolRunner`` answers ``PAUSED`` and never gets here; the Temporal workflow
does: ``tests/temporal/test_temporal_approvals.py``.)"""

from __future__ import annotations

from typing import Any, cast

from anthropic.types import Message

from toolrunner import ApprovalDecided, ApprovalRequested, RunnerEvent, RunState
from toolrunner._core.effects import AwaitDecisions, Decisions, Execute, Gate, Gated, Program, RunCalls, Send
from toolrunner._core.results import tool_result_block
from toolrunner._core.run import TIMED_OUT, RunCore
from toolrunner._core.state import CallRecord
from toolrunner._core.transitions import Limits
from toolrunner._core.usage import RequestUsage, Usage
from toolrunner._tools.execution import ExecutionOptions
from toolrunner._tools.results import DEFAULT_ADAPTER
from toolrunner._tools.tool import tool
from toolrunner._tools.toolsets import RunnableTool

MODEL = "claude-sonnet-4-6"


@tool(requires_approval=True)
def refund(amount: int) -> str:
    """Refund an amount."""
    return f"refunded {amount}"


TOOLS: dict[str, RunnableTool] = {"refund": cast(RunnableTool, refund)}


def message(n: int, content: list[dict[str, Any]], stop_reason: str) -> Message:
    return Message.model_validate(
        {
            "id": f"msg_{n}",
            "type": "message",
            "role": "assistant",
            "model": MODEL,
            "content": content,
            "stop_reason": stop_reason,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


REPLIES = [
    message(
        0,
        [
            {"type": "tool_use", "id": "late", "name": "refund", "input": {"amount": 500}},
            {"type": "tool_use", "id": "in_time", "name": "refund", "input": {"amount": 20}},
        ],
        "tool_use",
    ),
    message(1, [{"type": "text", "text": "Refunded 20."}], "end_turn"),
]


class WaitingDriver:
    """Performs effects as a driver that waits for decisions would: the gate holds every call;
    while the core waits, ``in_time`` is approved, and then the time runs out."""

    def __init__(self, core: RunCore[Any]) -> None:
        self.core = core
        self.replies = iter(REPLIES)
        self.effects: list[str] = []
        self.journal: dict[str, CallRecord] = {}
        """The journal as the first tool ran."""

    def drive(self, program: Program[Any]) -> Any:
        outcome: Any = None
        while True:
            try:
                effect = program.send(outcome)
            except StopIteration as stop:
                return stop.value
            self.effects.append(type(effect).__name__)
            outcome = None
            if isinstance(effect, Send):
                outcome = next(self.replies)
            elif isinstance(effect, Gate):
                outcome = Gated(waiting=effect.calls)
            elif isinstance(effect, AwaitDecisions):
                assert [call.id for call in effect.calls] == ["late", "in_time"]
                self.core.decide("in_time", "approved", by="ada")
                outcome = Decisions.TIMED_OUT
            elif isinstance(effect, RunCalls):
                for call in effect.calls:
                    self.drive(self.core.call(call))
            elif isinstance(effect, Execute):
                self.journal = self.journal or dict(self.core.state.calls)
                outcome = (tool_result_block(effect.call.id, f"refunded {effect.input}"), 0.0)


def test_a_call_undecided_when_the_time_runs_out_is_denied_and_the_turn_goes_on() -> None:
    core = RunCore(
        RunState(params={"model": MODEL, "max_tokens": 10}, messages=({"role": "user", "content": "Go."},)),
        tools=ExecutionOptions(tools=TOOLS, adapter=DEFAULT_ADAPTER, gated=True, opens=True),
        usage_of=lambda _: RequestUsage(model=MODEL, usage=Usage(10, 5), cost=None),
        limits=Limits(),
        durable=True,
    )
    core.timed_out("8 hours")
    heard: list[RunnerEvent] = []
    core.listener = heard.append
    driver = WaitingDriver(core)

    assert driver.drive(core.iteration()) is REPLIES[0]  # handed over
    driver.effects.clear()
    assert driver.drive(core.iteration()) is REPLIES[1]  # no pause: the turn went on, and the next reply came

    reason = TIMED_OUT.format(name="refund", timeout="8 hours")
    # One iteration: the wait, then the approved call runs (no ReadDecisions: the driver held the
    # run, no pause came between), the turn ends, and the next request goes.
    assert driver.effects == [
        "OpenTools",
        "AwaitDecisions",
        "OpenTools",
        "RunCalls",
        "Save",
        "Execute",
        "Save",
        "StateDerived",
        "OpenTools",
        "Save",
        "Send",
        "OpenTools",
        "Save",
    ]
    late = driver.journal["late"]
    assert (late.decision, late.decided_by, late.result) == (
        "denied",
        None,
        tool_result_block("late", reason, is_error=True),
    )
    assert (driver.journal["in_time"].decision, driver.journal["in_time"].decided_by) == ("approved", "ada")
    assert core.state.messages[-1] == {
        "role": "user",
        "content": [
            tool_result_block("late", reason, is_error=True),
            tool_result_block("in_time", "refunded {'amount': 20}"),
        ],
    }
    decisions = [
        (event.call.id, event.decision, event.via) for event in heard if isinstance(event, ApprovalDecided)
    ]
    assert decisions == [("in_time", "approved", "runner"), ("late", "denied", "timeout")]
    # The audit keeps both, the timeout's with its reason and no one who decided.
    assert [(e.call.id, e.decision, e.by, e.via, e.reason) for e in core.state.decisions] == [
        ("in_time", "approved", "ada", "runner", None),
        ("late", "denied", None, "timeout", reason),
    ]
    assert [event.call.id for event in heard if isinstance(event, ApprovalRequested)] == ["late", "in_time"]

"""The lifecycle's pure transitions, driven directly: a hypothesis state machine over ``RunState``.

No runner, no I/O: rules send requests (streamed or not), take generated replies, steer, start and
finish calls, gate and decide them, finish or pause turns, close, and "crash" (a JSON round trip
through ``resumed``). After every step the invariants of ``_core/state.py`` and ``_core/transitions.py`` hold:

- the state survives its JSON form unchanged;
- ``end_reason`` is set exactly in ``DONE`` and ``AWAITING``;
- a finished call keeps its result while its turn lasts (it never runs again);
- the journal holds only calls of the current turn, and is empty once a turn's results are in;
- a finished turn appends the reply exactly when the body did not steer (and it had content),
  then one message answering every pending call, in tool_use order;
- the history the next request would carry passes ``check_history`` whenever a request is sent.
"""

from __future__ import annotations

import dataclasses
from decimal import Decimal
from typing import Any

from anthropic.types import Message
from hypothesis import settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from toolrunner import CallRecord, CallStatus, Phase, RunState
from toolrunner._core.approval import awaiting, call_decided, calls_gated, turn_paused, turn_resumed
from toolrunner._core.message_checks import check_history
from toolrunner._core.messages import client_tool_calls, reply_param
from toolrunner._core.results import tool_result_block
from toolrunner._core.state import SubRun
from toolrunner._core.transitions import (
    Limits,
    _new_record,  # pyright: ignore[reportPrivateUsage]
    _with_status,  # pyright: ignore[reportPrivateUsage]
    call_finished,
    call_started,
    closed,
    delivered,
    pending_calls,
    ready_to_send,
    record_of,
    reply_received,
    request_params,
    resumed,
    steered,
    stream_abandoned,
    stream_opened,
    turn_finished,
)
from toolrunner._core.types import ToolCall
from toolrunner._core.usage import RequestUsage, Usage

USER = {"role": "user", "content": "Go."}
STOPS = ["tool_use", "tool_use", "end_turn", "pause_turn", "max_tokens"]


def reply(turn: int, calls: int, stop: str, text: bool) -> Message:
    content: list[dict[str, Any]] = [{"type": "text", "text": f"turn {turn}"}] if text else []
    content += [
        {"type": "tool_use", "id": f"t{turn}_{n}", "name": "act", "input": {"n": n}} for n in range(calls)
    ]
    return Message.model_validate(
        {
            "id": f"m{turn}",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": content,
            # pause_turn comes with server tools, not client ones; tool_use only with client calls
            "stop_reason": {True: stop, False: "end_turn"}[
                (stop != "pause_turn" or not calls) and (stop != "tool_use" or calls > 0)
            ],
            "stop_sequence": None,
            "usage": {"input_tokens": 10, "output_tokens": 5},
        }
    )


class Lifecycle(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = RunState(params={"model": "claude-sonnet-4-6", "max_tokens": 64}, messages=(USER,))
        self.limits = Limits(max_iterations=8)
        self.turns = 0
        self.finished_results: dict[str, Any] = {}  # results of the turn in progress, by id
        self.pushed = False  # the body pushed the reply this turn (a second push would be its own error)

    # -- helpers -------------------------------------------------------------------------------

    def set(self, state: RunState) -> None:
        self.state = state

    def holds_reply(self) -> bool:
        return self.state.phase in (Phase.WITH_BODY, Phase.AWAITING)

    # -- rules ---------------------------------------------------------------------------------

    @precondition(lambda self: self.state.phase is Phase.READY)
    @rule(streamed=st.booleans(), calls=st.integers(0, 3), stop=st.sampled_from(STOPS), text=st.booleans())
    def send(self, streamed: bool, calls: int, stop: str, text: bool) -> None:
        state = ready_to_send(self.state, self.limits)
        self.set(state)
        if state.phase is Phase.DONE:
            return
        check_history(list(state.messages))  # what the request would carry is valid
        request_params(state, [])
        self.finished_results = {}
        self.pushed = False
        if streamed:
            self.set(stream_opened(state))
            assert self.state.calls == {}
        self.turns += 1
        usage = RequestUsage("claude-sonnet-4-6", Usage(10, 5), Decimal("0.001"))
        self.set(reply_received(self.state, reply(self.turns, calls, stop, text), usage))

    @precondition(lambda self: self.state.phase is Phase.STREAMING)
    @rule()
    def stream_fails(self) -> None:
        self.set(stream_abandoned(self.state))
        assert self.state.phase is Phase.READY

    @precondition(lambda self: self.holds_reply())
    @rule(data=st.data())
    def gate(self, data: st.DataObject) -> None:
        calls = [call for call in pending_calls(self.state) if record_of(self.state, call) is None]
        gated = [call for call in calls if data.draw(st.booleans())]
        self.set(calls_gated(self.state, gated))

    @precondition(lambda self: bool(awaiting(lifecycle_state := self.state, pending_calls(lifecycle_state))))
    @rule(data=st.data(), kind=st.sampled_from(["approved", "denied", "answered"]))
    def decide(self, data: st.DataObject, kind: str) -> None:
        call = data.draw(st.sampled_from(awaiting(self.state, pending_calls(self.state))))
        block = tool_result_block(call.id, f"{kind} by a person", is_error=kind == "denied")
        if kind == "approved":
            self.set(call_decided(self.state, call.id, "approved", approved_input={"n": 99}))
        else:
            self.set(call_decided(self.state, call.id, kind, result=block))  # type: ignore[arg-type]
            self.finished_results[call.id] = block

    @precondition(lambda self: self.holds_reply())
    @rule(data=st.data(), finish=st.booleans())
    def run_a_call(self, data: st.DataObject, finish: bool) -> None:
        runnable = [
            call
            for call in pending_calls(self.state)
            if (record := record_of(self.state, call)) is None
            or record.status in (CallStatus.APPROVED, CallStatus.STARTED)
        ]
        if not runnable:
            return
        call = data.draw(st.sampled_from(runnable))
        self.set(call_started(self.state, call))
        if finish:
            block = tool_result_block(call.id, f"did {call.id}")
            self.set(call_finished(self.state, call, block))
            self.finished_results[call.id] = block

    @precondition(lambda self: self.holds_reply())
    @rule(push=st.booleans())
    def body_steers(self, push: bool) -> None:
        reply_ = self.state.reply
        # The body pushes the reply only when its calls may run (else the history it leaves has calls
        # that nothing answers, and the driver refuses to send it: tests/runner/test_runner.py covers that).
        runnable = reply_ is not None and (reply_.stop_reason == "tool_use" or not client_tool_calls(reply_))
        if push and runnable and not self.pushed and reply_ is not None and reply_.content:
            self.pushed = True
            self.set(steered(self.state, messages=(*self.state.messages, reply_param(reply_))))
        else:
            self.set(steered(self.state, messages=(*self.state.messages,)))

    @precondition(lambda self: self.holds_reply())
    @rule()
    def finish_turn(self) -> None:
        state = self.state
        calls = pending_calls(state)
        if awaiting(state, calls):
            self.set(turn_paused(state))
            assert self.state.end_reason == "awaiting_approval"
            return
        if any(state.result_of(call) is None for call in calls):
            return  # calls still to run: the driver would run them first
        before = state.messages
        results = [state.result_of(call) for call in calls]
        message = {"role": "user", "content": results} if calls else None
        after = turn_finished(turn_resumed(state), message)  # type: ignore[arg-type]
        appended = after.messages[len(before) :]
        assert state.reply is not None
        expected = (0 if state.steered or not state.reply.content else 1) + (1 if calls else 0)
        assert len(appended) == expected
        if calls:
            assert [block["tool_use_id"] for block in appended[-1]["content"]] == [call.id for call in calls]
        assert after.calls == {}
        self.set(after)

    @rule()
    def close(self) -> None:
        self.set(closed(self.state))
        assert self.state.phase is Phase.DONE

    @precondition(lambda self: self.state.phase is Phase.DONE)
    @rule()
    def follow_up(self) -> None:
        last = self.state.messages[-1]
        if last["role"] == "user" or client_tool_calls(last):
            return  # a follow-up must come after an assistant message with nothing left to answer
        self.set(steered(self.state, messages=(*self.state.messages, USER)))
        assert self.state.phase is Phase.READY

    @rule()
    def crash_and_resume(self) -> None:
        again = RunState.from_json(self.state.to_json())
        self.set(resumed(again, may_run_again=lambda call: call.id.endswith("_0")))
        for tool_use_id, record in self.state.calls.items():
            assert record.status is not CallStatus.STARTED
            if tool_use_id in self.finished_results and record.status is CallStatus.FINISHED:
                assert record.result == self.finished_results[tool_use_id]
            elif record.status is CallStatus.FINISHED:
                self.finished_results[tool_use_id] = record.result

    # -- invariants -----------------------------------------------------------------------------

    @invariant()
    def round_trips(self) -> None:
        text = self.state.to_json()
        assert RunState.from_json(text).to_json() == text

    @invariant()
    def end_reason_exactly_when_ended_or_paused(self) -> None:
        assert (self.state.end_reason is not None) == (self.state.phase in (Phase.DONE, Phase.AWAITING))
        assert (self.state.end_reason == "awaiting_approval") == (self.state.phase is Phase.AWAITING)

    @invariant()
    def finished_calls_keep_their_results(self) -> None:
        for tool_use_id, record in self.state.calls.items():
            if record.status is CallStatus.FINISHED and tool_use_id in self.finished_results:
                assert record.result == self.finished_results[tool_use_id]

    @invariant()
    def the_journal_holds_only_the_current_turn(self) -> None:
        if self.state.phase is Phase.READY:
            current = {call.id for call in pending_calls(self.state)}
            assert set(self.state.calls) <= current | set(self.finished_results)


Lifecycle.TestCase.settings = settings(max_examples=300, stateful_step_count=30, deadline=None)
test_the_lifecycle_keeps_its_invariants = Lifecycle.TestCase


def test_a_decision_stays_with_its_call_however_often_it_is_started_again() -> None:
    # A person approved refund(amount=500) with the amount edited to 50, and said who they are. The
    # call is started, then cancelled (or its save failed) and started again, then interrupted by
    # a crash and started again after resume: each time it runs as decided, with the input edited.
    gated = reply(1, 1, "tool_use", False)
    state = reply_received(RunState(params={}, messages=(USER,)), gated, RequestUsage("m", Usage(), None))
    (call,) = pending_calls(state)
    state = calls_gated(state, [call], tools={call.id: {"name": "act", "input_schema": {"type": "object"}}})
    state = call_decided(
        state, call.id, "approved", approved_input={"n": 50}, by="ada", at="2026-11-26T09:00:00Z"
    )
    for _ in range(3):
        state = call_started(state, call)
        record = record_of(state, call)
        assert record is not None
        assert record.status is CallStatus.STARTED
        assert (record.approved_input, record.decision, record.decided_by) == ({"n": 50}, "approved", "ada")
        state = RunState.from_json(state.to_json())  # a crash: the saved state, resumed
        state = resumed(state, may_run_again=lambda call: True)
        record = record_of(state, call)
        assert record is not None
        assert record.status is CallStatus.APPROVED
        assert record.approved_input == {"n": 50}
        assert record.tool == {
            "name": "act",
            "input_schema": {"type": "object"},
        }
    state = call_finished(call_started(state, call), call, tool_result_block(call.id, "refunded 50"))
    record = record_of(state, call)
    assert record is not None
    assert (record.status, record.approved_input, record.decided_at) == (
        CallStatus.FINISHED,
        {"n": 50},
        "2026-11-26T09:00:00Z",
    )


def test_a_reply_handed_over_at_once_is_the_state_delivered_makes_of_it() -> None:
    # A runner with nothing to do between taking a reply and handing it over (no store, gate, tools
    # to open or listener) makes the one state: it must be the one the two steps make.
    usage = RequestUsage("claude-sonnet-4-6", Usage(10, 5), Decimal("0.001"))
    ready = RunState(params={}, messages=(USER,))
    for state in (ready, closed(ready), steered(ready, messages=(USER, USER))):
        for stop in ("tool_use", "end_turn"):
            message = reply(1, 1, stop, True)
            received = reply_received(state, message, usage)
            assert reply_received(state, message, usage, handed_over=True) == delivered(received)


def test_starting_and_finishing_a_call_keep_every_other_field_of_its_record() -> None:
    # call_started and call_finished build the record anew field by field (``_with_status``, a
    # call of every turn): every field of CallRecord must be carried over, as dataclasses.replace does.
    record = CallRecord(
        ToolCall(id="t1", name="act", input={"n": 1}),
        CallStatus.APPROVED,
        None,
        approved_input={"n": 2},
        decision="approved",
        decided_by="ada",
        decided_at="2026-11-26T09:00:00Z",
        tool={"name": "act"},
        hook="rewritten",
        hook_input={"n": 3},
        sub_run=SubRun(agent="helper", state=RunState(params={})),
    )
    for field in dataclasses.fields(CallRecord):
        assert getattr(record, field.name) is not None or field.name == "result", field.name
    block = tool_result_block("t1", "done")
    assert _with_status(record, CallStatus.FINISHED, block) == dataclasses.replace(
        record, status=CallStatus.FINISHED, result=block
    )
    assert _with_status(record, CallStatus.STARTED, None) == dataclasses.replace(
        record, status=CallStatus.STARTED, result=None
    )
    # A new record, made without __init__ too, is the one __init__ makes, every field set.
    call = ToolCall(id="t2", name="act", input={})
    for status, result in ((CallStatus.STARTED, None), (CallStatus.FINISHED, block)):
        made = _new_record(call, status, result)
        assert made == CallRecord(call, status, result)
        assert repr(made) == repr(CallRecord(call, status, result))

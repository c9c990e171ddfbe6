"""One property over faults, on both drivers of the run's orchestration: ``ToolRunner`` and the
Temporal workflow perform the same effects and end with the same history for the same script.

The scripts are ``tests/properties/test_effect_faults.py``'s (``effect_scripts``): replies with calls to
ordinary, idempotent, sequential and gated tools, text replies the loop body steers past with a
follow-up, decisions on the gated calls, a concurrency limit, and in some, hooks and a call limit
(registered on the worker by name, as ``create_worker(hooks=...)`` takes them). Each runs with ``ToolRunner`` (in
this process, as that test's loop body plays it) and on Temporal, where clients play the loop
body: the follow-up is a ``push_messages`` update sent while the model writes the text reply, and
the decisions are updates sent when the worker hears the run pause (``LoopFinished``, forwarded
by the workflow). Every program of ``RunCore`` is tapped on both drivers, so the effects compared
are the core's own: each iteration's, and each call's.

On Temporal, one generated fault strikes the run:

- ``request``: a request fails once with a 529; Temporal retries the activity;
- ``tool``: a tool call's activity fails once, before the tool ran or after (its result lost); an
  idempotent tool's call runs again, any other is answered "interrupted";
- ``replay``: the workflow task fails at an effect (its worker lost it); Temporal gives the run to
  a fresh workflow instance, which replays the history so far and goes on.

Then the promises of the in-process property hold: a completed call never runs again (an
idempotent one may, after a lost activity), a call reported interrupted had begun unless its
activity was lost before it could, decisions are what runs, and the history is the clean run's
but for the results of interrupted calls. A smaller sample than in-process: each example is two
runs on the test server.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st
from temporalio import activity, workflow
from temporalio.client import WorkflowUpdateStage
from temporalio.exceptions import ApplicationError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import ActivityInboundInterceptor, ExecuteActivityInput, Interceptor

from tests.properties.test_effect_faults import USER, run_script
from tests.support._hypothesis_profiles import PROFILE
from tests.support.effect_scripts import (
    Ledger,
    Script,
    decide,
    follow_up,
    make_hooks,
    make_tools,
    scripts,
)
from tests.support.helpers import MODEL, plain
from tests.temporal.temporal_helpers import fast_retries, start, worker
from toolrunner import LoopFinished, RunnerEvent
from toolrunner._core.drive import Performing, intercepted
from toolrunner._core.effects import Program, Save
from toolrunner._core.transitions import INTERRUPTED
from toolrunner.temporal import MemoryPayloadStore, RunHandle, RunResult, ToolRunnerWorkflow, get_run
from toolrunner.temporal._data import MessagesInput
from toolrunner.testing import FakeMessagesAPI, RecordedRequest, ScriptEntry, fault

pytestmark = pytest.mark.anyio

EXAMPLES = {"ci": 12, "dev": 4, "thorough": 100}[PROFILE]
_runs = itertools.count()


# -- tapping the core's programs, on either driver ----------------------------------------------------


def without_opening(programs: list[list[str]]) -> list[list[str]]:
    """Each program's effects less ``OpenTools`` (see the property's comment)."""
    return [[name for name in names if name != "OpenTools"] for names in programs]


@dataclass
class Trace:
    """The effects of one run's programs, by name: each iteration's, and each call's."""

    iterations: list[list[str]] = field(default_factory=list[list[str]])
    calls: dict[str, list[list[str]]] = field(default_factory=dict[str, list[list[str]]])
    performed: int = 0
    """Effects performed outside a replay (a fault's place is counted on these)."""


class Tap:
    """Records every effect the core's programs perform, on either driver (an interceptor: the
    workflow's sandbox passes toolrunner through), by run and by program: each iteration's, and
    each call's (a call's program opens with the save that journals it as started)."""

    def __init__(self) -> None:
        self.traces: dict[str, Trace] = {}
        self.fail_at: tuple[str, int] | None = None
        """(run_id, n): the workflow task fails at the n-th effect of that run (once)."""
        self.logs: dict[int, tuple[Program[Any], list[str] | None]] = {}
        """By program (kept alive here, so that its id is not reused): where its effects go."""

    async def __call__(self, performing: Performing) -> Any:
        core, effect = performing.core, performing.effect
        replaying = workflow.in_workflow() and workflow.unsafe.is_replaying()
        if core is None or replaying:
            return await performing.perform()
        run_id = core.state.run_id or ""
        trace = self.traces.setdefault(run_id, Trace())
        key = id(performing.program)
        if key not in self.logs:
            self.logs[key] = (performing.program, self._log_of(trace, performing.program, effect))
        log = self.logs[key][1]
        if log is not None:
            log.append(type(effect).__name__)
            trace.performed += 1
            if self.fail_at == (run_id, trace.performed):
                self.fail_at = None
                raise RuntimeError("the worker lost this workflow task")  # fails the task, not the run
        return await performing.perform()

    def _log_of(self, trace: Trace, program: Program[Any], first: Any) -> list[str] | None:
        """Where a new program's effects go: an iteration's list, a call's, or none (another program:
        ``aclose``'s, ``generate_tool_response``'s)."""
        name = _name_of(program)
        log: list[str] = []
        if name == "iteration":
            trace.iterations.append(log)
        elif name == "call" and isinstance(first, Save) and first.starting is not None:
            trace.calls.setdefault(first.starting, []).append(log)
        else:
            return None
        return log


def _name_of(program: Program[Any]) -> str:
    """The core's program a driver drives: through ``RunCore.step``, the one it wraps."""
    generator: Any = program
    while generator is not None and generator.gi_code.co_name == "step":
        generator = generator.gi_yieldfrom
    return "" if generator is None else str(generator.gi_code.co_name)


# -- faults on Temporal ------------------------------------------------------------------------------------

FaultKind = Literal["request", "tool", "replay"]


@dataclass(frozen=True)
class Fault:
    kind: FaultKind
    at: int
    """The request's index, the call's place among the calls run, or the effect's number."""
    after: bool = False


class LoseToolActivity(Interceptor):
    """Fails the first attempt of one call's ``toolrunner.tool`` activity, before the tool ran or
    after (its result is lost)."""

    def __init__(self, call_id: str | None, *, after: bool) -> None:
        self.call_id = call_id
        self.after = after
        self.struck = False

    def intercept_activity(self, next: ActivityInboundInterceptor) -> ActivityInboundInterceptor:
        return _Lose(next, self)


class _Lose(ActivityInboundInterceptor):
    def __init__(self, next: ActivityInboundInterceptor, root: LoseToolActivity) -> None:
        super().__init__(next)
        self.root = root

    async def execute_activity(self, input: ExecuteActivityInput) -> Any:
        root = self.root
        info = activity.info()
        if info.activity_type == "toolrunner.tool" and not root.struck and input.args[0].id == root.call_id:
            root.struck = True
            if root.after:
                await super().execute_activity(input)
            raise ApplicationError("the worker running this call was lost", type="WorkerLost")
        return await super().execute_activity(input)


@dataclass
class Played:
    messages: list[Any]
    end_reason: str
    ledger: Ledger
    trace: Trace
    interrupted: set[str]
    lost: set[str] = field(default_factory=set[str])
    """Calls whose activity was lost before their tool ran."""
    requests: int = 0
    """Requests the fake answered (retries too)."""


def interrupted_ids(messages: list[Any]) -> set[str]:
    return {
        block["tool_use_id"]
        for message in messages
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result" and str(block.get("content", "")).startswith("The call to")
    }


async def play_on_temporal(
    env: WorkflowEnvironment, script: Script, clean: list[Any], tap: Tap, fault_: Fault | None
) -> Played:
    """Play ``script`` on Temporal, clients as its loop body, surviving ``fault_``."""
    run_id = f"effects-{next(_runs)}"
    ledger = Ledger()
    tools = make_tools(ledger)
    pushed: set[int] = set()
    requests = itertools.count()
    failing_request = fault_.at if fault_ is not None and fault_.kind == "request" else None

    async def respond(request: RecordedRequest) -> ScriptEntry:
        if next(requests) == failing_request:
            return fault(529)
        index = sum(1 for message in request.messages if message.get("role") == "assistant")
        if script.steered(index) and not script.turns[index].calls and index not in pushed:
            # The loop body's follow-up, queued while the model writes the reply it follows.
            pushed.add(index)
            reply = next(
                m
                for m in clean
                if m["role"] == "assistant" and m["content"][0].get("text") == f"text {index}"
            )
            handle = get_run(env.client, run_id).workflow
            await handle.start_update(  # pyright: ignore[reportUnknownMemberType]
                ToolRunnerWorkflow.push_messages,
                MessagesInput([reply, follow_up(index)]),
                wait_for_stage=WorkflowUpdateStage.ACCEPTED,
            )
        return script.reply(index)

    paused_send, paused_receive = anyio.create_memory_object_stream[None](100)

    def listen(_: str, event: RunnerEvent) -> None:
        if isinstance(event, LoopFinished) and event.reason == "awaiting_approval":
            paused_send.send_nowait(None)

    async def decide_when_paused(run: RunHandle) -> None:
        async for _ in paused_receive:
            decider = _Decider(await run.pending_approvals())
            decide(decider, script)
            for call_id, (kind, value) in decider.taken.items():
                if kind == "approve":
                    await run.approve(call_id, input=value, by="ada")
                elif kind == "deny":
                    await run.deny(call_id, value, by="ada")
                else:
                    await run.answer(call_id, value, by="ada")

    lose = LoseToolActivity(None, after=False)
    if fault_ is not None and fault_.kind == "tool":
        lose = LoseToolActivity(list(tap.traces["run"].calls)[fault_.at], after=fault_.after)
    if fault_ is not None and fault_.kind == "replay":
        tap.fail_at = (run_id, fault_.at)
    fake, store = FakeMessagesAPI(responder=respond), MemoryPayloadStore()
    # The script's hooks, on the worker by name; the limit and the retries go with the run.
    hooked = make_hooks(script, ledger)
    hooks = hooked.pop("hooks", None)
    result: RunResult | None = None
    async with (
        paused_send,
        paused_receive,
        worker(
            env,
            fake,
            store,
            tools=tools,
            on_event=listen,
            interceptors=[lose],
            hooks=None if hooks is None else {"script": hooks},
        ) as queue,
        anyio.create_task_group() as group,
    ):
        run = await start(
            env.client,
            queue,
            run_id=run_id,
            tools=tools,
            model=MODEL,
            max_tokens=256,
            messages=[USER],
            max_concurrency=script.max_concurrency,
            max_iterations=40,
            activity_options=fast_retries(),
            hooks=None if hooks is None else "script",
            **hooked,
        )
        group.start_soon(decide_when_paused, run)
        # Time stands still: a run paused for decisions waits for the decider, not for a skipped clock.
        with env.auto_time_skipping_disabled():
            result = await finished(run)
        group.cancel_scope.cancel()
    assert result is not None
    messages = plain(await result.messages(store))
    lost = {lose.call_id} if lose.call_id is not None and lose.struck and not lose.after else set[str]()
    trace = tap.traces[run_id]
    struck = fault_ is None or (
        lose.struck if fault_.kind == "tool" else tap.fail_at is None if fault_.kind == "replay" else True
    )
    assert struck, f"{fault_} did not strike"
    return Played(
        messages, result.end_reason, ledger, trace, interrupted_ids(messages), lost, len(fake.requests)
    )


async def finished(run: RunHandle) -> RunResult:
    with anyio.fail_after(60):  # a guard against a hang, not a timing
        return await run.result()


class _Decider:
    """What ``effect_scripts.decide`` asks of a runner, for a run on Temporal: the pending calls,
    and the decisions taken (sent as updates afterwards)."""

    def __init__(self, pending: list[Any]) -> None:
        self.pending_approvals = pending
        self.taken: dict[str, tuple[str, Any]] = {}

    def approve(self, call_id: str, *, input: Any = None, by: str | None = None) -> None:
        self.taken[call_id] = ("approve", input)

    def deny(self, call_id: str, reason: str, *, by: str | None = None) -> None:
        self.taken[call_id] = ("deny", reason)

    def answer(self, call_id: str, result: Any, *, by: str | None = None) -> None:
        self.taken[call_id] = ("answer", result)


def check(script: Script, clean: list[Any], played: Played) -> None:
    assert played.end_reason == "model", played.messages
    ledger = played.ledger
    for call_id, count in ledger.completed.items():
        if call_id not in script.idempotent_ids:
            assert count <= 1, f"{call_id} completed {count} times"
    for call_id in played.interrupted:
        assert ledger.began[call_id] >= 1 or call_id in played.lost, (
            f"{call_id} was reported interrupted, never began"
        )
    for call_id, inputs in ledger.inputs.items():
        index, j = (int(part) for part in call_id[1:].split("_"))
        if script.turns[index].calls[j] != "gated":
            continue
        kind = script.decision_of(call_id)
        assert kind in ("approve", "edit"), f"{call_id} ran though it was {kind}"
        expected = index * 10 + j + (100 if kind == "edit" else 0)
        assert inputs == [expected] * len(inputs), f"{call_id} ran with {inputs}, decided {kind}"
    assert len(played.messages) == len(clean)
    for mine, theirs in zip(played.messages, clean, strict=True):
        if mine == theirs:
            continue
        assert mine["role"] == theirs["role"] == "user"
        for block, expected in zip(mine["content"], theirs["content"], strict=True):
            if block != expected:
                assert block["tool_use_id"] in played.interrupted
                assert str(block["content"]).startswith(INTERRUPTED.split("{")[0])


@st.composite
def faults(draw: st.DrawFn) -> Fault:
    """A fault's kind, side and place, all from one number (a small sample still sees each kind);
    the place is taken modulo the places of its kind in the clean run (``placed``)."""
    number = draw(st.integers(0, 10_000))
    kind: FaultKind = ("request", "tool", "replay")[number % 3]
    return Fault(kind=kind, at=number // 6, after=(number // 3) % 2 == 1)


def placed(fault_: Fault, clean: Played, calls: int) -> Fault | None:
    """``fault_`` at a place the clean run has (``None``: a tool fault in a run that ran no tool)."""
    if fault_.kind == "request":
        return Fault("request", fault_.at % clean.requests)
    if fault_.kind == "replay":
        return Fault("replay", 1 + fault_.at % clean.trace.performed)
    return None if not calls else Fault("tool", fault_.at % calls, fault_.after)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    derandomize=PROFILE == "ci",  # a fixed sample in CI; other profiles explore
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(script=scripts(max_turns=3, hooks=True), drawn=faults())
async def test_both_drivers_perform_the_same_effects_and_keep_every_promise_under_faults(
    temporal_env: WorkflowEnvironment, script: Script, drawn: Fault
) -> None:
    tap = Tap()
    with intercepted(tap):
        plainly = await run_script(script, None)
        clean = await play_on_temporal(temporal_env, script, plainly.messages, tap, None)
        fault_ = placed(drawn, clean, len(tap.traces["run"].calls))
        faulty = None
        if fault_ is not None:
            faulty = await play_on_temporal(temporal_env, script, plainly.messages, tap, fault_)

    # The same script, the same effects: each iteration's, and each call's (calls run at once
    # interleave their effects, so each call's are compared on their own). ``OpenTools`` is yielded
    # only where a driver has something to do before tools run (``Tools.opens``): the workflow always
    # (it may continue as new there), ToolRunner only with toolsets to open, which scripts have none of.
    assert clean.trace.iterations, "the tap saw nothing of the workflow's programs"
    assert "OpenTools" in {name for names in clean.trace.iterations for name in names}
    assert without_opening(clean.trace.iterations) == tap.traces["run"].iterations
    assert {call: without_opening(lists) for call, lists in clean.trace.calls.items()} == tap.traces[
        "run"
    ].calls
    assert clean.messages == plainly.messages
    assert not clean.interrupted
    check(script, plainly.messages, clean)
    if faulty is not None:
        check(script, plainly.messages, faulty)

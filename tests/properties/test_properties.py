"""Generated conversations and loop bodies, checked against a model of the lifecycle.

Each example scripts the fake with replies (0-6 tool calls, any stop reason, tools that succeed,
fail, refuse, take a moment, get bad input or do not exist) and drives a runner with a generated
loop body. On every request the fake receives we check, independently of the runner's code:

1. every client tool_use is answered exactly once, at the start of the next message, in order;
2. no tool runs twice for one tool_use id;
3. the reply was appended exactly when the body changed nothing;
4. the loop ends exactly when the lifecycle says (the model in ``LifecycleModel``, written from
   the "Lifecycle per iteration" statements, predicts every request and the end).

Two more properties reuse the model: SDK faults between replies (the loop resumed after each error
reaches the same end, tools once), and cancellation at a generated await point (resumed to the same
end, no finished call run again). See docs/reliability.md.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

import anthropic
import anyio
import anyio.from_thread
import anyio.lowlevel
import httpx2
from hypothesis import event, given, strategies as st

from tests.support._hypothesis_profiles import property_settings
from tests.support.reliability_helpers import (
    Block,
    LeakCheck,
    Skeleton,
    pairing_problems,
    plain,
    quiet_tool_failures,
    skeleton,
    worker_threads_idle,
)
from toolrunner import SyncToolRunner, ToolContext, ToolError, ToolRunner, UnansweredToolUseError, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    ScriptEntry,
    disconnect,
    fault,
    message_reply,
    stream_cut,
    text_reply,
)

MODEL = "claude-sonnet-4-6"
FIRST = {"role": "user", "content": "Do the things."}
MAX_REQUESTS = 40  # a loop that sends more than this never ends: fail instead of hanging

Mode: TypeAlias = Literal["ok", "fail", "refuse", "pause", "bad"]
Name: TypeAlias = Literal["act", "act_sync", "act_alone", "missing"]
RUNNABLE = ("act", "act_sync", "act_alone")


# -- the tools: they record every start and every finish by tool_use id ------------------------------


@dataclass
class Ledger:
    started: Counter[str] = field(default_factory=Counter[str])
    finished: Counter[str] = field(default_factory=Counter[str])
    # Set by the cancellation and close properties: the await point (counted across the run) that
    # stops the loop, and how (cancel a scope, or close the runner).
    cancel_at: int | None = None
    points: int = 0
    stop: Callable[[], None] | None = None


ledger = Ledger()


async def _point_async() -> None:
    """An await point of the run: cancels the scope when it is the chosen one."""
    ledger.points += 1
    if ledger.points == ledger.cancel_at and ledger.stop is not None:
        ledger.stop()
    await anyio.lowlevel.checkpoint()


def _outcome(key: str, mode: str) -> str:
    if mode == "fail":
        raise RuntimeError(f"failed:{key}")
    if mode == "refuse":
        raise ToolError(f"refused:{key}")
    return f"done:{key}"


@tool
async def act(key: str, mode: str, ctx: ToolContext) -> str:
    """Do something that must happen once per call.

    Args:
        key: What to act on.
        mode: How the call behaves.
    """
    ledger.started[ctx.call.id] += 1
    await _point_async()
    if mode == "pause":
        await anyio.sleep(0.001)
    ledger.finished[ctx.call.id] += 1  # from here on the call cannot be cancelled
    return _outcome(key, mode)


@tool
def act_sync(key: str, mode: str, ctx: ToolContext) -> str:
    """The same, as a blocking function run in a worker thread.

    Args:
        key: What to act on.
        mode: How the call behaves.
    """
    ledger.started[ctx.call.id] += 1
    ledger.points += 1
    if ledger.points == ledger.cancel_at and ledger.stop is not None:
        anyio.from_thread.run_sync(ledger.stop)
    ledger.finished[ctx.call.id] += 1
    return _outcome(key, mode)


@tool(sequential=True)
async def act_alone(key: str, mode: str, ctx: ToolContext) -> str:
    """The same, as a tool that runs alone (``sequential=True``).

    Args:
        key: What to act on.
        mode: How the call behaves.
    """
    return await act.function(key, mode, ctx)


# -- what is generated -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Call:
    id: str
    name: Name
    mode: Mode

    def block(self) -> dict[str, Any]:
        tool_input: dict[str, Any] = (
            {"key": self.id} if self.mode == "bad" else {"key": self.id, "mode": self.mode}
        )
        return {"type": "tool_use", "id": self.id, "name": self.name, "input": tool_input}

    def check_result(self, content: Any, is_error: bool) -> str | None:
        """Why ``content`` is the wrong result for this call, or None."""
        if self.name == "missing":
            ok = is_error and str(content).startswith("There is no tool named 'missing'")
        elif self.mode == "bad":
            ok = is_error and "mode" in str(content)
        elif self.mode == "fail":
            ok = is_error and content == repr(RuntimeError(f"failed:{self.id}"))
        elif self.mode == "refuse":
            ok = is_error and content == f"refused:{self.id}"
        else:
            ok = not is_error and content == f"done:{self.id}"
        return None if ok else f"{self} got {content!r} (is_error={is_error})"


@dataclass(frozen=True)
class Reply:
    calls: tuple[Call, ...]
    stop_reason: str
    text: str | None

    def entry(self) -> ScriptedReply:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text}] if self.text is not None else []
        if self.stop_reason == "pause_turn":  # a server tool the service is still running
            blocks.append(
                {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}
            )
        blocks += [call.block() for call in self.calls]
        return message_reply(blocks, stop_reason=self.stop_reason)

    def skeleton(self) -> Skeleton:
        blocks: list[Block] = [("text", self.text)] if self.text is not None else []
        if self.stop_reason == "pause_turn":
            blocks.append(("server_tool_use",))
        blocks += [("tool_use", call.id, call.name) for call in self.calls]
        return ("assistant", tuple(blocks))


FALLBACK = Reply((), "end_turn", "That is all.")


@dataclass(frozen=True)
class Generate:
    times: int
    concurrent: bool


@dataclass(frozen=True)
class Push:
    with_results: bool


@dataclass(frozen=True)
class Replace:
    """Replace the params: the history so far plus a new assistant turn (tool calls or text)."""

    calls: tuple[Call, ...]
    as_function: bool


Action: TypeAlias = Generate | Push | Replace
Then: TypeAlias = Literal["next", "break", "break_until_done", "close"]


@dataclass(frozen=True)
class Turn:
    actions: tuple[Action, ...] = ()
    then: Then = "next"


NOTHING = Turn()
THENS: list[Then] = ["next", "next", "next", "next", "next", "next", "break", "break_until_done", "close"]
STOP_REASONS = [
    *["tool_use"] * 20,
    "end_turn",
    "pause_turn",
    "max_tokens",
    "stop_sequence",
    "refusal",
    "a_stop_reason_from_the_future",
]


def calls_strategy(prefix: str, min_size: int, max_size: int) -> st.SearchStrategy[tuple[Call, ...]]:
    one = st.tuples(
        st.sampled_from(["act", "act", "act_sync", "act_alone", "missing"]),
        st.sampled_from(["ok", "ok", "fail", "refuse", "pause", "bad"]),
    )
    return st.lists(one, min_size=min_size, max_size=max_size).map(
        lambda items: tuple(Call(f"toolu_{prefix}_{n}", name, mode) for n, (name, mode) in enumerate(items))  # pyright: ignore[reportArgumentType]
    )


@st.composite
def replies(draw: st.DrawFn, max_replies: int = 6) -> list[Reply]:
    count = draw(st.integers(1, max_replies))
    script: list[Reply] = []
    for number in range(count):
        stop_reason = draw(st.sampled_from(STOP_REASONS))
        # Replies that stop for another reason mostly carry no client calls, as real ones do.
        some = stop_reason == "tool_use" or draw(st.booleans())
        calls = draw(calls_strategy(f"r{number}", 1 if stop_reason == "tool_use" else 0, 6 if some else 0))
        text = draw(st.sampled_from([None, f"reply {number}"])) if calls else f"reply {number}"
        script.append(Reply(calls, stop_reason, text))
    return script


@st.composite
def turns(draw: st.DrawFn, count: int) -> list[Turn]:
    plan: list[Turn] = []
    for number in range(count):
        actions: list[Action] = []
        for step in range(draw(st.integers(0, 3))):
            kind = draw(st.sampled_from(["generate", "generate", "push", "replace"]))
            if kind == "generate":
                actions.append(Generate(draw(st.integers(1, 3)), draw(st.booleans())))
            elif kind == "push":
                actions.append(Push(draw(st.booleans())))
            else:
                calls = draw(calls_strategy(f"x{number}_{step}", 0, 3))
                actions.append(Replace(calls, draw(st.booleans())))
        then: Then = draw(st.sampled_from(THENS))
        plan.append(Turn(tuple(actions), then))
    return plan


@dataclass(frozen=True)
class Scenario:
    script: list[Reply]
    plan: list[Turn]
    max_iterations: int | None
    max_concurrency: int | None
    start_with_until_done: bool
    backend: str


@st.composite
def scenarios(draw: st.DrawFn) -> Scenario:
    script = draw(replies())
    return Scenario(
        script=script,
        plan=draw(turns(len(script) + 2)),
        max_iterations=draw(st.sampled_from([None, None, None, 1, 2, 3, 5, 8])),
        max_concurrency=draw(st.sampled_from([None, None, 1, 2])),
        start_with_until_done=draw(st.integers(0, 9)) == 0,
        backend=draw(st.sampled_from(["asyncio", "trio"])),
    )


# -- the model of the lifecycle ------------------------------------------------------------------------


def _replacement(history: Sequence[Any], role_of_last: str, calls: tuple[Call, ...]) -> list[Any]:
    """The history a Replace action sets, for a real history or a model one (same rule for both)."""
    new = list(history)
    if calls:
        if role_of_last == "assistant":
            new.append({"role": "user", "content": "go on"})
        new.append({"role": "assistant", "content": [call.block() for call in calls]})
    else:
        if role_of_last == "user":
            new.append({"role": "assistant", "content": "edited"})
        new.append({"role": "user", "content": "go on"})
    return new


def _result_skeleton(calls: Sequence[Call]) -> Skeleton:
    return ("user", tuple(("tool_result", call.id, _is_error(call)) for call in calls))


def _is_error(call: Call) -> bool:
    return call.name == "missing" or call.mode in ("fail", "refuse", "bad")


@dataclass
class Expected:
    requests: list[list[Skeleton]]
    history: list[Skeleton]
    generated: list[list[Skeleton | None]]
    runs: set[str]
    error: (
        bool  # the runner must refuse an unanswered tool_use (UnansweredToolUseError), when steered or sent
    )


class LifecycleModel:
    """The lifecycle of .notes/API.md ("Lifecycle per iteration"), on skeleton histories.

    It is written from the statements, not from the runner's code: it shares no function with
    ``toolrunner``.
    """

    def __init__(self, script: list[Reply], calls: dict[str, Call]) -> None:
        self.script = script
        self.calls = calls
        self.history: list[Skeleton] = [("user", (("text", FIRST["content"]),))]
        self.done: set[str] = set()  # tool_use ids with a result (each runs at most once)

    def _client_calls(self, message: Skeleton | None) -> list[Call]:
        if message is None or message[0] != "assistant":
            return []
        return [self.calls[block[1]] for block in message[1] if block[0] == "tool_use"]

    def _to_answer(self, last: Skeleton | None, reply: Reply) -> list[Call]:
        calls = self._client_calls(last)
        if calls and [c.id for c in calls] == [c.id for c in reply.calls] and reply.stop_reason != "tool_use":
            return []  # the reply's own calls run only when it stopped for tool_use
        return calls

    def _generate(self, reply: Reply, changed: bool) -> Skeleton | None:
        calls = self._to_answer(reply.skeleton() if not changed else self.history[-1], reply)
        if not calls:
            return None
        self.done.update(call.id for call in calls)
        return _result_skeleton(calls)

    def _valid(self) -> bool:
        return not pairing_problems(_as_messages(self.history))

    def run(self, plan: list[Turn], max_iterations: int | None, body: bool) -> Expected:
        requests: list[list[Skeleton]] = []
        generated: list[list[Skeleton | None]] = []
        error = False
        for number in range(MAX_REQUESTS):
            if max_iterations is not None and number >= max_iterations:
                break
            if not self._valid():
                error = True
                break
            requests.append(list(self.history))
            reply = self.script[number] if number < len(self.script) else FALLBACK
            turn = plan[number] if body and number < len(plan) else NOTHING
            changed = False
            outputs: list[Skeleton | None] = []
            for action in turn.actions:
                if isinstance(action, Generate):
                    result = self._generate(reply, changed)
                    outputs.extend([result] * action.times)
                else:
                    if isinstance(action, Push):
                        result = self._generate(reply, changed) if action.with_results else None
                        new = [*self.history, reply.skeleton(), *([result] if result is not None else [])]
                    else:
                        last_role = self.history[-1][0]
                        new = skeleton(_replacement(_as_messages(self.history), last_role, action.calls))
                    # Steering that makes a history the service rejects, whatever comes next, is
                    # refused at once and changes nothing (only the last message may wait for results).
                    if pairing_problems(_as_messages(new), allow_trailing=True):
                        return Expected(requests, self.history, generated, self.done, True)
                    self.history = new
                    changed = True
            generated.append(outputs)
            if turn.then == "break_until_done":
                body = False
            if turn.then == "close":
                if not changed:
                    self.history.append(reply.skeleton())
                break
            results = self._generate(reply, changed)
            if not changed:
                self.history.append(reply.skeleton())
            if results is not None:
                self.history.append(results)
            if results is None and not changed and reply.stop_reason != "pause_turn":
                break
        return Expected(requests, self.history, generated, self.done, error)


def _as_messages(history: Sequence[Skeleton]) -> list[dict[str, Any]]:
    """Skeletons back as JSON messages (enough for ``pairing_problems`` and ``skeleton``)."""
    messages: list[dict[str, Any]] = []
    for role, blocks in history:
        content: list[dict[str, Any]] = []
        for block in blocks:
            if block[0] == "text":
                content.append({"type": "text", "text": block[1]})
            elif block[0] == "tool_use":
                content.append({"type": "tool_use", "id": block[1], "name": block[2], "input": {}})
            elif block[0] == "tool_result":
                content.append({"type": "tool_result", "tool_use_id": block[1], "is_error": block[2]})
            else:
                content.append({"type": block[0]})
        messages.append({"role": role, "content": content})
    return messages


# -- driving the runner ------------------------------------------------------------------------------


@dataclass
class Observed:
    replies: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])
    generated: list[list[Any]] = field(default_factory=list[list[Any]])
    body_history: list[list[Any]] = field(default_factory=list[list[Any]])
    changed: list[bool] = field(default_factory=list[bool])
    error: BaseException | None = None
    final: Any = None


async def _apply(runner: ToolRunner, message: Any, action: Action, outputs: list[Any]) -> bool:
    """Do one body action; return whether it changed the history."""
    if isinstance(action, Generate):
        if action.concurrent:
            async with anyio.create_task_group() as group:
                for _ in range(action.times):
                    group.start_soon(_generate_into, runner, outputs)
        else:
            for _ in range(action.times):
                outputs.append(plain(await runner.generate_tool_response()))
        return False
    if isinstance(action, Push):
        results = await runner.generate_tool_response() if action.with_results else None
        runner.push_messages(message, *([results] if results is not None else []))
        return True
    last_role = plain(runner.messages[-1])["role"]
    new = _replacement(runner.messages, last_role, action.calls)
    if action.as_function:
        runner.set_messages_params(lambda params: {**params, "messages": new})
    else:
        runner.set_messages_params({**runner.params, "messages": new})
    return True


async def _generate_into(runner: ToolRunner, outputs: list[Any]) -> None:
    outputs.append(plain(await runner.generate_tool_response()))


async def drive(runner: ToolRunner, scenario: Scenario, observed: Observed) -> None:
    number = 0
    body = not scenario.start_with_until_done
    try:
        while True:
            if not body:
                observed.final = await runner.until_done()
                return
            left = False
            async for message in runner:
                turn = scenario.plan[number] if number < len(scenario.plan) else NOTHING
                number += 1
                observed.replies.append(plain(message.to_param()))
                outputs: list[Any] = []
                changed = False
                for action in turn.actions:
                    changed = await _apply(runner, message, action, outputs) or changed
                observed.generated.append(outputs)
                observed.body_history.append(plain(runner.messages))
                observed.changed.append(changed)
                if turn.then == "close":
                    runner.close()
                elif turn.then != "next":
                    body = turn.then == "break"
                    left = True
                    break
            if not left:
                return
    except UnansweredToolUseError as error:
        observed.error = error


def fresh_ledger() -> None:
    global ledger
    ledger = Ledger()


def all_calls(script: Sequence[Reply], plan: Sequence[Turn]) -> dict[str, Call]:
    calls = {call.id: call for reply in script for call in reply.calls}
    for turn in plan:
        for action in turn.actions:
            if isinstance(action, Replace):
                calls.update((call.id, call) for call in action.calls)
    return calls


def make_runner(
    client: anthropic.AsyncAnthropic,
    max_iterations: int | None,
    max_concurrency: int | None = None,
    *,
    stream: bool = False,
    eager: bool = False,
) -> ToolRunner:
    options: dict[str, Any] = {"stream": True} if stream else {}
    if eager:
        options["run_tools_eagerly"] = True
    return ToolRunner(
        client,
        **options,
        model=MODEL,
        max_tokens=256,
        messages=[FIRST],
        tools=[act, act_sync, act_alone],
        max_iterations=max_iterations,
        max_concurrency=max_concurrency,
    )


def fallback(_: RecordedRequest) -> ScriptEntry:
    return FALLBACK.entry()


def check_requests(requests: Sequence[RecordedRequest], calls: dict[str, Call]) -> None:
    """Invariant 1, and every result's content, on every request the fake received."""
    for request in requests:
        problems = pairing_problems(request.messages)
        assert not problems, f"request #{request.index + 1}: {problems}"
        for message in request.messages:
            if message["role"] != "user" or isinstance(message["content"], str):
                continue
            for block in message["content"]:
                if block["type"] == "tool_result":
                    wrong = calls[block["tool_use_id"]].check_result(
                        block.get("content"), bool(block.get("is_error"))
                    )
                    assert wrong is None, f"request #{request.index + 1}: {wrong}"


def check_runs_once(expected_runs: set[str], calls: dict[str, Call]) -> None:
    """Invariant 2: each runnable call the lifecycle answers started and finished exactly once."""
    runnable = {i for i in expected_runs if calls[i].name in RUNNABLE and calls[i].mode != "bad"}
    assert all(count == 1 for count in ledger.started.values()), f"a tool ran twice: {ledger.started}"
    assert set(ledger.started) == runnable, f"ran {sorted(ledger.started)}, expected {sorted(runnable)}"


def check_appends(requests: Sequence[RecordedRequest], observed: Observed) -> None:
    """Invariant 3: the reply is appended exactly when the body changed nothing."""
    for number, changed in enumerate(observed.changed):
        if number + 1 >= len(requests):
            break
        sent, following = requests[number].messages, requests[number + 1].messages
        kept = observed.body_history[number]
        if changed:
            assert following[: len(kept)] == kept, (
                f"turn {number}: the body's history was not sent as it stood"
            )
            extra = following[len(kept) :]
            assert all(m["role"] == "user" for m in extra), f"turn {number}: the reply was appended: {extra}"
        else:
            assert kept == sent, f"turn {number}: the history changed without the body changing it"
            assert following[: len(sent) + 1] == [*sent, observed.replies[number]], (
                f"turn {number}: the reply was not appended"
            )


@given(scenarios())
@property_settings
def test_generated_loops_keep_every_invariant_of_the_lifecycle(scenario: Scenario) -> None:
    fresh_ledger()
    calls = all_calls(scenario.script, scenario.plan)
    fake = FakeMessagesAPI([reply.entry() for reply in scenario.script], responder=fallback)
    observed = Observed()

    async def main() -> None:
        async with fake.async_client() as client:
            runner = make_runner(client, scenario.max_iterations, scenario.max_concurrency)
            with anyio.fail_after(30):
                await drive(runner, scenario, observed)
            assert len(fake.requests) <= MAX_REQUESTS
            if observed.error is None:  # the end: iterating again sends nothing more
                assert runner.finished
                assert [m async for m in runner] == []
            observed.final = runner.messages

    with quiet_tool_failures():
        anyio.run(main, backend=scenario.backend)

    check_against_the_model(scenario, calls, fake, observed)


def check_against_the_model(
    scenario: Scenario, calls: dict[str, Call], fake: FakeMessagesAPI, observed: Observed
) -> None:
    model = LifecycleModel(scenario.script, calls)
    expected = model.run(scenario.plan, scenario.max_iterations, body=not scenario.start_with_until_done)
    event("refused an unanswered tool_use" if expected.error else f"{len(expected.requests)} requests")

    check_requests(fake.requests, calls)
    check_runs_once(expected.runs, calls)
    check_appends(fake.requests, observed)
    # Invariant 4: exactly the requests the lifecycle predicts, and the same end.
    assert [skeleton(r.messages) for r in fake.requests] == expected.requests
    assert skeleton(observed.final) == expected.history
    assert (observed.error is not None) == expected.error, observed.error
    if not scenario.start_with_until_done:
        generated = [
            [None if g is None else skeleton([g])[0] for g in outputs] for outputs in observed.generated
        ]
        assert generated == expected.generated[: len(generated)]


# -- the sync front end ---------------------------------------------------------------------------------


def _apply_sync(runner: SyncToolRunner, message: Any, action: Action, outputs: list[Any]) -> bool:
    """``_apply`` for the blocking front end (``generate_tool_response()`` calls run in turn)."""
    if isinstance(action, Generate):
        outputs.extend(plain(runner.generate_tool_response()) for _ in range(action.times))
        return False
    if isinstance(action, Push):
        results = runner.generate_tool_response() if action.with_results else None
        runner.push_messages(message, *([results] if results is not None else []))
        return True
    new = _replacement(runner.messages, plain(runner.messages[-1])["role"], action.calls)
    if action.as_function:
        runner.set_messages_params(lambda params: {**params, "messages": new})
    else:
        runner.set_messages_params({**runner.params, "messages": new})
    return True


def drive_sync(runner: SyncToolRunner, scenario: Scenario, observed: Observed) -> None:
    number = 0
    body = not scenario.start_with_until_done
    try:
        while True:
            if not body:
                observed.final = runner.until_done()
                return
            left = False
            for message in runner:
                turn = scenario.plan[number] if number < len(scenario.plan) else NOTHING
                number += 1
                observed.replies.append(plain(message.to_param()))
                outputs: list[Any] = []
                changed = False
                for action in turn.actions:
                    changed = _apply_sync(runner, message, action, outputs) or changed
                observed.generated.append(outputs)
                observed.body_history.append(plain(runner.messages))
                observed.changed.append(changed)
                if turn.then == "close":
                    runner.close()
                elif turn.then != "next":
                    body = turn.then == "break"
                    left = True
                    break
            if not left:
                return
    except UnansweredToolUseError as error:
        observed.error = error


@given(scenarios())
@property_settings
def test_the_sync_front_end_keeps_the_same_invariants(scenario: Scenario) -> None:
    """The same generated loops through ``SyncToolRunner`` (one event loop per ``for`` loop)."""
    fresh_ledger()
    calls = all_calls(scenario.script, scenario.plan)
    fake = FakeMessagesAPI([reply.entry() for reply in scenario.script], responder=fallback)
    observed = Observed()
    with quiet_tool_failures(), fake.client() as client:
        runner = SyncToolRunner(
            client,
            model=MODEL,
            max_tokens=256,
            messages=[FIRST],
            tools=[act, act_sync, act_alone],
            max_iterations=scenario.max_iterations,
            max_concurrency=scenario.max_concurrency,
        )
        drive_sync(runner, scenario, observed)
        if observed.error is None:
            assert runner.runner.finished
            assert list(runner) == []
        observed.final = runner.messages
    check_against_the_model(scenario, calls, fake, observed)


def distinct(requests: Sequence[RecordedRequest]) -> list[list[Skeleton]]:
    """The histories sent, with a resend of the same history (a retry) counted once.

    Two requests in a row never carry the same history otherwise: every reply adds to it.
    """
    sent: list[list[Skeleton]] = []
    for request in requests:
        history = skeleton(request.messages)
        if not sent or sent[-1] != history:
            sent.append(history)
    return sent


def check_once_finished(calls: dict[str, Call]) -> None:
    """No call that finished ran again; only a call cut off by cancellation may start again."""
    assert all(count == 1 for count in ledger.finished.values()), (
        f"a finished call ran again: {ledger.finished}"
    )
    for call_id, count in ledger.started.items():
        assert count <= 2, f"{call_id} started {count} times"
        assert count == 1 or call_id in ledger.finished, f"{call_id} started twice without finishing"


# -- faults between replies ----------------------------------------------------------------------------

RETRYABLE: list[ScriptEntry] = [
    fault(429, retry_after=0.001),
    fault(529, retry_after=0.001),
    fault(500, retry_after=0.001),
]


@dataclass(frozen=True)
class FaultyScenario:
    script: list[Reply]
    faults_before: list[list[ScriptEntry]]  # faults answering the requests before reply n
    max_retries: int
    max_iterations: int | None
    stream: bool
    with_events: bool  # drive the loop through ``runner.events()`` instead of ``until_done()``
    backend: str

    def entries(self) -> tuple[list[ScriptEntry], list[bool]]:
        """The fake's script, and for each entry whether it is a reply."""
        entries: list[ScriptEntry] = []
        for faults, reply in zip(self.faults_before, self.script, strict=True):
            entries += [*faults, reply.entry()]
        return entries, [isinstance(e, ScriptedReply) for e in entries]


@st.composite
def faulty_scenarios(draw: st.DrawFn) -> FaultyScenario:
    script = draw(replies(max_replies=4))
    max_retries = draw(st.integers(0, 2))
    # Without SDK retries the loop itself is resumed after each error, so any fault will do; with
    # them, faults carry retry-after so that the SDK's backoff stays short.
    cuts = [stream_cut(text_reply("Cut short."), after_events=n) for n in (0, 3)]
    kinds: list[ScriptEntry] = (
        [*RETRYABLE] if max_retries else [*RETRYABLE, fault(500), fault(400), disconnect(), *cuts]
    )
    faults = draw(
        st.lists(st.lists(st.sampled_from(kinds), max_size=3), min_size=len(script), max_size=len(script))
    )
    return FaultyScenario(
        script,
        faults,
        max_retries,
        draw(st.one_of(st.none(), st.integers(1, 6))),
        draw(st.booleans()),
        draw(st.booleans()),
        draw(st.sampled_from(["asyncio", "trio"])),
    )


@given(faulty_scenarios())
@property_settings
def test_service_faults_never_rerun_tools_and_resuming_reaches_the_same_end(scenario: FaultyScenario) -> None:
    fresh_ledger()
    calls = all_calls(scenario.script, [])
    entries, _ = scenario.entries()
    fake = FakeMessagesAPI(entries, responder=fallback)
    errors: list[BaseException] = []
    refused: list[UnansweredToolUseError] = []
    final: list[Any] = []

    async def main() -> None:
        async with fake.async_client(max_retries=scenario.max_retries) as client:
            runner = make_runner(client, scenario.max_iterations, stream=scenario.stream)
            with anyio.fail_after(30):
                while True:
                    try:
                        await run_to_the_end(runner, with_events=scenario.with_events)
                        break
                    except UnansweredToolUseError as error:
                        refused.append(error)
                        break
                    except (anthropic.APIError, httpx2.ReadError) as error:
                        # a stream cut mid-way surfaces as httpx2's ReadError: the SDK does not wrap it
                        errors.append(error)
                        # the state is intact: a history the service takes, waiting at most for results
                        assert not pairing_problems(runner.messages, allow_trailing=True)
                        assert len(errors) <= 3 * len(entries)
            final.extend(runner.messages)

    with quiet_tool_failures():
        anyio.run(main, backend=scenario.backend)
    event(f"{min(len(errors), 3)}+ errors surfaced" if len(errors) >= 3 else f"{len(errors)} errors surfaced")

    expected = LifecycleModel(scenario.script, calls).run([], scenario.max_iterations, body=False)
    check_requests(fake.requests, calls)
    check_runs_once(expected.runs, calls)
    assert distinct(fake.requests) == expected.requests
    assert skeleton(final) == expected.history
    assert bool(refused) == expected.error
    assert all(
        isinstance(error, anthropic.APIStatusError | anthropic.APIConnectionError | httpx2.ReadError)
        for error in errors
    )


async def run_to_the_end(runner: ToolRunner, *, with_events: bool) -> None:
    if not with_events:
        await runner.until_done()
        return
    async with runner.events() as events:
        async for _ in events:
            pass


# -- cancellation at a generated await point -------------------------------------------------------------


@dataclass(frozen=True)
class CancelScenario:
    script: list[Reply]
    cancel_at: int
    generate_in_body: bool
    stream: Literal["no", "yes", "eager"]  # eager: tools start while the reply streams
    backend: str


@st.composite
def cancel_scenarios(draw: st.DrawFn) -> CancelScenario:
    return CancelScenario(
        draw(replies(max_replies=4)),
        draw(st.integers(1, 10)),
        draw(st.booleans()),
        draw(st.sampled_from(STREAM_MODES)),
        draw(st.sampled_from(["asyncio", "trio"])),
    )


STREAM_MODES: list[Literal["no", "yes", "eager"]] = ["no", "yes", "eager"]


@given(cancel_scenarios())
@property_settings
def test_cancelling_at_any_await_point_leaves_a_whole_history_and_resumes_to_the_same_end(
    scenario: CancelScenario,
) -> None:
    """Await points: the request (the responder), each tool call (async or in a thread), the body."""
    fresh_ledger()
    ledger.cancel_at = scenario.cancel_at
    calls = all_calls(scenario.script, [])
    entries = [reply.entry() for reply in scenario.script]

    async def respond(_: RecordedRequest) -> ScriptEntry:
        await _point_async()  # cancelled here, the request gets no answer and consumes no entry
        return entries.pop(0) if entries else FALLBACK.entry()

    fake = FakeMessagesAPI(responder=respond)
    expected = LifecycleModel(scenario.script, calls).run([], None, body=False)
    states = [*expected.requests, expected.history]
    final: list[Any] = []

    async def main() -> None:
        async with fake.async_client() as client:
            leaks = await LeakCheck.start()
            runner = make_runner(
                client, None, stream=scenario.stream != "no", eager=scenario.stream == "eager"
            )
            async with runner:
                await cancel_and_resume(runner, leaks)

    async def cancel_and_resume(runner: ToolRunner, leaks: LeakCheck) -> None:
        with anyio.CancelScope() as scope:
            ledger.stop = scope.cancel
            try:
                async for _ in runner:
                    await _point_async()
                    if scenario.generate_in_body:
                        await runner.generate_tool_response()
            except UnansweredToolUseError:
                pass  # the model predicts it (expected.error); resuming raises it again
        ledger.stop = None
        event("cancelled" if scope.cancel_called else "ran to the end uncancelled")
        # Nothing half-appended: the history is one the lifecycle passes through.
        assert skeleton(runner.messages) in states, skeleton(runner.messages)
        # Nothing of the runner still runs: no sync call in a thread, no busy worker thread, no task.
        # (Calls started early, while a reply streamed, run on in the runner's task group by design:
        # resuming takes their results. They are checked once the loop has ended.)
        if scenario.stream != "eager":
            await assert_nothing_runs(leaks)
        with anyio.fail_after(30):
            try:
                await runner.until_done()
            except UnansweredToolUseError:
                refused.append(True)
        await assert_nothing_runs(leaks)
        final.extend(runner.messages)

    async def assert_nothing_runs(leaks: LeakCheck) -> None:
        assert all(i in ledger.finished for i in ledger.started if calls[i].name == "act_sync")
        assert worker_threads_idle()
        await leaks.assert_none_new()

    refused: list[bool] = []
    with quiet_tool_failures():
        anyio.run(main, backend=scenario.backend)

    assert bool(refused) == expected.error
    check_requests(fake.requests, calls)
    check_once_finished(calls)
    assert distinct(fake.requests) == expected.requests
    assert skeleton(final) == expected.history


@given(cancel_scenarios())
@property_settings
def test_closing_at_any_point_ends_the_loop_with_whole_turns_and_sends_nothing_more(
    scenario: CancelScenario,
) -> None:
    """``close()`` at a generated point: from the request (the responder), a tool (async, or from
    its worker thread), or the body. The step under way finishes whole, then the loop ends."""
    fresh_ledger()
    ledger.cancel_at = scenario.cancel_at
    calls = all_calls(scenario.script, [])
    entries = [reply.entry() for reply in scenario.script]

    async def respond(_: RecordedRequest) -> ScriptEntry:
        await _point_async()
        return entries.pop(0) if entries else FALLBACK.entry()

    fake = FakeMessagesAPI(responder=respond)
    expected = LifecycleModel(scenario.script, calls).run([], None, body=False)
    replies = [*scenario.script, *[FALLBACK] * len(expected.requests)]
    whole = [*expected.requests, expected.history]
    whole += [[*sent, replies[n].skeleton()] for n, sent in enumerate(expected.requests)]
    sent_at_close: list[int] = []

    async def main() -> None:
        async with fake.async_client() as client:
            leaks = await LeakCheck.start()
            runner = make_runner(
                client, None, stream=scenario.stream != "no", eager=scenario.stream == "eager"
            )

            def close() -> None:
                sent_at_close.append(len(fake.requests))
                runner.close()

            async with runner:
                ledger.stop = close
                with anyio.fail_after(30):
                    try:
                        async for _ in runner:
                            await _point_async()
                            if scenario.generate_in_body:
                                await runner.generate_tool_response()
                    except UnansweredToolUseError:
                        assert expected.error
                ledger.stop = None
                if sent_at_close:
                    event("closed")
                    assert runner.finished
                    assert [m async for m in runner] == []
                    assert len(fake.requests) == sent_at_close[0], "a request was sent after close()"
                    assert skeleton(runner.messages) in whole, skeleton(runner.messages)
                    assert not pairing_problems(runner.messages, allow_trailing=True)
                else:
                    event("ran to the end unclosed")
                    assert expected.error or skeleton(runner.messages) == expected.history
            assert all(i in ledger.finished for i in ledger.started if calls[i].name == "act_sync")
            assert worker_threads_idle()
            await leaks.assert_none_new()

    with quiet_tool_failures():
        anyio.run(main, backend=scenario.backend)

    check_requests(fake.requests, calls)
    check_once_finished(calls)

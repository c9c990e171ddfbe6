"""Generated runs for the fault properties: scripts of replies, tools that keep a ledger, decisions.

A ``Script`` is a run as the model and the person behind it would play it: the replies in order
(each a turn of tool calls, a text reply that the loop body answers with a follow-up, or the final
text), the decision on each call to the gated tool, and the run's ``max_concurrency``. The fake
answers a request by the number of assistant messages it carries, so a request sent again (after a
crash, a cancellation, a lost reply) gets the same reply again, as a deterministic model would.

A script may also hold hooks and a call limit (``HookScript``, drawn with ``scripts(hooks=True)``;
``ToolRunner`` only): a ``before_tool_call`` hook that lets each call run, denies it or rewrites its
input, by a rule drawn per call; an ``after_tool_call`` hook that replaces some results; a
``before_request`` hook that lets every request go; a ``check_output`` hook that refuses the first
final answer (the model then answers again: one reply more); and ``max_calls`` on one tool. Each
hook is a pure function of what it is asked about, so a run and its faulty twin agree.

The tools write what happens to them in a ``Ledger``: which calls began, which completed, with
which input; and the hooks how often each answered, per call. The tools run on any driver
(``ToolRunner``, and Temporal's activities).
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal, cast

import anyio
import anyio.lowlevel
from anthropic.types import ToolResultBlockParam
from hypothesis import strategies as st

from toolrunner import Deny, Hooks, RequestInfo, RunWith, ToolCallInfo, ToolContext, tool
from toolrunner.testing import RecordedRequest, ScriptEntry, text_reply, tool_call, tool_reply

ToolName = Literal["plain", "idem", "seq", "gated"]
DecisionKind = Literal["approve", "edit", "deny", "answer"]
BeforeKind = Literal["run", "deny", "rewrite"]

REWRITTEN = 1000
"""What the ``before_tool_call`` hook adds to the input of a call it rewrites."""


@dataclass(frozen=True)
class Turn:
    """One reply: tool calls (by tool name), or text (``calls == ()``)."""

    calls: tuple[ToolName, ...] = ()


@dataclass(frozen=True)
class HookScript:
    """The hooks and the call limit of a script, by call id (``t{reply}_{position}``)."""

    before: tuple[tuple[str, BeforeKind], ...] | None
    """What ``before_tool_call`` answers on each call, or ``None``: no such hook."""
    after: frozenset[str] | None
    """The calls whose result ``after_tool_call`` replaces, or ``None``: no such hook."""
    limit: tuple[ToolName, int] | None
    """``max_calls``: a tool and its limit, or ``None``."""
    refuse_final: bool
    """A ``check_output`` hook refuses the first final answer (the model answers again); ``False``:
    no such hook."""

    def before_of(self, call_id: str) -> BeforeKind:
        assert self.before is not None
        return dict(self.before)[call_id]


@dataclass(frozen=True)
class Script:
    turns: tuple[Turn, ...]
    """The replies in order; the last is the final text, other text replies are steered past."""
    decisions: tuple[DecisionKind, ...]
    """The decision on each call to ``gated``, in the order the calls come."""
    max_concurrency: int | None
    hooks: HookScript | None = None
    """The hooks and the limit, if any (``make_hooks``)."""

    @property
    def final(self) -> int:
        """The index of the final answer the run ends with: the last turn's, or, when
        ``check_output`` refuses that one, the reply after it."""
        refused = self.hooks is not None and self.hooks.refuse_final
        return len(self.turns) - 1 + int(refused)

    def steered(self, index: int) -> bool:
        """Whether the loop body answers text reply ``index`` with a follow-up (not a final one)."""
        return index < len(self.turns) - 1

    def reply(self, index: int) -> ScriptEntry:
        """Reply ``index`` (0-based), with tool_use ids that say where they come from."""
        if index > self.final:
            raise AssertionError(f"request for reply {index}, but the script has {self.final + 1}")
        if index >= len(self.turns):
            return text_reply(f"text {index}")  # the answer after the one check_output refused
        turn = self.turns[index]
        if not turn.calls:
            return text_reply(f"text {index}")
        return tool_reply(
            *(tool_call(name, {"n": index * 10 + j}, id=f"t{index}_{j}") for j, name in enumerate(turn.calls))
        )

    def respond(self, request: RecordedRequest) -> ScriptEntry:
        """The fake's answer: the reply after as many as the request's history holds."""
        return self.reply(sum(1 for message in request.messages if message.get("role") == "assistant"))

    def decision_of(self, tool_use_id: str) -> DecisionKind:
        """The decision on a call to ``gated``, by its id."""
        gated = [
            f"t{index}_{j}"
            for index, turn in enumerate(self.turns)
            for j, name in enumerate(turn.calls)
            if name == "gated"
        ]
        return self.decisions[gated.index(tool_use_id)]

    @property
    def idempotent_ids(self) -> set[str]:
        return {call_id for call_id, name in self.calls if name == "idem"}

    @property
    def calls(self) -> list[tuple[str, ToolName]]:
        """Every call of the script, in order: its id and its tool."""
        return [
            (f"t{index}_{j}", name)
            for index, turn in enumerate(self.turns)
            for j, name in enumerate(turn.calls)
        ]

    def input_of(self, call_id: str) -> int:
        """The ``n`` that call ``call_id`` runs with: the model's, edited by a person (+100), then
        rewritten by the ``before_tool_call`` hook (+``REWRITTEN``)."""
        index, j = (int(part) for part in call_id[1:].split("_"))
        n = index * 10 + j
        if self.turns[index].calls[j] == "gated" and self.decision_of(call_id) == "edit":
            n += 100
        if (
            self.hooks is not None
            and self.hooks.before is not None
            and self.hooks.before_of(call_id) == "rewrite"
        ):
            n += REWRITTEN
        return n


@st.composite
def hook_scripts(draw: st.DrawFn, calls: list[tuple[str, ToolName]]) -> HookScript:
    """Hooks and a limit for a script with ``calls``: each hook, and the limit, present or not."""
    ids = [call_id for call_id, _ in calls]
    before = None
    if draw(st.booleans()):
        kinds = draw(
            st.lists(st.sampled_from(["run", "deny", "rewrite"]), min_size=len(ids), max_size=len(ids))
        )
        before = tuple(zip(ids, kinds, strict=True))
    after = None
    if draw(st.booleans()):
        after = frozenset(call_id for call_id in ids if draw(st.booleans()))
    limit = None
    if draw(st.booleans()):
        name = draw(st.sampled_from(sorted({name for _, name in calls})))
        limit = (name, draw(st.integers(0, sum(1 for _, other in calls if other == name) - 1)))
    return HookScript(before, after, limit, draw(st.booleans()))  # pyright: ignore[reportArgumentType]


@st.composite
def scripts(draw: st.DrawFn, *, max_turns: int = 4, hooks: bool = False) -> Script:
    """Scripts of up to ``max_turns`` turns of calls; with ``hooks``, some scripts have hooks and a
    limit (``HookScript``)."""
    tool_turns = draw(
        st.lists(
            st.lists(st.sampled_from(["plain", "idem", "seq", "gated"]), min_size=1, max_size=3).map(tuple),
            min_size=1,
            max_size=max_turns,
        )
    )
    turns: list[Turn] = []
    for calls in tool_turns:
        turns.append(Turn(calls))  # pyright: ignore[reportArgumentType]
        if draw(st.booleans()) and draw(st.booleans()):
            turns.append(Turn())  # a text reply the body answers with a follow-up
    turns.append(Turn())
    gated = sum(turn.calls.count("gated") for turn in turns)
    decisions = tuple(
        draw(st.lists(st.sampled_from(["approve", "edit", "deny", "answer"]), min_size=gated, max_size=gated))
    )
    script = Script(tuple(turns), decisions, draw(st.sampled_from([None, 1, 2])))  # pyright: ignore[reportArgumentType]
    if hooks and draw(st.booleans()):
        return dataclasses.replace(script, hooks=draw(hook_scripts(script.calls)))
    return script


class Crash(BaseException):
    """The process dies here: nothing after this point happens, and nothing unsaved survives."""


class Glitch(Exception):
    """A failure the loop body sees and gets past by iterating again (a save or a request that failed once)."""


@dataclass
class Ledger:
    """What happened to the tools."""

    began: Counter[str] = field(default_factory=Counter[str])
    completed: Counter[str] = field(default_factory=Counter[str])
    inputs: dict[str, list[int]] = field(default_factory=dict[str, list[int]])
    before_answers: Counter[str] = field(default_factory=Counter[str])
    """How often ``before_tool_call`` answered on each call."""
    after_answers: Counter[str] = field(default_factory=Counter[str])
    """How often ``after_tool_call`` answered on each call."""
    output_checks: int = 0
    """How often ``check_output`` answered."""
    request_checks: int = 0
    """How often ``before_request`` answered."""
    fault_in: str | None = None
    """A call whose tool, once begun, meets the fault (see ``interrupt``)."""
    interrupt: Any = None
    """Called inside the tool of ``fault_in``: raises ``Crash``, or cancels the iteration."""

    async def act(self, ctx: ToolContext, n: int) -> str:
        call_id = ctx.call.id
        self.began[call_id] += 1
        self.inputs.setdefault(call_id, []).append(n)
        if self.fault_in == call_id:
            self.fault_in = None
            await self.interrupt()
        for _ in range(3):  # a tool that takes a while: its siblings' saves happen while it runs
            await anyio.lowlevel.checkpoint()
        self.completed[call_id] += 1
        return f"{ctx.call.name} did {n}"


def make_tools(ledger: Ledger) -> list[Any]:
    """The four tools: ordinary, idempotent, sequential, and gated (every call needs a decision)."""

    @tool
    async def plain(ctx: ToolContext, n: int) -> str:
        """Do a thing."""
        return await ledger.act(ctx, n)

    @tool(idempotent=True)
    async def idem(ctx: ToolContext, n: int) -> str:
        """Do a thing that may be done twice."""
        return await ledger.act(ctx, n)

    @tool(sequential=True)
    async def seq(ctx: ToolContext, n: int) -> str:
        """Do a thing alone."""
        return await ledger.act(ctx, n)

    @tool(requires_approval=True)
    async def gated(ctx: ToolContext, n: int) -> str:
        """Do a thing a person must allow."""
        return await ledger.act(ctx, n)

    return [plain, idem, seq, gated]


def make_hooks(script: Script, ledger: Ledger) -> dict[str, Any]:
    """The runner options of the script's hooks and limit (``hooks=``, ``max_calls=``,
    ``output_retries=``), or none. Each hook takes a turn of the event loop before it answers (a
    fault elsewhere may cut it off), and counts its answers in ``ledger``."""
    plan = script.hooks
    if plan is None:
        return {}

    async def before_tool_call(info: ToolCallInfo) -> Deny | RunWith | None:
        await anyio.lowlevel.checkpoint()
        ledger.before_answers[info.id] += 1
        kind = plan.before_of(info.id)
        if kind == "deny":
            return Deny(f"the hook denies {info.id}")
        if kind == "rewrite":
            given = cast("dict[str, int]", info.input)
            return RunWith({"n": given["n"] + REWRITTEN})
        return None

    async def after_tool_call(info: ToolCallInfo, block: ToolResultBlockParam) -> str | None:
        await anyio.lowlevel.checkpoint()
        ledger.after_answers[info.id] += 1
        assert plan.after is not None
        return f"the hook replaced {info.id}'s result" if info.id in plan.after else None

    def before_request(info: RequestInfo) -> None:
        ledger.request_checks += 1

    def check_output(reply: Any) -> Deny | None:
        ledger.output_checks += 1
        if reply.content[0].text == f"text {len(script.turns) - 1}":
            return Deny("say it once more")
        return None

    hooks = Hooks(
        before_tool_call=before_tool_call if plan.before is not None else None,
        after_tool_call=after_tool_call if plan.after is not None else None,
        before_request=before_request,
        check_output=check_output if plan.refuse_final else None,
    )
    options: dict[str, Any] = {"hooks": hooks}
    if plan.refuse_final:
        options["output_retries"] = 1
    if plan.limit is not None:
        options["max_calls"] = {plan.limit[0]: plan.limit[1]}
    return options


def decide(runner: Any, script: Script) -> None:
    """Take the script's decision on every call that waits (a ``ToolRunner`` or ``SyncToolRunner``)."""
    for call in runner.pending_approvals:
        kind = script.decision_of(call.id)
        if kind == "approve":
            runner.approve(call.id, by="ada")
        elif kind == "edit":
            runner.approve(call.id, input={"n": call.input["n"] + 100}, by="ada")
        elif kind == "deny":
            runner.deny(call.id, "not this one", by="ada")
        else:
            runner.answer(call.id, f"answered {call.id}", by="ada")


def follow_up(index: int) -> dict[str, Any]:
    return {"role": "user", "content": f"Go on after {index}."}

"""Generated runs for the fault properties: scripts of replies, tools that keep a ledger, decisions.

A ``Script`` is a run as the model and the person behind it would play it: the replies in order
(each a turn of tool calls, a text reply that the loop body answers with a follow-up, or the final
text), the decision on each call to the gated tool, and the run's ``max_concurrency``. The fake
answers a request by the number of assistant messages it carries, so a request sent again (after a
crash, a cancellation, a lost reply) gets the same reply again, as a deterministic model would.

The tools write what happens to them in a ``Ledger``: which calls began, which completed, with
which input. They run on any driver (``ToolRunner``, and Temporal's activities).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio
from hypothesis import strategies as st

from toolrunner import ToolContext, tool
from toolrunner.testing import RecordedRequest, ScriptEntry, text_reply, tool_call, tool_reply

ToolName = Literal["plain", "idem", "seq", "gated"]
DecisionKind = Literal["approve", "edit", "deny", "answer"]


@dataclass(frozen=True)
class Turn:
    """One reply: tool calls (by tool name), or text (``calls == ()``)."""

    calls: tuple[ToolName, ...] = ()


@dataclass(frozen=True)
class Script:
    turns: tuple[Turn, ...]
    """The replies in order; the last is the final text, other text replies are steered past."""
    decisions: tuple[DecisionKind, ...]
    """The decision on each call to ``gated``, in the order the calls come."""
    max_concurrency: int | None

    def reply(self, index: int) -> ScriptEntry:
        """Reply ``index`` (0-based), with tool_use ids that say where they come from."""
        if index >= len(self.turns):
            raise AssertionError(f"request for reply {index}, but the script has {len(self.turns)}")
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
        return {
            f"t{index}_{j}"
            for index, turn in enumerate(self.turns)
            for j, name in enumerate(turn.calls)
            if name == "idem"
        }


@st.composite
def scripts(draw: st.DrawFn, *, max_turns: int = 4) -> Script:
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
    return Script(tuple(turns), decisions, draw(st.sampled_from([None, 1, 2])))  # pyright: ignore[reportArgumentType]


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

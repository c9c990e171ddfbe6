"""Decisions on tool calls: which calls wait for a person, and the decisions taken on them.

A tool with ``requires_approval`` (a bool, or a function of the call) makes its calls wait: the
journal records them ``AWAITING`` as soon as the runner has the reply, before the body sees it.
The body (or another process, after ``ToolRunner.resume``) decides each: approve (perhaps with an
edited input, checked like the model's), deny with a reason, or answer with a result computed
elsewhere. A runner made with ``approve=callback`` asks the callback instead. The decisions
themselves are pure transitions (``_lifecycle.call_decided``); this module does the I/O around
them: evaluating gates, calling the callback, turning an answer into a tool_result block.

Fail closed: a gate or a callback that raises denies the call, with a message that says why.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import TypeAlias

from anthropic.types import ToolResultBlockParam

from ._calls import RunnerLink
from ._errors import ApprovalError, ToolError
from ._events import ApprovalDecided, ApprovalRequested
from ._lifecycle import awaiting, call_decided, calls_gated, pending_calls, record_of
from ._results import ToolResultAdapter, tool_result_block
from ._state import Decision
from ._toolsets import RunnableTool
from ._types import ToolCall

__all__ = ["Approvals", "ApproveCallback", "evaluate_gates"]

logger = logging.getLogger("toolrunner")

ApproveCallback: TypeAlias = Callable[[ToolCall], bool | str | Awaitable[bool | str]]
"""Decides a call that waits: ``True`` approves it, ``False`` denies it, a string denies it with
that string as the reason the model reads."""

DENIED = "A person denied this call to {name!r}; it did not run. Do not call it again in the same way."
"""The reason the model reads when a call is denied without one."""


class Approvals:
    """The decisions of one runner: its gates, its callback, and what its body decides."""

    def __init__(
        self,
        link: RunnerLink,
        *,
        find: Callable[[ToolCall], RunnableTool | None],
        gated: Callable[[], bool],
        adapter: ToolResultAdapter,
        callback: ApproveCallback | None,
    ) -> None:
        self._link = link
        self._find_tool = find
        self._gated = gated
        self._adapter = adapter
        self._callback = callback
        self._cleared: dict[str, ToolCall] = {}
        """The current turn's calls whose gate said no decision is needed: a gate is asked once."""

    def waiting(self) -> list[ToolCall]:
        """The calls of the current turn that wait for a decision, in tool_use order."""
        state = self._link.state()
        return list(awaiting(state, pending_calls(state)))

    async def gate(self, calls: Sequence[ToolCall]) -> None:
        """Find which of ``calls`` (not yet in the journal) must wait for a decision."""
        if not self._gated():  # none of the tools has a gate
            return
        state = self._link.state()
        fresh = [
            call for call in calls if record_of(state, call) is None and self._cleared.get(call.id) != call
        ]
        gated, denied = await evaluate_gates(fresh, self._find_tool)
        held = {call.id for call in gated} | {call.id for call, _ in denied}
        cleared = {call.id: call for call in fresh if call.id not in held}
        # Kept for the calls of this turn only (``calls`` are the turn's pending calls).
        self._cleared = {call.id: call for call in calls if self._cleared.get(call.id) == call} | cleared
        self._link.update(calls_gated(self._link.state(), gated, denied))
        for call in gated:
            self._link.emit(ApprovalRequested(call=call))
        for call, _ in denied:
            self._link.emit(ApprovalDecided(call=call, decision="denied"))

    async def ask(self) -> None:
        """Let the runner's ``approve=`` callback decide the calls that wait, if it has one."""
        if self._callback is None:
            return
        for call in self.waiting():
            try:
                verdict = await _ask(self._callback, call)
            except Exception as error:
                logger.exception("The approve callback raised for tool_use %r", call.id)
                self.deny(call.id, _failed(call, "asking for approval", error))
                continue
            if verdict is True:
                self.approve(call.id)
            else:
                self.deny(
                    call.id,
                    verdict if isinstance(verdict, str) and verdict else DENIED.format(name=call.name),
                )

    def approve(self, tool_use_id: str, *, input: object = None) -> None:
        """Approve a call that waits; with ``input``, it runs with that input instead (checked as
        the model's would be: a ``ToolInputError`` says what is wrong, and nothing changes)."""
        if input is not None:
            call = self._find(tool_use_id)
            tool = self._find_tool(call) if call is not None else None
            if tool is not None:
                tool.parse_input(input)
        self._decide(tool_use_id, "approved", approved_input=input)

    def deny(self, tool_use_id: str, reason: str) -> None:
        """Deny a call that waits or has not started: the model reads ``reason`` as its error result."""
        if not isinstance(reason, str) or not reason.strip():
            raise ApprovalError(
                f"deny({tool_use_id!r}, ...) needs a reason the model can read, not {reason!r}; for example "
                "'The amount is over the limit; ask the user first.'"
            )
        self._decide(tool_use_id, "denied", result=tool_result_block(tool_use_id, reason, is_error=True))

    def answer(self, tool_use_id: str, result: object, *, is_error: bool = False) -> None:
        """Answer a call that waits or has not started with a result computed elsewhere; it goes
        through the result adapter like a tool's return value (a ``ToolError`` is an error)."""
        if isinstance(result, ToolError):
            content, is_error = self._adapter.error_content(result), True
        else:
            content = self._adapter.to_content(result)
        self._decide(
            tool_use_id, "answered", result=tool_result_block(tool_use_id, content, is_error=is_error)
        )

    def _find(self, tool_use_id: str) -> ToolCall | None:
        return next((call for call in pending_calls(self._link.state()) if call.id == tool_use_id), None)

    def _decide(
        self,
        tool_use_id: str,
        decision: Decision,
        *,
        result: ToolResultBlockParam | None = None,
        approved_input: object = None,
    ) -> None:
        state = call_decided(
            self._link.state(), tool_use_id, decision, result=result, approved_input=approved_input
        )
        self._link.update(state)
        call = self._find(tool_use_id)
        assert call is not None
        self._link.emit(ApprovalDecided(call=call, decision=decision))


async def evaluate_gates(
    calls: Sequence[ToolCall], find: Callable[[ToolCall], RunnableTool | None]
) -> tuple[list[ToolCall], list[tuple[ToolCall, str]]]:
    """Which of ``calls`` must wait for a decision, and which are denied (with the reason the model
    reads) because their tool's gate raised: fail closed. Needs no runner (the Temporal activity
    uses it too)."""
    gated: list[ToolCall] = []
    denied: list[tuple[ToolCall, str]] = []
    for call in calls:
        tool = find(call)
        if tool is None or tool.requires_approval is False:
            continue
        try:
            gate = tool.requires_approval
            needs = gate is True or (callable(gate) and bool(await _ask(gate, call)))
        except Exception as error:
            logger.exception("Deciding whether tool_use %r needs approval raised", call.id)
            denied.append((call, _failed(call, "deciding whether it needs approval", error)))
            continue
        if needs:
            gated.append(call)
    return gated, denied


async def _ask(decide: Callable[[ToolCall], object], call: ToolCall) -> object:
    verdict = decide(call)
    if inspect.isawaitable(verdict):
        verdict = await verdict
    return verdict


def _failed(call: ToolCall, what: str, error: Exception) -> str:
    return (
        f"This call to {call.name!r} was denied because {what} failed ({type(error).__name__}: {error}); it did "
        "not run."
    )

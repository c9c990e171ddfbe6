# FROZEN as of commit 8cff606: toolrunner/_core/plan.py, less what the legacy body never reaches.
# Never edit: see ``_legacy/__init__.py``.
"""In which order one message's calls run (``CallPlan``), and the results of calls the plan does
not run: pure, no I/O, shared by every driver. Also ``log_handled``: how the orchestration notes a
failure it handles (through ``log``, which the driver layer points at a logger)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from anthropic.types import ToolResultBlockParam

from .results import tool_result_block
from .types import ToolCall

__all__ = ["CallPlan", "Step", "for_call", "not_executed"]


@dataclass(frozen=True, slots=True)
class Step:
    """What to do next with a message's calls."""

    calls: tuple[ToolCall, ...]
    """The calls to run at once; with ``skip``, the one call to answer with ``not_executed``."""
    skip: bool = False


class CallPlan:
    """The order in which one message's calls run, decided as they finish; pure (no I/O, no clock),
    so that ``ToolRunner`` and the Temporal workflow follow the same one.

    Consecutive calls to ordinary tools run at once; a call to a ``sequential`` tool runs alone,
    after the calls before it and before the calls after it. Toolset members (``toolset_name``) are
    sequential: they run in order, and once one of a family fails, the family's later calls are
    not run (they get the SDK's "Not executed" result), as the model planned them as one sequence.

    Use: ``next_step()`` until it returns ``None``, reporting each call run alone with ``ran()``
    before asking for the next step.
    """

    __slots__ = ("_calls", "_halted", "_next", "_sequential")

    def __init__(self, calls: Sequence[ToolCall], sequential: Callable[[ToolCall], bool]) -> None:
        self._calls = calls
        self._sequential = sequential
        self._next = 0  # the first call no step holds yet
        self._halted: set[str] = set()  # toolset families with a failed call among ``calls``

    def next_step(self) -> Step | None:
        """The next step; ``None`` once every call is in one."""
        calls, start = self._calls, self._next
        for index in range(start, len(calls)):
            call = calls[index]
            halted = call.toolset_name is not None and call.toolset_name in self._halted
            if halted or self._sequential(call):
                if index > start:  # the ordinary calls before it go first
                    self._next = index
                    return Step(tuple(calls[start:index]))
                self._next = index + 1
                return Step((call,), skip=halted)
        self._next = len(calls)
        return Step(tuple(calls[start:])) if len(calls) > start else None

    def ran(self, call: ToolCall, block: ToolResultBlockParam) -> None:
        """``call``, which a step ran alone, finished with ``block``: a failed toolset member halts
        its family. (Results of other calls change nothing, so reporting them does no harm.)"""
        if call.toolset_name is not None and block.get("is_error") and self._sequential(call):
            self._halted.add(call.toolset_name)


def not_executed(call: ToolCall) -> ToolResultBlockParam:
    """The result of a toolset member not run because an earlier one of its family failed."""
    text = _HALT_TEXT.get(call.toolset_name or "", _HALT_TEXT["browser"])
    return for_call(tool_result_block(call.id, text, is_error=True), call)


# The SDK's wording (``anthropic.lib.tools._toolsets._runnable.HALT_TEXT``), which is the API's.
_HALT_TEXT = {
    "browser": "Not executed: an earlier action in this turn failed.",
    "computer": "Not executed: an earlier computer action in this turn failed.",
}


def for_call(block: ToolResultBlockParam, call: ToolCall) -> ToolResultBlockParam:
    """A toolset member's result echoes its ``toolset_name`` (the service rejects it otherwise)."""
    if call.toolset_name is not None:
        block["toolset_name"] = call.toolset_name
    return block

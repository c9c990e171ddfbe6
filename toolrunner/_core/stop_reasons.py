"""What a reply's stop reason asks the runner to do next, and which tool calls it answers.

The one table of stop reasons (``STOP_REASON_STEPS``), read through ``step_for``; the transitions
(``_core.transitions``) and the programs (``_core.turn``, ``_core.window``) ask it. Pure, no I/O.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

from .messages import REPLY_TYPES, client_tool_calls, field
from .types import ToolCall

__all__ = ["STOP_REASON_STEPS", "Step", "StopReasonStep", "calls_to_answer", "step_for"]


class StopReasonStep(enum.Enum):
    """What a reply's stop reason asks the runner to do next."""

    RUN_TOOLS = "run_tools"
    """Answer the reply's client tool calls, then send the next request."""
    RESUME = "resume"
    """Send the history back unchanged so the service continues the turn."""
    STOP = "stop"
    """The model is done (or was cut off): never run this reply's tool calls."""


Step = StopReasonStep
"""``StopReasonStep`` under its old name, which ``toolrunner.Step`` (deprecated, ``toolrunner._DEPRECATED``)
serves until 0.3.0; the package itself names it ``StopReasonStep``."""


# The one table of stop reasons. ``tests/core/test_lifecycle.py`` checks that it covers every value
# of the installed SDK's ``StopReason`` and ``BetaStopReason``. Unknown values map to STOP.
STOP_REASON_STEPS: Mapping[str, StopReasonStep] = {
    "tool_use": StopReasonStep.RUN_TOOLS,
    "pause_turn": StopReasonStep.RESUME,
    # Beta: with ``pause_after_compaction`` the service hands the turn back before answering.
    "compaction": StopReasonStep.RESUME,
    "end_turn": StopReasonStep.STOP,
    "stop_sequence": StopReasonStep.STOP,
    # A max_tokens cut can leave the last tool_use with a truncated input: never run it.
    "max_tokens": StopReasonStep.STOP,
    "refusal": StopReasonStep.STOP,
    "model_context_window_exceeded": StopReasonStep.STOP,
}


def step_for(stop_reason: str | None) -> StopReasonStep:
    """The step a stop reason asks for; ``None`` and unknown values stop the loop."""
    if stop_reason is None:
        return StopReasonStep.STOP
    return STOP_REASON_STEPS.get(stop_reason, StopReasonStep.STOP)


def calls_to_answer(last_message: object | None, last_reply: object | None) -> tuple[ToolCall, ...]:
    """The tool calls the runner answers, given the last message of the history (as it stands,
    or will stand once the reply is appended) and the latest reply.

    When the pending calls are the latest reply's own, its stop reason decides: only
    ``tool_use`` runs them (a ``max_tokens`` cut may have truncated an input). Calls of any other
    message (a history the caller set) are always answered.
    """
    if last_message is None:
        return ()
    calls = client_tool_calls(last_message)
    if not calls or last_reply is None:
        return calls
    # A reply is read directly: field() would ask the Mapping ABC first, a Python-level check.
    stop_reason = (
        last_reply.stop_reason if isinstance(last_reply, REPLY_TYPES) else field(last_reply, "stop_reason")
    )
    if step_for(stop_reason) is StopReasonStep.RUN_TOOLS:
        return calls
    reply_ids = [call.id for call in client_tool_calls(last_reply)]
    return () if [call.id for call in calls] == reply_ids else calls

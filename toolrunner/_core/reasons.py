"""The reasons the model reads for a call that did not run: denied, failed to be decided, or not
decided in time. Their words are the model's input, so they are kept here, together, as text.

A driver's decider (``_stores/deciding.py``, ``_tools/approvals.py``) uses them as the core does
(``_core.decisions``), so a call denied anywhere reads the same.
"""

from __future__ import annotations

from .errors import message_of
from .types import ToolCall

__all__ = ["DENIED", "NOT_RUN_SENT_BACK", "TIMED_OUT", "denied_reason", "failed_reason"]

TIMED_OUT = "No decision on this call to {name!r} came within {timeout}; it did not run."
"""The reason the model reads for a call whose decision did not come in the run's time for one."""

DENIED = "A person denied this call to {name!r}; it did not run. Do not call it again in the same way."
"""The reason the model reads when a call is denied without one."""

NOT_RUN_SENT_BACK = (
    "This call to {name!r} did not run: the reply that made it ended ({stop_reason}) and was taken as the "
    "final answer, which is asked for again below."
)
"""The reason the model reads for a call of a final answer that is sent back (``_core.output.sent_back``):
its reply did not stop to use tools (a ``max_tokens`` cut, say), so the call never ran."""


def denied_reason(call: ToolCall) -> str:
    """The reason the model reads for ``call`` denied without one."""
    return DENIED.format(name=call.name)


def failed_reason(call: ToolCall, what: str, error: Exception) -> str:
    """The reason the model reads for a call denied because deciding on it raised (fail closed)."""
    return (
        f"This call to {call.name!r} was denied because {what} failed ({type(error).__name__}: "
        f"{message_of(error)}); it did not run."
    )

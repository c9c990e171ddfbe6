# FROZEN as of commit 8cff606: toolrunner/_core/errors.py, less what the legacy body never reaches.
# Never edit: see ``_legacy/__init__.py``.
"""The exceptions toolrunner raises, and the one that tools raise to steer the loop.

Exceptions that user code raises on purpose are kept apart from failures of the library::

    Exception
    ├── ToolError                    raised by a tool: becomes an ``is_error`` tool_result, the loop goes on
    └── ToolRunnerError              base of every failure toolrunner itself raises
        ├── ToolDefinitionError      (also TypeError) a function cannot be made into a tool
        ├── ToolInputError           (also ValueError) the model's input does not fit a tool's schema
        ├── ResultTooLargeError      (also ValueError) a tool's result is over the adapter's limits
        ├── ParamsError              (also ValueError) runner arguments or params that cannot be sent
        ├── MalformedReplyError      a reply the history must not take (nothing is appended)
        ├── StateError               (also ValueError) a saved state that cannot be loaded or saved
        ├── CheckpointError          a run that cannot be saved or resumed (a store that fails, no such run, ...)
        │   ├── CheckpointConflictError  another runner or decider saved the run since it was loaded
        │   └── RunEndedError        a run on Temporal that ended, and so cannot be decided on or steered
        ├── ApprovalError            (also ValueError) a decision on a tool call that cannot be taken
        │   └── AwaitingApprovalError  the run paused for decisions where an end was awaited (until_done)
        └── HistoryError             (also ValueError) a history the service would reject
            └── UnansweredToolUseError   a client tool_use with no tool_result in the next message

Errors of the service and of the network are the SDK's own (``anthropic.APIError`` and its
subclasses) and reach the caller unchanged.
"""

from __future__ import annotations

__all__ = ["ApprovalError", "HistoryError", "StateError", "ToolRunnerError", "UnansweredToolUseError"]


class ToolRunnerError(Exception):
    """Base class of every failure raised by toolrunner itself."""


class ApprovalError(ToolRunnerError, ValueError):
    """A decision on a tool call that cannot be taken (no pending call has the id; the call is
    decided, running or done already), or tool results asked for while calls still wait for a
    decision."""


class StateError(ToolRunnerError, ValueError):
    """A run's state cannot be saved (a value JSON cannot carry) or loaded (damaged, foreign, or
    written by a newer toolrunner)."""


class HistoryError(ToolRunnerError, ValueError):
    """A message history that the service would reject."""


class UnansweredToolUseError(HistoryError):
    """A client tool_use block is not answered by a tool_result in the message after it."""

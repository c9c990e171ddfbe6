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
        ├── OutputValidationError    (also ValueError) a final answer that never fit ``output_format=``
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

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .types import ToolCall

__all__ = [
    "ApprovalError",
    "AwaitingApprovalError",
    "CheckpointConflictError",
    "CheckpointError",
    "DecidedMeanwhileError",
    "HistoryError",
    "MalformedReplyError",
    "OutputValidationError",
    "ParamsError",
    "RequestRefusedError",
    "ResultTooLargeError",
    "RunEndedError",
    "StateError",
    "ToolDefinitionError",
    "ToolError",
    "ToolInputError",
    "ToolRunnerError",
    "UnansweredToolUseError",
    "describe",
    "message_of",
]


class ToolError(Exception):
    """Raise from a tool to answer the model with an ``is_error`` tool_result.

    Args:
        content: What the model reads: a string, or a list of content blocks (text, image, ...).
    """

    def __init__(self, content: str | Iterable[Mapping[str, Any]]) -> None:
        self.content: str | list[Mapping[str, Any]] = content if isinstance(content, str) else list(content)
        super().__init__(content if isinstance(content, str) else "tool error with content blocks")


class ToolRunnerError(Exception):
    """Base class of every failure raised by toolrunner itself."""


class ToolDefinitionError(ToolRunnerError, TypeError):
    """A function or object cannot be turned into a tool (bad signature, duplicate name, ...)."""


class ToolInputError(ToolRunnerError, ValueError):
    """The input the model sent does not fit the tool's schema.

    The runner turns it into an ``is_error`` tool_result whose text is ``str(error)``, so the
    message is written for the model: which fields were wrong, why, and what was sent.
    """


class ResultTooLargeError(ToolRunnerError, ValueError):
    """A tool's result is larger than the result adapter's limits allow.

    The runner answers the tool call with an ``is_error`` tool_result whose text is ``str(error)``,
    so the message is written for the model: what was too large, its size, and the limit.
    """


class ParamsError(ToolRunnerError, ValueError):
    """Runner arguments or request params that cannot be used."""


class MalformedReplyError(ToolRunnerError):
    """The service answered a request with something the history must not take: not a message,
    or a message that calls one tool_use id twice.

    Nothing is run or appended; iterating the runner again sends the same request again.
    """


class OutputValidationError(ToolRunnerError, ValueError):
    """The model's final answer did not fit the runner's ``output_format=`` (or a ``check_output``
    hook refused it), and the retries (``output_retries=``, each one the answer's errors sent back
    to the model) were used up. The run ended: the answer is the last message of its history.

    Attributes:
        answer: The last answer (the reply message, with ``parsed_output`` None).
        errors: What was wrong with it, one line each, as the model read them.
    """

    def __init__(self, message: str, answer: object, errors: Iterable[str]) -> None:
        super().__init__(message)
        self.answer: Any = answer
        self.errors: list[str] = list(errors)


class RequestRefusedError(ToolRunnerError):
    """The runner's ``before_request`` hook refused to send the next request (a guardrail
    tripwire; see docs/hooks.md). Nothing is lost: the run stands as it was saved before the
    request, with this error as its ``failure``; iterate it (or resume it) to ask the hook again.

    Attributes:
        reason: Why, as the hook said (or why the hook failed).
    """

    def __init__(self, message: str, reason: str) -> None:
        super().__init__(message)
        self.reason: str = reason


class ApprovalError(ToolRunnerError, ValueError):
    """A decision on a tool call that cannot be taken (no pending call has the id; the call is
    decided, running or done already), or tool results asked for while calls still wait for a
    decision."""


class DecidedMeanwhileError(ApprovalError):
    """A save refused because calls of the run were decided through the store since this runner
    last saved (and nothing else changed there): not a second runner. Internal, and in no tree
    above: ``RunCore`` catches it wherever it saves, takes the decisions over and saves again, so
    it never reaches the caller (``toolrunner.DecidedMeanwhileError`` is deprecated)."""


class AwaitingApprovalError(ApprovalError):
    """The run paused, not ended: tool calls wait for a decision. ``until_done()`` raises it rather
    than return the reply that asked for the calls, which is no answer.

    Attributes:
        calls: The calls that wait (``ToolCall``), in tool_use order.
    """

    def __init__(self, message: str, calls: Iterable[ToolCall] = ()) -> None:
        super().__init__(message)
        self.calls: list[ToolCall] = list(calls)


class CheckpointError(ToolRunnerError):
    """A run cannot be saved or resumed: there is no saved run of that name, or the store cannot be
    used (a full disk, a lost connection, a file that is not a store), or (``CheckpointConflictError``)
    another runner saved the run since this one loaded it.

    A store that failed (but not a conflict) can be tried again: the next save writes what this one
    did not."""


class CheckpointConflictError(CheckpointError):
    """A save refused because the run is not as this runner loaded it: another runner (or a person
    deciding a call through the store) saved it since, or a new run takes a name that is saved
    already. A runner refused once saves no more; resume the run again to go on from the store."""


class RunEndedError(CheckpointError):
    """A run on Temporal ended (its loop ended, or it was closed, failed or terminated), so a
    decision, steering or anything else that would make it go on cannot apply. Start a new run to
    go on, with the history of this one if need be."""


class StateError(ToolRunnerError, ValueError):
    """A run's state cannot be saved (a value JSON cannot carry) or loaded (damaged, foreign, or
    written by a newer toolrunner)."""


class HistoryError(ToolRunnerError, ValueError):
    """A message history that the service would reject."""


class UnansweredToolUseError(HistoryError):
    """A client tool_use block is not answered by a tool_result in the message after it."""


def describe(error: BaseException) -> str:
    """An exception's type and message as ``repr`` gives them, for the model and for logs; an
    ``OSError``'s from ``str``, as its ``repr`` drops the file name.

    Never raises: an exception from user code may have a ``__repr__`` or ``__str__`` that raises
    (or arguments whose ``repr`` does), and formatting it must not become a second failure.
    """
    if not isinstance(error, OSError):
        try:
            return repr(error)
        except Exception:
            pass
    return f"{type(error).__name__}({message_of(error)!r})"


def message_of(error: BaseException) -> str:
    """``str(error)``, or a stand-in when that raises (see ``describe``); never raises."""
    try:
        return str(error)
    except Exception:
        return "<its message cannot be shown: formatting it raised>"

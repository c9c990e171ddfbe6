# FROZEN as of commit 8cff606. Never edit: see ``_legacy/__init__.py``.
"""What the legacy body and the activities pass each other, as the body sends and reads it: the
dataclasses of ``toolrunner/temporal/_data.py`` at 8cff606, with only the fields the body uses.

They are the wire, not the live classes: the workflow hands the body its input and the updates'
arguments through the payload converter (JSON, as history holds them), Temporal's converter
ignores the fields a class here does not have, and an activity fills the fields the body does not
send with their defaults.
"""

# No ``from __future__ import annotations``: Temporal's converter reads these dataclasses' type
# hints on every payload it converts, and string annotations are evaluated each time (slow in the
# workflow sandbox).

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

__all__ = [
    "ActivityOptions",
    "Answer",
    "Approval",
    "DecisionInput",
    "Denial",
    "RequestInput",
    "RequestOutput",
    "RunInput",
    "RunResult",
    "ToolInput",
    "ToolSpec",
]


@dataclass(frozen=True, kw_only=True)
class ActivityOptions:
    """How a run's activities are scheduled: timeouts and Temporal retry policies (``from_data``)."""

    request_start_to_close: timedelta
    request_retry: RetryPolicy
    tool_start_to_close: timedelta
    tool_retry: RetryPolicy
    heartbeat_timeout: timedelta | None
    task_queue: str | None

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "ActivityOptions":
        """Read the run input's ``activities``."""
        heartbeat = data["heartbeat_timeout"]
        return cls(
            request_start_to_close=timedelta(seconds=data["request_start_to_close"]),
            request_retry=retry_policy(data["request_retry"]),
            tool_start_to_close=timedelta(seconds=data["tool_start_to_close"]),
            tool_retry=retry_policy(data["tool_retry"]),
            heartbeat_timeout=None if heartbeat is None else timedelta(seconds=heartbeat),
            task_queue=data["task_queue"],
        )


def retry_policy(data: dict[str, Any]) -> RetryPolicy:
    """Read a retry policy's JSON values."""
    maximum = data["maximum_interval"]
    return RetryPolicy(
        initial_interval=timedelta(seconds=data["initial_interval"]),
        backoff_coefficient=data["backoff_coefficient"],
        maximum_interval=None if maximum is None else timedelta(seconds=maximum),
        maximum_attempts=data["maximum_attempts"],
        non_retryable_error_types=data["non_retryable_error_types"],
    )


@dataclass
class ToolSpec:
    """What the workflow knows of a runnable tool of the run (the tool itself is code, on the workers)."""

    name: str
    idempotent: bool = False
    sequential: bool = False
    timeout: float | None = None
    gated: bool = False


@dataclass
class RunInput:
    """The workflow's input: a new run's state and its configuration that is data."""

    state: dict[str, Any]
    tools: list[ToolSpec]
    limits: dict[str, Any]
    max_concurrency: int | None
    tool_timeout: float | None
    activities: dict[str, Any]
    approval_timeout: float | None = None
    cache: dict[str, Any] | None = None


@dataclass
class RequestInput:
    """One request: what is new since the history node ``base`` (the node of the previous request)."""

    run_id: str
    base: str | None
    params: dict[str, Any] | None
    tools: list[Any] | None
    messages: list[Any]
    final_answer: str | None = None
    cache: dict[str, Any] | None = None


@dataclass
class RequestOutput:
    """A request's reply, as the workflow needs it."""

    reply: dict[str, Any]
    beta: bool
    usage: dict[str, Any]
    history: str
    gated: list[str] = field(default_factory=list[str])
    denied: dict[str, str] = field(default_factory=dict[str, str])


@dataclass
class ToolInput:
    """One tool call."""

    run_id: str
    id: str
    name: str
    input: Any
    toolset_name: str | None = None
    timeout: float | None = None
    available: list[str] | None = None
    unrunnable: list[str] = field(default_factory=list[str])
    approved_input: Any = None


@dataclass
class Approval:
    """The ``toolrunner.approve`` update's argument."""

    id: str
    input: Any = None


@dataclass
class Denial:
    """The ``toolrunner.deny`` update's argument."""

    id: str
    reason: str


@dataclass
class Answer:
    """The ``toolrunner.answer`` update's argument."""

    id: str
    result: Any
    is_error: bool = False


@dataclass
class DecisionInput:
    """A decision that needs the worker: an approved input to check, or an answer to convert."""

    run_id: str
    id: str
    name: str
    kind: str
    value: Any
    is_error: bool = False
    toolset_name: str | None = None


@dataclass
class RunResult:
    """How a run ended (the fields only: the workflow gives clients the live ``RunResult``)."""

    run_id: str
    end_reason: str
    reply: dict[str, Any] | None
    beta: bool
    history: str | None
    appended: list[Any]
    requests: int
    usage: dict[str, int]
    cost: str | None

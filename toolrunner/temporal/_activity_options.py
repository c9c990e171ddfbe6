"""How a run's activities are scheduled (``ActivityOptions``), and retry policies as the JSON values
a workflow's input carries."""

# No ``from __future__ import annotations``: Temporal's converter reads these dataclasses' type
# hints (see ``_data``).

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from temporalio.common import RetryPolicy

__all__ = ["ActivityOptions", "retry_data", "retry_policy"]


def _default_request_retry() -> RetryPolicy:
    return RetryPolicy(maximum_attempts=10, maximum_interval=timedelta(minutes=2))


def _default_tool_retry() -> RetryPolicy:
    return RetryPolicy(maximum_attempts=5, maximum_interval=timedelta(minutes=2))


@dataclass(frozen=True, kw_only=True)
class ActivityOptions:
    """How a run's activities are scheduled: timeouts and Temporal retry policies.

    The SDK's own retries are off inside the activities, so ``request_retry`` is the only retry of
    a request. ``tool_retry`` applies to calls of ``idempotent`` tools (and of names that are no
    tool of the run, which run nothing); any other call gets one attempt: a call whose worker was
    lost is answered "interrupted", never run twice.

    Attributes:
        request_start_to_close: The most one request may take.
        request_retry: Retries of a request that failed with a retryable error (overloaded, 5xx,
            429, a dropped connection); 4xx errors such as 400 fail the run at once.
        tool_start_to_close: The most one tool call may take, when neither the tool nor the run
            gives a ``timeout`` (with one, its activity gets that timeout plus a minute, so the
            tool's own timeout answers first).
        tool_retry: Retries of a call to an idempotent tool whose worker was lost.
        heartbeat_timeout: How soon a lost worker is noticed: the activities heartbeat three times
            per this interval while they run. ``None``: only the start-to-close timeouts notice.
        task_queue: The task queue of the activities; the workflow's own when ``None``.
    """

    request_start_to_close: timedelta = timedelta(minutes=10)
    request_retry: RetryPolicy = field(default_factory=_default_request_retry)
    tool_start_to_close: timedelta = timedelta(minutes=10)
    tool_retry: RetryPolicy = field(default_factory=_default_tool_retry)
    heartbeat_timeout: timedelta | None = timedelta(seconds=30)
    task_queue: str | None = None

    def to_data(self) -> dict[str, Any]:
        """The options as JSON values, as the workflow's input carries them."""
        return {
            "request_start_to_close": self.request_start_to_close.total_seconds(),
            "request_retry": retry_data(self.request_retry),
            "tool_start_to_close": self.tool_start_to_close.total_seconds(),
            "tool_retry": retry_data(self.tool_retry),
            "heartbeat_timeout": None
            if self.heartbeat_timeout is None
            else self.heartbeat_timeout.total_seconds(),
            "task_queue": self.task_queue,
        }

    @classmethod
    def from_data(cls, data: dict[str, Any]) -> "ActivityOptions":
        """Read ``to_data``'s values."""
        heartbeat = data["heartbeat_timeout"]
        return cls(
            request_start_to_close=timedelta(seconds=data["request_start_to_close"]),
            request_retry=retry_policy(data["request_retry"]),
            tool_start_to_close=timedelta(seconds=data["tool_start_to_close"]),
            tool_retry=retry_policy(data["tool_retry"]),
            heartbeat_timeout=None if heartbeat is None else timedelta(seconds=heartbeat),
            task_queue=data["task_queue"],
        )


def retry_data(policy: RetryPolicy) -> dict[str, Any]:
    """A retry policy as JSON values."""
    return {
        "initial_interval": policy.initial_interval.total_seconds(),
        "backoff_coefficient": policy.backoff_coefficient,
        "maximum_interval": None
        if policy.maximum_interval is None
        else policy.maximum_interval.total_seconds(),
        "maximum_attempts": policy.maximum_attempts,
        "non_retryable_error_types": None
        if policy.non_retryable_error_types is None
        else list(policy.non_retryable_error_types),
    }


def retry_policy(data: dict[str, Any]) -> RetryPolicy:
    """Read ``retry_data``'s values."""
    maximum = data["maximum_interval"]
    return RetryPolicy(
        initial_interval=timedelta(seconds=data["initial_interval"]),
        backoff_coefficient=data["backoff_coefficient"],
        maximum_interval=None if maximum is None else timedelta(seconds=maximum),
        maximum_attempts=data["maximum_attempts"],
        non_retryable_error_types=data["non_retryable_error_types"],
    )

"""The events a run on Temporal hands the workers' ``on_event`` (``EventForwarder``, a part of the
workflow's driver).

The core reports every event to its listener, here ``heard``; of those, the ones no activity
witnesses on its worker (decisions, calls answered without running, the end of the loop) are kept
(``sort``) and handed to the workers through a local activity (``forward``), in order. A
sub-run's events (``SubRunEvent``) are sorted by the event they wrap: the activities of a sub-run
report theirs, wrapped with its path, on their workers.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

with workflow.unsafe.imports_passed_through():
    from .._core.events import (
        ApprovalDecided,
        ApprovalRequested,
        MessageFinished,
        RunnerEvent,
        SubRunEvent,
        TextDelta,
        ToolCallFinished,
        ToolCallStarted,
    )
    from ._data import EventsInput
    from ._event_data import event_data
    from ._names import EVENTS_ACTIVITY

__all__ = ["EventForwarder"]

_WITNESSED = (TextDelta, MessageFinished, ApprovalRequested)
"""Events the request activity reports on its worker (the reply, its text, its gates)."""


class EventForwarder:
    """Keeps, of the events the core reports (``heard``, its listener), those no activity reports,
    and hands them to the workers (see the module docstring).

    Args:
        run_id: The run whose events these are.
    """

    def __init__(self, run_id: str) -> None:
        self._run_id = run_id
        self.heard: list[RunnerEvent] = []
        """The events the core reported since the last ``sort`` (the core's listener appends)."""
        self.executed: set[str] = set()
        """The calls whose tool an activity ran (the activity reports their start and end)."""
        self._outbox: list[RunnerEvent] = []  # events to hand the workers' on_event
        self._forwarding = asyncio.Lock()

    def sort(self, *, gated: bool) -> None:
        """Keep, of the events heard, those no activity reports on its worker: not the reply and
        its text, nor the gates' verdicts (``gated``: the events of the step that took them), nor
        the start and end of a call an activity ran."""
        heard = self.heard[:]
        self.heard.clear()  # the core's listener appends to this very list
        for event in heard:
            inner = event.event if isinstance(event, SubRunEvent) else event
            if isinstance(inner, _WITNESSED):
                continue
            if gated and isinstance(inner, ApprovalDecided):
                continue
            if isinstance(inner, ToolCallStarted | ToolCallFinished) and inner.call.id in self.executed:
                continue
            self._outbox.append(event)

    async def forward(self) -> None:
        """Hand the events kept to the workers' ``on_event``, in order (a local activity)."""
        if not self._outbox:
            return
        async with self._forwarding:
            events, self._outbox = self._outbox, []
            if not events:
                return
            try:
                await workflow.execute_local_activity(
                    EVENTS_ACTIVITY,
                    EventsInput(self._run_id, [event_data(event) for event in events]),
                    start_to_close_timeout=timedelta(seconds=30),
                    retry_policy=RetryPolicy(maximum_attempts=3),
                )
            except ActivityError as error:  # events are reports: losing them must not fail the run
                workflow.logger.warning(
                    "Events of run %r were not delivered: %s", self._run_id, error.cause or error
                )

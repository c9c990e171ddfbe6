"""The floor for benchmarks/temporal.py: a bare Temporal workflow doing what a turn does (two
activities one after the other: a request, then a tool call), with activities that do nothing."""

from __future__ import annotations

from datetime import timedelta

from temporalio import activity, workflow


@activity.defn(name="baseline.nothing")
async def nothing(step: int) -> int:
    return step


@workflow.defn(name="baseline.turns")
class Turns:
    @workflow.run
    async def run(self, turns: int) -> int:
        for step in range(turns):
            for _ in range(2):
                await workflow.execute_activity(nothing, step, start_to_close_timeout=timedelta(seconds=30))
        return turns

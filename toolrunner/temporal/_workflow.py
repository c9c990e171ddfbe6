"""The workflow: toolrunner's run on Temporal, ``ToolRunnerWorkflow``.

A run started by this toolrunner is driven by the run's orchestration, ``RunCore``
(``toolrunner._core.run``), as a ``ToolRunner`` is: ``_driver.WorkflowDriver`` performs its effects as
activities, local activities and waits. A run started by an earlier toolrunner (whose history has
no ``effects-core`` marker) goes on in the body it started with, frozen in ``_legacy``, so that
its history replays. This class is the workflow's face: its signal, queries and updates, handed
to whichever body the run has (the frozen one through ``_Legacy``, which speaks its wire types).

Workflow code must be deterministic: everything here decides from the workflow's input, the
activities' results and the updates, which Temporal records; the core does no I/O and reads no
clock, so replaying a recorded history gives the same decisions.
"""

from __future__ import annotations

from typing import Any, TypeVar

from temporalio import workflow
from temporalio.exceptions import ApplicationError

with workflow.unsafe.imports_passed_through():
    from ._data import Answer, Approval, CompactInput, Denial, MessagesInput, ParamsInput, RunInput, RunResult
    from ._driver import WorkflowDriver
    from ._legacy import LegacyRun, data as legacy
    from ._names import (
        ANSWER_UPDATE,
        APPROVE_UPDATE,
        CLOSE_SIGNAL,
        COMPACT_UPDATE,
        DENY_UPDATE,
        EFFECTS_CORE,
        PARAMS_UPDATE,
        PENDING_QUERY,
        PUSH_UPDATE,
        SET_UPDATE,
        STATE_QUERY,
        WORKFLOW,
    )

__all__ = ["ToolRunnerWorkflow"]

T = TypeVar("T")


@workflow.defn(name=WORKFLOW)
class ToolRunnerWorkflow:
    """Runs a tool loop: each request and each tool call is an activity; the state lives here."""

    @workflow.init
    def __init__(self, run: RunInput) -> None:
        self._run: WorkflowDriver | _Legacy = (
            WorkflowDriver(run) if workflow.patched(EFFECTS_CORE) else _Legacy(run)
        )

    @workflow.run
    async def run(self, run: RunInput) -> RunResult:
        """Drive the loop to its end."""
        return await self._run.run()

    # -- from clients ---------------------------------------------------------------------------

    @workflow.signal(name=CLOSE_SIGNAL)
    def close(self) -> None:
        """End the loop as ``ToolRunner.close()`` does: the step under way finishes whole (a
        reply is kept without running its tools; running tools finish and their results are kept;
        calls that wait for a decision never run)."""
        self._run.close()

    @workflow.query(name=STATE_QUERY)
    def state(self) -> dict[str, Any]:
        """The run's ``RunState`` as ``to_dict()`` gives it (large blocks as stubs; after the run
        continued as new, the latest messages only)."""
        return self._run.state()

    @workflow.query(name=PENDING_QUERY)
    def pending_approvals(self) -> list[dict[str, Any]]:
        """The calls that wait for a decision, in tool_use order: ``{"id", "name", "input"}``, and
        ``"toolset_name"`` for a toolset member."""
        return self._run.pending_approvals()

    @workflow.update(name=APPROVE_UPDATE)
    async def approve(self, approval: Approval) -> None:
        """Approve a call that waits; with ``input`` it runs with that input, checked on a worker
        as the model's would be (a bad one is refused, and nothing changes)."""
        await self._run.approve(approval)

    @workflow.update(name=DENY_UPDATE)
    async def deny(self, denial: Denial) -> None:
        """Deny a call that waits (or has not started): the model reads the reason as its error result."""
        await self._run.deny(denial)

    @workflow.update(name=ANSWER_UPDATE)
    async def answer(self, answer: Answer) -> None:
        """Answer a call that waits (or has not started) with a result computed elsewhere; a worker
        converts it as it converts what tools return."""
        await self._run.answer(answer)

    @workflow.update(name=PUSH_UPDATE)
    async def push_messages(self, push: MessagesInput) -> None:
        """Append messages to the history, as a loop body's ``push_messages()``: at the next point
        where the loop body could steer (a reply was handed over), or at once on a paused run."""
        await self._core("push_messages").steer("push_messages", push.messages)

    @workflow.update(name=SET_UPDATE)
    async def set_messages(self, new: MessagesInput) -> None:
        """Replace the history, as a loop body's ``set_messages_params()``, at the same points."""
        await self._core("set_messages").steer("set_messages", new.messages)

    @workflow.update(name=PARAMS_UPDATE)
    async def set_params(self, new: ParamsInput) -> None:
        """Change request params, as a loop body's ``set_messages_params()`` given the current params
        with these changed, at the same points as the steering updates."""
        await self._core("set_params").steer("set_params", [], params=new.params)

    @workflow.update(name=COMPACT_UPDATE)
    async def compact_before_next_turn(self, compact: CompactInput) -> None:
        """Make the next request a compaction request, as a loop body's ``compact_before_next_turn()``,
        at the same points as the steering updates."""
        await self._core("compact_before_next_turn").steer("compact_before_next_turn", [], compact.compaction)

    @approve.validator
    def _check_approve(self, approval: Approval) -> None:
        self._run.check_approve(approval)

    @deny.validator
    def _check_deny(self, denial: Denial) -> None:
        self._run.check_deny(denial)

    @answer.validator
    def _check_answer(self, answer: Answer) -> None:
        self._run.check_answer(answer)

    @push_messages.validator
    def _check_push(self, push: MessagesInput) -> None:
        self._core("push_messages").check_steering("push_messages", push.messages)

    @compact_before_next_turn.validator
    def _check_compact(self, compact: CompactInput) -> None:
        self._core("compact_before_next_turn").check_steering("compact_before_next_turn", compact.compaction)

    @set_params.validator
    def _check_params(self, new: ParamsInput) -> None:
        self._core("set_params").check_steering("set_params", new.params)

    @set_messages.validator
    def _check_set(self, new: MessagesInput) -> None:
        self._core("set_messages").check_steering("set_messages", new.messages)

    def _core(self, method: str) -> WorkflowDriver:
        run = self._run
        if isinstance(run, _Legacy):
            raise ApplicationError(
                f"{method}() cannot steer this run: it started under an earlier toolrunner, before runs could be "
                "steered. Close it and start a new run with its history (await result.messages(store)).",
                type="ToolRunnerError",
                non_retryable=True,
            )
        return run


class _Legacy:
    """The frozen body (``_legacy.LegacyRun``) behind the face ``WorkflowDriver`` shows. The body has its own
    classes, copies of the wire's: what it takes and gives goes through the payload converter, as
    JSON, the form history holds (``_wire``)."""

    def __init__(self, run: RunInput) -> None:
        self._body = LegacyRun(_wire(run, legacy.RunInput))

    async def run(self) -> RunResult:
        return _wire(await self._body.run(), RunResult)

    def close(self) -> None:
        self._body.close()

    def state(self) -> dict[str, Any]:
        return self._body.state()

    def pending_approvals(self) -> list[dict[str, Any]]:
        return self._body.pending_approvals()

    async def approve(self, approval: Approval) -> None:
        await self._body.approve(_wire(approval, legacy.Approval))

    async def deny(self, denial: Denial) -> None:
        self._body.deny(_wire(denial, legacy.Denial))

    async def answer(self, answer: Answer) -> None:
        await self._body.answer(_wire(answer, legacy.Answer))

    def check_approve(self, approval: Approval) -> None:
        self._body.check_approve(_wire(approval, legacy.Approval))

    def check_deny(self, denial: Denial) -> None:
        self._body.check_deny(_wire(denial, legacy.Denial))

    def check_answer(self, answer: Answer) -> None:
        self._body.check_answer(_wire(answer, legacy.Answer))


def _wire(value: object, into: type[T]) -> T:
    """``value`` as ``into``, through the JSON that history holds (the workflow's payload converter)."""
    converter = workflow.payload_converter()
    return converter.from_payload(converter.to_payload(value), into)

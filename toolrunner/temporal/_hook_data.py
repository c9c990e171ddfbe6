"""Hooks on Temporal, as data: what a run names (``start_run(hooks="name", max_calls={...})``,
``run_hooks``), what the workflow knows of the named hooks (``plan_of``), and what a hook activity
is asked (``HookInput``).

A hook is code, so it lives on the workers, registered by name (``create_worker(hooks={"name":
Hooks(...)})``), as tools and output types do; ``max_calls`` is data, and goes with the run. The
workflow learns which hooks the name stands for once, from an activity (recorded in its history,
so a replay decides the same even if the workers' hooks changed since), and carries that across
continue-as-new.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from .._core.errors import ParamsError, RequestRefusedError
from .._core.hook_types import HookPlan
from .._core.output import DEFAULT_OUTPUT_RETRIES, output_format_of
from .._runner.hooks import Hooks, hook_plan

__all__ = ["HOOK_KINDS", "HookInput", "plan_of", "refused_error", "run_hooks"]

HOOK_KINDS = ("before_tool_call", "after_tool_call", "before_request", "check_output")
"""The hooks of a ``Hooks``, in the order a ``plan`` activity lists those that are set."""


def run_hooks(
    hooks: object, max_calls: object, output_retries: int | None, *, has_output: bool
) -> dict[str, Any] | None:
    """``start_run``'s ``hooks=`` and ``max_calls=``, checked, as the run's input holds them:
    ``{"name", "max_calls", "retries", "plan"}`` (``plan``: the hooks the name stands for, once
    the workflow asked a worker; ``retries``: the ``output_retries`` a ``check_output`` hook has
    when the run has no output type). ``None`` when neither is given.

    Raises:
        ParamsError: ``hooks`` is not the non-empty name of hooks on the workers (a ``Hooks``
            object is code, which a run cannot carry), or ``max_calls`` not a mapping of tool
            names to whole numbers.
    """
    if isinstance(hooks, Hooks):
        raise ParamsError(
            "hooks are code, and a Temporal run carries data: register them on the workers, "
            "create_worker(hooks={'guarded': Hooks(...)}), and name them here, start_run(hooks='guarded')."
        )
    if hooks is not None and (not isinstance(hooks, str) or not hooks):
        raise ParamsError(
            f"hooks must name hooks registered on the workers (create_worker(hooks={{name: Hooks(...)}})), "
            f"not {hooks!r}."
        )
    plan = hook_plan(None, max_calls)  # checks max_calls as ToolRunner does
    if hooks is None and plan is None:
        return None
    retries = DEFAULT_OUTPUT_RETRIES if output_retries is None else output_retries
    if not has_output:
        output_format_of(None, retries, {}, retries_only=True)
    return {
        "name": hooks,
        "max_calls": {} if plan is None else dict(plan.max_calls),
        "retries": retries,
        "plan": None if hooks is not None else [],
    }


def plan_of(data: Mapping[str, Any]) -> HookPlan | None:
    """The core's ``HookPlan`` of a run's hooks data, once its ``plan`` is known; ``None`` when it
    asks for nothing (no hook set, no limit)."""
    kinds: set[str] = set(data["plan"] or ())
    plan = HookPlan(
        before_tool_call="before_tool_call" in kinds,
        after_tool_call="after_tool_call" in kinds,
        before_request="before_request" in kinds,
        check_output="check_output" in kinds,
        output_retries=data["retries"] if "check_output" in kinds else 0,
        max_calls=dict(data["max_calls"]),
    )
    return None if plan == HookPlan() else plan


@dataclass
class HookInput:
    """What the ``toolrunner.hook`` activity is asked: ``kind`` is ``"plan"`` (which hooks the name
    stands for) or the hook to ask, with what that hook sees."""

    run_id: str
    hooks: str
    """The name the hooks are registered under on the workers."""
    kind: str
    call: dict[str, Any] | None = None
    """A tool call hook's call (``call_data``)."""
    input: Any = None
    """The input the call would run with (``ToolCallInfo.input``)."""
    approved: bool = False
    approved_by: str | None = None
    block: dict[str, Any] | None = None
    """``after_tool_call``'s result block (a stub when large)."""
    base: str | None = None
    """``before_request``'s history node (the last request's), which ``messages`` follow."""
    messages: list[Any] | None = None
    """``before_request``'s messages after ``base``, large blocks as stubs."""
    params: dict[str, Any] | None = None
    tools: list[Any] | None = None
    requests_sent: int = 0
    reply: dict[str, Any] | None = None
    """``check_output``'s answer, as JSON (large blocks as stubs)."""
    beta: bool = False
    output: dict[str, Any] | None = None
    """The run's output type (``{"name", "schema"}``): ``check_output`` sees the answer parsed."""


def refused_error(failure: WorkflowFailureError) -> RequestRefusedError | None:
    """The ``RequestRefusedError`` a run failed with (its ``before_request`` hook refused, or
    failed), if it failed with one."""
    cause = failure.cause
    if (
        not isinstance(cause, ApplicationError)
        or cause.type != RequestRefusedError.__name__
        or len(cause.details) != 1
    ):
        return None
    return RequestRefusedError(cause.message, str(cause.details[0]))

"""The workflow's input for a new run (``start_run``'s arguments, checked as ``ToolRunner(...)``
checks them): ``run_input``."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from datetime import timedelta
from typing import Any

from .._core.errors import ParamsError
from .._core.state import OutputRecord, RunState
from .._core.transitions import Limits
from .._runner.options import ToolLike, read_options
from .._runner.params import TRANSPORT, ToolIndex, check_params, index_tools, warn_unknown_limits
from .._tools.subagents import SubAgent
from .._tools.toolsets import RunnableTool
from ._activity_options import ActivityOptions
from ._data import RunInput, ToolSpec
from ._hook_data import plan_of, run_hooks
from ._output import run_output

__all__ = ["run_input"]

_WORKER_OPTIONS = {
    "stream": "the workers stream (create_worker(stream=True)), and no loop body reads a stream",
    "run_tools_eagerly": "tools run in their own activities once the reply is complete",
    "result_adapter": "it is code: pass it to create_worker(result_adapter=...)",
    "prices": "they are the workers': pass them to create_worker(prices=...)",
    "on_event": "events happen on the workers: pass it to create_worker(on_event=...)",
    "checkpointer": "Temporal keeps the run, and the workers' store its large data",
    "run_id": "the run's name is the run_id argument of start_run",
    "approve": "decisions come from clients: handle.approve(), deny() or answer()",
}


def run_input(
    *,
    tools: Iterable[ToolLike | Mapping[str, Any]] = (),
    activity_options: ActivityOptions | None = None,
    approval_timeout: timedelta | None = None,
    continue_as_new_events: int = 10_000,
    **options: Any,
) -> RunInput:
    """The workflow's input for a new run: the options and request params are checked as
    ``ToolRunner(...)`` checks them.

    Raises:
        ParamsError: An option or param has a value it cannot take, or belongs on the workers.
    """
    _refuse_worker_options(options)
    _check_run_options(continue_as_new_events, approval_timeout)
    output_format, output_retries = options.pop("output_format", None), options.pop("output_retries", None)
    hooks, max_calls = options.pop("hooks", None), options.pop("max_calls", None)
    checked, params = read_options({**options, "tools": tools}, stream=False, is_async=True)
    # Without an output type, output_retries is a check_output hook's (if the run names hooks).
    output = run_output(output_format, None if output_format is None and hooks else output_retries, params)
    hook_data = run_hooks(hooks, max_calls, output_retries, has_output=output is not None)
    params["tools"] = checked.tools
    check_params(params)
    index = index_tools(params.pop("tools"))
    if hook_data is not None:
        warn_unknown_limits(plan_of(hook_data), index)  # as ToolRunner warns
    tracing = checked.tracing
    if tracing is not None and tracing.tracer_provider is not None:
        raise ParamsError(
            "Tracing(tracer_provider=...) cannot be given to a Temporal run: its spans are made on the workers; "
            "give the provider to create_worker(tracer_provider=...) and to Temporal's TracingInterceptor."
        )
    messages = params.pop("messages")
    schema = None if output is None else output["schema"]
    state = RunState(
        params=params,
        tools=index.saved,
        messages=tuple(messages),
        output=None if schema is None else OutputRecord(schema),  # as ToolRunner's state has it
    )
    return RunInput(
        state=state.to_dict(),
        tools=_tool_specs(index),
        limits=_limits_data(checked.limits),
        max_concurrency=checked.max_concurrency,
        tool_timeout=checked.tool_timeout,
        activities=(activity_options or ActivityOptions()).to_data(),
        approval_timeout=None if approval_timeout is None else approval_timeout.total_seconds(),
        cache=None if checked.cache is None else dataclasses.asdict(checked.cache.policy),
        compaction_control=None if checked.compaction_control is None else dict(checked.compaction_control),
        tracing=None if tracing is None else {"content": tracing.content, "agent_name": tracing.agent_name},
        continue_as_new_events=continue_as_new_events,
        output=output,
        hooks=hook_data,
    )


def _refuse_worker_options(options: Mapping[str, Any]) -> None:
    """Refuse the options that belong on the workers, and the transport params."""
    for name, reason in _WORKER_OPTIONS.items():
        if name in options:
            raise ParamsError(f"{name}= cannot be given to a Temporal run: {reason}.")
    for name in TRANSPORT:
        if name in options:
            raise ParamsError(
                f"{name}= cannot be given to a Temporal run: it would be written into the run's workflow history "
                "(headers may hold secrets); set it on the workers' client instead, for example "
                "anthropic.AsyncAnthropic(default_headers={...}, timeout=...) given to create_worker()."
            )


def _check_run_options(continue_as_new_events: object, approval_timeout: object) -> None:
    """Check the options only a run on Temporal has."""
    if (
        not isinstance(continue_as_new_events, int)
        or isinstance(continue_as_new_events, bool)
        or continue_as_new_events < 100
    ):
        raise ParamsError(
            f"continue_as_new_events must be an int of 100 or more, not {continue_as_new_events!r}."
        )
    if approval_timeout is not None and (
        not isinstance(approval_timeout, timedelta) or approval_timeout <= timedelta(0)
    ):
        raise ParamsError(f"approval_timeout must be a positive timedelta or None, not {approval_timeout!r}.")


def _tool_specs(index: ToolIndex) -> list[ToolSpec]:
    """The flags of the run's tools (and toolset families) that the workflow reads."""
    return [_spec(name, tool) for name, tool in (*index.runnable.items(), *index.families.items())]


def _spec(name: str, tool: RunnableTool) -> ToolSpec:
    """A tool's flags; a sub-agent's with its definition and its tools' flags (the workflow runs
    its sub-runs; the workers, which have it by name, its tools)."""
    spec = ToolSpec(
        name=name,
        idempotent=tool.idempotent,
        sequential=tool.sequential,
        timeout=tool.timeout,
        gated=tool.requires_approval is not False,
    )
    if isinstance(tool, SubAgent):
        spec.agent = tool.definition()
        spec.tools = [_spec(inner.name, inner) for inner in tool.tools]
    return spec


def _limits_data(limits: Limits) -> dict[str, Any]:
    return {
        "max_iterations": limits.max_iterations,
        "max_total_tokens": limits.max_total_tokens,
        "max_cost": None if limits.max_cost is None else str(limits.max_cost),
        "on_limit": limits.on_limit,
    }

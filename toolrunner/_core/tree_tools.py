"""The tools a saved run's sub-runs go on with (issue 30), checked when the run is resumed, as its
own tools are (``_runner.params.resolve_tools``): ``check_sub_run_tools``.

A sub-run under way lives in the record of the call that runs it (``CallRecord.sub_run``), and its
state names its tools (``RunState.tools``) as a run's does: tools are code, given again with the
``SubAgent`` when the run is resumed. A resume whose tools would drop a sub-run (a plain tool now
has the sub-agent's name) or leave one without a tool it uses is refused before anything runs:
otherwise the sub-run would start afresh, or its calls be answered "there is no tool", and a
decision a person made inside it (an approval) would be lost.
"""

from __future__ import annotations

from collections.abc import Mapping

from .errors import ParamsError
from .state import CallStatus, RunState
from .subruns import agent_plan_of

__all__ = ["check_sub_run_tools"]


def check_sub_run_tools(state: RunState, tools: Mapping[str, object], run_id: str) -> None:
    """Every sub-run under way in ``state``'s tree (at any depth) has its sub-agent among the tools
    given (``tools``, by name; a sub-agent's own tools one level down), and that sub-agent has
    every tool the sub-run's state names. A name ``tools`` lacks is left to the checks of the
    level that names it (the run's own tools are checked by the caller first; a toolset's are
    known only once it is open).

    Raises:
        ParamsError: A sub-run's sub-agent is not given as one, or lacks a tool its sub-run uses;
            the message names the path, the sub-agent and the tools.
    """
    _check(state, tools, run_id, ())


def _check(state: RunState, tools: Mapping[str, object], run_id: str, path: tuple[str, ...]) -> None:
    for record in state.calls.values():
        sub_run = record.sub_run
        if sub_run is None or record.status is CallStatus.FINISHED:  # an ended sub-run does not run again
            continue
        if record.call.name not in tools:
            continue
        where = (*path, record.call.id, sub_run.agent)
        shown = " → ".join(where)
        plan = agent_plan_of(tools[record.call.name])
        if plan is None:
            raise ParamsError(
                f"the saved run {run_id!r} has a sub-run of the sub-agent {sub_run.agent!r} under way (at {shown}), but "
                f"the tools given have no SubAgent named {record.call.name!r}; pass that SubAgent (with its tools) to "
                "resume the run, or the sub-run and any decision made in it would be lost."
            )
        missing = sorted(
            name for name in sub_run.state.tools if isinstance(name, str) and name not in plan.flags
        )
        if missing:
            raise ParamsError(
                f"the saved run {run_id!r} has a sub-run of the sub-agent {sub_run.agent!r} under way (at {shown}) that "
                f"uses the tool(s) {missing!r}, which the SubAgent {plan.name!r} given has not; pass them in its "
                "tools=[...] to resume the run (tools are code, so a run saves only their names)."
            )
        _check(sub_run.state, plan.flags, run_id, where)

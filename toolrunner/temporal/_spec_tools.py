"""The run's tools as the workflow knows them: their flags, never their code (which is on the workers).

``RunCore`` reads a few flags of a call's tool (``sequential`` for the order of a reply's calls,
``requires_approval`` for whether to gate at all); the workflow has each tool's ``ToolSpec``, from
the run's input and, for the tools a ``Toolset`` offers, from the request activity that saw them.

A sub-agent's spec carries its ``definition()`` and its tools' specs: its ``SpecTool`` has the
``agent_plan`` the core runs its sub-runs with (``_core.subruns``), in the workflow, as a
``SubAgent``'s; ``specs_at`` finds the specs of a sub-agent's tools by the path of sub-agents.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn

from .._core.errors import ToolRunnerError
from .._core.subruns import AgentPlan
from .._core.types import ToolCall
from .._tools.subagents import agent_plan
from .._tools.tool import ToolContext
from .._tools.toolsets import RunnableTool
from ._data import ToolSpec
from ._output import Answers, agent_output

__all__ = ["SpecTool", "SpecTools", "effect_path", "specs_at"]


class SpecTool:
    """A tool of the run as the workflow sees it: a ``RunnableTool`` whose code is elsewhere."""

    def __init__(self, spec: ToolSpec, answers: Answers) -> None:
        self.spec = spec
        self.agent_plan: AgentPlan | None = (
            None
            if spec.agent is None
            else agent_plan(
                spec.agent,
                {tool.name: SpecTool(tool, answers) for tool in spec.tools or ()},
                agent_output(spec.agent, answers),
            )
        )
        """A sub-agent's plan (``_core.subruns.agent_plan_of`` reads it); ``None`` for a tool."""

    @property
    def name(self) -> str:
        return self.spec.name

    @property
    def sequential(self) -> bool:
        return self.spec.sequential

    @property
    def timeout(self) -> float | None:
        return self.spec.timeout

    @property
    def start_early(self) -> bool:
        return False  # no stream reaches the workflow

    @property
    def idempotent(self) -> bool:
        return self.spec.idempotent

    @property
    def requires_approval(self) -> bool:
        return self.spec.gated

    @property
    def is_async(self) -> bool:
        return True

    @property
    def function(self) -> Callable[..., Any]:
        self._elsewhere()

    def to_param(self) -> Mapping[str, Any]:
        return {"name": self.spec.name}

    def parse_input(self, raw: object) -> dict[str, Any]:
        self._elsewhere()

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        self._elsewhere()

    def _elsewhere(self) -> NoReturn:
        raise AssertionError(f"the tool {self.spec.name!r} runs on the workers, never in the workflow")


class SpecTools:
    """``RunCore``'s ``Tools`` for a workflow: the specs by tool name (a toolset family's by its name).

    Args:
        specs: The specs, which the driver adds to as requests name the tools of toolsets.
        tools: The run's ``tools`` param as saved: a ``Toolset`` is an entry ``"toolset:<name>"``.
    """

    def __init__(self, specs: Mapping[str, ToolSpec], tools: Sequence[str | Mapping[str, Any]]) -> None:
        self._specs = specs
        self._toolsets = any(
            isinstance(entry, str) and entry.startswith("toolset:") and entry[8:] not in specs
            for entry in tools
        )
        self._made: dict[str, SpecTool] = {}
        self.answers = Answers()
        """What the request activities found of the sub-runs' typed answers (``AgentOutput``)."""

    def find(self, call: ToolCall) -> RunnableTool | None:
        spec = self._specs.get(call.toolset_name or call.name)
        if spec is None:
            return None
        made = self._made.get(spec.name)
        if made is None or made.spec is not spec:
            made = self._made[spec.name] = SpecTool(spec, self.answers)
        return made

    @property
    def gated(self) -> bool:
        """Whether a call may need a decision: a tool's gate says so, or a toolset's tools are not
        all known yet (the request activity evaluates the gates either way)."""
        return self._toolsets or any(spec.gated for spec in self._specs.values())

    @property
    def opens(self) -> bool:
        """Always: the workflow may continue as new where the tools would be opened (``OpenTools``)."""
        return True


def specs_at(specs: Mapping[str, ToolSpec], agents: Sequence[str]) -> dict[str, ToolSpec]:
    """The specs of the tools of the sub-agent ``agents`` names (its name among ``specs``, then
    among its tools', ...), by name.

    Raises:
        ToolRunnerError: No sub-agent is there (cannot be: the core found it there).
    """
    for name in agents:
        spec = specs.get(name)
        if spec is None or spec.agent is None:
            raise ToolRunnerError(f"the run has no sub-agent at {list(agents)!r}.")
        specs = {tool.name: tool for tool in spec.tools or ()}
    return dict(specs)


def effect_path(calls: tuple[str, ...], agents: tuple[str, ...]) -> tuple[str, ...]:
    """The path of the sub-run an effect of ``agents`` (its ``agent_path``) is of, driven in the
    programs of ``calls``: each call's id and the sub-agent it runs (``SubRunEvent.path``)."""
    if not agents:
        return ()
    assert len(calls) >= len(agents), "a sub-run's effect is driven in its parent call's program"
    return tuple(name for pair in zip(calls, agents, strict=False) for name in pair)

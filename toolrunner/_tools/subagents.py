"""A run as a tool: ``SubAgent``, what the core reads of one (``agent_plan``, also from its
``definition()`` data alone), and where a driver finds a sub-agent's tools (``agent_at``,
``execution_at``) and the transport params its requests carry (``transport_at``).

A ``SubAgent`` is given in a run's ``tools=[...]`` like a tool; the model sees a tool of its name
that takes ``{"task": string}``. It is plain data (``definition()``) plus its tools (code, saved by
name like a run's). The core runs its call as a sub-run inside the parent's call program
(``_core.subruns``, through ``agent_plan``); the driver is asked only for what is code: the
sub-agent's tools' definitions for its requests, their gates and their execution, found by the
path of sub-agents an effect names (``agent_path``).
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any, cast

from .._core.errors import ParamsError, StateError, ToolInputError, ToolRunnerError
from .._core.output import DEFAULT_OUTPUT_RETRIES, OutputFormat, output_format_of
from .._core.state import plain_data
from .._core.subruns import AgentPlan
from .._core.transitions import Limits
from .._core.types import ToolCall, ToolFlags
from .execution import ExecutionOptions
from .request_params import check_param_names, check_param_values, split_transport
from .tool import Tool, ToolContext, as_tool
from .toolsets import RunnableTool, Toolset

__all__ = ["SubAgent", "agent_at", "agent_plan", "execution_at", "tool_at", "transport_at"]

_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
_OWN = (
    "name",
    "description",
    "model",
    "max_tokens",
    "system",
    "tools",
    "max_iterations",
    "max_total_tokens",
    "max_cost",
    "output_format",
    "output_retries",
)
"""``SubAgent``'s own arguments: ``params`` cannot hold them."""
_UNSUPPORTED = {
    "messages": "a sub-run's first message is the task its parent's model gives; leave messages out",
    "stream": "a sub-run does not stream (yet), whatever its parent does; leave stream out",
    "tool_choice": (
        "a sub-run's model chooses among its tools itself (tool_choice is not supported in a sub-run yet); "
        "leave tool_choice out"
    ),
    "thread": "a sub-run sends its whole history with every request; leave thread out",
    "compaction": (
        "every request of the sub-run would be a compaction request (a sub-run is not compacted yet); "
        "leave compaction out"
    ),
}
"""Request params a sub-run cannot take, and what to do instead."""


class SubAgent:
    """A sub-agent: a run of its own, offered to the parent's model as a tool that takes a task.

    Args:
        name: Its tool's name, as the model calls it.
        description: What the parent's model reads of it: what it is good for.
        model: Its model.
        max_tokens: Its requests' ``max_tokens``.
        system: Its system prompt (text, or a list of text blocks), if any.
        tools: Its tools: ``@tool`` functions, plain functions, ``RunnableTool`` objects and
            other sub-agents (toolsets, the SDK's tools and raw definitions are not supported yet).
        max_iterations: The most requests its run may send.
        max_total_tokens: Its run's token budget.
        max_cost: Its run's cost budget, in US dollars (the model needs a price).
        output_format: Its typed answer: a pydantic model, a TypedDict or a dataclass. Its requests
            ask for JSON of the type's schema, and its final answer is parsed and checked as a
            runner's is (``ToolRunner(output_format=...)``); the answer, as JSON text, is its call's
            result.
        output_retries: How often an answer that does not fit ``output_format`` is sent back to
            its model (1 unless given); after that, its call's result is an error result with the
            answer's errors.
        params: Other request params of its run (``thinking``, ``stop_sequences``, ``metadata``, ...),
            checked as a runner checks its own; the transport params among them are kept apart
            (``transport``), never saved.

    Raises:
        ParamsError: A field has a value it cannot take (the message names it).
    """

    sequential = False
    start_early = False
    idempotent = True
    """Its sub-run keeps a journal: running its call again (after a crash) goes on where it was."""
    requires_approval = False
    is_async = True
    timeout: float | None = None

    def __init__(
        self,
        *,
        name: str,
        description: str,
        model: str,
        max_tokens: int,
        system: str | Sequence[Mapping[str, Any]] | None = None,
        tools: Iterable[object] = (),
        max_iterations: int | None = None,
        max_total_tokens: int | None = None,
        max_cost: Decimal | float | str | None = None,
        output_format: type[Any] | None = None,
        output_retries: int | None = None,
        params: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(name, str) or not _NAME.match(name):
            raise ParamsError(
                f"a SubAgent's name must be a tool name (1 to 64 letters, digits, '_' or '-'), not {name!r}."
            )
        where = f"the SubAgent {name!r}"
        if not isinstance(description, str) or not description.strip():
            raise ParamsError(f"{where} needs a description: what the parent's model reads of it.")
        if not isinstance(model, str) or not model.strip():
            raise ParamsError(
                f"{where}: model must be a model id such as 'claude-sonnet-4-6', not {model!r}."
            )
        _check_count(where, "max_tokens", max_tokens, required=True)
        _check_count(where, "max_iterations", max_iterations)
        _check_count(where, "max_total_tokens", max_total_tokens)
        if system is not None and not isinstance(system, str | Sequence):
            raise ParamsError(f"{where}: system must be text or a list of text blocks, not {system!r}.")
        given: Mapping[str, Any] = {} if params is None else params
        if not isinstance(given, Mapping):
            raise ParamsError(f"{where}: params must be a mapping of request params, not {params!r}.")
        request: dict[str, Any] = {"model": model, "max_tokens": max_tokens}
        if system is not None:
            request["system"] = _json(where, "system", system)
        saved, transport = split_transport(given)
        kept = _checked_params(where, saved, request, transport)
        output = _output(where, output_format, output_retries, kept)
        self.name = name
        self.description = description
        self.model = model
        self.max_tokens = max_tokens
        self.system = system
        self.max_iterations = max_iterations
        self.max_total_tokens = max_total_tokens
        self.max_cost = None if max_cost is None else _dollars(where, max_cost)
        self.output: OutputFormat | None = output
        """Its typed answer (``output_format=``, ``output_retries=``), if it has one."""
        self.params: Mapping[str, Any] = kept
        """Its other request params, as its sub-run's state keeps them (JSON data; no transport param)."""
        self.transport: Mapping[str, Any] = transport
        """Its transport params (``extra_headers``, ``extra_query``, ``timeout``; ``TRANSPORT``): sent
        with its sub-run's requests, and those of the sub-agents below it, like a run's own, and
        like a run's never part of a state nor of ``definition()`` (a secret in a header is never
        saved); given again with the ``SubAgent`` when a run is resumed."""
        self.tools: tuple[RunnableTool, ...] = _runnable(where, tools)
        self.runnable: Mapping[str, RunnableTool] = {tool.name: tool for tool in self.tools}
        """Its tools by name, as they run."""
        self.wire: list[Mapping[str, Any]] = [tool.to_param() for tool in self.tools]
        """Its tools' definitions, as its requests send them."""
        self.agent_plan = agent_plan(self.definition(), self.runnable, output)
        """What the core reads of it (``_core.subruns``)."""

    def definition(self) -> dict[str, Any]:
        """The sub-agent as JSON data (its tools by name; its transport params left out, as a
        saved state leaves them out)."""
        return {
            "name": self.name,
            "description": self.description,
            "model": self.model,
            "max_tokens": self.max_tokens,
            "system": plain_data(self.system, "system"),
            "tools": [tool.name for tool in self.tools],
            "max_iterations": self.max_iterations,
            "max_total_tokens": self.max_total_tokens,
            "max_cost": None if self.max_cost is None else str(self.max_cost),
            "output": None if self.output is None else output_data(self.output),
            "params": dict(self.params),
        }

    # -- as a tool (RunnableTool) -------------------------------------------------------------------

    def to_param(self) -> Mapping[str, Any]:
        """Its definition as the parent's model sees it: a tool that takes a task."""
        return {
            "name": self.name,
            "description": self.description,
            "input_schema": {
                "type": "object",
                "properties": {"task": {"type": "string", "description": "The task, in words."}},
                "required": ["task"],
            },
        }

    def parse_input(self, raw: object) -> dict[str, Any]:
        task = cast("Mapping[str, object]", raw).get("task") if isinstance(raw, Mapping) else None
        if not isinstance(task, str):
            raise ToolInputError(f'The sub-agent {self.name!r} takes {{"task": string}}, not {raw!r}.')
        return {"task": task}

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return arguments

    @property
    def function(self) -> Callable[..., Any]:
        return self._not_here

    async def _not_here(self, **_: object) -> object:
        raise ToolRunnerError(
            f"the sub-agent {self.name!r} was run as a plain tool; sub-agents run as sub-runs, in a ToolRunner or in "
            "a Temporal run's workflow."
        )

    def __repr__(self) -> str:
        return f"SubAgent(name={self.name!r}, model={self.model!r}, tools={[tool.name for tool in self.tools]!r})"


def _check_count(where: str, name: str, value: object, *, required: bool = False) -> None:
    if value is None and not required:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ParamsError(
            f"{where}: {name} must be a positive int{'' if required else ' or None'}, not {value!r}."
        )


def _checked_params(
    where: str, given: Mapping[str, Any], request: Mapping[str, Any], transport: Mapping[str, Any]
) -> dict[str, Any]:
    """``given`` (a sub-agent's ``params`` but the transport params) checked as a runner checks its
    own params (``_tools.request_params``: names, then values) and as the JSON data its sub-run's
    state keeps; ``request`` (its ``model``, ``max_tokens``, ``system``) and ``transport`` (never
    kept, so any value the SDK takes) have their values checked with them."""
    for key in given:
        if not isinstance(key, str):
            raise ParamsError(f"{where}: params must be keyed by param names (str), not {key!r}.")
        if key in _OWN:
            raise ParamsError(
                f"{where}: params cannot hold {key!r}; give it as SubAgent's own argument (SubAgent(..., {key}=...))."
            )
        if key in _UNSUPPORTED:
            raise ParamsError(f"{where}: params cannot hold {key!r}: {_UNSUPPORTED[key]}.")
    check_param_names(
        given,
        options=_OWN,
        advice="Give SubAgent's own arguments (model, max_iterations, ...) as arguments, and request params by "
        "their documented names.",
        where=f"{where}: ",
    )
    check_param_values({**request, **given, **transport}, where=f"{where}: ")
    return {key: _json(where, f"params[{key!r}]", value) for key, value in given.items()}


def _json(where: str, what: str, value: object) -> Any:
    """``value`` as the JSON data a saved state keeps (``plain_data``); else a ``ParamsError``."""
    try:
        return plain_data(value, f"{where}: {what}")
    except StateError as error:
        raise ParamsError(str(error)) from None


def _output(
    where: str, output_format: object, retries: object, params: Mapping[str, Any]
) -> OutputFormat | None:
    """``output_format=`` and ``output_retries=``, checked as a runner checks its own."""
    if output_format is None:
        if retries is not None:
            raise ParamsError(
                f"{where}: output_retries says how often an answer that does not fit output_format is sent back "
                "to its model; give output_format=... with it, or leave output_retries out."
            )
        return None
    try:
        return output_format_of(output_format, DEFAULT_OUTPUT_RETRIES if retries is None else retries, params)
    except ParamsError as error:
        raise ParamsError(f"{where}: {error}") from None


def output_data(output: OutputFormat) -> dict[str, Any]:
    """A typed answer as a sub-agent's ``definition()`` gives it: its type's name, the fingerprint
    of its JSON schema, its retries (the type is code, found again with the ``SubAgent``)."""
    return {"name": output.name, "schema": output.fingerprint, "retries": output.retries}


def _dollars(where: str, value: object) -> Decimal:
    try:
        amount = Decimal(str(value)) if isinstance(value, Decimal | int | float | str) else Decimal(-1)
    except InvalidOperation:
        amount = Decimal(-1)
    if isinstance(value, bool) or not amount.is_finite() or amount <= 0:
        raise ParamsError(
            f"{where}: max_cost must be a positive amount of US dollars or None, not {value!r}."
        )
    return amount


def _runnable(where: str, tools: Iterable[object]) -> tuple[RunnableTool, ...]:
    if isinstance(tools, str | bytes | Mapping) or not isinstance(tools, Iterable):
        raise ParamsError(
            f"{where}: tools must be a list of tools, not {type(cast(object, tools)).__name__!r}."
        )
    found: list[RunnableTool] = []
    names: set[str] = set()
    for entry in tools:
        if isinstance(entry, Mapping | Toolset) or type(entry).__module__.startswith("anthropic"):
            raise ParamsError(
                f"{where}: {entry!r} cannot be a sub-agent's tool yet; give @tool functions, plain functions, "
                "RunnableTool objects or other SubAgents."
            )
        if isinstance(entry, Tool | SubAgent):
            tool = cast(RunnableTool, entry)
        elif isinstance(entry, RunnableTool) and not inspect.isroutine(entry):
            tool = entry
        elif callable(entry):
            tool = as_tool(entry)
        else:
            raise ParamsError(f"{where}: {entry!r} is not a tool.")
        if tool.name in names:
            raise ParamsError(
                f"{where}: two of its tools are named {tool.name!r}; tool names must be unique."
            )
        names.add(tool.name)
        found.append(tool)
    return tuple(found)


def agent_plan(
    definition: Mapping[str, Any], flags: Mapping[str, ToolFlags], output: OutputFormat | None = None
) -> AgentPlan:
    """What the core reads of the sub-agent ``definition`` (``SubAgent.definition()``'s data) whose
    tools have ``flags`` (by name): a ``SubAgent``'s own, or, in a Temporal workflow, the flags of
    tools whose code is on the workers; ``output`` is its typed answer (the ``SubAgent``'s own, or
    the workflow's stand-in for a type that is on the workers)."""
    request: dict[str, Any] = {"model": definition["model"], "max_tokens": definition["max_tokens"]}
    if definition["system"] is not None:
        request["system"] = definition["system"]
    max_cost = definition["max_cost"]
    return AgentPlan(
        name=definition["name"],
        params={**request, **definition["params"]},
        tools=tuple(definition["tools"]),
        flags=flags,
        limits=Limits(
            max_iterations=definition["max_iterations"],
            max_total_tokens=definition["max_total_tokens"],
            max_cost=None if max_cost is None else Decimal(max_cost),
        ),
        output=output,
    )


# -- where a driver finds a sub-agent's tools ---------------------------------------------------------


def agent_at(tools: Mapping[str, RunnableTool], path: Sequence[str]) -> SubAgent:
    """The sub-agent ``path`` names (its name among ``tools``, then among its tools, ...).

    Raises:
        ToolRunnerError: No sub-agent is there (the run's tools changed under it).
    """
    agents = _agents_on(tools, path)
    assert agents, "an empty agent path is the run's own"
    return agents[-1]


def transport_at(
    tools: Mapping[str, RunnableTool], path: Sequence[str], transport: Mapping[str, Any]
) -> dict[str, Any]:
    """The transport params the requests of the sub-agent at ``path`` are sent with: the run's own
    (``transport``), then each sub-agent's on the path (``SubAgent.transport``), a nearer one's over
    a farther one's (``extra_headers`` and ``extra_query`` merged by name, ``timeout`` replaced).

    Raises:
        ToolRunnerError: No sub-agent is at ``path`` (see ``agent_at``).
    """
    sent = dict(transport)
    for agent in _agents_on(tools, path):
        for name, value in agent.transport.items():
            before = sent.get(name)
            if isinstance(before, Mapping) and isinstance(value, Mapping):
                sent[name] = {**cast("Mapping[str, Any]", before), **cast("Mapping[str, Any]", value)}
            else:
                sent[name] = value
    return sent


def _agents_on(tools: Mapping[str, RunnableTool], path: Sequence[str]) -> list[SubAgent]:
    """The sub-agents ``path`` goes through, from the run's tools down (``agent_at``)."""
    agents: list[SubAgent] = []
    for name in path:
        found = tools.get(name)
        if not isinstance(found, SubAgent):
            raise ToolRunnerError(f"the run has no sub-agent at {list(path)!r} (its tools changed since?).")
        agents.append(found)
        tools = found.runnable
    return agents


def execution_at(execution: ExecutionOptions, path: Sequence[str]) -> ExecutionOptions:
    """How the calls of the sub-agent at ``path`` run: its tools, with the run's result adapter and
    time limit; the run's own (``execution``) for an empty path."""
    if not path:
        return execution
    agent = agent_at(execution.tools, path)
    return ExecutionOptions(tools=agent.runnable, adapter=execution.adapter, timeout=execution.timeout)


def tool_at(execution: ExecutionOptions, path: Sequence[str], call: ToolCall) -> RunnableTool | None:
    """The tool that answers ``call`` of the sub-agent at ``path`` (the run's own for an empty path)."""
    return execution_at(execution, path).find(call)

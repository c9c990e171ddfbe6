"""The tools a replay offers the model (``replay_tools``): each has the definition of a tool of the
recorded run (or of the one given in its place), and answers a call from the recorded run's journal,
so that nothing a recorded run did is done again. A call the record does not hold (a divergence) is
answered with the ``DIVERGED`` error result (nothing runs), by the tool itself when the replay marks
it safe to run, or by the stub the replay gives for it. ``answered_by`` says, after the fact, how
each call of a replay was answered: the same pure decision (``_journal.match_call``) the tools took.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

import anyio.to_thread

from .._core.errors import ParamsError, ToolError
from .._core.messages import client_tool_calls
from .._core.types import ToolCall
from .._runner.params import runnable_of
from .._tools.tool import ApprovalGate, ToolContext
from .._tools.toolsets import RunnableTool, Toolset
from ._journal import Journal, match_call
from ._trajectory import Answered, result_text, results_of

__all__ = ["DIVERGED", "Stub", "answered_by", "replay_tools"]

DIVERGED = (
    "This call was not run. This conversation is a replay of a recorded run, made to evaluate a change, "
    "and the recorded run made no call to {name!r} with this input, so there is no recorded result to "
    "give, and the tool may not act again. Nothing was done. Go on as you would if the tool had failed."
)
"""The error result a divergent call gets by default: the model reads it, and nothing runs."""

Stub = Callable[[Any], Any]
"""A replay's answer to a divergent call of a tool: a function (sync or async) of the call's input
whose value is the result (a ``ToolError`` it raises is an error result)."""


@dataclass(frozen=True, slots=True, eq=False)
class ReplayTool:
    """One tool of a replay: a ``RunnableTool`` with a recorded tool's definition, answered from the
    journal (see the module docstring)."""

    definition: Mapping[str, Any]
    journal: Journal
    real: RunnableTool | None = None
    stub: Stub | None = None

    @property
    def name(self) -> str:
        return str(self.definition["name"])

    timeout: float | None = None
    requires_approval: ApprovalGate = False
    is_async: bool = True
    sequential: bool = False
    start_early: bool = False
    idempotent: bool = True  # an answer from the journal, a stub or a tool marked safe: none acts again

    @property
    def function(self) -> Callable[..., Any]:
        return self._answer

    def to_param(self) -> Mapping[str, Any]:
        return self.definition

    def parse_input(self, raw: object) -> dict[str, Any]:
        return {"raw": raw}

    def call_kwargs(self, arguments: dict[str, Any], context: ToolContext) -> dict[str, Any]:
        return {**arguments, "context": context}

    async def _answer(self, *, raw: object, context: ToolContext) -> object:
        view = context.runner
        history = [*view.messages, *([view.last_message] if view.last_message is not None else [])]
        call = context.call  # matched with the input it runs with (a hook's RunWith may have changed it)
        found = match_call(self.journal, history, ToolCall(id=call.id, name=call.name, input=raw)).recorded
        if found is not None:
            content = list(found.result) if isinstance(found.result, tuple) else found.result
            if found.is_error:
                raise ToolError(content if content else DIVERGED.format(name=self.name))
            return content
        if self.stub is not None:
            value = self.stub(raw)
            return await value if inspect.isawaitable(value) else value
        if self.real is not None:
            return await _run(self.real, raw, context)
        raise ToolError(DIVERGED.format(name=self.name))


async def _run(tool: RunnableTool, raw: object, context: ToolContext) -> object:
    """A tool marked safe, run as the runner runs it (its input checked)."""
    kwargs = tool.call_kwargs(tool.parse_input(raw), context)
    if tool.is_async:
        return await tool.function(**kwargs)
    return await anyio.to_thread.run_sync(lambda: tool.function(**kwargs))


def replay_tools(
    journal: Journal,
    given: Sequence[object] | None,
    recorded: Sequence[str | Mapping[str, Any]],
    *,
    safe: Collection[str] = (),
    stubs: Mapping[str, Stub] | None = None,
) -> list[ReplayTool]:
    """The replay's tools: one for each tool given (or, with none given, for each raw definition the
    recorded run had); ``safe`` names the tools whose divergent calls run, ``stubs`` those answered
    by a stub.

    Raises:
        ParamsError: No tools are given and the record holds a runnable tool (only its name is
            saved); a tool given cannot be offered; ``safe`` or ``stubs`` name a tool the replay
            does not offer, or one tool is in both.
    """
    stubs = stubs or {}
    tools: list[ReplayTool] = []
    if given is None:
        names = [entry for entry in recorded if isinstance(entry, str)]
        if names:
            raise ParamsError(
                f"the recorded run's tools {names} are code, and a saved run keeps only their names: pass "
                "them to the replay (Replay(tools=[...])) so that the model is offered their definitions "
                "(they do not run, but for those marked safe)."
            )
        entries: Sequence[object] = recorded
    else:
        entries = given
    for entry in entries:
        if isinstance(entry, Mapping):
            definition = dict(cast("Mapping[str, Any]", entry))
            real = None
        elif isinstance(entry, Toolset):
            raise ParamsError(
                f"a replay offers tool definitions, and {type(entry).__name__} is a toolset: pass its tools "
                "(or their definitions as dicts) instead."
            )
        else:
            real = runnable_of(entry)
            definition = dict(real.to_param())
        name = str(definition.get("name"))
        tools.append(ReplayTool(definition, journal, real if name in safe else None, stubs.get(name)))
    offered = {tool.name for tool in tools}
    both = set(safe) & set(stubs)
    if both:
        raise ParamsError(
            f"the tools {sorted(both)} are both marked safe and given a stub; choose one for each."
        )
    for kind, named in (("safe_tools", set(safe)), ("stubs", set(stubs))):
        unknown = named - offered
        if unknown:
            raise ParamsError(
                f"{kind} names {sorted(unknown)}, which the replay does not offer (it offers {sorted(offered)})."
            )
    for tool in tools:
        if tool.name in safe and tool.real is None:
            raise ParamsError(
                f"safe_tools names {tool.name!r}, but the replay has only its definition: pass the tool itself "
                "in tools=[...] for it to run."
            )
    return tools


def answered_by(
    journal: Journal,
    history: Sequence[Any],
    *,
    prefix: int = 0,
    safe: Collection[str] = (),
    stubs: Collection[str] = (),
    offered: Collection[str] | None = None,
    hooked: bool = False,
) -> dict[str, Answered]:
    """How each call of a replay's ``history`` was answered: the first ``prefix`` messages are the
    record's own (``"recorded"``); the others as the replay's tools decided (see the module
    docstring). With ``hooked`` (the replay has hooks), a call whose result in the history is not
    what the tools would have given (a hook denied it, changed its input or replaced its result) is
    ``"hook"``. A call of a tool the replay does not ``offer`` is ``"marked"``: nothing ran, and the
    runner told the model so."""
    results = results_of(history)
    answered: dict[str, Answered] = {}
    for index, message in enumerate(history):
        for call in client_tool_calls(message):
            if index < prefix:
                answered[call.id] = "recorded"
            elif offered is not None and call.name not in offered:
                answered[call.id] = "marked"
            else:
                answered[call.id] = _how(journal, history, call, results.get(call.id), safe, stubs, hooked)
    return answered


def _how(
    journal: Journal,
    history: Sequence[Any],
    call: ToolCall,
    given: tuple[object, bool] | None,
    safe: Collection[str],
    stubs: Collection[str],
    hooked: bool,
) -> Answered:
    recorded = match_call(journal, history, call).recorded
    if recorded is not None:
        answered: Answered = "journal"
    elif call.name in stubs:
        answered = "stub"
    else:
        answered = "safe" if call.name in safe else "marked"
    if not hooked or given is None:
        return answered
    content, is_error = given
    text = result_text(content)
    if is_error and text == DIVERGED.format(name=call.name):
        return "marked"  # a hook's RunWith made it a call the record lacks
    if recorded is not None and (is_error, text) == (recorded.is_error, recorded.result_text):
        return "journal"
    return "hook" if answered in ("journal", "marked") else answered

"""A run read as a trajectory: its turns, the calls each made and the results they got, its final
answer, usage and cost (``Trajectory``, ``trajectory_of``). Pure: it reads a ``RunState``.

A turn is one assistant message of the history: its text and its client tool calls, each with the
result the next user message gave it (the content the model read, and whether it was an error).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, TypeAlias, cast

from .._core.history import text_of
from .._core.messages import client_tool_calls, content_blocks, field as read
from .._core.state import RunState
from .._core.tree_usage import spent
from .._core.types import EndReason
from .._core.usage import Usage

__all__ = ["Answered", "Call", "Trajectory", "Turn", "result_text", "results_of", "trajectory_of"]

Answered: TypeAlias = Literal["recorded", "journal", "hook", "marked", "safe", "stub"]
"""How a call got its result. In a recorded run: ``"recorded"`` (its tool ran). In a replay:
``"journal"`` (the recorded run's result for the same call), or, for a call the recorded run did
not make (a divergence), ``"hook"`` (the record made it, but a hook of the replay denied it or
replaced its result, so the model read something else), ``"marked"`` (a marked error result: nothing ran), ``"safe"`` (a tool
marked safe to run ran) or ``"stub"`` (the stub given for the tool answered)."""


@dataclass(frozen=True, slots=True)
class Call:
    """One tool call of a trajectory.

    Attributes:
        id: The tool_use id.
        name: The tool's name.
        input: The input the model sent.
        result: The content the model read back (a string, or content blocks); ``None`` when the
            history holds no result for it (the run ended before one).
        is_error: Whether the result was an error result.
        answered: How the call got its result (``Answered``).
    """

    id: str
    name: str
    input: object
    result: str | tuple[Mapping[str, Any], ...] | None = None
    is_error: bool = False
    answered: Answered = "recorded"

    @property
    def result_text(self) -> str:
        """The result as text (text blocks joined; other blocks as their JSON)."""
        return result_text(self.result)


@dataclass(frozen=True, slots=True)
class Turn:
    """One assistant message: its text (thinking left out) and its client tool calls, in order."""

    index: int
    text: str
    calls: tuple[Call, ...] = ()
    stop_reason: str | None = None


@dataclass(frozen=True, slots=True)
class Trajectory:
    """A run as what it did, turn by turn.

    Attributes:
        run_id: The run's name in its store.
        turns: The assistant messages of the history, in order.
        final_answer: The text of the last turn, when the run ended with the model's answer
            (``end_reason == "model"``); ``None`` otherwise.
        output: The typed final answer (the JSON the last turn's text holds) for a run with an
            output type; ``None`` otherwise, or when that text is not JSON.
        end_reason: Why the run ended (``None``: it did not end).
        usage: Its tokens, over every request of its tree (its sub-agents' runs too).
        cost: What its tree's requests cost in US dollars (``None``: a model had no price).
        requests: How many requests of its tree got a reply.
        seconds: How long it took, when known (a replay measures it; a recorded run's is the time
            between its first and its last save).
        failure: The error that stopped it, if one did (``{"type": ..., "message": ...}``).
        task: The text of its first user message: what it was asked (``None``: it has none).
    """

    run_id: str | None
    turns: tuple[Turn, ...]
    final_answer: str | None
    output: object = None
    end_reason: EndReason | None = None
    usage: Usage = field(default_factory=Usage)
    cost: Decimal | None = None
    requests: int = 0
    seconds: float | None = None
    failure: Mapping[str, str] | None = None
    task: str | None = None

    @property
    def calls(self) -> tuple[Call, ...]:
        """Every tool call, in the order the turns made them."""
        return tuple(call for turn in self.turns for call in turn.calls)


def trajectory_of(
    state: RunState,
    *,
    seconds: float | None = None,
    answered: Mapping[str, Answered] | None = None,
) -> Trajectory:
    """The trajectory of a saved (or running) run: ``answered`` says, by tool_use id, how a replay's
    calls got their results (a call it does not name was ``"recorded"``)."""
    results = results_of(state.messages)
    turns: list[Turn] = []
    for message in state.messages:
        if read(message, "role") != "assistant":
            continue
        calls = tuple(
            _call(tool_call.id, tool_call.name, tool_call.input, results, answered)
            for tool_call in client_tool_calls(message)
        )
        turns.append(Turn(len(turns), text_of(message), calls, read(message, "stop_reason")))
    ended = state.end_reason == "model" and bool(turns) and not turns[-1].calls
    final = turns[-1].text if ended else None
    tree = spent(state)  # its own requests, and its sub-agents' (_core.tree_usage)
    return Trajectory(
        run_id=state.run_id,
        turns=tuple(turns),
        final_answer=final,
        output=_output(final) if final is not None and state.output is not None else None,
        end_reason=state.end_reason if state.finished else None,
        usage=tree.total,
        cost=tree.cost,
        requests=tree.requests,
        seconds=seconds,
        failure=state.failure,
        task=next((text_of(message) for message in state.messages if read(message, "role") == "user"), None),
    )


def result_text(content: object) -> str:
    """A tool result's content as text: a string as it is, text blocks joined, other blocks as JSON."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in cast("Sequence[object]", content) if isinstance(content, Sequence) else ():
        if read(block, "type") == "text":
            parts.append(str(read(block, "text")))
        else:
            parts.append(json.dumps(block, sort_keys=True, default=str))
    return "".join(parts)


def results_of(messages: Sequence[Any]) -> dict[str, tuple[object, bool]]:
    """Each tool_use id's result in the history: its content and whether it was an error."""
    found: dict[str, tuple[object, bool]] = {}
    for message in messages:
        if read(message, "role") != "user":
            continue
        for block in content_blocks(message):
            if read(block, "type") == "tool_result":
                found[str(read(block, "tool_use_id"))] = (
                    read(block, "content"),
                    bool(read(block, "is_error")),
                )
    return found


def _call(
    call_id: str,
    name: str,
    input: object,
    results: Mapping[str, tuple[object, bool]],
    answered: Mapping[str, Answered] | None,
) -> Call:
    found, is_error = results.get(call_id, (None, False))
    content: str | tuple[Mapping[str, Any], ...] | None
    if found is None or isinstance(found, str):
        content = found
    else:
        blocks = cast("Sequence[object]", found)
        content = tuple(
            dict(cast("Mapping[str, Any]", block)) if isinstance(block, Mapping) else {"block": block}
            for block in blocks
        )
    return Call(
        id=call_id,
        name=name,
        input=input,
        result=content,
        is_error=is_error,
        answered=(answered or {}).get(call_id, "recorded"),
    )


def _output(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return None

"""The tool loop's decisions, with no I/O.

Everything here is a pure function of messages and stop reasons, so the property tests can drive it
directly. The async driver in ``_runner.py`` calls these functions and does the I/O around them.

Messages may hold content blocks as dicts (what users write) or as SDK models (what the SDK
returns and ``Message.to_param()`` keeps); ``field()`` reads either.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from ._errors import HistoryError, UnansweredToolUseError

__all__ = [
    "STOP_REASON_STEPS",
    "Step",
    "ToolCall",
    "calls_to_answer",
    "check_answered",
    "client_tool_calls",
    "container_param",
    "field",
    "step_for",
    "tool_result_ids",
]


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One client ``tool_use`` block, read from a message.

    Attributes:
        id: The tool_use id that the tool_result must carry.
        name: The tool's name.
        input: The input as the model sent it (normally a dict; anything, when the model erred).
    """

    id: str
    name: str
    input: object


class Step(enum.Enum):
    """What a reply's stop reason asks the runner to do next."""

    RUN_TOOLS = "run_tools"
    """Answer the reply's client tool calls, then send the next request."""
    RESUME = "resume"
    """Send the history back unchanged so the service continues the turn."""
    STOP = "stop"
    """The model is done (or was cut off): never run this reply's tool calls."""


# The one table of stop reasons. ``tests/test_lifecycle.py`` checks that it covers every value
# of the installed SDK's ``StopReason`` and ``BetaStopReason``. Unknown values map to STOP.
STOP_REASON_STEPS: Mapping[str, Step] = {
    "tool_use": Step.RUN_TOOLS,
    "pause_turn": Step.RESUME,
    # Beta: with ``pause_after_compaction`` the service hands the turn back before answering.
    "compaction": Step.RESUME,
    "end_turn": Step.STOP,
    "stop_sequence": Step.STOP,
    # A max_tokens cut can leave the last tool_use with a truncated input: never run it.
    "max_tokens": Step.STOP,
    "refusal": Step.STOP,
    "model_context_window_exceeded": Step.STOP,
}


def step_for(stop_reason: str | None) -> Step:
    """The step a stop reason asks for; ``None`` and unknown values stop the loop."""
    if stop_reason is None:
        return Step.STOP
    return STOP_REASON_STEPS.get(stop_reason, Step.STOP)


def field(item: object, name: str) -> Any:
    """Read ``name`` from a dict or from an SDK model; ``None`` when absent."""
    if isinstance(item, Mapping):
        return item.get(name)  # type: ignore[union-attr]
    return getattr(item, name, None)


def _blocks(message: object) -> Sequence[object]:
    content = field(message, "content")
    if isinstance(content, str) or content is None:
        return ()
    return content  # type: ignore[no-any-return]


def client_tool_calls(message: object) -> tuple[ToolCall, ...]:
    """The client ``tool_use`` blocks of a message, in order.

    Server tool calls (``server_tool_use``, ``mcp_tool_use``, ...) are the service's to answer and
    are not included.
    """
    if field(message, "role") != "assistant":
        return ()
    return tuple(
        ToolCall(id=field(block, "id"), name=field(block, "name"), input=field(block, "input"))
        for block in _blocks(message)
        if field(block, "type") == "tool_use"
    )


def tool_result_ids(message: object) -> set[str]:
    """The tool_use ids that a (user) message answers with tool_result blocks."""
    if field(message, "role") != "user":
        return set()
    return {
        field(block, "tool_use_id") for block in _blocks(message) if field(block, "type") == "tool_result"
    }


def calls_to_answer(last_message: object | None, last_reply: object | None) -> tuple[ToolCall, ...]:
    """The tool calls the runner answers, given the last message of the history (as it stands,
    or will stand once the reply is appended) and the latest reply.

    When the pending calls are the latest reply's own, its stop reason decides: only
    ``tool_use`` runs them (a ``max_tokens`` cut may have truncated an input). Calls of any other
    message (a history the caller set) are always answered.
    """
    if last_message is None:
        return ()
    calls = client_tool_calls(last_message)
    if not calls or last_reply is None or step_for(field(last_reply, "stop_reason")) is Step.RUN_TOOLS:
        return calls
    reply_ids = [call.id for call in client_tool_calls(last_reply)]
    return () if [call.id for call in calls] == reply_ids else calls


def check_answered(messages: Sequence[object], start: int = 0) -> None:
    """Check the tool pairs of a history from index ``start`` on, as the service does.

    Raises ``UnansweredToolUseError`` if an assistant message has a client tool_use that the
    message after it does not answer (the last message has none after it), and ``HistoryError``
    if a user message has a tool_result for no tool_use of the message before it. The runner checks
    only what changed since its last check, so a long history adds nothing to a request's cost.
    """
    for index in range(max(start, 0), len(messages)):
        message = messages[index]
        calls = client_tool_calls(message)
        if calls:
            answered = tool_result_ids(messages[index + 1]) if index + 1 < len(messages) else set[str]()
            missing = [call.id for call in calls if call.id not in answered]
            if missing:
                where = (
                    f"messages[{index + 1}] does not answer"
                    if index + 1 < len(messages)
                    else "no message answers"
                )
                raise UnansweredToolUseError(
                    f"messages[{index}] has tool_use block(s) {missing!r} that {where}; the service would reject "
                    "this history with a 400. Follow that assistant message with a user message that starts with "
                    "a tool_result for each of those ids, or remove the tool_use blocks. For the latest reply, "
                    "`await runner.generate_tool_response()` gives the results; the calls of a reply that stopped "
                    "for another reason than tool_use (max_tokens may have cut an input) are never run, so answer "
                    'them yourself, for example {"type": "tool_result", "tool_use_id": ..., "is_error": True, '
                    '"content": "The input was cut off; call the tool again."}.'
                )
        results = tool_result_ids(message)
        if results:
            asked = {call.id for call in client_tool_calls(messages[index - 1])} if index > 0 else set[str]()
            stray = sorted(results - asked)
            if stray:
                raise HistoryError(
                    f"messages[{index}] has tool_result block(s) for {stray!r}, but "
                    + (
                        f"messages[{index - 1}] has no tool_use with those ids"
                        if index > 0
                        else "no message comes before it"
                    )
                    + "; the service would reject this history with a 400. Put each tool_result right after the "
                    "assistant message whose tool_use it answers, or remove it."
                )


def container_param(current: object, reply_container_id: str | None) -> object:
    """The ``container`` param to send next, given the current one and the reply's container id.

    The reply's id fills a missing param and an object-form param without an id; an id the caller
    gave is never overwritten. Returns ``current`` itself when nothing changes.
    """
    if reply_container_id is None:
        return current
    if current is None:
        return reply_container_id
    if isinstance(current, Mapping):
        mapping = cast("Mapping[str, object]", current)
        if not mapping.get("id"):
            return {**mapping, "id": reply_container_id}
        return mapping
    return current

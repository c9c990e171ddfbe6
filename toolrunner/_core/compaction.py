"""Compaction, the pure part: what to replace with a summary, and the requests that make one.

Two kinds, as in the SDK:

- **Server-side** (``compact_before_next_turn()``): one request with the ``compaction`` param
  summarizes the whole history into a ``compaction`` block; the history becomes that reply, then
  the messages added since the request went out (``compaction_request``, ``compacted_history``).
- **Client-side** (the ``compaction_control`` option, the SDK's older client-side compaction):
  when a reply's usage reaches a threshold, the older turns are replaced with a summary the model
  writes in a separate request (``split_point``, ``summary_request``, ``summarized_history``).

The transitions at the end change a ``RunState`` for compaction, as those of ``_core.transitions``
do for the rest of the loop.

Invariant of ``split_point``: the messages kept never start with a tool_result whose tool_use was
replaced, so no tool_use is ever separated from its tool_result; and the kept messages start where a
``role: "system"`` message may stand after the summary (which is a user message).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NotRequired, TypedDict, cast

from .messages import field, reply_param
from .state import Phase, RunState
from .usage import RequestUsage

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "DEFAULT_THRESHOLD",
    "CompactionControl",
    "compacted_history",
    "compaction_answered",
    "compaction_request",
    "has_summary",
    "kept_open_for_compaction",
    "split_point",
    "summarized_history",
    "summary_counted",
    "summary_request",
    "summary_text",
    "tokens_used",
]

DEFAULT_THRESHOLD = 100_000
"""Client-side compaction starts when a reply's usage reaches this many tokens (the SDK's default)."""

DEFAULT_SUMMARY_PROMPT = """You have been working on the task described above but have not yet completed it. Write a continuation summary that will allow you (or another instance of yourself) to resume work efficiently in a future context window where the conversation history will be replaced with this summary. Your summary should be structured, concise, and actionable. Include:
1. Task Overview
The user's core request and success criteria
Any clarifications or constraints they specified
2. Current State
What has been completed so far
Files created, modified, or analyzed (with paths if relevant)
Key outputs or artifacts produced
3. Important Discoveries
Technical constraints or requirements uncovered
Decisions made and their rationale
Errors encountered and how they were resolved
What approaches were tried that didn't work (and why)
4. Next Steps
Specific actions needed to complete the task
Any blockers or open questions to resolve
Priority order if multiple steps remain
5. Context to Preserve
User preferences or style requirements
Domain-specific details that aren't obvious
Any promises made to the user
Be concise but complete\u2014err on the side of including information that would prevent duplicate work or repeated mistakes. Write in a way that enables immediate resumption of the task.
Wrap your summary in <summary></summary> tags."""
"""The summary prompt of the SDK's client-side compaction, verbatim."""


class CompactionControl(TypedDict):
    """Client-side compaction: the SDK's ``compaction_control`` option, with one key more.

    When a reply's usage (input, cache and output tokens) reaches ``context_token_threshold``, the
    runner asks the model for a summary of the turns before the last ``keep_turns`` replies, and
    replaces them with it (a user message), before the next request.
    """

    enabled: bool
    """Whether to compact at all."""
    context_token_threshold: NotRequired[int]
    """Tokens of one reply's usage that start a compaction; 100,000 by default."""
    model: NotRequired[str]
    """The model that writes the summary; the run's model by default."""
    summary_prompt: NotRequired[str]
    """What the summary request asks; the SDK's prompt by default."""
    keep_turns: NotRequired[int]
    """How many of the latest replies (each with its tool results) to keep as they are; 1 by default."""


# -- client-side ----------------------------------------------------------------------------------


def tokens_used(reply: object) -> int:
    """A reply's whole context, as the SDK counts it: input, cache and output tokens."""
    usage = field(reply, "usage")
    return sum(
        field(usage, name) or 0
        for name in (
            "input_tokens",
            "cache_creation_input_tokens",
            "cache_read_input_tokens",
            "output_tokens",
        )
    )


def split_point(messages: Sequence[Any], keep_turns: int = 1) -> int:
    """Where the kept messages start: ``messages[:point]`` are replaced by a summary.

    The point is the ``keep_turns``-th last assistant message, moved back over the
    ``role: "system"`` messages right before it (they belong with the turn they precede). ``0``
    means there is nothing to replace (too few turns). An assistant message is never preceded by
    the tool_results of its own calls, so the pairs of tool_use and tool_result stay whole.
    """
    if keep_turns < 0:
        raise ValueError(f"keep_turns must be 0 or more, not {keep_turns!r}.")
    if keep_turns == 0:
        point = len(messages)
    else:
        assistants = [
            index for index, message in enumerate(messages) if field(message, "role") == "assistant"
        ]
        if len(assistants) < keep_turns:
            return 0
        point = assistants[-keep_turns]
        while point > 0 and field(messages[point - 1], "role") == "system":
            point -= 1
    # Replace nothing that would leave no conversation to summarize (only system messages before).
    if not any(field(message, "role") != "system" for message in messages[:point]):
        return 0
    return point


def summary_request(
    params: Mapping[str, Any], replaced: Sequence[Any], control: CompactionControl
) -> dict[str, Any]:
    """The request that asks for the summary of ``replaced``: the model, ``max_tokens``, the system
    prompt and ``betas`` of the run, no tools (as the SDK sends it)."""
    kwargs: dict[str, Any] = {
        "model": control.get("model", params["model"]),
        "max_tokens": params["max_tokens"],
        "messages": [
            *_without_unanswered_calls(replaced),
            {"role": "user", "content": control.get("summary_prompt", DEFAULT_SUMMARY_PROMPT)},
        ],
    }
    for name in ("system", "betas"):
        if name in params:
            kwargs[name] = params[name]
    return kwargs


def _without_unanswered_calls(messages: Sequence[Any]) -> list[Any]:
    """The replaced messages end before a kept assistant message, so a final assistant message among
    them (the whole history is replaced) may hold tool_use blocks nobody answered: drop those."""
    messages = list(messages)
    if messages and field(messages[-1], "role") == "assistant":
        content = field(messages[-1], "content")
        if not isinstance(content, str):
            kept = [block for block in content or () if field(block, "type") != "tool_use"]
            if kept:
                messages[-1] = {"role": "assistant", "content": kept}
            else:
                messages.pop()
    return messages


def summary_text(reply: object) -> str | None:
    """The summary a reply holds (its text blocks), or ``None`` when it has none."""
    texts = [
        field(block, "text") for block in field(reply, "content") or () if field(block, "type") == "text"
    ]
    text = "".join(text for text in texts if isinstance(text, str))
    return text or None


def summarized_history(messages: Sequence[Any], point: int, summary: str) -> list[Any]:
    """The history with ``messages[:point]`` replaced by the summary, as a user message."""
    return [{"role": "user", "content": [{"type": "text", "text": summary}]}, *messages[point:]]


# -- server-side ----------------------------------------------------------------------------------

# Params that only shape a reply, which a compaction request (whose reply is one block) may not have.
_REPLY_ONLY = ("context_management", "stop_sequences", "output_format")


def compaction_request(kwargs: Mapping[str, Any], compaction: Mapping[str, Any]) -> dict[str, Any]:
    """A request's keyword arguments made a compaction request, as the SDK's runner makes one: the
    params that only shape a reply left out, and ``compaction`` set. As in the SDK, no beta is added:
    ``compaction`` is a param of the beta endpoint only, which the request goes to with the run's own
    ``betas`` (the caller passes ``betas=["compact-2026-09-04"]``, see docs/migrating.md)."""
    request = {name: value for name, value in kwargs.items() if name not in _REPLY_ONLY}
    tool_choice = request.get("tool_choice")
    if isinstance(tool_choice, Mapping) and field(cast(object, tool_choice), "type") in ("any", "tool"):
        del request["tool_choice"]
    output_config = request.get("output_config")
    if isinstance(output_config, Mapping):
        config = cast("Mapping[str, Any]", output_config)
        request["output_config"] = {key: value for key, value in config.items() if key != "format"}
    request["compaction"] = dict(compaction)
    return request


def has_summary(reply: object) -> bool:
    """Whether a compaction reply holds a ``compaction`` block with a summary."""
    return any(
        field(block, "type") == "compaction" and field(block, "content")
        for block in field(reply, "content") or ()
    )


def compacted_history(messages: Sequence[Any], compacted: int, reply_param: Any) -> list[Any]:
    """The history after a compaction reply: the reply in place of the ``compacted`` messages it
    summarizes, then the messages added since the request went out (the reply itself, appended
    when the turn ended, is not added twice)."""
    added = [message for message in messages[compacted:] if message != reply_param]
    return [reply_param, *added]


# -- transitions --------------------------------------------------------------------------------


def compaction_answered(state: RunState, compacted: int, *, last: bool) -> RunState:
    """The turn of a compaction reply ended (``turn_finished`` appended it, unless the body changed
    the history): with a summary, the reply replaces the ``compacted`` messages it summarizes;
    without one, the history stays as it was. After the loop's last turn, the loop ends here."""
    reply = state.reply
    assert reply is not None
    param = reply_param(reply)
    if has_summary(reply):
        messages = compacted_history(state.messages, compacted, param)
    else:
        messages = [message for message in state.messages if message != param]
    state = state.replace(messages=tuple(messages))
    return state.replace(phase=Phase.DONE, end_reason="model") if last else state


def kept_open_for_compaction(state: RunState) -> RunState:
    """The loop ended with a compaction pending: it stays open for the compaction request."""
    return state.replace(phase=Phase.READY, end_reason=None)


def summary_counted(state: RunState, messages: Sequence[Any] | None, usage: RequestUsage) -> RunState:
    """A summary request was answered: its usage counts (it is a request), and, when it gave a
    summary, ``messages`` is the history."""
    if messages is not None:
        state = state.replace(messages=tuple(messages))
    return state.replace(
        usage=(*state.usage, usage),
        total=state.total + usage.usage,
        cost=None if usage.cost is None or state.cost is None else state.cost + usage.cost,
    )

"""What a sub-run's call is answered with (``_core.subruns``), pure: its final answer, or an error
result the model can act on (a limit, a request that fails again, a typed answer that does not
fit), with what the sub-agent had found so far; and how a saved sub-run goes on with its
sub-agent's typed answer (``sub_run_resumed``).
"""

from __future__ import annotations

from anthropic.types import ToolResultBlockParam

from .errors import ParamsError, message_of
from .history import text_of
from .messages import field
from .output import OutputFormat, output_resumed
from .results import tool_result_block
from .state import RunState
from .transitions import Limits, limit_reached
from .types import ToolCall

__all__ = [
    "error_text",
    "noted",
    "sub_run_answer",
    "sub_run_failed",
    "sub_run_resumed",
    "sub_run_typed",
]


_LIMITS = {
    "max_iterations": "max_iterations (its number of requests)",
    "token_budget": "max_total_tokens (its token budget)",
    "cost_budget": "max_cost (its cost budget)",
}
_TREE_LIMITS = {
    "max_iterations": "max_iterations (requests)",
    "token_budget": "max_total_tokens (tokens)",
    "cost_budget": "max_cost (US dollars)",
}


def sub_run_answer(
    call: ToolCall, agent: str, state: RunState, own: Limits | None = None
) -> ToolResultBlockParam:
    """The result of ``call``, whose sub-run ended at ``state``: its final text; or an error
    result the model can act on (a limit, with what it had found so far). A sub-run that pauses
    for approval has not ended: its call waits (``_core.nested``), and is never answered here.
    With ``own`` (the sub-agent's own limits), a limit it had not reached itself is named as the
    budget of the whole tree, which the run that called it shares."""
    reason = state.end_reason
    found = _found(state)
    if reason == "model":
        return tool_result_block(call.id, found or f"The sub-agent {agent!r} finished without a text answer.")
    if reason in _LIMITS and own is not None and limit_reached(state, own) != reason:
        text = (
            f"The sub-agent {agent!r} stopped before it finished: the budget of the whole run "
            f"({_TREE_LIMITS[reason]}, shared with the agents that called it) is spent. "
            f"What it had found so far: {found or 'nothing yet.'}"
        )
    elif reason in _LIMITS:
        text = (
            f"The sub-agent {agent!r} stopped at its limit {_LIMITS[reason]} before it finished. "
            f"What it had found so far: {found or 'nothing yet.'}"
        )
    elif reason == "closed":
        text = (
            f"The sub-agent {agent!r} was stopped before it finished: the run that called it was closed. "
            f"What it had found so far: {found or 'nothing yet.'}"
        )
    else:
        text = f"The sub-agent {agent!r} ended ({reason}) before it finished. What it had found so far: {found or 'nothing yet.'}"
    return tool_result_block(call.id, text, is_error=True)


def sub_run_failed(call: ToolCall, agent: str, state: RunState, error: BaseException) -> ToolResultBlockParam:
    """The result of ``call``, whose sub-run (at ``state``) stopped because its request failed
    with ``error``, which the same request meets again (``_core.api_errors.permanent``): an error
    result naming the sub-agent and the error, and what it had found so far, which the model can
    act on (answer without it, or ask it something else)."""
    found = _found(state)
    text = (
        f"The sub-agent {agent!r} stopped before it finished: its request to the API failed with "
        f"{error_text(error)[:_ERROR_LIMIT]}, which asking again would not change. "
        f"What it had found so far: {found or 'nothing yet.'}"
    )
    return tool_result_block(call.id, text, is_error=True)


def sub_run_typed(
    call: ToolCall, agent: str, state: RunState, output: OutputFormat
) -> ToolResultBlockParam | None:
    """The result of ``call``, whose sub-run ended at ``state``, for a sub-agent with the typed
    answer ``output``: the answer that fits, as the type's JSON (``OutputFormat.answer_text``: what was
    checked, validated and dumped by the type, not the model's text); or an error result the model
    can act on, for an answer that does not fit (its retries spent: the errors, and the answer) or
    a refusal; ``None`` if it ended otherwise (a limit: ``sub_run_answer``). Judged from the state
    alone, so a sub-run resumed after it ended is answered the same."""
    reply = state.reply
    if state.end_reason != "model" or reply is None:
        return None
    if reply.stop_reason == "refusal":
        return tool_result_block(
            call.id,
            f"The sub-agent {agent!r} refused the task (stop_reason 'refusal'); it gave no {output.name}. "
            f"What it said: {_found(state) or 'nothing.'}",
            is_error=True,
        )
    errors = output.errors(reply)
    text = None if errors else output.answer_text(reply)
    if text is not None:
        return tool_result_block(call.id, text)
    tries = output.retries + 1
    text = (
        f"The sub-agent {agent!r} answered, but its answer does not fit its output format {output.name} "
        f"after {tries} tr{'y' if tries == 1 else 'ies'}: {'; '.join(line.rstrip('.') for line in errors)[:_ERROR_LIMIT]}. "
        f"Its answer: {_found(state) or 'no text.'}"
    )
    return tool_result_block(call.id, text, is_error=True)


_ERROR_LIMIT = 1000
"""Characters of an API error's description the model reads."""


def error_text(error: BaseException) -> str:
    """``NotFoundError (status 404): Error code: 404 - {...}``."""
    status = getattr(error, "status_code", None)
    return f"{type(error).__name__}{'' if status is None else f' (status {status})'}: {message_of(error)}"


_NOTE = "raised in a sub-agent's run: "


def noted(error: BaseException, path: tuple[str, ...]) -> None:
    """Say where ``error``, raised out of the sub-run at ``path`` (a call id and a sub-agent's
    name, relative to the run one level up), came from: a note (PEP 678) with the path from the
    root, as ``SubRunEvent.path`` gives it. Each level up puts its part in front of the note the
    level below wrote, so the error carries one note however deep it was raised."""
    notes: list[object] = getattr(error, "__notes__", None) or [None]
    where = " → ".join(path)
    last = notes[-1]
    if isinstance(last, str) and last.startswith(_NOTE):  # the level below's
        notes[-1] = f"{_NOTE}{where} → {last[len(_NOTE) :]}"
        return
    error.add_note(_NOTE + where)


def _found(state: RunState) -> str:
    """The latest text the sub-agent's model wrote (its answer, or what it had found so far)."""
    if state.reply is not None and (text := text_of(state.reply)):
        return text
    for message in reversed(state.messages):
        if field(message, "role") == "assistant" and (text := text_of(message)):
            return text
    return ""


def sub_run_resumed(state: RunState, call: ToolCall, agent: str, output: OutputFormat | None) -> RunState:
    """The saved sub-run of ``call`` (to the sub-agent ``agent``), going on with the sub-agent's
    typed answer ``output`` as given now: the schema it started with, its reply parsed again.

    Raises:
        ParamsError: The sub-agent's ``output_format`` is not the one its sub-run started with.
    """
    try:
        return output_resumed(state, output)
    except ParamsError:
        started = state.output is not None and bool(state.output.schema)
        if started and output is not None:
            how = "with another output_format than the SubAgent given now has"
        elif started:
            how = "with an output_format, and the SubAgent given now has none"
        else:
            how = "without output_format, and the SubAgent given now has one"
        raise ParamsError(
            f"the saved sub-run of the call {call.id!r} (the sub-agent {agent!r}) was started {how}; resume "
            "the run with the SubAgent as it was (its output_format=... of the same JSON schema, or none), or "
            "start a new run."
        ) from None

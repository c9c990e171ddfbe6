"""The names and attributes of toolrunner's spans that more than one driver writes: what the run's
hooks decided on a call (``toolrunner.tool.hook``, ...), the attributes of an ``execute_tool`` span
(``tool_attributes``) and what an ``invoke_agent`` span says of the run that ended (``ended_attributes``),
for ``otel.py``, ``subrun_spans.py`` and Temporal's workflow (``temporal/_tracing.py``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .._core.state import RunState
from .._core.types import ToolCall
from .._core.usage import Usage

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

__all__ = [
    "END_REASON",
    "HOOK",
    "HOOK_EVENT",
    "HOOK_REASON",
    "RESULT_REPLACED",
    "ended_attributes",
    "json_attribute",
    "stopped_attributes",
    "tool_attributes",
]

END_REASON = "toolrunner.end_reason"
"""Why the run's span ended: the runner's ``end_reason``, or ``"abandoned"`` (see ``otel._abandon``)."""
HOOK = "toolrunner.tool.hook"
"""What the run's hooks decided on a call: ``"run"``, ``"rewritten"``, ``"denied"`` or ``"limited"``."""
HOOK_REASON = "toolrunner.tool.hook_reason"
"""Why the hooks stopped a call (what the model read), or withheld its result."""
RESULT_REPLACED = "toolrunner.tool.result_replaced"
"""``True`` on a call whose result an ``after_tool_call`` hook replaced."""
HOOK_EVENT = "toolrunner.hook"
"""The run span's event for a request or an answer a hook refused (``before_request``, ``check_output``)."""


def ended_attributes(state: RunState, usage: Usage) -> dict[str, AttributeValue]:
    """What an ``invoke_agent`` span says of a run (a sub-run) that stopped at ``state``, having spent
    ``usage``: its tokens, its model, and why it ended (``END_REASON``)."""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "gen_ai.usage.cache_read.input_tokens": usage.cache_read_input_tokens,
        "gen_ai.usage.cache_write.input_tokens": usage.cache_creation_input_tokens,
    }
    model = state.params.get("model")
    if isinstance(model, str):
        attributes["gen_ai.request.model"] = model
    if state.end_reason is not None:
        attributes[END_REASON] = state.end_reason
    return attributes


def stopped_attributes(call: ToolCall, decision: str, reason: str | None) -> dict[str, AttributeValue]:
    """The attributes of the span of a call the hooks stopped (``decision``: denied, limited)."""
    attributes = tool_attributes(call, decision)
    return attributes if reason is None else {**attributes, HOOK_REASON: reason}


def tool_attributes(call: ToolCall, hook: str | None = None) -> dict[str, AttributeValue]:
    """The attributes of ``call``'s ``execute_tool`` span; ``hook``: what the run's hooks decided."""
    attributes: dict[str, AttributeValue] = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": call.name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "function",
    }
    return attributes if hook is None else {**attributes, HOOK: hook}


def json_attribute(value: object) -> str:
    """``value`` as the JSON text a span attribute holds (content that JSON cannot hold as its ``repr``)."""
    try:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
    except ValueError:  # a circular structure (in an input a person approved, say)
        return json.dumps(repr(value), ensure_ascii=False)

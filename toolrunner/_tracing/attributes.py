"""The names and attributes of toolrunner's spans that more than one driver writes: what the run's
hooks decided on a call (``toolrunner.tool.hook``, ...), and the attributes of an ``execute_tool``
span (``tool_attributes``), for ``otel.py`` and for Temporal's workflow (``temporal/_tracing.py``)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from .._core.types import ToolCall

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

__all__ = [
    "HOOK",
    "HOOK_EVENT",
    "HOOK_REASON",
    "RESULT_REPLACED",
    "json_attribute",
    "stopped_attributes",
    "tool_attributes",
]

HOOK = "toolrunner.tool.hook"
"""What the run's hooks decided on a call: ``"run"``, ``"rewritten"``, ``"denied"`` or ``"limited"``."""
HOOK_REASON = "toolrunner.tool.hook_reason"
"""Why the hooks stopped a call (what the model read), or withheld its result."""
RESULT_REPLACED = "toolrunner.tool.result_replaced"
"""``True`` on a call whose result an ``after_tool_call`` hook replaced."""
HOOK_EVENT = "toolrunner.hook"
"""The run span's event for a request or an answer a hook refused (``before_request``, ``check_output``)."""


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

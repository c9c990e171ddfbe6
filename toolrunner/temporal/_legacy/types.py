# FROZEN as of commit 8cff606: toolrunner/_core/types.py, less what the legacy body never reaches.
# Never edit: see ``_legacy/__init__.py``.
"""The types that the core and the drivers share; this module imports nothing else of the package.

Keeping them here is what lets the core (``_lifecycle``, ``_state``, ``_execution``, ``_tools``, ...)
stay free of imports from the drivers (``_runner``, ``_sync``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, TypedDict

from anthropic.types import Message, ToolResultBlockParam
from anthropic.types.beta import BetaMessage

__all__ = ["Decision", "DecisionSource", "EndReason", "Reply", "ToolCall", "ToolResultMessage"]

Reply: TypeAlias = Message | BetaMessage
"""A reply: a ``Message``, or a ``BetaMessage`` from the beta endpoint (``betas``, or a beta-only param)."""


EndReason: TypeAlias = Literal[
    "model", "max_iterations", "token_budget", "cost_budget", "closed", "awaiting_approval"
]
"""Why a loop ended: the model stopped (see the stop-reason table), ``max_iterations`` requests
got a reply, the token or cost budget was reached, the runner was closed, or (a pause, not an end)
tool calls wait for a decision."""


Decision: TypeAlias = Literal["approved", "denied", "answered"]
DecisionSource: TypeAlias = Literal["runner", "store", "callback", "gate", "timeout"]
"""Where a decision on a call came from: the runner's ``approve``/``deny``/``answer`` (or a Temporal
update), a store (its API, the CLI, the inbox), the ``approve=`` callback, a gate that failed
(denied, fail closed), or the time for a decision running out."""
"""How a call that waited for a decision was decided."""


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One client ``tool_use`` block, read from a message.

    Attributes:
        id: The tool_use id that the tool_result must carry.
        name: The tool's name.
        input: The input as the model sent it (normally a dict; anything, when the model erred).
        toolset_name: For a call to a member of a toolset family (``browser``, ``computer``, ...),
            the family; its tool_result must carry it too.
    """

    id: str
    name: str
    input: object
    toolset_name: str | None = None


class ToolResultMessage(TypedDict):
    """The user message that answers tool calls: one tool_result block per call, in tool_use order."""

    role: Literal["user"]
    content: list[ToolResultBlockParam]

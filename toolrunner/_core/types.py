"""The types that the core and the drivers share; this module imports nothing else of the package.

Keeping them here is what lets the core and the tools (``_core.transitions``, ``_core.state``,
``_tools.execution``, ``_tools.tool``, ...) stay free of imports from the drivers (``_runner.runner``,
``_runner.sync``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeAlias, TypedDict, TypeVar

from anthropic.lib.streaming import AsyncMessageStream, BetaAsyncMessageStream
from anthropic.types import Message, ParsedMessage, ToolResultBlockParam
from anthropic.types.beta import BetaMessage
from anthropic.types.beta.parsed_beta_message import ParsedBetaMessage

from .frozen import frozen_init

__all__ = [
    "Decision",
    "DecisionSource",
    "EndReason",
    "HookVerdict",
    "ParsedReply",
    "Reply",
    "ReplyStream",
    "RunnerView",
    "ToolCall",
    "ToolFlags",
    "ToolResultMessage",
]

Reply: TypeAlias = Message | BetaMessage
"""A reply: a ``Message``, or a ``BetaMessage`` from the beta endpoint (``betas``, or a beta-only param)."""

OutputT = TypeVar("OutputT")

if TYPE_CHECKING:
    ParsedReply: TypeAlias = ParsedMessage[OutputT] | ParsedBetaMessage[OutputT]
    """A reply of a runner with ``output_format=OutputT``: the SDK's ``ParsedMessage[OutputT]`` (a
    ``ParsedBetaMessage[OutputT]`` from the beta endpoint), a ``Reply`` whose ``parsed_output`` is the
    answer, ``OutputT | None``. What ``ToolRunner(..., output_format=OutputT)`` yields, as checkers
    see it."""
else:

    class _ParsedReply:
        """``ParsedReply`` at run time: ``ParsedReply[T]`` is ``ParsedMessage[T] | ParsedBetaMessage[T]``
        (the SDK's parsed messages are pydantic generics, which a ``Union`` of them cannot subscript)."""

        def __getitem__(self, output_type: object) -> object:
            return ParsedMessage[output_type] | ParsedBetaMessage[output_type]  # type: ignore[valid-type]

        def __repr__(self) -> str:
            return "toolrunner.ParsedReply"

    ParsedReply = _ParsedReply()

ReplyStream: TypeAlias = AsyncMessageStream[Any] | BetaAsyncMessageStream[Any]
"""What a streaming runner yields: the SDK's stream of one reply."""

EndReason: TypeAlias = Literal[
    "model", "max_iterations", "token_budget", "cost_budget", "closed", "awaiting_approval"
]
"""Why a loop ended: the model stopped (see the stop-reason table), ``max_iterations`` requests
got a reply, the token or cost budget was reached, the runner was closed, or (a pause, not an end)
tool calls wait for a decision."""


Decision: TypeAlias = Literal["approved", "denied", "answered"]
DecisionSource: TypeAlias = Literal["runner", "store", "callback", "gate", "timeout"]

HookVerdict: TypeAlias = Literal["run", "rewritten", "denied", "limited"]
"""What the run's hooks decided on a tool call, as its record keeps it (``CallRecord.hook``)."""
"""Where a decision on a call came from: the runner's ``approve``/``deny``/``answer`` (or a Temporal
update), a store (its API, the CLI, the inbox), the ``approve=`` callback, a gate that failed
(denied, fail closed), or the time for a decision running out."""
"""How a call that waited for a decision was decided."""


@frozen_init
@dataclass(frozen=True, slots=True)
class ToolCall:
    """One client ``tool_use`` block, read from a message.

    Attributes:
        id: The tool_use id that the tool_result must carry.
        name: The tool's name.
        input: The input as the model sent it (normally a dict; anything, when the model erred).
        toolset_name: For a call to a member of a toolset family (``browser``, ``computer``, ...),
            the family; its tool_result must carry it too.
        path: Where the call is, for a call inside a sub-agent's run (``runner.pending_approvals``
            lists those that wait for a decision): the id of the parent's call that runs the
            sub-agent and the sub-agent's name, then the same pair for each level below, as
            ``SubRunEvent.path``; ``()`` for a call of the run's own. It says where the call is,
            not which call it is: it is not saved, and equality leaves it out.
    """

    id: str
    name: str
    input: object
    toolset_name: str | None = None
    path: tuple[str, ...] = field(default=(), compare=False)


class ToolResultMessage(TypedDict):
    """The user message that answers tool calls: one tool_result block per call, in tool_use order."""

    role: Literal["user"]
    content: list[ToolResultBlockParam]


class RunnerView(Protocol):
    """The runner as a tool sees it (``ToolContext.runner``): a ``ToolRunner``, typed by what a
    tool may use, so that the core needs no import of the driver."""

    @property
    def params(self) -> Mapping[str, Any]: ...
    @property
    def messages(self) -> Sequence[Any]: ...
    @property
    def last_message(self) -> Reply | None: ...
    @property
    def requests_sent(self) -> int: ...
    @property
    def finished(self) -> bool: ...
    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None: ...
    def set_messages_params(self, params: Any) -> None: ...
    def close(self) -> None: ...


class ToolFlags(Protocol):
    """What the core reads of a tool (a ``RunnableTool`` is one): the flags that decide when its
    calls may run. Tools are code, and live with the driver; the core sees only this."""

    @property
    def sequential(self) -> bool: ...
    @property
    def start_early(self) -> bool: ...
    @property
    def idempotent(self) -> bool: ...
    @property
    def requires_approval(self) -> object: ...

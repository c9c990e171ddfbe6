"""What the workflow and its activities pass each other: plain dataclasses of JSON values, so that
Temporal's default data converter carries them and a history stays readable in its UI.

These values are what workflow history holds; large data is kept out of them (see ``_payloads``).
"""

# No ``from __future__ import annotations``: Temporal's converter reads these dataclasses' type
# hints on every payload it converts, and string annotations are evaluated each time (slow in the
# workflow sandbox).

from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, TypeVar

import pydantic
from anthropic.types import Message
from anthropic.types.beta import BetaMessage

from .._core.types import Reply
from .._core.usage import Usage
from ._payloads import Payloads, PayloadStore, is_stub

__all__ = [
    "Answer",
    "Approval",
    "CompactInput",
    "DecisionInput",
    "Denial",
    "EventsInput",
    "GateInput",
    "GateOutput",
    "MessagesInput",
    "ParamsInput",
    "RequestInput",
    "RequestOutput",
    "RunInput",
    "RunResult",
    "Segment",
    "SummaryInput",
    "SummaryOutput",
    "ToolInput",
    "ToolSpec",
]

T = TypeVar("T")


@dataclass
class ToolSpec:
    """What the workflow knows of a runnable tool of the run (the tool itself is code, on the workers)."""

    name: str
    idempotent: bool = False
    sequential: bool = False
    timeout: float | None = None
    gated: bool = False
    """Whether its calls may wait for a decision (its ``requires_approval`` is not ``False``)."""
    agent: dict[str, Any] | None = None
    """For a sub-agent (``SubAgent``): its ``definition()``, from which the workflow runs its
    sub-runs (its code, its tools', is on the workers, found by name)."""
    tools: "list[ToolSpec] | None" = None
    """For a sub-agent: the flags of its tools (a sub-agent among them has its own ``agent``)."""


@dataclass
class Segment:
    """What a run carries into its next segment when it continues as new, besides its state (which
    holds a window of the latest messages; the whole history is in the payload store)."""

    history: str | None
    """The key of the history node of the last request."""
    sent: int
    """How many of the state's messages that node holds (the rest were appended since)."""
    elided: dict[str, Any]
    """What the state leaves out (``_core.run.Elided``): ``messages``, ``requests``, ``counted``,
    ``changes``."""
    checked: int
    """The state's messages are known to be valid before this index."""
    kept_removals: list[str] = field(default_factory=list[str])
    """Tools a compaction's summary dropped the removal of: they stay removed."""
    traced: dict[str, int] | None = None
    """With tracing: the usage when the run's open ``invoke_agent`` span opened."""
    number: int = 1
    """How many segments the run has had before this one."""


@dataclass
class RunInput:
    """The workflow's input: a new run's state and its configuration that is data."""

    state: dict[str, Any]
    """``RunState.to_dict()`` of the new run: params, tools (names and raw definitions), messages."""
    tools: list[ToolSpec]
    limits: dict[str, Any]
    """``max_iterations``, ``max_total_tokens``, ``max_cost`` (a decimal string) and ``on_limit``."""
    max_concurrency: int | None
    tool_timeout: float | None
    activities: dict[str, Any]
    """``ActivityOptions.to_data()``."""
    approval_timeout: float | None = None
    """Seconds a call may wait for a decision before it is denied; ``None``: forever."""
    cache: dict[str, Any] | None = None
    """The run's ``CachePolicy`` (its fields), when it caches prompts."""
    compaction_control: dict[str, Any] | None = None
    """Client-side compaction (the ``compaction_control`` option), if on."""
    tracing: dict[str, Any] | None = None
    """``{"content": ..., "agent_name": ...}`` of the run's ``Tracing``, when it is traced."""
    continue_as_new_events: int = 10_000
    """The run continues as new once a segment's history holds this many events."""
    segment: Segment | None = None
    """What the segment before left, when the run continued as new (``None``: a new run)."""
    output: dict[str, Any] | None = None
    """The typed final answer (``start_run(output_format=...)``): ``{"name", "retries", "schema"}``,
    the output type's name on the workers, ``output_retries``, and its schema's fingerprint once
    known (``_output``)."""
    hooks: dict[str, Any] | None = None
    """The run's hooks and call limits (``start_run(hooks=..., max_calls=...)``): ``{"name",
    "max_calls", "retries", "plan"}`` (``_hook_data``)."""


@dataclass
class RequestInput:
    """One request: what is new since the history node ``base`` (the node of the previous request)."""

    run_id: str
    base: str | None
    params: dict[str, Any] | None
    """The request params (``model``, ``max_tokens``, ...), or ``None`` when ``base``'s stand."""
    tools: list[Any] | None
    """The ``tools`` param (tool names, raw definitions), or ``None`` when ``base``'s stand."""
    messages: list[Any]
    """The messages appended since ``base``, large blocks as stubs."""
    final_answer: str | None = None
    """The limit that makes this the last request (sent with ``tool_choice: none``)."""
    cache: dict[str, Any] | None = None
    """The run's ``CachePolicy`` (its fields), when it caches prompts."""
    compaction: dict[str, Any] | None = None
    """Make it a compaction request with this config (``compact_before_next_turn``)."""
    removed: list[str] | None = None
    """Tools the run's tool changes removed: their calls are not gated (they run no tool)."""
    output: dict[str, Any] | None = None
    """The run's output type: ``{"name", "schema"}`` (its schema is sent in ``output_config``)."""
    path: list[str] | None = None
    """A sub-run's request: the path of its sub-run (``SubRunEvent.path``: the call's id and the
    sub-agent's name, for each level), whose sub-agent's tools it offers; ``None``: the run's own."""


@dataclass
class RequestOutput:
    """A request's reply, as the workflow needs it."""

    reply: dict[str, Any]
    """The reply as JSON, large blocks as stubs."""
    beta: bool
    usage: dict[str, Any]
    """``request_usage_data`` of the reply (tokens, and the cost at the worker's prices)."""
    history: str
    """The key of the history node this request stored."""
    gated: list[str] = field(default_factory=list[str])
    """The tool_use ids of the calls that wait for a decision (their tools' ``requires_approval``)."""
    denied: dict[str, str] = field(default_factory=dict[str, str])
    """Calls denied because deciding whether they need approval failed, with the reason."""
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])
    """The definition of each waiting call's tool, by tool_use id (kept with the call)."""
    specs: list[ToolSpec] = field(default_factory=list[ToolSpec])
    """The flags of the tools the reply calls that a ``Toolset`` offers (the run's other tools
    are in its input)."""
    output: dict[str, Any] | None = None
    """For a run with an output type, the reply parsed with it: ``{"schema", "errors", "value"}``
    (``_output.answer_data``)."""


@dataclass
class SummaryInput:
    """The summary request of client-side compaction: the history is the node ``base`` and
    ``messages``; its first ``point`` messages are summarized."""

    run_id: str
    base: str | None
    params: dict[str, Any]
    messages: list[Any]
    point: int
    control: dict[str, Any]


@dataclass
class SummaryOutput:
    """The summary request's reply, whole (the summary becomes a message), and its usage."""

    reply: dict[str, Any]
    beta: bool
    usage: dict[str, Any]


@dataclass
class GateInput:
    """Calls whose gates no request evaluated (the calls of a history a client set)."""

    run_id: str
    calls: list[dict[str, Any]]
    """``{"id", "name", "input", "toolset_name"}`` of each call."""
    removed: list[str] = field(default_factory=list[str])
    path: list[str] | None = None
    """Calls of a sub-run: its path (their gates are its sub-agent's tools')."""


@dataclass
class GateOutput:
    """Which calls wait for a decision, which are denied (and why), the waiting calls' tools."""

    gated: list[str] = field(default_factory=list[str])
    denied: dict[str, str] = field(default_factory=dict[str, str])
    definitions: dict[str, dict[str, Any]] = field(default_factory=dict[str, dict[str, Any]])


@dataclass
class EventsInput:
    """Events of a run that no activity witnessed, for the worker's ``on_event`` (``_events_data``)."""

    run_id: str
    events: list[dict[str, Any]]


@dataclass
class MessagesInput:
    """The argument of the steering updates: the messages to push, or the new history."""

    messages: list[Any]


@dataclass
class ParamsInput:
    """The argument of the ``toolrunner.set_params`` update: the params to change (``None``: remove)."""

    params: dict[str, Any]


@dataclass
class CompactInput:
    """The argument of the ``toolrunner.compact`` update: the compaction config, or ``None``."""

    compaction: dict[str, Any] | None = None


@dataclass
class ToolInput:
    """One tool call."""

    run_id: str
    id: str
    name: str
    input: Any
    toolset_name: str | None = None
    """For a member of a toolset family (``browser``, ...): the family."""
    timeout: float | None = None
    """The run's ``tool_timeout`` (a tool's own timeout wins)."""
    available: list[str] | None = None
    """For a name that is no runnable tool of the run: the run's tools, for the error the model reads."""
    unrunnable: list[str] = field(default_factory=list[str])
    """The names of the run's raw tool definitions (never run)."""
    approved_input: Any = None
    """The input a person approved instead of the model's, if any."""
    removed: list[str] = field(default_factory=list[str])
    """Tools the run's tool changes removed: a call to one is answered like a call to no tool."""
    trace: dict[str, Any] | None = None
    """``{"content": ...}`` when the run is traced: the call gets an ``execute_tool`` span."""
    path: list[str] | None = None
    """A call of a sub-run: its path (``RequestInput.path``); its tool is its sub-agent's."""


@dataclass
class Approval:
    """The ``toolrunner.approve`` update's argument: ``{"id": ..., "input": ...}``."""

    id: str
    input: Any = None
    """The input to run the call with instead of the model's, if any."""
    by: str | None = None
    """Who decided, kept with the call."""


@dataclass
class Denial:
    """The ``toolrunner.deny`` update's argument: ``{"id": ..., "reason": ...}``."""

    id: str
    reason: str
    by: str | None = None


@dataclass
class Answer:
    """The ``toolrunner.answer`` update's argument: ``{"id": ..., "result": ..., "is_error": false}``."""

    id: str
    result: Any
    is_error: bool = False
    by: str | None = None


@dataclass
class DecisionInput:
    """A decision that needs the worker: an approved input to check, or an answer to convert."""

    run_id: str
    id: str
    name: str
    kind: str
    """``"approve"`` (``value`` is the input) or ``"answer"`` (``value`` is the result)."""
    value: Any
    is_error: bool = False
    toolset_name: str | None = None
    path: list[str] | None = None
    """A call of a sub-run: its path (``RequestInput.path``); its tool is its sub-agent's."""


@dataclass
class RunResult:
    """How a run ended: what ``await handle.result()`` gives.

    Blocks larger than the workers' ``inline_limit`` are stubs here, as in workflow history:
    ``final_message(store)`` and ``messages(store)`` give them whole.

    Attributes:
        run_id: The run's name (its workflow id).
        end_reason: Why the loop ended: ``"model"``, ``"max_iterations"``, ``"token_budget"``,
            ``"cost_budget"`` or ``"closed"``.
        reply: The final reply as JSON, or ``None`` if no request got one.
        beta: Whether the replies are ``BetaMessage`` s.
        history: The key of the history node of the last request.
        appended: The messages appended to the history after the last request.
        requests: How many requests got a reply.
        usage: The token counts, summed over the requests.
        cost: The cost in US dollars as a decimal string, or ``None`` when a model had no price.
        output: For a run started with ``output_format=``, the final reply's answer, validated on
            a worker by the output type, as JSON data (``output_as(Type)`` gives it as ``Type``);
            ``None`` when the run has no output type, or its last reply no answer that fits (a
            limit ended the run on a tool turn, say). An answer whose JSON is longer than the
            workers' ``inline_limit`` is a stub here, as large blocks are: ``final_output(store)``
            gives it whole.
    """

    run_id: str
    end_reason: str
    reply: dict[str, Any] | None
    beta: bool
    history: str | None
    appended: list[Any]
    requests: int
    usage: dict[str, int]
    cost: str | None
    output: Any = None

    def output_as(self, output_type: type[T]) -> T | None:
        """``output`` as ``output_type`` (the type the workers registered, as the client has it:
        validated by pydantic from the JSON data); ``None`` when ``output`` is.

        Raises:
            pydantic.ValidationError: ``output`` does not fit ``output_type``.
            ValueError: ``output`` is a stub (``final_output(store)`` reads it).
        """
        if self.output is None:
            return None
        if is_stub(self.output):
            raise ValueError(
                "the run's answer is larger than the workers' inline_limit, so the result holds a reference to it in "
                "the payload store; read it with await result.final_output(store), and validate that: "
                "pydantic.TypeAdapter(YourType).validate_python(...)."
            )
        return pydantic.TypeAdapter(output_type).validate_python(self.output)

    async def final_output(self, store: PayloadStore) -> Any:
        """``output``, whole: read back from ``store`` if it is a stub (a large answer)."""
        return await Payloads(store).load_value(self.output)

    @property
    def message(self) -> Reply | None:
        """The final reply as an SDK message (large blocks as stubs)."""
        if self.reply is None:
            return None
        return (BetaMessage if self.beta else Message).model_validate(self.reply)

    @property
    def total(self) -> Usage:
        """The token counts, summed over the requests."""
        return Usage(**self.usage)

    @property
    def total_cost(self) -> Decimal | None:
        """The cost in US dollars, or ``None`` when a model had no price."""
        return None if self.cost is None else Decimal(self.cost)

    async def final_message(self, store: PayloadStore) -> Reply | None:
        """The final reply, whole: its large blocks read back from ``store``."""
        if self.reply is None:
            return None
        (message,) = await Payloads(store).resolve([{"role": "assistant", "content": self.reply["content"]}])
        return (BetaMessage if self.beta else Message).model_validate(
            {**self.reply, "content": message["content"]}
        )

    async def messages(self, store: PayloadStore) -> list[Any]:
        """The whole history, read back from ``store``: the message params as the next request
        would send them."""
        payloads = Payloads(store)
        before = () if self.history is None else (await payloads.load_history(self.history)).messages
        return await payloads.resolve([*before, *self.appended])

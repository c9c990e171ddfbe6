"""The state of a run as one value: ``RunState``, its records, and the JSON form of its parts.

A ``RunState`` is everything a run needs to go on that is data, not code: the request params
(tools by name), the history, where the lifecycle stands, the journal of the current turn's tool
calls, and the usage so far. It is immutable; the transitions in ``_core.transitions`` return new states,
and the drivers keep the current one. Tools, clients and callbacks are code, so a run's
configuration (``_runner.options``) is kept apart from it and given again on resume.

Invariants:

- ``end_reason`` is set exactly in ``DONE`` and ``AWAITING`` (``"awaiting_approval"``);
- ``reply`` is set in ``WITH_BODY`` (the reply the loop body holds) and is the latest complete reply
  otherwise; in ``STREAMING`` the newest reply is still arriving and is not ``reply``;
- ``calls`` holds only calls of the turn being answered: it is emptied when a turn's results are
  appended or abandoned, so a tool_use id that comes again in a later turn is a new call;
- a call whose record is ``FINISHED`` is never run again; a call whose record is ``AWAITING``
  never runs until a decision makes it ``APPROVED``.

The whole state's JSON form (``RunState.to_dict``, ``RunState.from_dict``) is written and read in
``_core.state_json``; what other layers write apart (a message, a request's usage) is here.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, Self, cast

import pydantic
from anthropic.types import ToolResultBlockParam

from .errors import StateError
from .messages import api_exclude
from .types import Decision, DecisionSource, EndReason, HookVerdict, Reply, ToolCall
from .usage import RequestUsage, Usage

__all__ = [
    "FINISHED_PHASES",
    "STATE_VERSION",
    "CallRecord",
    "CallStatus",
    "Decision",
    "DecisionRecord",
    "OutputRecord",
    "Phase",
    "RunState",
    "SubRun",
    "SubRunSummary",
    "decided_at",
    "message_data",
    "plain_data",
    "read_request_usage",
    "request_usage_data",
    "usage_data",
]

STATE_VERSION = 5
"""The version of ``RunState``'s JSON form that this toolrunner writes.

Version 2 added decisions on tool calls (approvals): the statuses ``awaiting`` and ``approved``,
and a call record's ``input`` and ``decision``; version 1 states load with none of them.
Version 3 added the pending tool changes (``tool_changes``); older states load with none.
Version 4 added who decided a call and when (``decided_by``, ``decided_at``), the definition of
a waiting call's tool (``tool``), the phase ``received``, and the error that stopped the last
step (``failure``); older states load with none of them.
Version 5 added the audit of decisions (``decisions``); an older state loads with one entry for
each decided call of its journal.
"""


class Phase(enum.Enum):
    """Where the lifecycle stands."""

    READY = "ready"
    """The next step is to send a request."""
    RECEIVED = "received"
    """A complete reply arrived and has not been handed to the loop body yet: the next step saves
    it (if the run has a checkpointer) and hands it over."""
    STREAMING = "streaming"
    """A request's reply is streaming (to the loop body, or to the runner)."""
    WITH_BODY = "with_body"
    """A complete reply was handed to the loop body, which may steer until it asks for more."""
    AWAITING = "awaiting"
    """The loop is paused: calls of the reply wait for a decision (``end_reason`` is
    ``"awaiting_approval"``). Once every call is decided, iterating again goes on."""
    DONE = "done"
    """The loop is over; ``end_reason`` says why. Steering opens it again."""


FINISHED_PHASES = (Phase.DONE, Phase.AWAITING)
"""The phases in which the loop has ended or is paused (``RunState.finished``)."""


def decided_at(now: datetime) -> str:
    """A decision's time as the journal and the audit keep it, whoever decided (the runner, a
    store, a workflow): ISO 8601, UTC, to the millisecond. The caller reads the clock."""
    return now.astimezone(UTC).isoformat(timespec="milliseconds")


class CallStatus(enum.Enum):
    """Where one tool call stands in the journal."""

    AWAITING = "awaiting"
    """The call needs a decision (approve, deny, or an answer from elsewhere) before it may run."""
    APPROVED = "approved"
    """A person approved the call (perhaps with an edited input); it runs with the turn."""
    STARTED = "started"
    """The tool was started and has not finished (after a crash: it may or may not have acted)."""
    FINISHED = "finished"
    """The call has its result; it never runs again."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One tool call of the current turn, as the journal keeps it.

    Attributes:
        call: The tool_use block being answered, as the model sent it.
        status: Where the call stands.
        result: The tool_result block, once finished.
        approved_input: The input the call runs with, when a person edited it on approval.
        decision: How a call that needed one was decided: ``"approved"``, ``"denied"`` or
            ``"answered"`` (its result came from elsewhere).
        decided_by: Who decided it, as the decider said (``approve(..., by="ada")``), if known.
        decided_at: When it was decided: an ISO 8601 time in UTC, to the millisecond (``decided_at()``),
            if known.
        tool: For a call that waits for a decision: its tool's definition as the model saw it
            (``name``, ``description``, ``input_schema``), so that a person, or a process without
            the tools, can read what the call does and check an edited input.
        hook: What the run's hooks decided on the call (``_core.hooks``): ``"run"``,
            ``"rewritten"`` (it runs with ``hook_input``), ``"denied"`` (by ``before_tool_call``)
            or ``"limited"`` (over its tool's ``max_calls``); ``None`` if the run has no hooks or
            they have not decided yet. A call whose hooks decided is never asked about again.
        hook_input: The input a ``before_tool_call`` hook gave the call instead (``"rewritten"``).
        sub_run: For a call whose tool is a sub-agent (``SubAgent``): the sub-run it runs, as its
            last save left it (``_core.subruns``); ``None`` for other calls.
    """

    call: ToolCall
    status: CallStatus
    result: ToolResultBlockParam | None = None
    approved_input: object = None
    decision: Decision | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    tool: Mapping[str, Any] | None = None
    hook: HookVerdict | None = None
    hook_input: object = None
    sub_run: SubRun | None = None


@dataclass(frozen=True, slots=True)
class SubRun:
    """The run a sub-agent's call runs (``_core.subruns``): kept in the call's record, inside the
    parent's state, so that one save of the parent saves the tree.

    Attributes:
        agent: The sub-agent's name (its tool's name).
        state: The sub-run's own state, as a run's (its history starts with the task).
    """

    agent: str
    state: RunState


@dataclass(frozen=True, slots=True)
class SubRunSummary:
    """A sub-run that ended, as its parent keeps it for the life of the run (``RunState.sub_runs``;
    the call's record, and the sub-run's state in it, leave the journal with the turn).

    Attributes:
        path: Where it ran, as ``SubRunEvent.path`` says it: the id of the call that ran it and
            the sub-agent's name, then, for a sub-run of a sub-run, the next call id and name, ...
        usage: The usage of each of its own requests that got a reply (those of its own
            sub-runs are in their summaries).
        end_reason: Why it ended (its state's ``end_reason``); ``None`` when a request of it failed
            with an error the same request meets again, which ended it (``_core.subruns``).
    """

    path: tuple[str, ...]
    usage: tuple[RequestUsage, ...] = ()
    end_reason: EndReason | None = None

    @property
    def call_id(self) -> str:
        """The id of the call that ran it (in the run one level up)."""
        return self.path[-2]

    @property
    def agent(self) -> str:
        """The sub-agent's name."""
        return self.path[-1]

    @property
    def agents(self) -> tuple[str, ...]:
        """The path of sub-agents' names alone (``("researcher", "searcher")``)."""
        return self.path[1::2]

    @property
    def total(self) -> Usage:
        """The sum of ``usage``."""
        total = Usage()
        for request in self.usage:
            total += request.usage
        return total

    @property
    def cost(self) -> Decimal | None:
        """The sum of its requests' costs in US dollars; ``None`` if one had no price."""
        cost: Decimal | None = Decimal(0)
        for request in self.usage:
            cost = None if cost is None or request.cost is None else cost + request.cost
        return cost


@dataclass(frozen=True, slots=True)
class DecisionRecord:
    """One decision on a tool call, as the run's audit keeps it for the life of the run (the
    journal, ``RunState.calls``, holds only the current turn).

    Attributes:
        call: The call as the model sent it: its id, its tool's name and its original input.
        decision: ``"approved"``, ``"denied"`` or ``"answered"`` (a result from elsewhere).
        approved_input: The input the call ran with instead, when a person edited it on approval.
        reason: What the model read for a denial.
        by: Who decided, as the decider said, if known.
        at: When: an ISO 8601 time in UTC, if known.
        via: Where the decision came from (``DecisionSource``): ``"runner"``, ``"store"``,
            ``"callback"``, ``"gate"`` (denied because the gate failed) or ``"timeout"``;
            ``None`` for a decision recorded before the audit existed (state version 4).
        path: Where the call was, for a call inside a sub-agent's run (as ``ToolCall.path`` and
            ``SubRunEvent.path`` say it: the id of the call that ran the sub-agent and its name,
            then the same pair for each level below); ``()`` for a call of the run's own. A
            sub-run's decisions join its parent's audit with their path when it ends
            (``_core.tree_audit``).
    """

    call: ToolCall
    decision: Decision
    approved_input: object = None
    reason: str | None = None
    by: str | None = None
    at: str | None = None
    via: DecisionSource | None = None
    path: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OutputRecord:
    """Where a run with a typed final answer (``output_format=``) stands (``_core.output``).

    Attributes:
        schema: The fingerprint of the answer's JSON schema, as sent in ``output_config.format``:
            a run is resumed only with an ``output_format`` of the same schema.
        retries: How many times the answer under way was sent back to the model because it did
            not fit (``output_retries=`` bounds it); 0 once an answer fits, or the run gave up.
    """

    schema: str
    retries: int = 0


@dataclass(frozen=True, kw_only=True)  # no slots: ``replace`` copies the instance's dict at once
class RunState:
    """A run's state: a value that can be saved, loaded and resumed (see docs/durability.md).

    Attributes:
        params: The request params other than ``messages`` and ``tools``.
        tools: The ``tools`` param: a runnable tool by its name, a raw definition as given.
        messages: The history.
        phase: Where the lifecycle stands.
        reply: The reply the loop body holds (``WITH_BODY``), else the latest complete reply.
        steered: Whether the loop body changed the history since the reply was handed over.
        calls: The journal of the current turn's tool calls, by tool_use id, in start order.
        usage: The usage of every request that got a complete reply, in order.
        total: The sum of ``usage``.
        cost: The sum of the requests' costs in US dollars; ``None`` once one had no price.
        opened_at: How many requests of the run's tree (its own and its sub-runs') had got a
            reply when the loop last (re)opened; ``max_iterations`` counts from there.
        final_answer: The limit that made the request under way the last one (sent with
            ``tool_choice: none``), if any.
        end_reason: Why the loop ended (or paused); set exactly in ``DONE`` and ``AWAITING``.
        run_id: The run's name in a checkpoint store, if it has one.
        tool_changes: The tool_addition / tool_removal blocks of ``add_tools()`` and
            ``remove_tools()`` not sent yet; the next request sends them in a ``role: "system"``
            message. They count at once: with the history's, they say which tools run.
        failure: The error that stopped the last step (``{"type": ..., "message": ...}``), if the
            step raised one (a service error, a refused save); ``None`` once a step succeeds.
        decisions: Every decision taken on the run's calls, in the order they were taken
            (``DecisionRecord``): who, when, how, with which input; kept for the life of the run.
            The decisions taken inside a sub-run join it, with their ``path``, when the sub-run
            ends (or its call leaves the journal with its turn): until then they are in the
            sub-run's state (``_core.tree_audit.decisions_in_tree`` reads both).
        output: For a run with a typed final answer (``output_format=``), its schema's fingerprint
            and the retries of the answer under way (``OutputRecord``); ``None`` otherwise.
        call_counts: How many calls of each tool (by name) started in the run, for a run with
            per-tool limits or hooks (``max_calls=``, ``hooks=``; ``_core.hooks``); empty otherwise.
        sub_runs: Every sub-run of the tree below this run that ended (``SubRunSummary``: where,
            its requests' usage, why it ended), in the order they ended; kept for the life of the
            run, for the tree's budget and per-agent figures (``_core.tree_usage``).
    """

    params: Mapping[str, Any]
    tools: tuple[str | Mapping[str, Any], ...] = ()
    messages: tuple[Any, ...] = ()
    phase: Phase = Phase.READY
    reply: Reply | None = None
    steered: bool = False
    calls: Mapping[str, CallRecord] = field(default_factory=dict[str, CallRecord])
    usage: tuple[RequestUsage, ...] = ()
    total: Usage = field(default_factory=Usage)
    cost: Decimal | None = Decimal(0)
    opened_at: int = 0
    final_answer: EndReason | None = None
    end_reason: EndReason | None = None
    run_id: str | None = None
    tool_changes: tuple[Mapping[str, Any], ...] = ()
    failure: Mapping[str, str] | None = None
    decisions: tuple[DecisionRecord, ...] = ()
    output: OutputRecord | None = None
    call_counts: Mapping[str, int] = field(default_factory=dict[str, int])
    sub_runs: tuple[SubRunSummary, ...] = ()

    @property
    def requests_sent(self) -> int:
        """How many requests got a reply (a reply that is still streaming counts)."""
        return len(self.usage) + (self.phase is Phase.STREAMING)

    @property
    def finished(self) -> bool:
        """Whether the loop has ended, or is paused for decisions."""
        return self.phase in FINISHED_PHASES

    def result_of(self, call: ToolCall) -> ToolResultBlockParam | None:
        """The journal's result for a call of the current turn, if that very call (id, name and
        input) finished; a call that only shares its id is another call."""
        record = self.calls.get(call.id)
        if record is None or (record.call is not call and record.call != call):
            return None
        return record.result

    def replace(self, **changes: Any) -> Self:
        """A copy with ``changes``, as the dataclass's ``replace`` makes it, but without running
        ``__init__``: the transitions make several copies a turn, and the fields need no checks."""
        values = self.__dict__.copy()  # one copy of the fields, not an empty dict grown to hold them
        values.update(changes)
        if len(values) != len(self.__dict__):  # a name that is not a field added a key
            raise TypeError(f"RunState has no field(s) {sorted(changes.keys() - _FIELD_NAMES)!r}")
        new = object.__new__(type(self))
        object.__setattr__(new, "__dict__", values)
        return new

    # -- JSON ---------------------------------------------------------------------------------

    def to_json(self) -> str:
        """The state as JSON text; ``RunState.from_json`` reads it back.

        Raises:
            StateError: A param or message holds a value JSON cannot carry.
        """
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """Read a state written by ``to_json`` of this or an older version.

        Raises:
            StateError: The text is not a saved state (not JSON, nested too deeply, a field that
                does not fit; the message names it), or a newer toolrunner wrote it.
        """
        try:
            data = json.loads(text)
        except ValueError as error:
            raise StateError(f"the saved state is not valid JSON ({error}); it cannot be loaded.") from None
        except RecursionError:
            raise StateError(
                "the saved state is nested too deeply for Python to read (deeper than its recursion limit); it "
                "cannot be loaded. Load only what RunState.to_json() or a checkpointer wrote."
            ) from None
        return cls.from_dict(data)

    def to_dict(self, *, history: bool = True) -> dict[str, Any]:
        """The state as JSON-able data. With ``history=False`` the two parts that grow with the
        run, ``messages`` and the per-request ``usage``, are left out (a store that writes them
        apart passes them back to ``from_dict``)."""
        from .state_json import state_data  # it reads this module's classes: imported when first used

        return state_data(self, history=history)

    @classmethod
    def from_dict(
        cls,
        data: object,
        *,
        messages: Sequence[Any] | None = None,
        usage: Sequence[Any] | None = None,
    ) -> RunState:
        """Read ``to_dict``'s data (of this or an older version); ``messages`` and ``usage``, when
        given, stand for the parts ``to_dict(history=False)`` left out.

        Raises:
            StateError: The data is not a saved state, a newer toolrunner wrote it, or a field does
                not fit the saved form's schema (``_core.state_schema``; the message names the field).
        """
        from .state_json import read_state  # it reads this module's classes: imported when first used

        return read_state(data, messages=messages, usage=usage)


_FIELD_NAMES = tuple(item.name for item in fields(RunState))


# -- the parts ---------------------------------------------------------------------------------


def plain_data(value: object, where: str) -> Any:
    """``value`` as JSON-able data: SDK models are dumped the way the SDK sends them.

    Raises:
        StateError: Something in it JSON cannot carry, or it is nested too deeply to be written;
            the message says where.
    """
    try:
        return _plain(value, where)
    except RecursionError:
        raise StateError(
            f"{where} is nested too deeply to be saved (deeper than Python's recursion limit); keep such data "
            "out of the run's state, or flatten it."
        ) from None


def _plain(value: object, where: str) -> Any:
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Mapping):
        return {
            str(key): _plain(item, f"{where}[{key!r}]")
            for key, item in cast("Mapping[object, object]", value).items()
        }
    if isinstance(value, list | tuple):
        return [
            _plain(item, f"{where}[{index}]") for index, item in enumerate(cast("Sequence[object]", value))
        ]
    if isinstance(value, pydantic.BaseModel):
        return value.model_dump(
            mode="json",
            by_alias=True,
            exclude_unset=True,
            exclude=api_exclude(type(value)),
            warnings=False,
        )
    raise StateError(
        f"{where} holds a {type(value).__name__!r}, which a saved state cannot carry; use JSON values "
        "(str, numbers, lists, dicts) there, or set such options on the client instead."
    )


def message_data(message: object, index: int) -> Any:
    """One history message as JSON-able data."""
    return plain_data(message, f"messages[{index}]")


def request_usage_data(request: RequestUsage) -> dict[str, Any]:
    """One request's usage as JSON-able data."""
    return {
        "model": request.model,
        **usage_data(request.usage),
        "cost": None if request.cost is None else str(request.cost),
    }


def read_request_usage(data: Mapping[str, Any]) -> RequestUsage:
    """One request's usage from ``request_usage_data``'s form."""
    cost = data["cost"]
    return RequestUsage(
        model=data["model"],
        usage=Usage(
            data["input_tokens"],
            data["output_tokens"],
            data["cache_read_input_tokens"],
            data["cache_creation_input_tokens"],
        ),
        cost=None if cost is None else Decimal(cost),
    )


def usage_data(usage: Usage) -> dict[str, int]:
    """Token counts as JSON-able data."""
    return {
        "input_tokens": usage.input_tokens,
        "output_tokens": usage.output_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "cache_creation_input_tokens": usage.cache_creation_input_tokens,
    }

"""``RunState``'s JSON form, written and read: what ``RunState.to_dict`` and ``RunState.from_dict``
do (``_core.state`` holds the value; ``_core.state_schema`` the saved form's schema and migrations).

A saved state is read in three steps: its version is checked (``_version``), the data is migrated
and checked against the schema, and the state is built from it (``_read``), with the few rules
the schema cannot say. A field that does not fit is reported by name (``_damaged``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from decimal import Decimal
from typing import Any, cast

from anthropic.types import ToolResultBlockParam
from anthropic.types.beta import BetaMessage

from .errors import StateError
from .messages import read_reply, reply_data
from .state import (
    STATE_VERSION,
    CallRecord,
    CallStatus,
    DecisionRecord,
    OutputRecord,
    Phase,
    RunState,
    SubRun,
    SubRunSummary,
    message_data,
    plain_data,
    read_request_usage,
    request_usage_data,
    usage_data,
)
from .state_schema import check_messages, check_state, check_usage, migrated
from .types import Reply, ToolCall
from .usage import Usage

__all__ = ["read_state", "state_data"]


def state_data(state: RunState, *, history: bool = True) -> dict[str, Any]:
    """``state`` as JSON-able data (``RunState.to_dict``)."""
    data: dict[str, Any] = {
        "version": STATE_VERSION,
        "run_id": state.run_id,
        "phase": state.phase.value,
        "params": {key: plain_data(value, f"params[{key!r}]") for key, value in state.params.items()},
        "tools": [plain_data(tool, "tools") for tool in state.tools],
        "reply": None if state.reply is None else _reply_data(state.reply),
        "steered": state.steered,
        "calls": [_record_data(record) for record in state.calls.values()],
        "total": usage_data(state.total),
        "cost": None if state.cost is None else str(state.cost),
        "opened_at": state.opened_at,
        "final_answer": state.final_answer,
        "end_reason": state.end_reason,
        "tool_changes": [plain_data(block, "tool_changes") for block in state.tool_changes],
        "failure": None if state.failure is None else dict(state.failure),
        "decisions": [_decision_data(record) for record in state.decisions],
    }
    if state.output is not None:  # written only for a typed answer: other states are as before
        data["output"] = {"schema": state.output.schema, "retries": state.output.retries}
    if state.call_counts:  # written only for a run with hooks or limits
        data["call_counts"] = dict(state.call_counts)
    if state.sub_runs:  # written only for a run whose sub-agents ran: other states are as before
        data["sub_runs"] = [_summary_data(summary) for summary in state.sub_runs]
    if history:
        data["messages"] = [message_data(message, index) for index, message in enumerate(state.messages)]
        data["usage"] = [request_usage_data(request) for request in state.usage]
    return data


def read_state(data: object, *, messages: Sequence[Any] | None, usage: Sequence[Any] | None) -> RunState:
    """The state ``state_data`` gave (of this or an older version; ``RunState.from_dict``).

    Raises:
        StateError: The data is not a saved state, a newer toolrunner wrote it, or a field does
            not fit the saved form's schema.
    """
    version = _version(data)
    try:
        return _read_version(cast("Mapping[str, Any]", data), version, messages, usage)
    except _NewerSubRun as newer:
        raise StateError(
            f"the state was saved by a newer toolrunner: its sub-run at {_path_text(newer.path)} has state version "
            f"{newer.version}, and this one reads up to {STATE_VERSION}; upgrade toolrunner to resume it."
        ) from None
    except _DamagedSubRun as error:
        raise _damaged(version, f"in its sub-run at {_path_text(error.path)}, {error.problem}") from error
    except _READ_ERRORS as error:
        raise _damaged(version, _problem(error)) from error


_READ_ERRORS = (KeyError, TypeError, ValueError, ArithmeticError, RecursionError)
"""What reading damaged data raises (the schema's checks, and the rules ``_read`` adds)."""


def _read_version(
    data: Mapping[str, Any], version: int, messages: Sequence[Any] | None, usage: Sequence[Any] | None
) -> RunState:
    """The state of saved ``data`` of ``version`` (one this toolrunner reads), migrated and checked."""
    data = migrated(data, version)
    check_state(data)
    messages = check_messages(data["messages"] if messages is None else messages)
    usage = check_usage(data["usage"] if usage is None else usage)
    return _read(data, messages, usage)


class _DamagedSubRun(ValueError):
    """A sub-run's saved state that cannot be read: where (its path, as ``SubRunEvent.path``: the
    call's id and the sub-agent's name, level by level) and what does not fit, said once by the
    whole state's error (``read_state``)."""

    def __init__(self, path: tuple[str, ...], problem: str) -> None:
        super().__init__(problem)
        self.path = path
        self.problem = problem


class _NewerSubRun(Exception):
    """A sub-run's saved state that a newer toolrunner wrote (its path, its version)."""

    def __init__(self, path: tuple[str, ...], version: int) -> None:
        super().__init__(version)
        self.path = path
        self.version = version


def _version(data: object) -> int:
    """The state version of saved data, which this toolrunner reads.

    Raises:
        StateError: The data has none, one no toolrunner wrote, or one a newer toolrunner wrote.
    """
    version = cast("Mapping[str, Any]", data).get("version") if isinstance(data, Mapping) else None
    if not isinstance(version, int) or isinstance(version, bool):
        raise StateError(
            f"the saved data is not a RunState (no 'version' field: {_preview(cast(object, data))}); load only what "
            "RunState.to_json() or a checkpointer wrote."
        )
    if version < 1:
        raise StateError(
            f"the saved data has state version {version}, which no toolrunner wrote (versions start at 1); "
            "load only what RunState.to_json() or a checkpointer wrote."
        )
    if version > STATE_VERSION:
        raise StateError(
            f"the state was saved by a newer toolrunner (state version {version}; this one reads up to "
            f"{STATE_VERSION}); upgrade toolrunner to resume it."
        )
    return version


def _problem(error: Exception) -> str:
    """What reading saved data failed on, in words (a field's path, its value, why)."""
    if isinstance(error, KeyError):
        return f"{error.args[0]} is missing"
    if type(error) is ValueError:
        return str(error)
    return f"{type(error).__name__}: {error}"


def _damaged(version: int, problem: str) -> StateError:
    """The error for saved data of ``version`` that reading failed on (``problem``)."""
    return StateError(
        f"the saved state (version {version}) is damaged and cannot be loaded: {_words(problem, 400)}. "
        "Restore it from a copy, or correct that field as RunState.to_json() writes it."
    )


def _path_text(path: Sequence[str]) -> str:
    """A sub-run's path as the inbox shows it (``toolu_1 → researcher → toolu_7 → searcher``); a
    very deep one with its middle left out."""
    if len(path) > 8:
        path = [*path[:4], f"... ({len(path) // 2 - 3} levels) ...", *path[-2:]]
    return " → ".join(path)


def _read(data: Mapping[str, Any], messages: Sequence[Any], usage: Sequence[Any]) -> RunState:
    """The state of checked data (``_core.state_schema``); what the schema cannot say is checked here."""
    phase = Phase(data["phase"])
    end_reason = data["end_reason"]
    if (phase in (Phase.DONE, Phase.AWAITING)) != (end_reason is not None):
        raise ValueError(
            f"end_reason is {end_reason!r} in the phase {phase.value!r}; it is set exactly in the phases 'done' "
            "and 'awaiting'"
        )
    if phase in (Phase.RECEIVED, Phase.WITH_BODY, Phase.AWAITING) and data["reply"] is None:
        raise ValueError(f"reply is None in the phase {phase.value!r}, which holds a reply")
    ids = [record["id"] for record in data["calls"]]
    if len(set(ids)) != len(ids):
        raise ValueError(f"calls has two records of one tool_use id ({ids!r})")
    requests = tuple(read_request_usage(item) for item in usage)
    _check_inputs(data, messages)
    records = [_read_record(index, item) for index, item in enumerate(data["calls"])]
    cost = data["cost"]
    output = data.get("output")
    return RunState(
        params=dict(data["params"]),
        tools=tuple(data["tools"]),
        messages=tuple(messages),
        phase=phase,
        reply=None if data["reply"] is None else _read_reply(data["reply"]),
        steered=data["steered"],
        calls={record.call.id: record for record in records},
        usage=requests,
        total=Usage(**data["total"]),
        cost=None if cost is None else Decimal(cost),
        opened_at=data["opened_at"],
        final_answer=data["final_answer"],
        end_reason=end_reason,
        run_id=data["run_id"],
        tool_changes=tuple(dict(block) for block in data["tool_changes"]),
        failure=None if data["failure"] is None else dict(data["failure"]),
        decisions=tuple(_read_decision(item) for item in data["decisions"]),
        output=None if output is None else OutputRecord(schema=output["schema"], retries=output["retries"]),
        call_counts=dict(data.get("call_counts") or {}),
        sub_runs=tuple(_read_summary(item) for item in data.get("sub_runs") or ()),
    )


# -- the parts ---------------------------------------------------------------------------------


def _reply_data(reply: Reply) -> dict[str, Any]:
    return {"beta": isinstance(reply, BetaMessage), "message": reply_data(reply)}


def _read_reply(data: Mapping[str, Any]) -> Reply:
    return read_reply(data["message"], beta=bool(data["beta"]))


def _call_data(call: ToolCall) -> dict[str, Any]:
    """The call a journal record or an audit entry is of, as both write it."""
    return {
        "id": call.id,
        "name": call.name,
        "input": plain_data(call.input, f"the input of tool_use {call.id!r}"),
        "toolset_name": call.toolset_name,
    }


def _read_call(data: Mapping[str, Any]) -> ToolCall:
    """The call ``_call_data`` wrote."""
    return ToolCall(
        id=data["id"], name=data["name"], input=data["input"], toolset_name=data.get("toolset_name")
    )


def _record_data(record: CallRecord) -> dict[str, Any]:
    call = record.call
    data = {
        **_call_data(call),
        "status": record.status.value,
        "result": None if record.result is None else plain_data(record.result, f"the result of {call.id!r}"),
        "approved_input": plain_data(record.approved_input, f"the approved input of {call.id!r}"),
        "decision": record.decision,
        "decided_by": record.decided_by,
        "decided_at": record.decided_at,
        "tool": None if record.tool is None else plain_data(record.tool, f"the tool of {call.id!r}"),
    }
    if record.hook is not None:  # written only when hooks decided: other records are as before
        data["hook"] = record.hook
        data["hook_input"] = plain_data(record.hook_input, f"the hook's input of {call.id!r}")
    if record.sub_run is not None:  # written only for a sub-agent's call: other records are as before
        data["sub_run"] = {"agent": record.sub_run.agent, "state": state_data(record.sub_run.state)}
    return data


def _read_record(index: int, data: Mapping[str, Any]) -> CallRecord:
    result = data["result"]
    sub_run = data.get("sub_run")
    decision = data["decision"]
    if decision not in (None, "approved", "denied", "answered"):
        raise ValueError(f"decision {decision!r}")
    if sub_run is not None:
        given: object = data["input"]
        task = cast("Mapping[str, object]", given).get("task") if isinstance(given, Mapping) else None
        if not isinstance(task, str):
            raise ValueError(
                f"calls[{index}].input is {_preview(data['input'])}, but the call has a sub-run: a sub-agent's call "
                'that runs one has the input {"task": string}'
            )
        if sub_run["agent"] != data["name"]:
            raise ValueError(
                f"calls[{index}].sub_run.agent is {_preview(sub_run['agent'])}, but the call is to {data['name']!r}: a "
                "sub-run's agent is the sub-agent its call calls"
            )
    return CallRecord(
        call=_read_call(data),
        status=CallStatus(data["status"]),
        result=None if result is None else cast(ToolResultBlockParam, dict(result)),
        approved_input=data["approved_input"],
        decision=decision,
        decided_by=data["decided_by"],
        decided_at=data["decided_at"],
        tool=None if data["tool"] is None else dict(data["tool"]),
        hook=data.get("hook"),
        hook_input=data.get("hook_input"),
        sub_run=None if sub_run is None else _read_sub_run(data["id"], sub_run),
    )


def _read_sub_run(call_id: str, data: Mapping[str, Any]) -> SubRun:
    """The sub-run of a sub-agent's call: its state is read as a whole saved state is (of any
    version this toolrunner reads); what does not fit in it, or a version a newer toolrunner
    wrote, is raised with its path (``_DamagedSubRun``, ``_NewerSubRun``), which the whole
    state's error names once (``read_state``)."""
    agent: str = data["agent"]
    where = (call_id, agent)
    nested: Mapping[str, Any] = data["state"]  # a JSON object: the schema says so
    version = nested.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _DamagedSubRun(
            where, f"version is {_preview(version)}: a saved state's version is a positive int"
        )
    if version > STATE_VERSION:
        raise _NewerSubRun(where, version)
    try:
        state = _read_version(nested, version, None, None)
    except _NewerSubRun as newer:
        raise _NewerSubRun((*where, *newer.path), newer.version) from None
    except _DamagedSubRun as error:
        raise _DamagedSubRun((*where, *error.path), error.problem) from None
    except _READ_ERRORS as error:
        raise _DamagedSubRun(where, _problem(error)) from None
    if call_id in state.calls:  # its decisions and paths would name two calls at once
        raise _DamagedSubRun(
            where,
            f"calls has a call of id {call_id!r}, the id of the call that runs this sub-run: ids are unique",
        )
    return SubRun(agent=agent, state=state)


def _check_inputs(data: Mapping[str, Any], messages: Sequence[Any]) -> None:
    """A journal record's input is an object, unless the model erred and its tool_use block (in
    the reply or the history) has that same input (a runner answers such a call with an error)."""
    odd = [
        (index, item) for index, item in enumerate(data["calls"]) if not isinstance(item["input"], Mapping)
    ]
    if not odd:
        return
    blocks: dict[object, object] = {}
    reply = data["reply"]
    for message in (*messages, None if reply is None else reply["message"]):
        content = (
            cast("Mapping[str, object]", message).get("content") if isinstance(message, Mapping) else None
        )
        for block in cast("list[object]", content) if isinstance(content, list) else ():
            if isinstance(block, Mapping):
                fields = cast("Mapping[str, object]", block)
                if fields.get("type") == "tool_use":
                    blocks[fields.get("id")] = fields.get("input")
    for index, item in odd:
        if item["id"] not in blocks or blocks[item["id"]] != item["input"]:
            raise ValueError(
                f"calls[{index}].input is {_preview(item['input'])}: a call's input is an object, as its tool_use "
                "block has it"
            )


def _summary_data(summary: SubRunSummary) -> dict[str, Any]:
    return {
        "path": list(summary.path),
        "usage": [request_usage_data(request) for request in summary.usage],
        "end_reason": summary.end_reason,
    }


def _read_summary(data: Mapping[str, Any]) -> SubRunSummary:
    path = tuple(data["path"])
    if not path or len(path) % 2:
        raise ValueError(f"sub_runs has a path {list(path)!r}: call ids and agents' names, in pairs")
    return SubRunSummary(
        path=path,
        usage=tuple(read_request_usage(item) for item in data["usage"]),
        end_reason=data["end_reason"],
    )


def _decision_data(record: DecisionRecord) -> dict[str, Any]:
    call = record.call
    data = {
        **_call_data(call),
        "decision": record.decision,
        "approved_input": plain_data(record.approved_input, f"the approved input of {call.id!r}"),
        "reason": record.reason,
        "by": record.by,
        "at": record.at,
        "via": record.via,
    }
    if record.path:  # written only for a decision inside a sub-run: other states are as before
        data["path"] = list(record.path)
    return data


def _read_decision(data: Mapping[str, Any]) -> DecisionRecord:
    path = tuple(data.get("path") or ())
    if len(path) % 2:
        raise ValueError(f"decisions has a path {list(path)!r}: call ids and agents' names, in pairs")
    return DecisionRecord(
        call=_read_call(data),
        decision=data["decision"],
        approved_input=data["approved_input"],
        reason=data["reason"],
        by=data["by"],
        at=data["at"],
        via=data["via"],
        path=path,
    )


def _preview(value: object, limit: int = 80) -> str:
    try:
        text = repr(value)
    except Exception:  # a foreign object's __repr__ may raise; the error is still reported
        text = f"a {type(value).__name__!r}"
    return _cut(text, limit)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _words(text: str, limit: int) -> str:
    """``text`` cut to about ``limit`` characters at a space, saying so (a value's preview is
    short already: what is cut is a long message's tail)."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    space = cut.rfind(" ")
    return (cut[:space] if space > limit // 2 else cut) + " [cut short]"

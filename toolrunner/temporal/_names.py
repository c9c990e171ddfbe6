"""The names a Temporal run is known by: stable, documented (docs/temporal.md), and part of every
recorded history, so a change breaks the runs in flight."""

from __future__ import annotations

__all__ = [
    "ANSWER_UPDATE",
    "APPROVE_UPDATE",
    "CLOSE_SIGNAL",
    "COMPACT_UPDATE",
    "DECISION_ACTIVITY",
    "DENY_UPDATE",
    "EFFECTS_CORE",
    "EVENTS_ACTIVITY",
    "GATE_ACTIVITY",
    "HOOKS_NOT_REGISTERED",
    "HOOK_ACTIVITY",
    "OUTPUT_NOT_REGISTERED",
    "OUTPUT_REJECTED",
    "PARAMS_UPDATE",
    "PENDING_QUERY",
    "PUSH_UPDATE",
    "REQUEST_ACTIVITY",
    "RUN_ENDED",
    "SET_UPDATE",
    "STATE_QUERY",
    "SUMMARY_ACTIVITY",
    "TOOL_ACTIVITY",
    "TOOL_NOT_REGISTERED",
    "WORKFLOW",
]

WORKFLOW = "toolrunner.run"
"""The workflow type."""
REQUEST_ACTIVITY = "toolrunner.request"
"""The activity that sends one request to the Messages API (its summary names the model)."""
TOOL_ACTIVITY = "toolrunner.tool"
"""The activity that runs one tool call (its summary names the tool)."""
DECISION_ACTIVITY = "toolrunner.decision"
"""The activity that checks an approved input, or converts an answer, with the worker's tools."""
SUMMARY_ACTIVITY = "toolrunner.summarize"
"""The activity that sends the summary request of client-side compaction (``compaction_control``)."""
GATE_ACTIVITY = "toolrunner.gate"
"""The activity that evaluates the approval gates of calls no request evaluated (a history a client set)."""
HOOK_ACTIVITY = "toolrunner.hook"
"""The activity that asks one of a run's hooks (``start_run(hooks=...)``), or which hooks a name stands for."""
EVENTS_ACTIVITY = "toolrunner.events"
"""The local activity that hands the worker's ``on_event`` the events no other activity witnessed."""
CLOSE_SIGNAL = "toolrunner.close"
"""The signal that ends a run as ``ToolRunner.close()`` does."""
APPROVE_UPDATE = "toolrunner.approve"
"""The update that approves a call that waits: ``(tool_use_id, input=None)``."""
DENY_UPDATE = "toolrunner.deny"
"""The update that denies a call: ``(tool_use_id, reason)``."""
ANSWER_UPDATE = "toolrunner.answer"
"""The update that answers a call with a result computed elsewhere: ``(tool_use_id, result, is_error=False)``."""
PUSH_UPDATE = "toolrunner.push_messages"
"""The update that appends messages to the history, as a loop body's ``push_messages()``: ``{"messages"}``."""
SET_UPDATE = "toolrunner.set_messages"
"""The update that replaces the history, as a loop body's ``set_messages_params()``: ``{"messages"}``."""
PARAMS_UPDATE = "toolrunner.set_params"
"""The update that changes request params, as a loop body's ``set_messages_params()`` with the current
params updated: ``{"params"}`` (a param given as ``None`` is removed)."""
COMPACT_UPDATE = "toolrunner.compact"
"""The update that makes the next request a compaction request, as a loop body's
``compact_before_next_turn()``: ``{"compaction"}`` (``None``: ``{"type": "summarize"}``)."""
STATE_QUERY = "toolrunner.state"
"""The query that gives the run's ``RunState`` (``to_dict()``; large blocks as stubs)."""
PENDING_QUERY = "toolrunner.pending_approvals"
"""The query that lists the calls that wait for a decision."""
RUN_ENDED = "RunEndedError"
"""The error type of an update refused because the run's loop ended first; ``RunHandle`` raises
``RunEndedError`` for it, as for an update that finds the workflow closed."""
TOOL_NOT_REGISTERED = "ToolNotRegistered"
"""The error type of an activity asked to run a tool its worker does not have."""
OUTPUT_NOT_REGISTERED = "OutputTypeNotRegistered"
"""The error type of a run whose output type (``start_run(output_format=...)``) its worker does not
have, or has with another schema."""
HOOKS_NOT_REGISTERED = "HooksNotRegistered"
"""The error type of a run whose hooks (``start_run(hooks=...)``) its worker does not have."""
OUTPUT_REJECTED = "OutputValidationError"
"""The error type of a run that failed as its answer never fit its output type (its details: the
errors, the answer); ``RunHandle.result()`` raises ``OutputValidationError`` for it."""
EFFECTS_CORE = "effects-core"
"""The patch under which the workflow drives the run's orchestration (``RunCore``); runs started
before it take the legacy body, frozen in ``_legacy/``, so their histories replay."""

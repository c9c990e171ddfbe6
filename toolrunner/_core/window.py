"""The history's window and compaction (``WindowCore``): what a driver leaves out of the state it
keeps (``elide``; ``_core.base.Elided`` says what), what a new segment of the run carries over
(``carry``, ``restore``), and compaction's requests: ``compact_before_next_turn()``
(``compact_next``), the request that summarizes, what its answer makes of the turn, and
client-side compaction after a turn.

A link of ``RunCore``'s chain (``_core.base``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any, cast

from .base import CoreBase, Elided, ToolT
from .compaction import (
    DEFAULT_THRESHOLD,
    compaction_answered,
    has_summary,
    kept_open_for_compaction,
    split_point,
    summarized_history,
    summary_counted,
    summary_text,
    tokens_used,
)
from .effects import Program, Summarize
from .errors import ParamsError
from .log import INFO, WARNING, log
from .messages import client_tool_calls, field
from .state import Phase, RunState
from .stop_reasons import StopReasonStep, step_for
from .tool_changes import last_changes, pending_message, removed_by, removed_tools
from .transitions import Limits

__all__ = ["WindowCore"]


class WindowCore(CoreBase[ToolT]):
    """The window of the history the state holds, and compaction (see the module docstring)."""

    # -- the window ---------------------------------------------------------------------------------

    def _limits(self) -> Limits:
        """The limits the next request is checked against: the run's, less the elided requests
        that count toward ``max_iterations``; for a sub-run, capped by what its parent's tree has
        left (``cap``)."""
        counted, limits = self.elided.counted, self.limits
        if counted and limits.max_iterations is not None:
            limits = dataclasses.replace(limits, max_iterations=limits.max_iterations - counted)
        return limits if self.cap is None else self.cap(self.state, limits)

    def limits_now(self) -> Limits:
        """The limits the next request would be checked against now (``_limits``): a sub-run's
        adapter caps its child's with them (``_core.subruns``)."""
        return self._limits()

    def carry(self) -> dict[str, Any]:
        """What a new segment of this run needs of the core besides its state, as JSON data: what
        was elided (``elide``), how far the window is checked, and the removals kept; ``restore``
        gives it to the next segment's core."""
        elided = self.elided
        return {
            "elided": {
                "messages": elided.messages,
                "requests": elided.requests,
                "counted": elided.counted,
                "changes": dict(elided.changes),
            },
            "checked": self.checked,
            "kept_removals": sorted(self.kept_removals),
        }

    def restore(self, carried: Mapping[str, Any]) -> None:
        """Know what the segment before knew (``carry``'s data)."""
        elided = carried["elided"]
        self.elided = Elided(
            messages=elided["messages"],
            requests=elided["requests"],
            counted=elided["counted"],
            changes=dict(elided["changes"]),
        )
        self.checked = carried["checked"]
        self.kept_removals = frozenset(carried["kept_removals"])

    def elide(self, messages: int, requests: int) -> None:
        """Leave the first ``messages`` of the history and the usage of the first ``requests``
        requests out of the state, for a driver that keeps them elsewhere (``Elided``): the tool
        changes they made still count, and so do the requests toward ``max_iterations``. The part
        of the history kept must hold what the core reads: the messages not sent yet, and for
        client-side compaction the turns it keeps (and one before them)."""
        state = self.state
        if not 0 <= messages <= len(state.messages) or not 0 <= requests <= len(state.usage):
            raise ValueError(f"cannot elide {messages} messages and {requests} requests of {state!r}")
        elided = self.elided
        self.elided = Elided(
            messages=elided.messages + messages,
            requests=elided.requests + requests,
            counted=elided.counted + max(requests - state.opened_at, 0),
            changes=dict(elided.changes) | last_changes(state.messages[:messages]),
        )
        # The window's first message is not the conversation's: the checks of the first message
        # (a user's) were made on the whole, and the window is checked from its second on.
        self.checked = max(self.checked - messages, 1 if self.elided.messages else 0)
        self._folded = None
        self.make_current(
            state.replace(
                messages=state.messages[messages:],
                usage=state.usage[requests:],
                opened_at=max(state.opened_at - requests, 0),
            )
        )

    def _history_replaced(self, *, whole: bool = True) -> None:
        """The history was replaced (a store writes it anew); ``whole``: by one that stands whole,
        nothing of it elided (a summary, or the body's new history)."""
        self.history_epoch += 1
        if whole and (self.elided.messages or self.elided.changes):
            self.elided = dataclasses.replace(self.elided, messages=0, changes={})
            self._folded = None

    def _reopening(self) -> None:
        """The body steers: a loop that ended opens again, and counts its requests anew."""
        if self.state.phase is Phase.DONE and self.elided.counted:
            self.elided = dataclasses.replace(self.elided, counted=0)

    # -- compaction ---------------------------------------------------------------------------------

    def check_compaction(self, compaction: object) -> dict[str, Any]:
        """The compaction config ``compact_next`` would take (``{"type": "summarize"}`` for
        ``None``), checked against the run's params; nothing changes.

        Raises:
            ParamsError: The config is not a mapping, or ``context_management`` has a compaction
                edit, which the service does not take together with a compaction block.
        """
        edits = field(self.state.params.get("context_management"), "edits") or ()
        if any(str(field(edit, "type") or "").startswith("compact_") for edit in edits):
            raise ParamsError(
                "compact_before_next_turn() cannot be used while context_management has a compaction edit, which "
                "the service does not take together with a compaction block; remove the edit first."
            )
        if compaction is None:
            return {"type": "summarize"}
        if not isinstance(compaction, Mapping):
            raise ParamsError(
                f"compact_before_next_turn() takes a compaction config (a dict), not {compaction!r}."
            )
        return dict(cast("Mapping[str, Any]", compaction))

    def compact_next(self, compaction: object) -> None:
        """Compact the conversation before the model's next turn (``compact_before_next_turn``),
        with ``compaction`` checked as ``check_compaction`` does; a later call replaces it."""
        self.pending_compaction = self.check_compaction(compaction)

    def _before_send(self) -> None:
        """Pending tool changes go with the next request (a ``role: "system"`` message, unless a
        paused turn is resumed); a pending compaction becomes the request's job. ``RunCore._send``
        calls it only when there is either (``tool_changes``, ``pending_compaction``): whatever it
        comes to do besides needs that check widened."""
        state = self.state
        if state.tool_changes:
            messages = state.messages
            if (
                field(messages[-1], "role") if messages else None
            ) != "assistant":  # a resumed turn stays last
                system = pending_message(state.tool_changes)
                state = state.replace(messages=(*messages, system), tool_changes=())
                self.make_current(state)
        if self.pending_compaction is None:
            return
        paused = state.reply is not None and step_for(state.reply.stop_reason) is StopReasonStep.RESUME
        if not paused:  # a paused turn is resumed first
            self._compacting = (self.pending_compaction, len(state.messages))
            self.pending_compaction = None

    def _turn_ended(self, state: RunState) -> RunState:
        """``state`` is what ``turn_finished`` made of the turn; adjust it for compaction. The turn
        calls it only while a compaction is under way or pending (``_compacting``,
        ``pending_compaction``): whatever it comes to do besides needs that check widened."""
        if self._compacting is not None:
            compacted = self._compacting[1]
            self._compacting = None
            summarized = state.reply is not None and has_summary(state.reply)
            if not summarized:
                log(WARNING, "Compaction produced no summary; keeping the conversation as it is.")
            last, self._final_compaction = self._final_compaction, False
            answered = compaction_answered(state, compacted, last=last)
            self._keep_removals(state, answered)
            self._history_replaced(whole=summarized)
            return answered
        if self.pending_compaction is not None and state.phase is Phase.DONE and state.end_reason == "model":
            reply = state.reply
            if reply is not None and client_tool_calls(reply):
                log(
                    WARNING,
                    "The pending compaction was skipped because the last turn (stop_reason=%r) ended with tool calls "
                    "whose results were not sent. Call compact_before_next_turn() again if you continue the "
                    "conversation.",
                    reply.stop_reason,
                )
                self.pending_compaction = None
                return state
            self._final_compaction = True
            return kept_open_for_compaction(state)
        return state

    def _keep_removals(self, before: RunState, after: RunState) -> None:
        """A compaction replaced the history: the removals of the part it summarized stay in force."""
        lost = removed_by(dict(self.elided.changes) | last_changes(before.messages)) - removed_tools(
            after.messages
        )
        if lost:
            self.kept_removals |= lost

    def _after_turn(self) -> Program[None]:
        """Client-side compaction: once a turn whose reply reached the threshold is finished, and
        the loop goes on, replace the older turns with a summary."""
        control, state = self.compaction_control, self.state
        if control is None or not control["enabled"] or state.phase is not Phase.READY or state.reply is None:
            return
        threshold = control.get("context_token_threshold", DEFAULT_THRESHOLD)
        used = tokens_used(state.reply)
        if used < threshold:
            return
        point = split_point(state.messages, control.get("keep_turns", 1))
        if point == 0:
            return
        log(INFO, "Token usage %d has exceeded the threshold of %d. Performing compaction.", used, threshold)
        reply = yield Summarize(state, point, control)
        usage = self.usage_of(reply)
        summary = summary_text(reply)
        state = self.state
        if summary is None:
            log(WARNING, "The summary request gave no text; keeping the conversation as it is.")
            self.make_current(summary_counted(state, None, usage))
            return
        self.make_current(summary_counted(state, summarized_history(state.messages, point, summary), usage))
        self._keep_removals(state, self.state)
        self._history_replaced()
        log(  # as the SDK's line: the new token usage is the summary's output
            INFO,
            "Compaction complete. New token usage: %d (messages replaced with a summary: %d).",
            reply.usage.output_tokens,
            point,
        )

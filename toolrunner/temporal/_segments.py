"""A long run on Temporal, in segments: where one is cut (continue-as-new) and how the next goes on.

Temporal caps a workflow's history (50,000 events, 50 MB), so a run continues as new once its
segment's history holds ``RunInput.continue_as_new_events`` events (or Temporal suggests it). It
is cut between two turns (before a request is built: the state is ``READY``, no update is under
way, and it is not the last request a limit allows), and the next segment's input carries:

- the state with a window of the latest messages (``RunCore.elide``): those not sent yet, and the
  last turns, as many as client-side compaction keeps and one more, starting at a reply; the
  whole history is in the payload store, as the chain of history nodes the requests wrote;
- what the core knows of the part left out (``Elided``: its length, its requests, the tool
  changes it made), the history node to go on from, and a few counters (``Segment``).

The window's semantics: the ``toolrunner.state`` query shows the window; every decision the
core takes reads only the window (the calls of the turn, the tools the history removed, the
limits, where compaction splits); requests carry the whole history, read from the store.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from temporalio import workflow

with workflow.unsafe.imports_passed_through():
    from .._core.messages import field
    from .._core.run import RunCore
    from .._core.state import Phase, usage_data
    from .._core.usage import Usage
    from ._data import RunInput, Segment

__all__ = ["cut", "go_on", "may_cut"]


def may_cut(run: RunInput, core: RunCore[Any], *, steering: bool) -> bool:
    """Whether this segment is long enough to go on in a new one, and the run is at a point it may
    be cut: between two turns, no update under way, not the last request."""
    info = workflow.info()
    if not (
        info.is_continue_as_new_suggested() or info.get_current_history_length() >= run.continue_as_new_events
    ):
        return False
    state = core.state
    return (
        state.phase is Phase.READY
        and state.final_answer is None
        and not steering
        and workflow.all_handlers_finished()
    )


def cut(
    core: RunCore[Any],
    *,
    node: str | None,
    sent: int,
    control: Mapping[str, Any] | None,
    traced: Usage,
    number: int,
) -> Segment:
    """Elide the history before the window (the state is then the next segment's); what else the
    next segment needs. ``node`` holds the state's first ``sent`` messages."""
    state = core.state
    start = min(sent, _window_start(state.messages, _kept_turns(control)))
    core.elide(start, len(state.usage))
    carried = core.carry()
    return Segment(
        history=node,
        sent=sent - start,
        elided=carried["elided"],
        checked=carried["checked"],
        kept_removals=carried["kept_removals"],
        traced=usage_data(traced),
        number=number,
    )


def go_on(core: RunCore[Any], segment: Segment) -> Usage:
    """Give a new segment's core what the segment before knew; the usage its tracing counts from."""
    core.restore(
        {"elided": segment.elided, "checked": segment.checked, "kept_removals": segment.kept_removals}
    )
    return Usage() if segment.traced is None else Usage(**segment.traced)


def _kept_turns(control: Mapping[str, Any] | None) -> int:
    """How many turns client-side compaction keeps whole (its split point reads them)."""
    return int(control.get("keep_turns", 1)) if control is not None and control.get("enabled") else 1


def _window_start(messages: Sequence[Any], turns: int) -> int:
    """Where a window of the last ``turns`` turns and one more starts: at a reply (never at the
    results of calls it leaves out); 0 when the history has no more turns."""
    assistants = [index for index, message in enumerate(messages) if field(message, "role") == "assistant"]
    return assistants[-(turns + 1)] if len(assistants) > turns else 0

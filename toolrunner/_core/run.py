"""The run's orchestration, sans-I/O: which effects happen, in which order (``RunCore``).

``_core.transitions`` says how the state changes; this module says when: when a call is journaled, when
the state is saved, when calls run, when a decision is awaited, what is appended, when a reply is
handed to the loop body. It does no I/O and awaits nothing: its programs are generators that yield
effects (``_core.effects``) and get their outcomes back, as h11's connection yields events. Every
driver performs the same effects, so a feature is written here once:

- ``ToolRunner`` (``_runner/runner.py``, its ``Performer``; ``SyncToolRunner`` through it) performs
  them in the caller's task, with its store, its tools and the loop body;
- the Temporal workflow (``temporal/_driver.py``'s ``WorkflowDriver``) performs them as activities
  and updates.

One iteration (``RunCore.iteration``)::

    finish the turn the body held (read the rest of its stream; settle its calls: gate, ask,
    run them in CallPlan's order, each journaled, saved, executed, saved; or pause), append,
    compact if asked;  stop at a limit, or when closed;  prepare the tools, check the history,
    save, send;  take the reply (RECEIVED), gate its calls, save, hand it over (WITH_BODY).

A program's state is ``RunCore.state`` and a few fields that a new program can start from again:
when a driver's effect raises (a failed save, a cancelled task, a dying process), the program is
dropped, and the next iteration starts over from the state as it stands, as a resumed run does
from the last save. That is what makes every effect a safe place for a fault.

``RunCore`` is built in one chain of classes, a concern each (``_core.base`` draws it): its fields
(``_core.base``), the window and compaction (``_core.window``), decisions (``_core.decisions``) and
the turn (``_core.turn``); this module holds the iteration, the requests, steps and saves, and
steering. A sub-agent's call runs its sub-run inside the call's program (``_core.subruns``). The
reasons the model reads are ``_core.reasons``.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from anthropic.types import ToolResultBlockParam

from .base import Elided, Tools, ToolT
from .decisions import decided_event as decided_event
from .effects import DropStream, LoopStopped, OpenStream, OpenTools, Program, Request, Send
from .errors import ApprovalError, MalformedReplyError, ToolRunnerError, message_of
from .message_checks import check_history
from .reasons import (
    DENIED as DENIED,
    TIMED_OUT,
    denied_reason as denied_reason,
    failed_reason as failed_reason,
)
from .state import FINISHED_PHASES, CallStatus, Phase
from .subruns import AgentPlan, run_sub_agent
from .transitions import (
    closed,
    delivered,
    pending_calls,
    ready_to_send,
    record_of,
    steered,
    stream_abandoned,
    stream_opened,
    tools_changed,
)
from .turn import TurnCore
from .types import Reply, ToolCall

__all__ = ["TIMED_OUT", "Elided", "RunCore", "Tools"]

T = TypeVar("T")


class RunCore(TurnCore[ToolT]):
    """One run's orchestration: its state, and the programs that drive it (see the module docstring;
    its arguments are ``CoreBase``'s)."""

    # -- one iteration --------------------------------------------------------------------------

    def iteration(self) -> Program[Any]:
        """One step of the loop: finish the turn the body held, then send the next request and
        return what the body gets (the reply, or the stream); ``None`` once the loop stops."""
        if self.state.phase is Phase.RECEIVED:  # a reply the body has not had (its save failed, or resumed)
            if not self.stream:
                return (yield from self._hand_over())
            # A body that reads streams cannot be handed a complete reply (a run saved by a runner
            # that did not stream, resumed by one that does): its turn goes on as if handed over.
            self.make_current(delivered(self.state))
        if self.state.phase in (Phase.STREAMING, Phase.WITH_BODY, Phase.AWAITING):
            yield from self._finish_turn()
        if self.state.phase is Phase.READY and (self.limits is not self._unlimited or self.cap is not None):
            ready = ready_to_send(self.state, self._limits())
            if ready is not self.state:  # a limit was reached
                self.make_current(ready)
        if self.closing:
            self._close_now()
        if self.state.phase in FINISHED_PHASES:
            yield from self._save()
            yield LoopStopped()
            return None
        item = yield from self._send()
        if self.closing:  # closed while the request was out: keep the reply, run nothing
            yield DropStream()
            self._close_now()
            yield from self._save()
            yield LoopStopped()
            return None
        return item

    def _sub_agent(
        self, call: ToolCall, input: object, plan: AgentPlan
    ) -> Program[ToolResultBlockParam | None]:
        return run_sub_agent(self, RunCore, call, input, plan)

    def change_tools(self, blocks: Sequence[Mapping[str, Any]]) -> None:
        """Tool changes (``tool_addition``/``tool_removal`` blocks: ``addition``, ``removal``) to
        send with the next request (``add_tools``, ``remove_tools``); the driver runs the tools."""
        self.make_current(tools_changed(self.state, blocks))

    def _close_now(self) -> None:
        self.closing = False
        self.make_current(closed(self.state))

    def _send(self) -> Program[Any]:
        if self.tools.opens:
            yield OpenTools()
        if self.state.tool_changes or self.pending_compaction is not None:  # else nothing to do
            self._before_send()
        state = self.state
        if self.checked < len(state.messages) or not state.messages:  # else all was checked already
            check_history(state.messages, self.checked)
        self.checked = max(len(state.messages) - 1, 0)
        if self.durable:
            yield from self._save()
        if self.hooks is not None and self.hooks.before_request:  # a guardrail may refuse (_core.hooks)
            yield from self._before_request()
        request = Request(state, None if self._compacting is None else self._compacting[0])
        if self.stream:
            self._held = set()  # a new reply: none of its calls is held yet
            stream = yield OpenStream(request)
            self.make_current(stream_opened(self.state))
            return stream
        reply = yield Send(request)
        if self.durable or self.tools.opens or self.tools.gated or self.listener is not None:
            self._accept(reply)
            return (yield from self._hand_over())
        # Nothing to do between taking the reply and handing it over (no save, no tools to open, no
        # gate, no listener to see it received): the body has it in the same state, not in a copy.
        self._accept(reply, handed_over=True)
        assert self.state.reply is not None
        return self.state.reply

    def _hand_over(self) -> Program[Reply]:
        """A complete reply (``RECEIVED``): its calls that need a decision wait, it is saved, and
        the body gets it. If the save fails, the next iteration saves and hands it over again."""
        if self.tools.opens:  # after a resume, the tools (a toolset's) may not be open yet
            yield OpenTools()
        if self.tools.gated:  # else no call waits: the reply's calls are not read for nothing
            yield from self._gate(pending_calls(self.state))
        if self.durable:
            yield from self._save()
        self.make_current(delivered(self.state))
        assert self.state.reply is not None
        return self.state.reply

    def finish_stream(self) -> Program[None]:
        """Read the rest of the stream the body holds, if one is open (before its calls are run)."""
        if self.state.phase is Phase.STREAMING:
            yield from self._read_stream()

    def abandon_stream(self) -> Program[None]:
        """Drop the stream the body holds, and what it started early; the request is sent again."""
        yield DropStream()
        self.make_current(stream_abandoned(self.state))

    # -- steps and saves ------------------------------------------------------------------------

    def step(self, program: Program[T]) -> Program[T]:
        """Drive ``program`` as a step of the run: an error that stops it is recorded in the state
        (``failure``) and saved (shielded, best effort), for whoever lists the runs; a later step
        that succeeds clears it. Every driver runs its programs through this."""
        if self.state.failure is not None:
            self.make_current(self.state.replace(failure=None))
        self.stepping += 1
        try:
            return (yield from program)
        except Exception as error:
            self.make_current(
                self.state.replace(
                    failure={"type": type(error).__name__, "message": message_of(error)[:2000]}
                )
            )
            if self.durable:
                with contextlib.suppress(Exception):  # the step's own error is the one to raise
                    yield self._save_effect(shielded=True)
            raise
        finally:
            self.stepping -= 1

    def save(self) -> Program[None]:
        """Save the state as it stands (``_save``): for a driver that changed it outside a program
        (``close()``)."""
        yield from self._save()

    # -- steering ---------------------------------------------------------------------------------

    def check_history_may_change(self, method: str) -> None:
        """Refuse a change of the history that would lose a reply or results the run holds."""
        state = self.state
        if state.phase is Phase.RECEIVED:
            raise ToolRunnerError(
                f"{method}() was called while a reply the loop body has not seen waits to be handed over (its "
                "save failed, or the run was resumed); iterate the runner again to receive it, then steer."
            )
        if state.phase is Phase.AWAITING:
            ran = [
                call.id
                for call in pending_calls(state)
                if (record := record_of(state, call)) is not None
                and record.status in (CallStatus.STARTED, CallStatus.FINISHED)
            ]
            if ran:
                raise ApprovalError(
                    f"{method}() was called while the run waits for decisions, and the calls {ran!r} of the "
                    "waiting reply already ran: changing the history now would drop their results. Decide the "
                    "waiting calls first (approve, deny or answer), iterate to append the results, then steer."
                )

    def push_messages(self, messages: Sequence[Any]) -> None:
        """Append messages (each one read by ``message_param``) to the history: the body steered.

        Raises:
            HistoryError: The history would be one the service rejects, whatever came next (a
                misplaced system message, a tool_result that answers nothing, ...); nothing is
                appended. The calls of the last message may wait for their results.
        """
        history = self.state.messages
        start = min(self.checked, max(len(history) - 1, 0))
        new = (*history, *messages)
        self.check_steered(new, start)
        self.checked = start
        self._reopening()
        self.make_current(steered(self.state, messages=new))

    @staticmethod
    def check_steered(history: Sequence[Any], start: int = 0) -> None:
        """Refuse a history the body made (from ``start`` on) that could never be sent, whatever
        came next (``check_history(..., open_end=True)``)."""
        check_history(history, start, open_end=True)

    def apply_params(self, changes: Mapping[str, Any], *, steer: bool) -> None:
        """Make the request's new ``params``, ``messages`` (the history) and ``tools`` current, those
        ``changes`` holds (already checked: a history the body made with ``check_steered``); with
        ``steer``, the loop body changed them (``steered``: the reply it holds is not appended)."""
        if steer:
            self._reopening()
            self._history_replaced()
            self.checked = 0
            self.make_current(steered(self.state, **changes))
        else:
            self.make_current(self.state.replace(**changes))

    def close(self, read_whole: Reply | None = None) -> None:
        """End the loop (``closed``): now, or, while a step is under way (from a callback or
        another task), once that step finished whole (a request's reply is kept, its tools not run;
        a turn's tools finish and their results are appended). Every driver's ``close()``.

        ``read_whole``: the reply of the stream the body holds, if the body read that stream to its
        end (the driver knows; no I/O is needed to have it). It is a complete reply the body holds,
        so it is kept as one is without a stream; a stream not read to its end is dropped."""
        if self.stepping:
            self.closing = True
            return
        if read_whole is not None and self.state.phase is Phase.STREAMING:
            # A reply the check refuses is not kept, as when the runner reads the stream.
            with contextlib.suppress(MalformedReplyError):
                self._accept(read_whole, streamed=True)
        self.make_current(closed(self.state))

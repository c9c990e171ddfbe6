"""``Agent``: the web endpoints over runs driven in this process, kept in a store.

One run per conversation (AG-UI's thread id, the AI SDK's chat id: the run id in the store). A
request brings something new, or nothing:

- a conversation the store does not know starts a run with its messages;
- decisions on the calls that wait are taken through the store (``approve_call``, ``deny_call``,
  with who decided), first decider wins, and the run goes on;
- user messages the run has not seen are appended to an ended run, which goes on;
- nothing new (a reload, a second tab) follows the run where it stands: the request's events so
  far, and the rest as they come, or (the run is not running here) a view of it from the store.

The run goes on in the ``Agent``'s task group, not in the request's task, so a client that
disconnects loses nothing: the run goes on to its end or its next pause, every step saved, and
its events stay in the session's log (``_log.Session``, in this process) for the client that
comes back.

Several processes (replicas) may serve one store. The one that drives a run holds its lease
(``RunStore.lease_run``, of the agent's ``owner``), renews it, and gives it up when the run pauses
or ends. A request that reaches another one, while the lease holds, does not take the run over: it
follows the run from the store (polled, each new message whole, as ``TemporalAgent`` follows a
workflow) until it pauses or ends, or until the lease runs out (its driver died): then it takes
the run up and goes on with it. Decisions go through the store wherever they arrive.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from .._core.errors import ApprovalError, ToolRunnerError, message_of
from .._core.messages import reply_param
from .._core.state import RunState
from .._runner.runner import ToolRunner
from .._stores.leases import check_lease, check_owner, check_seconds
from .._stores.protocol import RunStore
from .._stores.runs import RunStatus, RunSummary, run_status, waiting_calls
from ._events import ApprovalWanted, RunError, RunFinished, UIEvent
from ._log import (
    Session,
    answered,
    cut_call,
    emit_history,
    final_text,
    note,
    read_stream,
    report_results,
    stop_reason,
    turn_start,
)
from ._session import (
    NOT_OPTIONS,
    Decision,
    Follow,
    RequestError,
    RunView,
    Serving,
    Turn,
    check_decisions,
    client_error,
    user_turns,
)

if TYPE_CHECKING:
    import anthropic

__all__ = ["Agent"]

logger = logging.getLogger("toolrunner.web")

LIVE = (RunStatus.RUNNING, RunStatus.READY)
"""The statuses of a run that goes on (or is to): one that no process drives is taken up."""


class Agent(Serving):
    """What the web endpoints serve: the runs of one agent, kept in a store, one per conversation.

    Enter it (``async with agent:``) for as long as it serves: the runs go on in its task group,
    whatever becomes of the requests that started them. ``agui_app`` and ``ui_message_stream_app``
    enter it in their lifespan; an app that mounts them enters it in its own.

    Args:
        client: The Anthropic client (``anthropic.AsyncAnthropic``; the replies are streamed).
        store: Where the runs are kept (``MemoryCheckpointer``, ``SQLiteCheckpointer``,
            ``PostgresCheckpointer``): the run id is the conversation's id.
        tools: The agent's tools.
        model: The model.
        max_tokens: The request's ``max_tokens``.
        system: The system prompt of new runs.
        options: Any other option of ``ToolRunner`` (``max_iterations``, ``approve``, ...), but
            those the agent sets itself (``messages``, ``checkpointer``, ``run_id``, ``stream``,
            ``on_event``, ``tools``).
        owner: Its name in the leases of the runs it drives; by default the host, the process
            id and a random part. Replicas serving one store must have different names.
        lease: Seconds a run it drives is held without news of it: it renews the lease every
            third of that; if its process dies, another replica takes the run up once the lease
            has run out.
        poll_interval: Seconds between two looks at the store, for a run it follows while
            another process drives it.
    """

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        *,
        store: RunStore,
        tools: Sequence[Any],
        model: str,
        max_tokens: int,
        system: str | None = None,
        options: Mapping[str, Any] | None = None,
        owner: str | None = None,
        lease: float = 30.0,
        poll_interval: float = 0.25,
    ) -> None:
        self._params, self._options = self.request_params(model, max_tokens, system, options, NOT_OPTIONS)
        self.client = client
        self.store = store
        self.tools = list(tools)
        self.owner = (
            f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
            if owner is None
            else check_owner(owner)
        )
        self._lease = check_lease(lease)
        self._poll = check_seconds(poll_interval, "poll_interval", "poll_interval=0.25")
        self._base = secrets.randbelow(2**20) << 32  # this process's numbers: see _log.Session
        self._sessions: dict[str, Session] = {}
        self._lock = anyio.Lock()

    async def take(self, turn: Turn, *, by: str | None) -> Follow:
        """Act on what a request brings, and say what to answer it with.

        Raises:
            RequestError: 404 for decisions on a run the store does not have; 409 when the run is
                running (here or in another process) and the request brings something new, or a
                call was decided already; 422 when the request cannot start or continue the run.
        """
        if self._group is None:
            raise RuntimeError("the Agent is not entered; use `async with agent:` (the apps' lifespan does).")
        async with self._lock:
            session = self._sessions.setdefault(turn.run_id, Session(turn.run_id, self._base))
            summary = await self.store.get_run(turn.run_id)
            held = summary is not None
            runner: ToolRunner[Any] | Literal["follow"] | None
            if summary is None:
                if turn.decisions:
                    raise RequestError(
                        404, f"there is no run {turn.run_id!r} to decide calls of; start it first."
                    )
                if not turn.conversation:
                    raise RequestError(
                        404, f"there is no run {turn.run_id!r}; send a user message to start it."
                    )
                runner = self._new_runner(turn, session)  # leased from its first save (_keep_lease)
            else:
                runner = await self._going_on(turn, session, summary, by)
            if runner is None:
                return self.following(turn, session)
            session.start = len(session.log)
            session.running = True
            if runner == "follow":
                self._group.start_soon(self._follow_store, session)
            else:
                self._group.start_soon(self._drive, session, runner, held)
        return Follow(session.follow(session.first - 1, turn.keep_alive), None, started=True)

    async def view(self, run_id: str) -> RunView | None:
        """The run as the store has it (``None``: there is none)."""
        loaded = await self.store.load(run_id)
        summary = await self.store.get_run(run_id)
        if loaded is None or summary is None:
            return None
        messages = _messages(loaded.state, bool(summary.waiting))
        denied = frozenset(record.call.id for record in loaded.state.decisions if record.decision == "denied")
        session = self._sessions.get(run_id)
        running = (session is not None and session.running) or self._elsewhere(summary)
        return RunView(messages, summary.waiting, summary.end_reason, denied, running)

    def _elsewhere(self, summary: RunSummary) -> bool:
        """Whether another process drives the run now: it goes on, under a lease of another owner
        that has not run out."""
        lease = summary.lease
        return (
            summary.status in LIVE
            and lease is not None
            and lease.owner != self.owner
            and lease.expires.timestamp() > time.time()
        )

    def _new_runner(self, turn: Turn, session: Session) -> ToolRunner[Any]:
        messages = [{"role": role, "content": text} for role, text in turn.conversation]
        try:
            return ToolRunner(
                self.client,
                stream=True,
                messages=messages,
                tools=self.tools,
                checkpointer=self.store,
                run_id=turn.run_id,
                on_event=lambda event: note(session, event),
                **self._params,
            )
        except ToolRunnerError as error:
            raise RequestError(422, f"the conversation cannot start a run: {error}") from error

    async def _going_on(
        self, turn: Turn, session: Session, summary: RunSummary, by: str | None
    ) -> ToolRunner[Any] | Literal["follow"] | None:
        """Decide and append what the request brings; the runner that goes on under this agent's
        lease; or ``"follow"``: nothing new for a run that goes on (running or ready) but not here,
        or another process holds it; the request follows it from the store, which takes it up if
        no process drives it (its server stopped mid-run, or its calls were decided elsewhere);
        or ``None``: nothing new, and the run does not go on (the store's view)."""
        loaded = await self.store.load(turn.run_id)
        assert loaded is not None
        history = list(loaded.state.messages)
        new = [text for role, text in turn.conversation if role == "user"][user_turns(history) :]
        if not turn.decisions and not new and (session.running or summary.status not in LIVE):
            return None
        check_decisions(turn.run_id, loaded.state, turn.decisions, by)
        if session.running or (new and self._elsewhere(summary)):
            raise RequestError(
                409, f"the run {turn.run_id!r} is running; wait for its end before sending more."
            )
        if new and summary.waiting:
            raise RequestError(
                409,
                f"the run {turn.run_id!r} waits for decisions on {[call.id for call in summary.waiting]!r}; decide them first.",
            )
        if not turn.decisions and not new:
            return "follow"  # a run that goes on, not here: followed, and taken up if no one drives it
        for decision in turn.decisions:  # through the store: of two deciders, one wins
            await self._decide(turn.run_id, decision, by)
        if not await self.store.lease_run(turn.run_id, self.owner, lease=self._lease):
            if new:
                raise RequestError(
                    409, f"the run {turn.run_id!r} is running in another process; wait for its end."
                )
            return "follow"
        try:
            runner = await self._resume(session, turn.run_id, history)
        except BaseException:
            with anyio.CancelScope(shield=True):
                await self._release(turn.run_id)
            raise
        for text in new:
            runner.push_messages({"role": "user", "content": text})
        return runner

    async def _resume(self, session: Session, run_id: str, history: Sequence[Any]) -> ToolRunner[Any]:
        if not session.log:  # loaded in this process: its results so far were sent before
            session.reported.update(answered(history))
        return await ToolRunner.resume(
            self.client,
            stream=True,
            tools=self.tools,
            checkpointer=self.store,
            run_id=run_id,
            on_event=lambda event: note(session, event),
            **self._options,
        )

    async def _decide(self, run_id: str, decision: Decision, by: str | None) -> None:
        try:
            if decision.approved:
                await self.store.approve_call(run_id, decision.call_id, input=decision.input, by=by)
            else:
                await self.store.deny_call(run_id, decision.call_id, decision.reason, by=by)
        except ApprovalError as error:
            raise RequestError(409, str(error)) from error
        except ToolRunnerError as error:  # an edited input the tool refuses
            raise RequestError(422, str(error)) from error

    # -- a run driven here, under the lease ----------------------------------------------------------

    async def _drive(self, session: Session, runner: ToolRunner[Any], held: bool) -> None:
        """Run the loop until it ends or pauses, logging what a client is told, under this agent's
        lease (``held``: taken already; else from the run's first save), renewed meanwhile and
        given up before the last events are logged (so that a client told of the pause or the
        end finds the run free for its next request, wherever it lands)."""
        lost: list[bool] = []
        closing: list[UIEvent] = []
        try:
            with anyio.CancelScope() as scope:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._keep_lease, session.run_id, scope, held, lost)
                    closing = await _steps(session, runner)
                    group.cancel_scope.cancel()
        finally:
            with anyio.CancelScope(shield=True):
                if not lost:  # a run still going on keeps it, run out: the next taker goes on at once
                    await self._release(session.run_id)
        if lost:
            message = (
                "another process took the run over (this one held it past its lease); reload to follow it"
            )
            closing = [RunError(message, "LeaseLost")]
        for event in closing:
            session.emit(event)

    async def _keep_lease(self, run_id: str, scope: anyio.CancelScope, held: bool, lost: list[bool]) -> None:
        while not held:  # a new run: it is in the store from its first save on
            with contextlib.suppress(Exception):
                if await self.store.lease_run(run_id, self.owner, lease=self._lease):
                    break
                summary = await self.store.get_run(run_id)
                if summary is not None and summary.lease is not None and summary.lease.owner != self.owner:
                    lost.append(True)  # saved, and taken by another before this agent took it
                    scope.cancel()
                    return
            await anyio.sleep(min(self._poll, self._lease / 3))
        while True:
            await anyio.sleep(self._lease / 3)
            try:
                renewed = await self.store.renew_lease(run_id, self.owner, lease=self._lease)
            except Exception as error:
                logger.warning(
                    "%s could not renew its lease on the run %r (%s)", self.owner, run_id, message_of(error)
                )
                continue
            if not renewed:
                lost.append(True)
                scope.cancel()
                return

    async def _release(self, run_id: str) -> None:
        with anyio.move_on_after(max(self._lease, 1.0)):  # a store that hangs: the lease runs out anyway
            try:
                await self.store.release_lease(run_id, self.owner)
            except Exception as error:
                logger.warning(
                    "%s could not give up its lease on the run %r (%s)", self.owner, run_id, message_of(error)
                )

    # -- a run another process drives, followed from the store -----------------------------------------

    async def _follow_store(self, session: Session) -> None:
        """Follow a run another process drives, as the store has it, until it pauses or ends (each
        new message whole, as ``TemporalAgent`` follows a workflow), from the start of its last
        turn; or, once no one holds its lease (its driver died), take it up and drive it."""
        run_id, fresh, mine = session.run_id, True, False
        try:
            while True:
                summary = await self.store.get_run(run_id)
                loaded = await self.store.load(run_id)
                if loaded is None or summary is None:
                    raise RuntimeError(f"the run {run_id!r} was deleted")
                state = loaded.state
                status, waiting = run_status(state), waiting_calls(state)
                messages = _messages(state, bool(waiting))
                if fresh:  # what the clients are told: the last turn, from its start (as a reload)
                    session.told = turn_start(messages)
                    session.reported = answered(messages[: session.told])
                    fresh = False
                denied = {record.call.id for record in state.decisions if record.decision == "denied"}
                emit_history(session, messages, denied, cut_call(state))
                if status not in LIVE:
                    if mine:  # taken as its driver gave it up: nothing left to drive
                        mine = False
                        await self._release(run_id)
                    if status is RunStatus.FAILED:
                        failure = state.failure or {}  # its message may hold a secret, as an error's
                        logger.error("the run %r failed: %s", run_id, failure.get("message", ""))
                        session.emit(client_error(None, failure.get("type")))
                        return
                    for call in waiting:
                        session.emit(ApprovalWanted(call.id, call.name, call.input))
                    session.emit(RunFinished(str(state.end_reason), final_text(messages), stop_reason(state)))
                    return
                if mine:
                    session.denied.update(denied)
                    runner = await self._resume(session, run_id, state.messages)
                    mine = False  # _drive gives the lease up
                    await self._drive(session, runner, True)
                    return
                if not self._elsewhere(summary):  # no one drives it: take it, and look again
                    mine = await self.store.lease_run(run_id, self.owner, lease=self._lease)
                    if mine:
                        continue
                await anyio.sleep(self._poll)
        except Exception as error:  # the run's error goes to the clients
            session.emit(client_error(error))
        finally:
            if mine:
                with anyio.CancelScope(shield=True):
                    await self._release(run_id)


def _messages(state: RunState, paused: bool) -> list[Mapping[str, Any]]:
    """The state's history, with the reply a pause holds apart."""
    messages = [cast("Mapping[str, Any]", message) for message in state.messages]
    reply = state.reply
    if paused and reply is not None and (not messages or messages[-1] != reply_param(reply)):
        messages.append(cast("Mapping[str, Any]", reply_param(reply)))
    return messages


async def _steps(session: Session, runner: ToolRunner[Any]) -> list[UIEvent]:
    """Drive the loop until it ends or pauses, logging the replies and results; the events that
    close the request's part (the calls that wait, and the end, or the run's error)."""
    try:
        async for stream in runner:
            report_results(session, runner.messages)  # the last turn's, before the next reply
            await read_stream(session, stream)
            report_results(session, runner.messages)
            if runner.last_message is not None and any(
                block.type == "tool_use" for block in runner.last_message.content
            ):
                with contextlib.suppress(ApprovalError):  # calls wait: the loop pauses next
                    await runner.generate_tool_response()
        report_results(session, runner.messages)
        closing: list[UIEvent] = []
        if runner.end_reason == "awaiting_approval":
            closing += [ApprovalWanted(call.id, call.name, call.input) for call in runner.pending_approvals]
        final = runner.last_message
        text = "" if final is None else "".join(b.text for b in final.content if b.type == "text")
        stop = None if final is None else final.stop_reason
        return [*closing, RunFinished(str(runner.end_reason), text, stop)]
    except Exception as error:  # the run's error goes to the clients; the state is as last saved
        return [client_error(error)]

"""``TemporalAgent``: the web endpoints over runs on Temporal, one workflow run per conversation.

It answers the apps as ``Agent`` does (``take``, ``view``, ``entered``), so the protocol modules
encode its events unchanged; what differs is where a run goes on and where its events come from:

- a conversation the server does not know **starts** a run (``start_run``, the thread or chat id
  as its ``run_id``); decisions go to the workflow's approval updates (``RunHandle.approve`` /
  ``deny``, with ``by=``); user messages for a run whose loop ended start a new run under the
  same id with the whole history (on Temporal a loop that ended is not opened again);
- the run goes on in the workers, wherever they are. A watcher in the agent's task group follows
  it through what any client can read: the ``toolrunner.state`` query (the history, large blocks
  read back from the payload store) and ``toolrunner.pending_approvals``, polled. Each new message
  becomes UI events (``_log.emit_history``, as for an ``Agent`` following another process's run):
  a reply's text as one delta (the workers' streaming is not seen from a client), each call's
  input as one piece, each result; then the calls that wait and the end.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, cast

import anyio

from .._core.errors import CheckpointError, RunEndedError, ToolRunnerError
from .._core.messages import reply_param
from .._core.state import Phase, RunState
from ._events import ApprovalWanted, RunFinished
from ._log import Session, cut_call, emit_history, final_text, stop_reason
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
    from temporalio.client import Client

    from ..temporal import PayloadStore, RunHandle

__all__ = ["TemporalAgent"]


class TemporalAgent(Serving):
    """What the web endpoints serve, on Temporal: one workflow run per conversation (its workflow
    id is the thread or chat id), run by the workers of ``task_queue`` (``create_worker``).

    Enter it (``async with agent:``) for as long as it serves: it follows the runs its requests
    started or decided in its task group; the runs themselves go on in the workers.

    Args:
        client: The Temporal client (``temporalio.client.Client``).
        task_queue: The workers' task queue: new runs are started on it.
        store: The workers' ``PayloadStore``: large blocks of the history are read back from it.
        tools: The tools of new runs (``start_run(tools=...)``: every worker has them).
        model: The model.
        max_tokens: The request's ``max_tokens``.
        system: The system prompt of new runs.
        options: Any other option of ``start_run`` (``max_iterations``, ``approval_timeout``,
            ``hooks``, ...), but ``messages``, ``run_id``, ``task_queue``, ``tools`` and ``id_reuse``.
        poll_interval: Seconds between two looks at a running run's state.
    """

    def __init__(
        self,
        client: Client,
        *,
        task_queue: str,
        store: PayloadStore,
        tools: Sequence[Any],
        model: str,
        max_tokens: int,
        system: str | None = None,
        options: Mapping[str, Any] | None = None,
        poll_interval: float = 0.05,
    ) -> None:
        self._params, _ = self.request_params(
            model, max_tokens, system, options, NOT_OPTIONS | {"task_queue", "id_reuse"}
        )
        self.client = client
        self.task_queue = task_queue
        self.store = store
        self.tools = list(tools)
        self._poll = poll_interval
        self._sessions: dict[str, Session] = {}
        self._lock = anyio.Lock()

    def _run(self, run_id: str) -> RunHandle:
        from ..temporal import get_run

        return get_run(self.client, run_id)

    async def _state(self, run: RunHandle) -> RunState | None:
        try:
            return await run.state()
        except CheckpointError:
            return None

    async def take(self, turn: Turn, *, by: str | None) -> Follow:
        """Act on what a request brings, and say what to answer it with (as ``Agent.take``).

        Raises:
            RequestError: 404 for decisions on a run Temporal does not have; 409 when the run is
                running and the request brings something new, or a call was decided already;
                422 when the request cannot start the run.
        """
        if self._group is None:
            raise RuntimeError("the agent is not entered; use `async with agent:` (the apps' lifespan does).")
        async with self._lock:
            session = self._sessions.setdefault(turn.run_id, Session(turn.run_id))
            run = self._run(turn.run_id)
            state = await self._state(run)
            decided: frozenset[str] = frozenset()
            if state is None:
                if turn.decisions:
                    raise RequestError(
                        404, f"there is no run {turn.run_id!r} to decide calls of; start it first."
                    )
                if not turn.conversation:
                    raise RequestError(
                        404, f"there is no run {turn.run_id!r}; send a user message to start it."
                    )
                messages = [{"role": role, "content": text} for role, text in turn.conversation]
                await self._start(turn.run_id, messages, reuse="refuse")
                session.told = len(messages)
            else:
                went_on = await self._going_on(turn, session, run, state, by)
                if went_on is None:
                    return self.following(turn, session)
                decided = went_on
            session.start = len(session.log)
            session.running = True
            self._group.start_soon(self._watch, session, run, decided)
        return Follow(session.follow(session.start - 1, turn.keep_alive), None, started=True)

    async def _start(self, run_id: str, messages: list[Any], *, reuse: Literal["refuse", "allow"]) -> None:
        from ..temporal import start_run

        try:
            await start_run(
                self.client,
                run_id=run_id,
                task_queue=self.task_queue,
                tools=self.tools,
                messages=messages,
                id_reuse=reuse,
                **self._params,
            )
        except CheckpointError as error:  # started meanwhile, by another process
            raise RequestError(409, str(error)) from error
        except ToolRunnerError as error:
            raise RequestError(422, f"the conversation cannot start a run: {error}") from error

    async def _going_on(
        self, turn: Turn, session: Session, run: RunHandle, state: RunState, by: str | None
    ) -> frozenset[str] | None:
        """Decide, or start the next run with the new messages; the calls decided (``None``: nothing new)."""
        new = [text for role, text in turn.conversation if role == "user"][user_turns(state.messages) :]
        if not turn.decisions and not new:
            return None
        check_decisions(turn.run_id, state, turn.decisions, by)
        if session.running or state.end_reason is None:
            raise RequestError(
                409, f"the run {turn.run_id!r} is running; wait for its end before sending more."
            )
        waiting = await run.pending_approvals() if state.phase is Phase.AWAITING else []
        if new and waiting:
            raise RequestError(
                409,
                f"the run {turn.run_id!r} waits for decisions on {[call.id for call in waiting]!r}; decide them first.",
            )
        if session.told is None:  # loaded in this process: what it has was sent before
            session.told = len(state.messages) + (1 if waiting else 0)
        for decision in turn.decisions:
            await self._decide(run, state, decision, by)
        if new:
            history = await self._history(run, state)
            await self._start(
                turn.run_id, [*history, *({"role": "user", "content": text} for text in new)], reuse="allow"
            )
        return frozenset(decision.call_id for decision in turn.decisions)

    async def _history(self, run: RunHandle, state: RunState) -> list[Any]:
        """The ended run's whole history (its stubs read back), for the run that goes on from it."""
        try:
            return await (await run.result()).messages(self.store)
        except Exception:  # failed or terminated: the history as its state holds it
            return await self._resolve(state.messages)

    async def _decide(self, run: RunHandle, state: RunState, decision: Decision, by: str | None) -> None:
        from temporalio.client import WorkflowUpdateFailedError

        try:
            if decision.approved:
                await run.approve(decision.call_id, input=decision.input, by=by)
            else:
                reason = decision.reason or "The person denied the call."
                await run.deny(decision.call_id, reason, by=by)
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            raise RequestError(409, str(getattr(cause, "message", None) or cause or error)) from error
        except RunEndedError as error:
            raise RequestError(409, str(error)) from error
        except ToolRunnerError as error:  # who decided, or the reason, is refused before it is sent
            raise RequestError(422, str(error)) from error

    async def view(self, run_id: str) -> RunView | None:
        """The run as its workflow has it (``None``: Temporal has no run of that name)."""
        run = self._run(run_id)
        state = await self._state(run)
        if state is None:
            return None
        messages = await self._messages(state)
        waiting = tuple(await run.pending_approvals()) if state.phase is Phase.AWAITING else ()
        denied = frozenset(record.call.id for record in state.decisions if record.decision == "denied")
        return RunView(messages, waiting, state.end_reason, denied, state.end_reason is None)

    async def _messages(self, state: RunState) -> list[Mapping[str, Any]]:
        """The state's history, with the reply a pause holds apart, stubs read back."""
        messages = list(state.messages)
        if state.phase is Phase.AWAITING and state.reply is not None:
            held = reply_param(state.reply)
            if not messages or messages[-1] != held:
                messages.append(held)
        return [cast("Mapping[str, Any]", message) for message in await self._resolve(messages)]

    async def _resolve(self, messages: Sequence[Any]) -> list[Any]:
        from ..temporal._payloads import Payloads

        return await Payloads(self.store).resolve(messages)

    async def _watch(self, session: Session, run: RunHandle, decided: frozenset[str]) -> None:
        """Follow the run until its loop ends or pauses again, logging what a client is told."""
        try:
            while True:
                state = await run.state()
                waiting = await run.pending_approvals() if state.phase is Phase.AWAITING else []
                ended = state.end_reason is not None and not (
                    state.phase is Phase.AWAITING  # the pause the request decided on, not applied yet
                    and (not waiting or any(call.id in decided for call in waiting))
                )
                denied = {record.call.id for record in state.decisions if record.decision == "denied"}
                emit_history(session, await self._messages(state), denied, cut_call(state))
                if ended:
                    for call in waiting:
                        session.emit(ApprovalWanted(call.id, call.name, call.input))
                    text = final_text(await self._messages(state))
                    session.emit(RunFinished(str(state.end_reason), text, stop_reason(state)))
                    return
                await self._ended_otherwise(run)
                await anyio.sleep(self._poll)
        except Exception as error:  # the run's error goes to the clients
            session.emit(client_error(error))

    async def _ended_otherwise(self, run: RunHandle) -> None:
        """Raise if the workflow is over without its loop's end (failed, terminated, cancelled)."""
        from temporalio.client import WorkflowExecutionStatus

        status = (await run.workflow.describe()).status
        if status not in (None, WorkflowExecutionStatus.RUNNING, WorkflowExecutionStatus.COMPLETED):
            raise RuntimeError(f"the run's workflow is {status.name.lower()}")

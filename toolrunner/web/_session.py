"""A run driven for web requests: ``Agent``, what it serves, and each run's session of UI events.

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
its events stay in the session's log (in this process) for the client that comes back.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Any, Literal, Self, cast

import anyio
import anyio.abc

from .._core.errors import ApprovalError, ToolRunnerError
from .._core.events import ApprovalDecided, RunnerEvent
from .._core.messages import reply_param
from .._core.types import ToolCall
from .._runner.runner import ToolRunner
from .._stores.protocol import RunStore
from .._stores.runs import RunStatus
from ._events import (
    ApprovalWanted,
    Entry,
    RunError,
    RunFinished,
    TextDelta,
    TextEnd,
    TextStart,
    ToolCallArgs,
    ToolCallCut,
    ToolCallEnd,
    ToolCallStart,
    ToolResult,
    UIEvent,
)

if TYPE_CHECKING:
    import anthropic

__all__ = [
    "NOT_OPTIONS",
    "Agent",
    "Decision",
    "Follow",
    "RequestError",
    "RunView",
    "Serving",
    "Session",
    "Turn",
    "user_turns",
]

NOT_OPTIONS = frozenset({"messages", "checkpointer", "run_id", "stream", "on_event", "tools"})


class RequestError(Exception):
    """A request the endpoint refuses, with its HTTP status (internal: the apps answer with it)."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


@dataclass(frozen=True, slots=True)
class Decision:
    """A person's decision on a waiting call, as a client sent it."""

    call_id: str
    approved: bool
    reason: str | None = None
    input: object = None
    """The input to run with instead of the model's (``None``: the model's)."""


@dataclass(frozen=True, slots=True)
class Turn:
    """What a request brings, read from its protocol's body."""

    run_id: str
    conversation: Sequence[tuple[Literal["user", "assistant"], str]] = ()
    """The client's messages, as text: those the run has not seen are new."""
    decisions: Sequence[Decision] = ()
    after: int | None = None
    """The last event the client has (a reconnect); ``None``: from the start of the request's part."""
    keep_alive: float | None = None
    """After how many seconds of silence the answer says it is alive (``None``: never)."""


@dataclass(frozen=True, slots=True)
class RunView:
    """A run as the store has it, for a client that was not there."""

    messages: Sequence[Mapping[str, Any]]
    waiting: tuple[ToolCall, ...]
    end_reason: str | None
    denied: frozenset[str] = frozenset()
    """The calls a person denied (their results are the reasons the model read)."""
    running: bool = False
    """Whether the run is running in this process (the store has its last save)."""


@dataclass(frozen=True, slots=True)
class Follow:
    """What a request is answered with: the run's events from ``after`` on (``events``), or, the
    run not running in this process and nothing to send from its log, ``view``."""

    events: AsyncIterator[Entry | None] | None
    view: RunView | None
    started: bool
    """Whether this request started the run or made it go on (else: it follows it)."""


@dataclass
class Session:
    """One run's events in this process. ``log[i].index == i``; ``start`` is the index of the
    first event of the last request that made the run go on; ``running`` is true from then until
    its ``RunFinished`` or ``RunError`` is logged. ``changed`` is set, and replaced, at each event."""

    run_id: str
    log: list[Entry] = field(default_factory=lambda: list[Entry]())
    start: int = 0
    running: bool = False
    changed: anyio.Event = field(default_factory=anyio.Event)
    denied: set[str] = field(default_factory=lambda: set[str]())
    reported: set[str] = field(default_factory=lambda: set[str]())
    """The calls whose results were sent (or were in the history when the run was loaded)."""

    def emit(self, event: UIEvent) -> None:
        self.log.append(Entry(len(self.log), event))
        if isinstance(event, RunFinished | RunError):
            self.running = False
        self.changed.set()
        self.changed = anyio.Event()

    async def follow(self, after: int, keep_alive: float | None = None) -> AsyncIterator[Entry | None]:
        """The events after ``after``, up to the end of the request's part of the run (an ``after``
        past the log's end: from its end on). Never from the middle of a text block or a tool
        call: an ``after`` inside one starts at its start event (the client sees it again).
        ``None`` after each ``keep_alive`` seconds with no event (a tool that runs long), for the
        answer to say it is alive."""
        position = self._block_start(min(after + 1, len(self.log)))
        while True:
            while position < len(self.log):
                entry = self.log[position]
                position += 1
                yield entry
                if isinstance(entry.event, RunFinished | RunError):
                    return
            if not self.running:
                return
            with anyio.move_on_after(keep_alive if keep_alive is not None else float("inf")) as waited:
                await self.changed.wait()
            if waited.cancelled_caught:
                yield None

    def _block_start(self, position: int) -> int:
        """``position``, or the index of the start event of the text block or tool call that is
        open there (started before it, not ended before it)."""
        for back in range(position - 1, -1, -1):
            event = self.log[back].event
            if isinstance(event, TextStart | ToolCallStart):
                return back
            if not isinstance(event, TextDelta | ToolCallArgs):
                return position  # an end, a result, or the end of a request: no block is open
        return position


class Serving:
    """What ``Agent`` and ``TemporalAgent`` share: the request params of new runs, checked, and the
    task group the agent's work runs in, entered with the agent (``async with agent:``)."""

    _group: anyio.abc.TaskGroup | None = None

    @staticmethod
    def request_params(
        model: str,
        max_tokens: int,
        system: str | None,
        options: Mapping[str, Any] | None,
        reserved: frozenset[str],
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        """The params of new runs, and the options as given (the ``reserved`` ones refused)."""
        given = dict(options or {})
        if clash := sorted(reserved & given.keys()):
            raise ValueError(f"the agent sets {clash!r} itself; leave them out of options=.")
        params: dict[str, Any] = {"model": model, "max_tokens": max_tokens, **given}
        if system is not None:
            params["system"] = system
        return params, given

    @staticmethod
    def following(turn: Turn, session: Session) -> Follow:
        """What a request that brings nothing new is answered with. Running: the request's part so
        far, then live. Not running: the events after those the client says it has, if this
        process logged any; else nothing (the run as the store has it)."""
        if session.running:
            after = session.start - 1 if turn.after is None else turn.after
            return Follow(session.follow(after, turn.keep_alive), None, started=False)
        if turn.after is not None and turn.after < len(session.log) - 1:
            return Follow(session.follow(turn.after, turn.keep_alive), None, started=False)
        return Follow(None, None, started=False)

    @property
    def entered(self) -> bool:
        """Whether the agent is entered (serving)."""
        return self._group is not None

    async def __aenter__(self) -> Self:
        if self._group is not None:
            raise RuntimeError(
                f"this {type(self).__name__} is entered already; enter it once, where the app starts."
            )
        self._group = anyio.create_task_group()
        await self._group.__aenter__()
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> bool | None:
        group, self._group = self._group, None
        assert group is not None
        group.cancel_scope.cancel()  # what runs in the group stops; the runs' last saves stand
        return await group.__aexit__(kind, error, traceback)


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
    ) -> None:
        self._params, self._options = self.request_params(model, max_tokens, system, options, NOT_OPTIONS)
        self.client = client
        self.store = store
        self.tools = list(tools)
        self._sessions: dict[str, Session] = {}
        self._lock = anyio.Lock()

    async def take(self, turn: Turn, *, by: str | None) -> Follow:
        """Act on what a request brings, and say what to answer it with.

        Raises:
            RequestError: 404 for decisions on a run the store does not have; 409 when the run is
                running and the request brings something new, or a call was decided already;
                422 when the request cannot start or continue the run.
        """
        if self._group is None:
            raise RuntimeError("the Agent is not entered; use `async with agent:` (the apps' lifespan does).")
        async with self._lock:
            session = self._sessions.setdefault(turn.run_id, Session(turn.run_id))
            summary = await self.store.get_run(turn.run_id)
            runner: ToolRunner[Any] | None
            if summary is None:
                if turn.decisions:
                    raise RequestError(
                        404, f"there is no run {turn.run_id!r} to decide calls of; start it first."
                    )
                if not turn.conversation:
                    raise RequestError(
                        404, f"there is no run {turn.run_id!r}; send a user message to start it."
                    )
                runner = self._new_runner(turn, session)
            else:
                stopped = summary.status in (RunStatus.RUNNING, RunStatus.READY) and not session.running
                runner = await self._going_on(turn, session, summary.waiting, by, stopped=stopped)
            if runner is None:
                return self.following(turn, session)
            session.start = len(session.log)
            session.running = True
            self._group.start_soon(self._drive, session, runner)
        return Follow(session.follow(session.start - 1, turn.keep_alive), None, started=True)

    async def view(self, run_id: str) -> RunView | None:
        """The run as the store has it (``None``: there is none)."""
        loaded = await self.store.load(run_id)
        summary = await self.store.get_run(run_id)
        if loaded is None or summary is None:
            return None
        messages = [cast("Mapping[str, Any]", message) for message in loaded.state.messages]
        reply = loaded.state.reply
        if summary.waiting and reply is not None and (not messages or messages[-1] != reply_param(reply)):
            messages.append(cast("Mapping[str, Any]", reply_param(reply)))  # a pause holds it apart
        denied = frozenset(record.call.id for record in loaded.state.decisions if record.decision == "denied")
        session = self._sessions.get(run_id)
        running = session is not None and session.running
        return RunView(messages, summary.waiting, summary.end_reason, denied, running)

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
                on_event=lambda event: _note(session, event),
                **self._params,
            )
        except ToolRunnerError as error:
            raise RequestError(422, f"the conversation cannot start a run: {error}") from error

    async def _going_on(
        self,
        turn: Turn,
        session: Session,
        waiting: tuple[ToolCall, ...],
        by: str | None,
        *,
        stopped: bool = False,
    ) -> ToolRunner[Any] | None:
        """Decide and append what the request brings; the runner that goes on (``None``: nothing new,
        and the run is not ``stopped``: one the store has as running or ready that this process
        does not drive, cut off by a restart or decided elsewhere, which goes on)."""
        loaded = await self.store.load(turn.run_id)
        assert loaded is not None
        history = list(loaded.state.messages)
        new = [text for role, text in turn.conversation if role == "user"][user_turns(history) :]
        if not turn.decisions and not new and not stopped:
            return None
        if session.running:
            raise RequestError(
                409, f"the run {turn.run_id!r} is running; wait for its end before sending more."
            )
        if new and waiting:
            raise RequestError(
                409,
                f"the run {turn.run_id!r} waits for decisions on {[call.id for call in waiting]!r}; decide them first.",
            )
        for decision in turn.decisions:
            await self._decide(turn.run_id, decision, by)
        if not session.log:  # loaded in this process: its results so far were sent before
            session.reported.update(_answered(history))
        runner = await ToolRunner.resume(
            self.client,
            stream=True,
            tools=self.tools,
            checkpointer=self.store,
            run_id=turn.run_id,
            on_event=lambda event: _note(session, event),
            **self._options,
        )
        for text in new:
            runner.push_messages({"role": "user", "content": text})
        return runner

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

    async def _drive(self, session: Session, runner: ToolRunner[Any]) -> None:
        """Run the loop until it ends or pauses, logging what a client is told."""
        try:
            async for stream in runner:
                _report_results(session, runner.messages)  # the last turn's, before the next reply
                await _read(session, stream)
                _report_results(session, runner.messages)
                if runner.last_message is not None and any(
                    block.type == "tool_use" for block in runner.last_message.content
                ):
                    with contextlib.suppress(ApprovalError):  # calls wait: the loop pauses next
                        await runner.generate_tool_response()
            _report_results(session, runner.messages)
            if runner.end_reason == "awaiting_approval":
                for call in runner.pending_approvals:
                    session.emit(ApprovalWanted(call.id, call.name, call.input))
            final = runner.last_message
            text = "" if final is None else "".join(b.text for b in final.content if b.type == "text")
            session.emit(
                RunFinished(str(runner.end_reason), text, None if final is None else final.stop_reason)
            )
        except Exception as error:  # the run's error goes to the clients; the state is as last saved
            session.emit(RunError(str(error) or type(error).__name__, type(error).__name__))


def _note(session: Session, event: RunnerEvent) -> None:
    if isinstance(event, ApprovalDecided) and event.decision == "denied":
        session.denied.add(event.call.id)


async def _read(session: Session, stream: Any) -> None:
    """The stream's text and tool calls as UI events, as they come; a block the stream left open
    (a reply cut off by ``max_tokens``) is closed at its end: a text block ends, a call is cut."""
    message_id = parent = ""
    blocks: dict[int, str] = {}
    unclosed: dict[
        int, tuple[str, list[str]]
    ] = {}  # the open blocks: a call's name ("": text), its input so far
    async for event in stream:
        kind = event.type
        if kind == "message_start":
            message_id = event.message.id
        elif kind == "content_block_start":
            block = event.content_block
            if block.type == "text":
                blocks[event.index] = parent = f"{message_id}-{event.index}"
                unclosed[event.index] = ("", [])
                session.emit(TextStart(parent))
            elif block.type == "tool_use":
                blocks[event.index] = block.id
                unclosed[event.index] = (block.name, [])
                session.emit(ToolCallStart(block.id, block.name, parent or message_id))
        elif kind == "text" and (id := _current(blocks)) is not None:
            session.emit(TextDelta(id, event.text))
        elif kind == "input_json" and (id := _current(blocks)) is not None:
            if event.partial_json:
                if max(blocks) in unclosed:
                    unclosed[max(blocks)][1].append(event.partial_json)
                session.emit(ToolCallArgs(id, event.partial_json))
        elif kind == "content_block_stop" and event.index in blocks:
            unclosed.pop(event.index, None)
            block = event.content_block
            if block.type == "text":
                session.emit(TextEnd(blocks[event.index]))
            elif block.type == "tool_use":
                session.emit(ToolCallEnd(block.id, block.name, block.input))
    for index, (name, pieces) in sorted(unclosed.items()):
        session.emit(ToolCallCut(blocks[index], name, "".join(pieces)) if name else TextEnd(blocks[index]))


def _current(blocks: dict[int, str]) -> str | None:
    return blocks[max(blocks)] if blocks else None


def _report_results(session: Session, messages: Sequence[Any]) -> None:
    """Log the results the history has that no client was told of yet."""
    for message in messages:
        if message.get("role") != "user" or isinstance(message.get("content"), str):
            continue
        for block in message["content"]:
            if block.get("type") == "tool_result" and block["tool_use_id"] not in session.reported:
                call_id = block["tool_use_id"]
                session.reported.add(call_id)
                session.emit(
                    ToolResult(
                        call_id,
                        result_text(block.get("content", "")),
                        bool(block.get("is_error", False)),
                        call_id in session.denied,
                    )
                )


def result_text(content: object) -> str:
    """A tool result's content as text (what is not text, as its type in brackets)."""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for block in cast("Sequence[Mapping[str, Any]]", content):
        parts.append(str(block.get("text", "")) if block.get("type") == "text" else f"[{block.get('type')}]")
    return "".join(parts)


def _answered(history: Sequence[Any]) -> set[str]:
    return {
        block["tool_use_id"]
        for message in history
        if message.get("role") == "user" and not isinstance(message.get("content"), str)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }


def user_turns(history: Sequence[Any]) -> int:
    """How many messages of the history a person wrote (tool results are not)."""
    count = 0
    for message in history:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        if isinstance(content, str) or not any(block.get("type") == "tool_result" for block in content):
            count += 1
    return count


def input_text(value: object) -> str:
    """A call's input as the JSON text a protocol carries."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

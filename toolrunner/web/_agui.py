"""The AG-UI endpoint: ``RunAgentInput`` in, ``ag_ui.core`` events out, through AG-UI's encoder.

A thread is a run (``threadId`` is the run id in the store); each request is one AG-UI run:
``RUN_STARTED``, the run's events, then ``RUN_FINISHED`` or ``RUN_ERROR``. Each event of the run's
log carries its number there as ``metadata.index``: what a client that reconnects sends back as
``forwardedProps.after`` (the last it has) to get the rest.

Approvals are AG-UI interrupts: a run that pauses for decisions ends with ``RUN_FINISHED`` whose
``outcome`` is ``interrupt``, one ``Interrupt`` per waiting call (``id`` and ``toolCallId``: the
call's ``tool_use`` id; ``reason``: ``"tool_approval"``). The client answers with its next
``RunAgentInput``'s ``resume`` entries: ``status: "resolved"`` with a payload
``{"approved": bool, "reason"?: str, "input"?: object}``, or ``status: "cancelled"`` (a denial);
each is decided through the store, by whom ``decided_by`` says. Interrupts, not a frontend tool
call: the tool is the agent's, it runs on the server once approved, and its result comes back as
the call's own ``TOOL_CALL_RESULT``; a frontend tool call would be the client's to execute and
answer with a result, which is not what a person approving does.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal, cast

from ag_ui.core import (
    AssistantMessage,
    BaseEvent,
    FunctionCall,
    Interrupt,
    Message,
    MessagesSnapshotEvent,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    ToolCall,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    ToolMessage,
    UserMessage,
)
from ag_ui.encoder import EventEncoder
from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

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
)
from ._http import (
    KEEP_ALIVE,
    MAX_BODY,
    DecidedBy,
    Served,
    check_max_body,
    decided_by_header,
    error_response,
    make_app,
    read_body,
    stream,
)
from ._log import input_text
from ._session import Decision, RequestError, RunView, Turn, decider

__all__ = ["APPROVAL_SCHEMA", "agui_app"]

APPROVAL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "approved": {"type": "boolean"},
        "reason": {"type": "string", "description": "What the model reads for a denial."},
        "input": {"description": "The input to run the call with instead of the model's."},
    },
    "required": ["approved"],
}
"""The answer an approval's interrupt asks for (``Interrupt.responseSchema``)."""


def agui_app(
    agent: Served,
    *,
    decided_by: DecidedBy | None = None,
    page: bool = True,
    keep_alive: float | None = 15.0,
    max_body: int = MAX_BODY,
) -> Starlette:
    """An ASGI app that serves ``agent`` over AG-UI: ``POST /`` takes a ``RunAgentInput``.

    Args:
        agent: The runs it serves; the app's lifespan enters it (unless something else did).
        decided_by: Who decides the calls a request decides, from the request (``by=`` in the
            store). The default reads the ``X-Decided-By`` header, which is the client's word: an
            app with logins should give a function that reads its own session.
        page: Whether ``GET /`` serves the example page (``static/agui.html``).
        keep_alive: After how many seconds of silence (a tool that runs long) a stream sends an
            SSE comment line, ``: keep-alive``, which clients ignore and which keeps proxies from
            cutting it as idle (``None``: never).
        max_body: The largest request body it reads, in bytes; a larger one is a 413, refused
            before it is read.
    """
    who = decided_by or decided_by_header
    check_max_body(max_body)

    async def endpoint(request: Request) -> Response:
        try:
            raw = await read_body(request, max_body)
        except RequestError as error:
            return error_response(error)
        try:
            body = RunAgentInput.model_validate_json(raw)
        except ValidationError as error:
            return JSONResponse(
                {"error": f"the body is no AG-UI RunAgentInput: {_first(error)}"}, status_code=422
            )
        try:
            turn = dataclasses.replace(_turn(body), keep_alive=keep_alive)
            follow = await agent.take(turn, by=decider(who(request)))
        except RequestError as error:
            return error_response(error)
        view = None if follow.events is not None else await agent.view(body.thread_id)
        return stream(_answer(body, follow.events, view))

    return make_app(agent, endpoint, page="agui.html" if page else None, extra=[])


def _turn(body: RunAgentInput) -> Turn:
    conversation: list[tuple[Literal["user", "assistant"], str]] = []
    for message in body.messages:
        if isinstance(message, UserMessage):
            conversation.append(("user", _content(message.content)))
        elif isinstance(message, AssistantMessage) and message.content:
            conversation.append(("assistant", message.content))
    decisions: list[Decision] = []
    for entry in body.resume or ():
        if entry.status == "cancelled":
            decisions.append(Decision(entry.interrupt_id, False, "The person cancelled the approval."))
            continue
        payload = entry.payload
        if not isinstance(payload, Mapping) or not isinstance(
            cast("Mapping[str, Any]", payload).get("approved"), bool
        ):
            raise RequestError(
                422,
                f"the resume entry for {entry.interrupt_id!r} needs a payload {{'approved': true|false}}.",
            )
        answer = cast("Mapping[str, Any]", payload)
        reason = answer.get("reason")
        decisions.append(
            Decision(
                entry.interrupt_id,
                answer["approved"],
                reason if isinstance(reason, str) else None,
                answer.get("input"),
            )
        )
    return Turn(body.thread_id, conversation, decisions, _after(body.forwarded_props))


def _after(props: object) -> int | None:
    """``forwardedProps.after``: the number of the last event the client has (``None``: none given).

    Raises:
        RequestError: 422 for anything but a non-negative integer (JSON ``true`` and ``1.5`` too).
    """
    after = cast("Mapping[str, Any]", props).get("after") if isinstance(props, Mapping) else None
    if after is None:
        return None
    if isinstance(after, bool) or not isinstance(after, int) or after < 0:
        raise RequestError(
            422,
            "forwardedProps.after must be a non-negative integer (the metadata.index of the last "
            f"event the client has), not {json.dumps(after)[:60]}.",
        )
    return after


def _content(content: object) -> str:
    if isinstance(content, str):
        return content
    return "".join(getattr(part, "text", "") for part in cast("Sequence[object]", content))


async def _answer(
    body: RunAgentInput, events: AsyncIterator[Entry | None] | None, view: RunView | None
) -> AsyncIterator[str]:
    encoder = EventEncoder()
    thread, run = body.thread_id, body.run_id
    yield encoder.encode(RunStartedEvent(thread_id=thread, run_id=run))
    if events is None:
        assert view is not None
        yield encoder.encode(MessagesSnapshotEvent(messages=snapshot(view.messages)))
        paused = [ApprovalWanted(call.id, call.name, call.input) for call in view.waiting]
        yield encoder.encode(_finished(thread, run, paused, ""))
        return
    waiting: list[ApprovalWanted] = []
    async for entry in events:
        if entry is None:
            yield KEEP_ALIVE
            continue
        event = entry.event
        numbered: dict[str, Any] = {"index": entry.index}  # what a reconnect sends as forwardedProps.after
        if isinstance(event, ApprovalWanted):
            waiting.append(event)
        elif isinstance(event, RunFinished):
            finished = _finished(thread, run, waiting, event.text)
            why = {"endReason": event.reason, "stopReason": event.stop_reason}
            yield encoder.encode(finished.model_copy(update={"metadata": {**numbered, **why}}))
        else:
            encoded = encode(event)
            if encoded is not None:
                yield encoder.encode(encoded.model_copy(update={"metadata": numbered}))


def encode(event: object) -> BaseEvent | None:
    """One UI event as AG-UI's (``None``: AG-UI has no event for it, or it ends the run)."""
    match event:
        case TextStart(id=id):
            return TextMessageStartEvent(message_id=id, role="assistant")
        case TextDelta(id=id, delta=delta) if delta:
            return TextMessageContentEvent(message_id=id, delta=delta)
        case TextEnd(id=id):
            return TextMessageEndEvent(message_id=id)
        case ToolCallStart(id=id, name=name, message_id=parent):
            return ToolCallStartEvent(tool_call_id=id, tool_call_name=name, parent_message_id=parent)
        case ToolCallArgs(id=id, delta=delta):
            return ToolCallArgsEvent(tool_call_id=id, delta=delta)
        case ToolCallEnd(id=id) | ToolCallCut(id=id):  # a cut call ends too: it never runs
            return ToolCallEndEvent(tool_call_id=id)
        case ToolResult(id=id, content=content):
            return ToolCallResultEvent(
                message_id=f"result-{id}", tool_call_id=id, content=content, role="tool"
            )
        case RunError(message=message, code=code):
            return RunErrorEvent(message=message, code=code)
        case _:
            return None


def _finished(thread: str, run: str, waiting: Sequence[ApprovalWanted], text: str) -> RunFinishedEvent:
    if not waiting:
        return RunFinishedEvent(
            thread_id=thread, run_id=run, result=text or None, outcome=RunFinishedSuccessOutcome()
        )
    interrupts = [
        Interrupt(
            id=call.id,
            reason="tool_approval",
            message=f"Approve {call.name} with {input_text(call.input)}?",
            tool_call_id=call.id,
            response_schema=APPROVAL_SCHEMA,
            metadata={"toolName": call.name, "input": call.input},
        )
        for call in waiting
    ]
    return RunFinishedEvent(
        thread_id=thread, run_id=run, outcome=RunFinishedInterruptOutcome(interrupts=interrupts)
    )


def snapshot(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """A run's history as AG-UI messages (ids by position: ``m0``, ``m1``, ...; a result's is its
    call's ``result-ID``, as ``TOOL_CALL_RESULT`` names it)."""
    found: list[Message] = []
    for position, message in enumerate(messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if message["role"] == "assistant":
            text = "".join(block["text"] for block in blocks if block.get("type") == "text")
            calls = [
                ToolCall(
                    id=block["id"],
                    function=FunctionCall(name=block["name"], arguments=json.dumps(block["input"])),
                )
                for block in blocks
                if block.get("type") == "tool_use"
            ]
            found.append(AssistantMessage(id=f"m{position}", content=text or None, tool_calls=calls or None))
            continue
        text = "".join(block["text"] for block in blocks if block.get("type") == "text")
        if text:
            found.append(UserMessage(id=f"m{position}", content=text))
        for block in blocks:
            if block.get("type") == "tool_result":
                result = block.get("content", "")
                found.append(
                    ToolMessage(
                        id=f"result-{block['tool_use_id']}",
                        tool_call_id=block["tool_use_id"],
                        content=result if isinstance(result, str) else json.dumps(result),
                    )
                )
    return found


def _first(error: ValidationError) -> str:
    problem = error.errors()[0]
    where = ".".join(str(part) for part in problem["loc"]) or "the body"
    return (
        f"{where}: {problem['msg']} ({error.error_count()} problem{'s' if error.error_count() > 1 else ''})"
    )

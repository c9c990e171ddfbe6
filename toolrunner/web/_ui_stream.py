"""The Vercel AI SDK's UI message stream (``useChat``'s default transport): server-sent events of
JSON parts, then ``[DONE]``, under the ``x-vercel-ai-ui-message-stream: v1`` header.

The SDK ships no Python types, so the encoder is strict instead: each part is built by one
function from the part types ``PARTS`` names, with exactly the keys it lists, and
``tests/web/test_ui_stream_node.py`` reads the same names out of the installed ``ai`` package's
types and feeds a stream to its own reader (``readUIMessageStream``).

A chat is a run (the body's ``id`` is the run id in the store). Approvals are the SDK's tool
approval parts: a call that waits is sent as ``tool-approval-request`` (its ``approvalId`` is the
call's ``tool_use`` id), the stream finishes, and the client's next request carries the answer
in the last assistant message's tool part (``state: "approval-responded"``, ``approval:
{id, approved, reason}``: ``addToolApprovalResponse``), decided through the store by whom
``decided_by`` says. A denied call's result is sent as ``tool-output-denied``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any, Literal, cast

from pydantic import BaseModel, ConfigDict, ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

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
from ._log import result_text
from ._session import Decision, RequestError, RunView, Turn, decider, web_run_id

__all__ = ["HEADER", "PARTS", "encode", "ui_message_stream_app", "ui_messages"]

HEADER = {"x-vercel-ai-ui-message-stream": "v1"}

PARTS: dict[str, tuple[str, ...]] = {
    "start": (),
    "text-start": ("id",),
    "text-delta": ("id", "delta"),
    "text-end": ("id",),
    "tool-input-start": ("toolCallId", "toolName"),
    "tool-input-delta": ("toolCallId", "inputTextDelta"),
    "tool-input-available": ("toolCallId", "toolName", "input"),
    "tool-input-error": ("toolCallId", "toolName", "input", "errorText"),
    "tool-output-available": ("toolCallId", "output"),
    "tool-output-error": ("toolCallId", "errorText"),
    "tool-output-denied": ("toolCallId",),
    "tool-approval-request": ("approvalId", "toolCallId"),
    "error": ("errorText",),
    "finish": ("finishReason",),
}
"""The part types this stream sends, and the keys of each (all required by the SDK's types but
``finish``'s ``finishReason``, which it takes)."""

FINISH_REASONS = {"awaiting_approval": "tool-calls", "model": "stop"}
"""The runner's end reasons as the SDK's finish reasons (any other: ``"other"``)."""

STOP_REASONS = {
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "refusal": "content-filter",
}
"""The model's stop reasons that make the SDK's finish reason of a loop the model ended."""


def finish_reason(event: RunFinished) -> str:
    """The ``finish`` part's ``finishReason``: the model's stop reason when it ended the loop
    (``"length"``: cut off), else the runner's end reason."""
    if event.reason == "model" and event.stop_reason in STOP_REASONS:
        return STOP_REASONS[event.stop_reason]
    return FINISH_REASONS.get(event.reason, "other")


class _Part(BaseModel):
    model_config = ConfigDict(extra="allow")
    type: str


class _Message(BaseModel):
    model_config = ConfigDict(extra="allow")
    role: Literal["user", "assistant", "system"]
    parts: list[_Part]


class _Body(BaseModel):
    """What ``useChat`` posts: the chat's id and its messages (``UIMessage``\\s)."""

    model_config = ConfigDict(extra="allow")
    id: str
    messages: list[_Message]


def ui_message_stream_app(
    agent: Served,
    *,
    decided_by: DecidedBy | None = None,
    page: bool = True,
    keep_alive: float | None = 15.0,
    max_body: int = MAX_BODY,
) -> Starlette:
    """An ASGI app that serves ``agent`` as the AI SDK's UI message stream: ``POST /`` takes what
    ``useChat`` posts (``{"id": chat id, "messages": [...]}``); ``GET /{id}/stream`` reconnects
    to the chat's run while it runs (``useChat({resume: true})``; 204 when it does not);
    ``GET /{id}/messages`` is the chat as the store has it, as ``UIMessage`` list (``useChat``'s
    ``messages``: a reload starts from them), with whether it runs.

    Args:
        agent: The runs it serves; the app's lifespan enters it (unless something else did).
        decided_by: Who decides the calls a request decides, from the request (``by=`` in the
            store). The default reads the ``X-Decided-By`` header, which is the client's word: an
            app with logins should give a function that reads its own session.
        page: Whether ``GET /`` serves the example page (``static/chat.html``).
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
            body = _Body.model_validate_json(raw)
        except ValidationError as error:
            problem = error.errors()[0]
            where = ".".join(str(part) for part in problem["loc"]) or "the body"
            return JSONResponse(
                {"error": f"the body is no useChat request: {where}: {problem['msg']}"}, status_code=422
            )
        try:
            follow = await agent.take(
                dataclasses.replace(_turn(body), keep_alive=keep_alive), by=decider(who(request))
            )
        except RequestError as error:
            return error_response(error)
        if follow.events is None:
            return JSONResponse(
                {"error": f"the chat {body.id!r} has nothing new to answer."}, status_code=409
            )
        return stream(_answer(follow.events), headers=HEADER)

    async def reconnect(request: Request) -> Response:
        run_id = str(request.path_params["chat_id"])
        try:
            after = _after(request.query_params.getlist("after"))
        except RequestError as error:
            return error_response(error)
        try:
            follow = await agent.take(Turn(run_id, after=after, keep_alive=keep_alive), by=None)
        except RequestError:
            return Response(status_code=204)
        if follow.events is None:
            return Response(status_code=204)
        return stream(_answer(follow.events), headers=HEADER)

    async def messages(request: Request) -> Response:
        run_id = str(request.path_params["chat_id"])
        try:
            view = await agent.view(web_run_id(run_id))
        except RequestError as error:
            return error_response(error)
        if view is None:
            return JSONResponse({"error": f"there is no chat {run_id!r}."}, status_code=404)
        return JSONResponse({"messages": ui_messages(view), "running": view.running})

    extra = [
        Route("/{chat_id}/stream", reconnect, methods=["GET"]),
        Route("/{chat_id}/messages", messages, methods=["GET"]),
    ]
    return make_app(agent, endpoint, page="chat.html" if page else None, extra=extra)


def _after(values: Sequence[str]) -> int | None:
    """``?after=N``: the number (the SSE ``id:``) of the last event the client has (``None``: none).

    Raises:
        RequestError: 422 unless it is given once, as ASCII digits.
    """
    if not values:
        return None
    if len(values) > 1:
        raise RequestError(422, f"after= is given {len(values)} times; give it once.")
    text = values[0]
    if not (text.isascii() and text.isdigit()):
        raise RequestError(
            422,
            f"after= must be a non-negative integer in ASCII digits (an SSE id: this stream sent), not {text[:60]!r}.",
        )
    digits = text.lstrip("0") or "0"
    return int(digits) if len(digits) <= 18 else 10**18  # past any log's end: followed from the end


def _turn(body: _Body) -> Turn:
    conversation: list[tuple[Literal["user", "assistant"], str]] = []
    for message in body.messages:
        text = "".join(str(getattr(part, "text", "")) for part in message.parts if part.type == "text")
        if message.role != "system" and text:
            conversation.append((message.role, text))
    decisions: list[Decision] = []
    last = body.messages[-1] if body.messages else None
    if last is not None and last.role == "assistant":
        for part in last.parts:
            extra = part.model_extra or {}
            approval = extra.get("approval")
            if extra.get("state") == "approval-responded":
                decisions.append(_decision(extra.get("toolCallId"), approval))
    if "/" in body.id:
        raise RequestError(
            422, f"a chat id is one segment of a URL (/{{id}}/stream): no '/', not {body.id!r}."
        )
    return Turn(body.id, conversation, decisions)


def _decision(call_id: object, approval: object) -> Decision:
    """A tool part's approval response (``addToolApprovalResponse``): ``{id, approved, reason?}``,
    its ``id`` the ``approvalId`` this stream sent (the call's id); anything else is a 422, never
    a decision nobody made."""
    answer: Mapping[str, Any] = cast("Mapping[str, Any]", approval) if isinstance(approval, Mapping) else {}
    reason = answer.get("reason")
    if (
        not isinstance(call_id, str)
        or not isinstance(answer.get("approved"), bool)
        or answer.get("id") != call_id
        or not (reason is None or isinstance(reason, str))
    ):
        raise RequestError(
            422,
            f"the approval response of the tool part {call_id!r} must be {{'id': its approvalId, 'approved': "
            f"true|false, 'reason'?: text}}, not {approval!r}; nothing was decided.",
        )
    return Decision(call_id, answer["approved"], reason)


async def _answer(events: AsyncIterator[Entry | None]) -> AsyncIterator[str]:
    yield _sse(part("start"))
    async for entry in events:
        if entry is None:
            yield KEEP_ALIVE
            continue
        for chunk in encode(entry.event):
            yield _sse(chunk, entry.index)
    yield "data: [DONE]\n\n"


def encode(event: UIEvent) -> Sequence[dict[str, object]]:
    """One UI event as the stream's parts (none, one or two)."""
    match event:
        case TextStart(id=id):
            return [part("text-start", id=id)]
        case TextDelta(id=id, delta=delta):
            return [part("text-delta", id=id, delta=delta)]
        case TextEnd(id=id):
            return [part("text-end", id=id)]
        case ToolCallStart(id=id, name=name):
            return [part("tool-input-start", toolCallId=id, toolName=name)]
        case ToolCallArgs(id=id, delta=delta):
            return [part("tool-input-delta", toolCallId=id, inputTextDelta=delta)]
        case ToolCallEnd(id=id, name=name, input=input):
            return [part("tool-input-available", toolCallId=id, toolName=name, input=input)]
        case ToolCallCut(id=id, name=name, partial=partial):
            cut = "The reply was cut off (max_tokens) before the call's input was complete; it did not run."
            return [part("tool-input-error", toolCallId=id, toolName=name, input=partial, errorText=cut)]
        case ToolResult(id=id, denied=True):
            return [part("tool-output-denied", toolCallId=id)]
        case ToolResult(id=id, content=content, is_error=True):
            return [part("tool-output-error", toolCallId=id, errorText=content)]
        case ToolResult(id=id, content=content):
            return [part("tool-output-available", toolCallId=id, output=content)]
        case ApprovalWanted(id=id):
            return [part("tool-approval-request", approvalId=id, toolCallId=id)]
        case RunFinished():
            return [part("finish", finishReason=finish_reason(event))]
        case RunError(message=message):
            return [part("error", errorText=message)]


def part(type: str, **fields: object) -> dict[str, object]:
    """A part of one of the types ``PARTS`` names, with exactly its keys.

    Raises:
        ValueError: Another type, or other keys (a mistake of this module, caught by its tests).
    """
    keys = PARTS.get(type)
    if keys is None or set(fields) != set(keys):
        raise ValueError(f"a {type!r} part takes {keys!r}, not {sorted(fields)!r}.")
    return {"type": type, **fields}


def _sse(chunk: Mapping[str, object], index: int | None = None) -> str:
    line = f"data: {json.dumps(chunk, ensure_ascii=False, separators=(',', ':'))}\n\n"
    return line if index is None else f"id: {index}\n{line}"


def ui_messages(view: RunView) -> list[dict[str, object]]:
    """A run's history as the SDK's ``UIMessage`` list: a person's messages as user messages, each
    stretch of the model's replies (with the results between them) as one assistant message, its
    calls as ``tool-NAME`` parts in the state they stand in (ids by position: ``m0``, ``m1``, ...)."""
    found: list[dict[str, object]] = []
    results: dict[str, Mapping[str, Any]] = {
        block["tool_use_id"]: block
        for message in view.messages
        if message["role"] == "user" and not isinstance(message["content"], str)
        for block in message["content"]
        if block.get("type") == "tool_result"
    }
    waiting = {call.id for call in view.waiting}
    for position, message in enumerate(view.messages):
        content = message["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        parts: list[dict[str, object]] = []
        for block in blocks:
            if block.get("type") == "text" and block["text"]:
                parts.append({"type": "text", "text": block["text"], "state": "done"})
            elif block.get("type") == "tool_use":
                parts.append(_tool_part(block, results.get(block["id"]), block["id"] in waiting, view.denied))
        if message["role"] == "assistant" and found and found[-1]["role"] == "assistant":
            cast("list[dict[str, object]]", found[-1]["parts"]).extend(parts)
        elif parts:
            found.append({"id": f"m{position}", "role": message["role"], "parts": parts})
    return found


def _tool_part(
    call: Mapping[str, Any], result: Mapping[str, Any] | None, waiting: bool, denied: frozenset[str]
) -> dict[str, object]:
    id = call["id"]
    found: dict[str, object] = {"type": f"tool-{call['name']}", "toolCallId": id, "input": call["input"]}
    if result is None:
        state = "approval-requested" if waiting else "input-available"
        return {**found, "state": state, **({"approval": {"id": id}} if waiting else {})}
    text = result_text(result.get("content", ""))
    if id in denied:
        return {**found, "state": "output-denied", "approval": {"id": id, "approved": False, "reason": text}}
    if result.get("is_error"):
        return {**found, "state": "output-error", "errorText": text}
    return {**found, "state": "output-available", "output": text}

"""`FakeMessagesAPI`: records requests, picks the answer, renders it as HTTP; no I/O.

The transports (`_transport.py`) and the ASGI app (`_server.py`) are thin layers over
`FakeMessagesAPI.begin()` / `.finish()`, so both serve exactly the same answers.

Which entry answers a request:

1. Every request is recorded, in arrival order, before anything else.
2. A request for anything but `POST /v1/messages` and the Message Batches endpoints gets 404; an
   invalid one gets 400 (when validating). Neither consumes a script entry.
3. Otherwise the next script entry answers; when the script is used up, the responder (if any)
   answers; without one the fake answers 500 naming the request number.

The Message Batches endpoints (`/v1/messages/batches...`) are served by `_batches.py`: each
request of a batch is recorded and answered by these same steps when the batch is created.
"""

from __future__ import annotations

import inspect
import json
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias, cast

from typing_extensions import TypeIs

from ._automatic import answer_automatically
from ._caching import PromptCache
from ._replies import Disconnect, Fault, ScriptedReply, ScriptEntry, StreamCut
from ._sse import count_events, message_events
from ._validation import find_invalid_request

if TYPE_CHECKING:
    import anthropic
    import httpx2

__all__ = [
    "BATCHES_PATH",
    "Answer",
    "Dropped",
    "EventStream",
    "FakeMessagesAPI",
    "Outcome",
    "RecordedRequest",
    "Responder",
    "answer",
    "error_answer",
    "is_awaitable",
]

_DEFAULT_USAGE: dict[str, Any] = {
    "input_tokens": 10,
    "output_tokens": 5,
    "cache_creation_input_tokens": 0,
    "cache_read_input_tokens": 0,
}
_FAKE_BASE_URL = "https://api.anthropic.com"
BATCHES_PATH = "/v1/messages/batches"
"""The Message Batches endpoints' path, and the start of the others' (served by `_batches.py`)."""
_FAKE_API_KEY = "sk-ant-fake-key"


def _client_options(max_retries: int) -> dict[str, Any]:
    """The options of an SDK client this fake answers (``client()``, ``async_client()``), but its
    ``http_client``."""
    return {"api_key": _FAKE_API_KEY, "base_url": _FAKE_BASE_URL, "max_retries": max_retries}


@dataclass(frozen=True, slots=True)
class RecordedRequest:
    """One request the fake received.

    Attributes:
        index: Its position in `FakeMessagesAPI.requests` (from 0); error messages say
            "request #N" counting from 1, so request #3 is `requests[2]`.
        method: The HTTP method, e.g. "POST".
        url: The full URL, with the query string.
        headers: The headers, with lower-case names.
        body: The JSON body, parsed once; an empty dict when the body is empty or not a JSON object.
        batch_id: For a request of a Message Batch, the batch's id (None for an HTTP request):
            each request of a batch is recorded after the batch's own `POST /v1/messages/batches`,
            as a `POST /v1/messages` with its `params` as the body and the batch's headers.
        custom_id: For a request of a Message Batch, its `custom_id` (None for an HTTP request).
    """

    index: int
    method: str
    url: str
    headers: Mapping[str, str]
    body: dict[str, Any]
    batch_id: str | None = None
    custom_id: str | None = None

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The request's `messages` as sent, `role: "system"` ones included (an empty list when there are none)."""
        return self.body.get("messages") or []

    @property
    def tools(self) -> list[dict[str, Any]]:
        """The request's `tools` (an empty list when there are none)."""
        return self.body.get("tools") or []

    @property
    def stream(self) -> bool:
        """Whether the request asked for a streamed answer."""
        return self.body.get("stream") is True


Responder: TypeAlias = Callable[[RecordedRequest], ScriptEntry | Awaitable[ScriptEntry]]
"""A function (sync or async) that answers a recorded request with a script entry."""


@dataclass(frozen=True, slots=True)
class Answer:
    """A whole HTTP answer, sent after waiting `delay` seconds."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    delay: float = 0.0
    cut: bool = False  # the body breaks off with a read error instead of arriving


@dataclass(frozen=True, slots=True)
class EventStream:
    """A `text/event-stream` answer: `events` with `delay` seconds between them, cut after `cut_after`."""

    headers: list[tuple[str, str]]
    events: list[bytes]
    delay: float = 0.0
    cut_after: int | None = None


@dataclass(frozen=True, slots=True)
class Dropped:
    """No answer: the connection drops."""


Outcome: TypeAlias = Answer | EventStream | Dropped


class FakeMessagesAPI:
    """An offline Messages API: serves scripted replies to the real SDK and records every request.

    Args:
        script: Entries answering requests in order (replies, faults, disconnects, stream cuts).
        responder: Answers requests once the script is used up; a function (sync or async) taking
            the `RecordedRequest` and returning a script entry.
        validate: Answer 400 to requests the real service rejects (see `_validation.py`).
        prompt_cache: Count every request's tokens and account for prompt caching with this cache
            (see `_caching.py`): replies then report the input tokens read from the cache, written
            to it and neither, and output tokens counted from their content. Without it, replies
            report small fixed counts. A reply's own `usage` wins either way.
        batch_polls: End each Message Batch at its `batch_polls`-th retrieve (so 1 ends it at the
            first); None (the default) leaves batches in progress until `end_batches()`.

    Attributes:
        script: The entries, in order; extend it or call `add()` at any time.
        requests: Every request received, in order.
        prompt_cache: The `PromptCache`, if any.
    """

    def __init__(
        self,
        script: Iterable[ScriptEntry] = (),
        *,
        responder: Responder | None = None,
        validate: bool = True,
        prompt_cache: PromptCache | None = None,
        batch_polls: int | None = None,
    ) -> None:
        from ._batches import BatchService

        if prompt_cache is not None and not isinstance(prompt_cache, PromptCache):
            raise TypeError(
                f"prompt_cache must be a PromptCache or None, not {type(prompt_cache).__name__!r}; "
                "pass prompt_cache=PromptCache()."
            )
        self.script: list[ScriptEntry] = list(script)
        self.requests: list[RecordedRequest] = []
        self.responder = responder
        self.validate = validate
        self.prompt_cache = prompt_cache
        self._used = 0  # script[:_used] have answered requests
        self._messages = 0
        self._tool_ids = 0
        self._closed = False
        # Requests may arrive from several threads (sync clients, the server thread).
        self._lock = threading.Lock()
        self._batches = BatchService(
            batch_polls, record=self._record_batch_item, choose=self._choose, message=self._message
        )

    @classmethod
    def automatic(cls, *, validate: bool = True, prompt_cache: PromptCache | None = None) -> FakeMessagesAPI:
        """A fake that calls every offered tool once with schema-made arguments, then sums up the results."""
        return cls(responder=answer_request_automatically, validate=validate, prompt_cache=prompt_cache)

    def close(self) -> None:
        """Refuse later requests: each gets a 500 saying it arrived after close() (and is recorded).

        The pytest fixture closes its fake after the test, so a task that outlives the test fails
        loudly instead of going unnoticed.
        """
        self._closed = True

    def end_batches(self) -> list[str]:
        """End every Message Batch not ended yet (a canceled one with its requests canceled); their ids."""
        return self._batches.end_all()

    def add(self, *entries: ScriptEntry) -> None:
        """Append entries to the script."""
        self.script.extend(entries)

    @property
    def unused(self) -> list[ScriptEntry]:
        """The script entries that have not answered a request yet."""
        return self.script[self._used :]

    def assert_complete(self) -> None:
        """Raise AssertionError when script entries were never used, naming them."""
        unused = self.unused
        if unused:
            listing = "; ".join(f"#{self._used + n + 1}: {entry!r}" for n, entry in enumerate(unused))
            raise AssertionError(
                f"FakeMessagesAPI served {self._used} of {len(self.script)} script entries after "
                f"{len(self.requests)} requests; unused: {listing}. Remove them or make the code under "
                "test send the requests they expect."
            )

    def async_client(self, *, max_retries: int = 0, **options: Any) -> anthropic.AsyncAnthropic:
        """A real `anthropic.AsyncAnthropic` whose requests this fake answers in-process.

        Args:
            max_retries: The SDK's retry count; 0 by default so that faults surface at once.
            **options: More `AsyncAnthropic` options (e.g. `default_headers`).
        """
        import anthropic
        import httpx2

        http_client = httpx2.AsyncClient(transport=self.async_transport())
        return anthropic.AsyncAnthropic(**_client_options(max_retries), http_client=http_client, **options)

    def client(self, *, max_retries: int = 0, **options: Any) -> anthropic.Anthropic:
        """A real `anthropic.Anthropic` whose requests this fake answers in-process (same script and records).

        Args:
            max_retries: The SDK's retry count; 0 by default so that faults surface at once.
            **options: More `Anthropic` options (e.g. `default_headers`).
        """
        import anthropic
        import httpx2

        http_client = httpx2.Client(transport=self.transport())
        return anthropic.Anthropic(**_client_options(max_retries), http_client=http_client, **options)

    def async_transport(self) -> httpx2.AsyncBaseTransport:
        """An `httpx2` async transport answering from this fake, for clients you build yourself."""
        from ._transport import FakeAsyncTransport

        return FakeAsyncTransport(self)

    def transport(self) -> httpx2.BaseTransport:
        """An `httpx2` sync transport answering from this fake, for clients you build yourself."""
        from ._transport import FakeTransport

        return FakeTransport(self)

    # The I/O layers call begin() then, when it returns a request and a pending answer, finish().

    def begin(
        self, method: str, url: str, path: str, headers: Mapping[str, str], content: bytes
    ) -> tuple[RecordedRequest, Outcome | ScriptEntry | Awaitable[Outcome | ScriptEntry]]:
        """Record a request and decide its answer: an outcome, an entry, or an awaitable of either."""
        body = _parse_body(content)
        batches = path == BATCHES_PATH or path.startswith(BATCHES_PATH + "/")
        with self._lock:
            request = RecordedRequest(
                len(self.requests), method, url, headers, body if body is not None else {}
            )
            self.requests.append(request)
            if self._closed:
                return request, error_answer(
                    500,
                    "api_error",
                    f"FakeMessagesAPI: request #{request.index + 1} arrived after close(); stop every task "
                    "that uses the fake before the test ends.",
                    should_retry=False,
                )
            if not batches and (method != "POST" or path != "/v1/messages"):
                return request, error_answer(
                    404,
                    "not_found_error",
                    f"FakeMessagesAPI serves only POST /v1/messages and {BATCHES_PATH}, not {method} {path}.",
                )
            if body is None:
                return request, error_answer(
                    400, "invalid_request_error", "There was an error parsing the body of your request."
                )
        if batches:
            return request, self._batches.answer(request, path)
        return request, self._choose(request)

    def _record_batch_item(
        self, batch: RecordedRequest, params: dict[str, Any], batch_id: str, custom_id: str
    ) -> RecordedRequest:
        """Record a request of a batch, as a `POST /v1/messages` of its params (see `RecordedRequest`)."""
        url = batch.url.split(BATCHES_PATH, 1)[0] + "/v1/messages"
        with self._lock:
            request = RecordedRequest(
                len(self.requests), "POST", url, batch.headers, params, batch_id, custom_id
            )
            self.requests.append(request)
            return request

    def _choose(self, request: RecordedRequest) -> Outcome | ScriptEntry | Awaitable[ScriptEntry]:
        """The answer of a recorded, well-formed Messages request: 400 if invalid, else the next
        script entry, else the responder's (500 without one)."""
        with self._lock:
            if self.validate:
                problem = find_invalid_request(request.body)
                if problem is not None:
                    return error_answer(400, "invalid_request_error", problem)
            if self._used < len(self.script):
                self._used += 1
                return self.script[self._used - 1]
        if self.responder is None:
            return error_answer(
                500,
                "api_error",
                f"FakeMessagesAPI: request #{request.index + 1} arrived but the script has only "
                f"{len(self.script)} replies; add replies for every request the code makes.",
                should_retry=False,
            )
        return self.responder(request)

    def finish(self, request: RecordedRequest, entry: Outcome | ScriptEntry) -> Outcome:
        """The HTTP outcome for a request answered by `entry`."""
        match entry:
            case Answer() | EventStream() | Dropped():
                return entry
            case ScriptedReply():
                return self._render(request, entry, None)
            case StreamCut(reply=reply, after_events=after_events):
                return self._render(request, reply, after_events)
            case Fault():
                return error_answer(
                    entry.status, entry.error_type, entry.message, retry_after=entry.retry_after
                )
            case Disconnect():
                return Dropped()
        raise TypeError(  # pyright: ignore[reportUnreachable]
            f"FakeMessagesAPI cannot answer with {entry!r}; return a reply, fault(), disconnect() or stream_cut()."
        )

    def _render(self, request: RecordedRequest, reply: ScriptedReply, cut_after: int | None) -> Outcome:
        message = self._message(request, reply)
        if request.stream:
            events = message_events(message, partial_json=reply.stream_partial_json)
            return EventStream(_SSE_HEADERS, events, reply.delay, cut_after)
        delay = reply.delay * count_events(message) if reply.delay else 0.0
        return Answer(200, _JSON_HEADERS, json.dumps(message).encode(), delay, cut=cut_after is not None)

    def _message(self, request: RecordedRequest, reply: ScriptedReply) -> dict[str, Any]:
        with self._lock:
            self._messages += 1
            number = self._messages
            content: list[dict[str, Any]] | tuple[dict[str, Any], ...] = reply.content
            if reply.needs_ids:
                taken = _ids_in(request.messages) | _ids_in([{"content": list(reply.content)}])
                content = [self._with_id(block, taken) for block in reply.content]
        usage = (
            dict(_DEFAULT_USAGE)
            if self.prompt_cache is None
            else self.prompt_cache.usage(request.body, list(content))
        )
        message: dict[str, Any] = {
            "id": f"msg_fake_{number:04d}",
            "type": "message",
            "role": "assistant",
            "model": request.body.get("model", "fake-model"),
            "content": content,
            "stop_reason": reply.stop_reason,
            "stop_sequence": None,
            "usage": {**usage, **reply.usage} if reply.usage else usage,
        }
        if reply.container is not None:
            message["container"] = reply.container
        return message

    def _with_id(self, block: dict[str, Any], taken: set[str]) -> dict[str, Any]:
        """``block`` with the fake's next tool id, when it needs one: ``toolu_fake_0001``, ... in
        order, skipping the ids ``taken`` (those the conversation holds already: a run resumed with
        a new fake must not get an id of its first part, which the service would refuse)."""
        if block.get("type") != "tool_use" or block.get("id") is not None:
            return block
        while True:
            self._tool_ids += 1
            made = f"toolu_fake_{self._tool_ids:04d}"
            if made not in taken:
                return {**block, "id": made}

    def __repr__(self) -> str:
        return (
            f"<FakeMessagesAPI {self._used}/{len(self.script)} entries used, {len(self.requests)} requests>"
        )


def answer_request_automatically(request: RecordedRequest) -> ScriptedReply:
    """The responder of `FakeMessagesAPI.automatic()`."""
    return answer_automatically(request.messages, request.tools)


def _ids_in(messages: Iterable[Mapping[str, Any]]) -> set[str]:
    """The ids of the content blocks of ``messages`` (tool calls' ``id``, tool results'
    ``tool_use_id``), as the request sent them."""
    ids: set[str] = set()
    for message in messages:
        content: object = message.get("content")
        for block in cast("list[object]", content) if isinstance(content, list) else []:
            if isinstance(block, dict):
                for key in ("id", "tool_use_id"):
                    value: object = cast("dict[str, object]", block).get(key)
                    if isinstance(value, str):
                        ids.add(value)
    return ids


def _parse_body(content: bytes) -> dict[str, Any] | None:
    if not content:
        return {}
    try:
        body = json.loads(content)
    except ValueError:
        return None
    return cast(dict[str, Any], body) if isinstance(body, dict) else None


_JSON_HEADERS = [("content-type", "application/json")]
_SSE_HEADERS = [("content-type", "text/event-stream; charset=utf-8"), ("cache-control", "no-cache")]


def error_answer(
    status: int, error_type: str, message: str, *, retry_after: float | None = None, should_retry: bool = True
) -> Answer:
    """An error answer with the service's body shape; 400s and `should_retry=False` tell the SDK not to retry."""
    body = {"type": "error", "error": {"type": error_type, "message": message}}
    headers = list(_JSON_HEADERS)
    if retry_after is not None:
        headers.append(("retry-after", f"{retry_after:g}"))
    if status == 400 or not should_retry:
        headers.append(("x-should-retry", "false"))
    return Answer(status, headers, json.dumps(body).encode())


def is_awaitable(
    value: Outcome | ScriptEntry | Awaitable[Outcome | ScriptEntry],
) -> TypeIs[Awaitable[Outcome | ScriptEntry]]:
    """Whether a responder returned an awaitable (it is an async function), or a batch waits for one."""
    return inspect.isawaitable(value)


async def answer(
    fake: FakeMessagesAPI, method: str, url: str, path: str, headers: Mapping[str, str], content: bytes
) -> Outcome:
    """The outcome of a request, for the async I/O layers (``FakeAsyncTransport``, ``FakeApp``):
    ``begin()``, an async responder's entry awaited, then ``finish()``."""
    request, pending = fake.begin(method, url, path, headers, content)
    if is_awaitable(pending):
        pending = await pending
    return fake.finish(request, pending)

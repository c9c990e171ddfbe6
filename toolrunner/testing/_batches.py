"""The Message Batches endpoints of `FakeMessagesAPI`: `BatchService`, no I/O.

Served as the SDK's `client.messages.batches` calls them:

- `POST /v1/messages/batches` (`create`): a body `{"requests": [{"custom_id", "params"}, ...]}`.
  A malformed body (no `requests`, an empty list, a request without a valid `custom_id` or with
  `params` that are not an object, two requests with one `custom_id`) gets 400 and makes no batch.
  Otherwise each request is recorded in `fake.requests` (with `batch_id` and `custom_id`) and
  answered at once, in order, as a `POST /v1/messages` of its `params` would be: validated (an
  invalid one is `errored` with the service's `invalid_request_error`, and uses no entry), then the
  next script entry, then the responder. A reply makes a `succeeded` result (with the reply's
  usage), a `fault()` an `errored` one of its type, `disconnect()` and `stream_cut()` an `errored`
  `api_error`; `params` with `"stream": true` are `errored` (a batch does not stream).
- The batch is `in_progress` (every request `processing`) until it ends: at `fake.end_batches()`,
  or at its `batch_polls`-th retrieve when the fake has that option. Then it is `ended`, with
  `ended_at`, `results_url` and its `request_counts`.
- `GET /v1/messages/batches/{id}` (`retrieve`; the SDK's `results()` retrieves first, which counts).
- `POST .../{id}/cancel`: an `in_progress` batch becomes `canceling`, and ends at its next retrieve
  or `end_batches()` with every request `canceled` (the fake processes none before the end; the
  script entries picked for them stay used). A `canceling` batch is returned as it is; an ended
  one gets 400.
- `GET .../{id}/results`: the results as JSON Lines, in request order; 400 before the end.
- `DELETE .../{id}`: an ended batch is deleted (later calls get 404); 400 before the end.
- `GET /v1/messages/batches` (`list`): newest first, with `limit` (1 to 1000, default 20),
  `after_id` and `before_id`. Listing does not count as a retrieve.

An unknown batch id gets 404 `not_found_error`. The wording of the 400s and 404s is the fake's own
(the service's for these cases is not recorded), in the service's error shape.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial
from typing import Any, Literal, cast
from urllib.parse import parse_qs, urlsplit

from ._fake import BATCHES_PATH, Answer, Outcome, RecordedRequest, error_answer, is_awaitable
from ._replies import Disconnect, Fault, ScriptedReply, ScriptEntry, StreamCut

__all__ = ["BatchService"]

_CUSTOM_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_JSON_HEADERS = [("content-type", "application/json")]
_JSONL_HEADERS = [("content-type", "application/binary")]

RecordItem = Callable[[RecordedRequest, dict[str, Any], str, str], RecordedRequest]
Choose = Callable[[RecordedRequest], Outcome | ScriptEntry | Awaitable[ScriptEntry]]
Render = Callable[[RecordedRequest, ScriptedReply], dict[str, Any]]


@dataclass(slots=True)
class _Batch:
    id: str
    created_at: datetime
    custom_ids: list[str]
    results: list[dict[str, Any]]  # each request's result, decided at create time
    status: Literal["in_progress", "canceling", "ended"] = "in_progress"
    retrieves: int = 0
    cancel_initiated_at: datetime | None = None
    ended_at: datetime | None = None
    final: list[dict[str, Any]] = field(default_factory=list[dict[str, Any]])  # once ended

    def end(self) -> None:
        self.status = "ended"
        self.ended_at = _now()
        canceled = self.cancel_initiated_at is not None
        self.final = [{"type": "canceled"} if canceled else result for result in self.results]

    def view(self, base_url: str) -> dict[str, Any]:
        """The batch as the service shows it (a `MessageBatch`), its results at ``base_url``."""
        counts = dict.fromkeys(("processing", "succeeded", "errored", "canceled", "expired"), 0)
        if self.status == "ended":
            for result in self.final:
                counts[result["type"]] += 1
        else:
            counts["processing"] = len(self.results)
        ended = self.status == "ended"
        return {
            "id": self.id,
            "type": "message_batch",
            "processing_status": self.status,
            "request_counts": counts,
            "created_at": _stamp(self.created_at),
            "expires_at": _stamp(self.created_at + timedelta(hours=24)),
            "ended_at": _stamp(self.ended_at),
            "cancel_initiated_at": _stamp(self.cancel_initiated_at),
            "archived_at": None,
            "results_url": f"{base_url}{BATCHES_PATH}/{self.id}/results" if ended else None,
        }


class BatchService:
    """The batches of one fake and the answers of their endpoints.

    Args:
        polls: End a batch at its `polls`-th retrieve; None: only `end_all()` ends batches.
        record: Records a request of a batch (the batch's HTTP request, params, batch id, custom id).
        choose: The fake's answer of a recorded Messages request (an error, an entry, or an awaitable entry).
        message: The fake's message for a request answered by a reply.
    """

    def __init__(self, polls: int | None, *, record: RecordItem, choose: Choose, message: Render) -> None:
        if polls is not None and (isinstance(polls, bool) or not isinstance(polls, int) or polls < 1):
            raise ValueError(f"batch_polls must be a whole number from 1 or None, not {polls!r}.")
        self._polls = polls
        self._record = record
        self._choose = choose
        self._message = message
        self._batches: dict[str, _Batch] = {}  # in creation order
        self._made = 0
        self._lock = threading.Lock()

    def end_all(self) -> list[str]:
        """End every batch not ended yet; their ids."""
        with self._lock:
            ending = [batch for batch in self._batches.values() if batch.status != "ended"]
            for batch in ending:
                batch.end()
        return [batch.id for batch in ending]

    def answer(self, request: RecordedRequest, path: str) -> Outcome | Awaitable[Outcome]:
        """The answer of a request to a Message Batches endpoint (its body parsed already)."""
        base_url = request.url.split(BATCHES_PATH, 1)[0]
        rest = path[len(BATCHES_PATH) :].strip("/").split("/") if path != BATCHES_PATH else []
        match request.method, rest:
            case "POST", []:
                return self._create(request)
            case "GET", []:
                return self._list(request, base_url)
            case "GET", [batch_id]:
                return self._retrieve(batch_id, base_url)
            case "POST", [batch_id, "cancel"]:
                return self._cancel(batch_id, base_url)
            case "GET", [batch_id, "results"]:
                return self._results(batch_id)
            case "DELETE", [batch_id]:
                return self._delete(batch_id)
            case _:
                return error_answer(
                    404,
                    "not_found_error",
                    f"FakeMessagesAPI serves no {request.method} {path}; see the Message Batches endpoints.",
                )

    def _create(self, request: RecordedRequest) -> Outcome | Awaitable[Outcome]:
        problem = _find_malformed_create(request.body)
        if problem is not None:
            return error_answer(400, "invalid_request_error", problem)
        with self._lock:
            self._made += 1
            batch_id = f"msgbatch_fake_{self._made:04d}"
        items: list[tuple[RecordedRequest, Outcome | ScriptEntry | Awaitable[ScriptEntry]]] = []
        for entry in cast(list[dict[str, Any]], request.body["requests"]):
            params = cast(dict[str, Any], entry["params"])
            item = self._record(request, params, batch_id, entry["custom_id"])
            if params.get("stream") is True:
                items.append((item, error_answer(400, "invalid_request_error", _NO_STREAM)))
            else:
                items.append((item, self._choose(item)))
        base_url = request.url.split(BATCHES_PATH, 1)[0]
        if any(is_awaitable(answer) for _, answer in items):
            return _Later(items, partial(self._store, batch_id, base_url))
        return self._store(
            batch_id, base_url, cast(list[tuple[RecordedRequest, Outcome | ScriptEntry]], items)
        )

    def _store(
        self, batch_id: str, base_url: str, items: list[tuple[RecordedRequest, Outcome | ScriptEntry]]
    ) -> Outcome:
        results = [self._result(item, answer) for item, answer in items]
        custom_ids = [item.custom_id or "" for item, _ in items]
        batch = _Batch(batch_id, _now(), custom_ids, results)
        with self._lock:
            self._batches[batch_id] = batch
            return _json(batch.view(base_url))

    def _result(self, item: RecordedRequest, answer: Outcome | ScriptEntry) -> dict[str, Any]:
        """The batch result of one request answered by ``answer``."""
        match answer:
            case ScriptedReply():
                return {"type": "succeeded", "message": self._message(item, answer)}
            case Fault():
                return _errored(answer.error_type, answer.message)
            case Disconnect() | StreamCut():
                return _errored("api_error", "Internal server error")
            case Answer():  # the fake's 400 or 500, in the service's error shape
                return {"type": "errored", "error": json.loads(answer.body)}
            case _:
                raise TypeError(
                    f"FakeMessagesAPI cannot answer a request of a batch with {answer!r}; return a reply, "
                    "fault(), disconnect() or stream_cut()."
                )

    def _find(self, batch_id: str) -> _Batch | Answer:
        batch = self._batches.get(batch_id)
        if batch is None:
            return error_answer(404, "not_found_error", f"Message Batch {batch_id!r} not found.")
        return batch

    def _retrieve(self, batch_id: str, base_url: str) -> Outcome:
        with self._lock:
            batch = self._find(batch_id)
            if isinstance(batch, Answer):
                return batch
            batch.retrieves += 1
            if batch.status == "canceling" or (
                batch.status == "in_progress" and self._polls is not None and batch.retrieves >= self._polls
            ):
                batch.end()
            return _json(batch.view(base_url))

    def _cancel(self, batch_id: str, base_url: str) -> Outcome:
        with self._lock:
            batch = self._find(batch_id)
            if isinstance(batch, Answer):
                return batch
            if batch.status == "ended":
                return error_answer(
                    400,
                    "invalid_request_error",
                    f"Message Batch {batch_id!r} has ended; only a batch in progress can be canceled.",
                )
            if batch.status == "in_progress":
                batch.status = "canceling"
                batch.cancel_initiated_at = _now()
            return _json(batch.view(base_url))

    def _results(self, batch_id: str) -> Outcome:
        with self._lock:
            batch = self._find(batch_id)
            if isinstance(batch, Answer):
                return batch
            if batch.status != "ended":
                return error_answer(
                    400,
                    "invalid_request_error",
                    f"Message Batch {batch_id!r} is still {batch.status}; its results are available "
                    "once it has ended.",
                )
            lines = [
                json.dumps({"custom_id": custom_id, "result": result}) + "\n"
                for custom_id, result in zip(batch.custom_ids, batch.final, strict=True)
            ]
        return Answer(200, _JSONL_HEADERS, "".join(lines).encode())

    def _delete(self, batch_id: str) -> Outcome:
        with self._lock:
            batch = self._find(batch_id)
            if isinstance(batch, Answer):
                return batch
            if batch.status != "ended":
                return error_answer(
                    400,
                    "invalid_request_error",
                    f"Message Batch {batch_id!r} is still {batch.status}; cancel it and let it end "
                    "before deleting it.",
                )
            del self._batches[batch_id]
        return _json({"id": batch_id, "type": "message_batch_deleted"})

    def _list(self, request: RecordedRequest, base_url: str) -> Outcome:
        query = {name: values[-1] for name, values in parse_qs(urlsplit(request.url).query).items()}
        limit_text = query.get("limit", "20")
        if not limit_text.isdigit() or not 1 <= int(limit_text) <= 1000:
            return error_answer(
                400, "invalid_request_error", "limit: Input should be a whole number from 1 to 1000"
            )
        limit = int(limit_text)
        with self._lock:
            newest_first = list(reversed(self._batches.values()))
            ids = [batch.id for batch in newest_first]
            if "after_id" in query:
                start = ids.index(query["after_id"]) + 1 if query["after_id"] in ids else len(ids)
                page = newest_first[start : start + limit]
                more = start + limit < len(ids)
            elif "before_id" in query:
                stop = ids.index(query["before_id"]) if query["before_id"] in ids else 0
                page = newest_first[max(0, stop - limit) : stop]
                more = stop - limit > 0
            else:
                page = newest_first[:limit]
                more = limit < len(ids)
            data = [batch.view(base_url) for batch in page]
        return _json(
            {
                "data": data,
                "has_more": more,
                "first_id": data[0]["id"] if data else None,
                "last_id": data[-1]["id"] if data else None,
            }
        )


class _Later:
    """A batch whose requests wait for an async responder: awaited, it creates the batch."""

    def __init__(
        self,
        items: list[tuple[RecordedRequest, Outcome | ScriptEntry | Awaitable[ScriptEntry]]],
        store: Callable[[list[tuple[RecordedRequest, Outcome | ScriptEntry]]], Outcome],
    ) -> None:
        self._items = items
        self._store = store

    def __await__(self) -> Generator[Any, None, Outcome]:
        return self._create().__await__()

    async def _create(self) -> Outcome:
        answered: list[tuple[RecordedRequest, Outcome | ScriptEntry]] = []
        for item, answer in self._items:
            answered.append((item, await answer if is_awaitable(answer) else answer))
        return self._store(answered)

    def close(self) -> None:
        """Close the responder's awaitables never awaited (the sync client refuses an async responder)."""
        for _, answer in self._items:
            close = getattr(answer, "close", None)
            if is_awaitable(answer) and callable(close):
                close()


_NO_STREAM = "stream: Message Batches do not support streaming; leave `stream` out of the params."


def _find_malformed_create(body: Mapping[str, Any]) -> str | None:
    """The problem with a create body, in the style of the service's validation messages, or None."""
    if "requests" not in body:
        return "requests: Field required"
    requests: object = body["requests"]
    if not isinstance(requests, list):
        return "requests: Input should be a valid list"
    if not requests:
        return "requests: List should have at least 1 item after validation, not 0"
    seen: set[str] = set()
    for index, entry in enumerate(cast(list[object], requests)):
        if not isinstance(entry, dict):
            return f"requests.{index}: Input should be a valid dictionary"
        entry = cast(dict[str, object], entry)
        for name in ("custom_id", "params"):
            if name not in entry:
                return f"requests.{index}.{name}: Field required"
        custom_id = entry["custom_id"]
        if not isinstance(custom_id, str) or _CUSTOM_ID.fullmatch(custom_id) is None:
            return f"requests.{index}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if custom_id in seen:
            return f"requests.{index}.custom_id: Duplicate custom_id {custom_id!r}; each must be unique in the batch"
        seen.add(custom_id)
        if not isinstance(entry["params"], dict):
            return f"requests.{index}.params: Input should be a valid dictionary"
    return None


def _errored(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "errored", "error": {"type": "error", "error": {"type": error_type, "message": message}}}


def _json(value: dict[str, Any]) -> Answer:
    return Answer(200, _JSON_HEADERS, json.dumps(value).encode())


def _now() -> datetime:
    return datetime.now(UTC)


def _stamp(moment: datetime | None) -> str | None:
    """An RFC 3339 time, as the service writes them ("2024-08-20T18:37:24.100435Z")."""
    return None if moment is None else moment.isoformat().replace("+00:00", "Z")

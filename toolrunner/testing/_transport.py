"""In-process `httpx2` transports over a `FakeMessagesAPI`: no sockets, no threads."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable, Iterator

import anyio
import httpx2

from ._fake import Answer, Dropped, EventStream, FakeMessagesAPI, Outcome, answer, is_awaitable

__all__ = ["FakeAsyncTransport", "FakeTransport"]

_DROPPED = "Server disconnected without sending a response."


def _cut_message(events: int) -> str:
    return f"FakeMessagesAPI cut the answer after {events} events, as a dropped connection does."


class FakeAsyncTransport(httpx2.AsyncBaseTransport):
    """Answers `httpx2.AsyncClient` requests from a `FakeMessagesAPI`."""

    def __init__(self, fake: FakeMessagesAPI) -> None:
        self.fake = fake

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        content = await request.aread()
        url = request.url
        outcome = await answer(self.fake, request.method, str(url), url.path, dict(request.headers), content)
        if isinstance(outcome, Answer) and outcome.delay:
            await anyio.sleep(outcome.delay)
        return _response(outcome, request, _AsyncEvents)


class FakeTransport(httpx2.BaseTransport):
    """Answers `httpx2.Client` requests from a `FakeMessagesAPI`; the responder must be sync."""

    def __init__(self, fake: FakeMessagesAPI) -> None:
        self.fake = fake

    def handle_request(self, request: httpx2.Request) -> httpx2.Response:
        content = request.read()
        url = request.url
        recorded, pending = self.fake.begin(
            request.method, str(url), url.path, dict(request.headers), content
        )
        if is_awaitable(pending):
            _close(pending)
            raise TypeError(
                f"The responder {self.fake.responder!r} is async, so the sync client cannot await it; "
                "use fake.async_client() or give the fake a plain function."
            )
        outcome = self.fake.finish(recorded, pending)
        if isinstance(outcome, Answer) and outcome.delay:
            time.sleep(outcome.delay)
        return _response(outcome, request, _SyncEvents)


def _response(
    outcome: Outcome,
    request: httpx2.Request,
    events: Callable[[list[bytes], float, int | None], httpx2.SyncByteStream | httpx2.AsyncByteStream],
) -> httpx2.Response:
    """The response of an outcome (once an answer's delay has passed); ``events`` makes the stream
    of its events, the sync client's or the async one's."""
    match outcome:
        case Answer():
            if outcome.cut:
                return httpx2.Response(outcome.status, headers=outcome.headers, stream=events([], 0.0, 0))
            return httpx2.Response(outcome.status, headers=outcome.headers, content=outcome.body)
        case EventStream():
            stream = events(outcome.events, outcome.delay, outcome.cut_after)
            return httpx2.Response(200, headers=outcome.headers, stream=stream)
        case Dropped():
            raise httpx2.RemoteProtocolError(_DROPPED, request=request)


def _close(pending: object) -> None:
    close = getattr(pending, "close", None)
    if callable(close):
        close()


class _AsyncEvents(httpx2.AsyncByteStream):
    def __init__(self, events: list[bytes], delay: float, cut_after: int | None) -> None:
        self._events = events
        self._delay = delay
        self._cut_after = cut_after

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for number, event in enumerate(self._events):
            if number == self._cut_after:
                raise httpx2.ReadError(_cut_message(number))
            if self._delay and number:
                await anyio.sleep(self._delay)
            yield event
        if self._cut_after is not None and self._cut_after >= len(self._events):
            raise httpx2.ReadError(_cut_message(len(self._events)))


class _SyncEvents(httpx2.SyncByteStream):
    def __init__(self, events: list[bytes], delay: float, cut_after: int | None) -> None:
        self._events = events
        self._delay = delay
        self._cut_after = cut_after

    def __iter__(self) -> Iterator[bytes]:
        for number, event in enumerate(self._events):
            if number == self._cut_after:
                raise httpx2.ReadError(_cut_message(number))
            if self._delay and number:
                time.sleep(self._delay)
            yield event
        if self._cut_after is not None and self._cut_after >= len(self._events):
            raise httpx2.ReadError(_cut_message(len(self._events)))

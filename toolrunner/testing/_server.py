"""The fake over real HTTP: a plain ASGI app, and `serve()` running it with uvicorn on loopback.

The app is a thin layer over `FakeMessagesAPI.begin()` / `.finish()` (through `_fake.answer`), like the
in-process transports, so both answer identically. Over real HTTP, a dropped connection can only
happen after the status line, so `disconnect()` and `stream_cut()` close the connection mid-answer
(uvicorn logs "ASGI callable returned without completing response"); the SDK raises
`APIConnectionError` (or `httpx2` errors while iterating a stream), as with the in-process transports.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Awaitable, Callable, Generator, MutableMapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import anyio

from ._fake import Answer, Dropped, EventStream, FakeMessagesAPI, answer

if TYPE_CHECKING:
    import anthropic

__all__ = ["FakeApp", "ServedFake", "serve"]

_Scope = MutableMapping[str, Any]
_Message = MutableMapping[str, Any]
_Receive = Callable[[], Awaitable[_Message]]
_Send = Callable[[_Message], Awaitable[None]]


class FakeApp:
    """An ASGI app answering HTTP requests from a `FakeMessagesAPI`."""

    def __init__(self, fake: FakeMessagesAPI) -> None:
        self.fake = fake

    async def __call__(self, scope: _Scope, receive: _Receive, send: _Send) -> None:
        if scope["type"] == "lifespan":
            await _run_lifespan(receive, send)
            return
        if scope["type"] != "http":
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = bool(message.get("more_body", False))
        headers = {name.decode("latin-1"): value.decode("latin-1") for name, value in scope["headers"]}
        path: str = scope["path"]
        query: bytes = scope.get("query_string", b"")
        url = f"{scope.get('scheme', 'http')}://{headers.get('host', 'localhost')}{path}"
        if query:
            url += "?" + query.decode("latin-1")
        outcome = await answer(self.fake, scope["method"], url, path, headers, b"".join(chunks))
        match outcome:
            case Answer():
                if outcome.delay:
                    await anyio.sleep(outcome.delay)
                await _start(send, outcome.status, outcome.headers)
                if not outcome.cut:
                    await send({"type": "http.response.body", "body": outcome.body})
            case EventStream():
                await _start(send, 200, outcome.headers)
                for number, event in enumerate(outcome.events):
                    if number == outcome.cut_after:
                        return  # leave the answer unfinished: the server closes the connection
                    if outcome.delay and number:
                        await anyio.sleep(outcome.delay)
                    await send({"type": "http.response.body", "body": event, "more_body": True})
                if outcome.cut_after is None:
                    await send({"type": "http.response.body", "body": b""})
            case Dropped():
                await _start(send, 200, [("content-type", "application/json")])


async def _start(send: _Send, status: int, headers: list[tuple[str, str]]) -> None:
    encoded = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers]
    await send({"type": "http.response.start", "status": status, "headers": encoded})


async def _run_lifespan(receive: _Receive, send: _Send) -> None:
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await send({"type": "lifespan.shutdown.complete"})
            return


@dataclass(frozen=True, slots=True)
class ServedFake:
    """A fake served over HTTP by `serve()`.

    Attributes:
        fake: The fake answering the requests (its script, records and `assert_complete()`).
        base_url: The server's URL, e.g. "http://127.0.0.1:54321"; pass it as the SDK's `base_url`.
    """

    fake: FakeMessagesAPI
    base_url: str

    def async_client(self, *, max_retries: int = 0, **options: Any) -> anthropic.AsyncAnthropic:
        """A real `anthropic.AsyncAnthropic` talking HTTP to this server."""
        import anthropic

        return anthropic.AsyncAnthropic(
            api_key="sk-ant-fake-key", base_url=self.base_url, max_retries=max_retries, **options
        )

    def client(self, *, max_retries: int = 0, **options: Any) -> anthropic.Anthropic:
        """A real `anthropic.Anthropic` talking HTTP to this server."""
        import anthropic

        return anthropic.Anthropic(
            api_key="sk-ant-fake-key", base_url=self.base_url, max_retries=max_retries, **options
        )


def bind(host: str = "127.0.0.1", port: int = 0) -> socket.socket:
    """A listening TCP socket on `host`; port 0 picks a free port.

    It listens at once, so clients that connect before the server runs wait in the backlog.
    """
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(128)
    return sock


def base_url_of(sock: socket.socket) -> str:
    """The http URL of a bound socket."""
    host, port = sock.getsockname()[:2]
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def make_server(fake: FakeMessagesAPI, *, log_level: str = "warning") -> Any:
    """A `uvicorn.Server` for the fake that leaves the process's logging configuration alone."""
    import uvicorn

    config = uvicorn.Config(
        FakeApp(fake),
        log_config=None,
        log_level=log_level,
        access_log=False,
        lifespan="off",
        ws="none",
        http="h11",
        loop="asyncio",
    )
    return uvicorn.Server(config)


@contextmanager
def serve(
    fake: FakeMessagesAPI, *, host: str = "127.0.0.1", port: int = 0, startup_timeout: float = 10.0
) -> Generator[ServedFake]:
    """Serve `fake` over HTTP with uvicorn in a background thread until the block ends.

    Args:
        fake: The fake to serve.
        host: The loopback address to listen on.
        port: The port; 0 picks a free one.
        startup_timeout: Seconds to wait for the server to start.

    Raises:
        RuntimeError: If the server does not start within `startup_timeout`.
    """
    sock = bind(host, port)
    server = make_server(fake)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="FakeMessagesAPI server", daemon=True
    )
    thread.start()
    try:
        deadline = time.monotonic() + startup_timeout
        while not server.started:
            if not thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError(
                    f"The FakeMessagesAPI server on {base_url_of(sock)!r} did not start within "
                    f"{startup_timeout} s; see the uvicorn log above."
                )
            time.sleep(0.005)
        yield ServedFake(fake, base_url_of(sock))
    finally:
        server.should_exit = True
        thread.join(startup_timeout)
        sock.close()

"""What both endpoints share over HTTP: the app around an endpoint, its lifespan, who decided, the
errors as JSON, the streamed answer, and the example pages' files."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable
from contextlib import aclosing, asynccontextmanager
from importlib import resources
from typing import TypeAlias
from urllib.parse import unquote

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from ._agent import Agent
from ._session import RequestError
from ._temporal import TemporalAgent

__all__ = [
    "DECIDED_BY",
    "KEEP_ALIVE",
    "MAX_BODY",
    "DecidedBy",
    "Served",
    "check_max_body",
    "decided_by_header",
    "error_response",
    "make_app",
    "read_body",
    "stream",
]

Served: TypeAlias = Agent | TemporalAgent
"""What an app serves: runs in this process on a store (``Agent``), or workflow runs on Temporal."""

DECIDED_BY = "X-Decided-By"
"""The header the default ``decided_by`` reads: who decides the calls a request decides."""

KEEP_ALIVE = ": keep-alive\n\n"
"""What a stream sends after ``keep_alive`` seconds of silence: an SSE comment, which clients ignore."""

DecidedBy: TypeAlias = Callable[[Request], "str | None"]
"""Who decided, as ``by=`` records it, from the request that carries the decisions."""

_STATIC = {"js": "text/javascript; charset=utf-8", "html": "text/html; charset=utf-8", "css": "text/css"}


MAX_BODY = 16 * 1024**2
"""The largest request body an app reads by default (``max_body=``): a conversation's whole history
(AG-UI sends it with each request) is well within it."""


def check_max_body(value: object) -> int:
    """An app's ``max_body``, checked at its construction.

    Raises:
        ValueError: It is not a whole number of bytes above 0.
    """
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"max_body= is the largest request body in bytes, an int above 0, not {value!r}.")
    return value


async def read_body(request: Request, limit: int) -> bytes:
    """The request's body, read up to ``limit`` bytes.

    Raises:
        RequestError: 413, the body is larger (its declared length refused before a byte is read,
            a body of no stated length as soon as it passes the limit); nothing was read into a run.
    """
    too_large = RequestError(
        413, f"the body is larger than {limit} bytes, so it was not read; send a shorter conversation."
    )
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise too_large
    chunks: list[bytes] = []
    size = 0
    async with aclosing(request.stream()) as stream:  # left unread past the limit: closed here
        async for chunk in stream:
            size += len(chunk)
            if size > limit:
                raise too_large
            chunks.append(chunk)
    return b"".join(chunks)


def decided_by_header(request: Request) -> str | None:
    """The default ``decided_by``: the ``X-Decided-By`` header, percent-decoded as UTF-8 (a
    browser's ``fetch`` sends only Latin-1 in a header: the example pages send
    ``encodeURIComponent(name)``; a name of plain ASCII without ``%`` reads as it is).

    Raises:
        RequestError: 400, the header's bytes are not percent-encoded UTF-8.
    """
    value = request.headers.get(DECIDED_BY)
    if not value:
        return None
    try:
        return unquote(value.encode("latin-1").decode("utf-8"), errors="strict")
    except UnicodeError as error:
        raise RequestError(
            400, f"the {DECIDED_BY} header is not UTF-8 (percent-encoded, as encodeURIComponent makes it)."
        ) from error


def error_response(error: RequestError) -> JSONResponse:
    return JSONResponse({"error": str(error)}, status_code=error.status)


def stream(chunks: AsyncIterator[str], *, headers: dict[str, str] | None = None) -> StreamingResponse:
    """A server-sent events answer. A client that disconnects cancels the iterator (Starlette
    watches for it); the run it follows goes on in the ``Agent``'s task group."""
    return StreamingResponse(
        chunks,
        media_type="text/event-stream",
        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no", **(headers or {})},
    )


def make_app(
    agent: Served, endpoint: Callable[[Request], Awaitable[Response]], *, page: str | None, extra: list[Route]
) -> Starlette:
    """The app of one endpoint: ``POST /`` is the endpoint, ``GET /`` the example page ``page``
    (``None``: no page), ``GET /static/NAME`` its files. Its lifespan enters ``agent`` unless
    something else did (an app serving both protocols with one agent)."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        if agent.entered:
            yield
            return
        async with agent:
            yield

    routes = [Route("/", endpoint, methods=["POST"]), *extra]
    if page is not None:
        name = page

        async def show(request: Request) -> Response:
            return _static(name)

        async def static(request: Request) -> Response:
            return _static(str(request.path_params["name"]))

        routes += [Route("/", show, methods=["GET"]), Route("/static/{name}", static, methods=["GET"])]
    return Starlette(routes=routes, lifespan=lifespan)


def _static(name: str) -> Response:
    """One of the example pages' files (a name of ``toolrunner/web/static/``, nothing else)."""
    folder = resources.files("toolrunner.web") / "static"
    suffix = name.rpartition(".")[2]
    if "/" in name or suffix not in _STATIC or not (folder / name).is_file():
        return Response("no such file", status_code=404, media_type="text/plain")
    return Response((folder / name).read_bytes(), media_type=_STATIC[suffix])

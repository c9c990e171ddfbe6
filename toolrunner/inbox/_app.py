"""The inbox's web app: a Starlette app over a ``RunStore``.

Routes (every one but the login page, the static files, ``/favicon.ico`` and ``/healthz`` needs a
session):

- ``GET /``: the runs that wait for a decision, newest first; ``GET /fragments/waiting`` is the
  list alone, which the page fetches again when ``GET /events`` (server-sent events) says it
  changed.
- ``GET /runs``: finished and failed runs (or running, ready or waiting ones, or all), with their
  cost and turns.
- ``GET /run?id=...``: a run's conversation, its waiting calls with a form for each decision, and
  the calls decided.
- ``POST /run/approve``, ``/run/deny``, ``/run/answer``: decide a call through the store, as the
  person logged in (``by=``).
- ``GET|POST /login``, ``POST /logout``.

Every response carries a content security policy that runs no script but the inbox's own file,
and no page may be framed. What every page and form goes through is ``_web``; a run's page and its
decisions are ``_deciding``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Callable, Collection, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from importlib import resources
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, Response, StreamingResponse
from starlette.routing import Route

from .._core.ids import unshowable
from .._core.unicode import sendable_text
from .._ops.render import call_text, printable
from .._stores.deciding import parse_json
from .._stores.protocol import RunStore
from .._stores.runs import RunStatus
from ._auth import COOKIE, Session, Sessions, origin_of, safe_next
from ._deciding import Deciding
from ._http import BODY_LIMIT, BodyLimit, SecurityHeaders
from ._live import PAGE, waiting_versions
from ._pages import cost, outcome, when
from ._web import NAME_LIMIT, NO_STORE, redirect, root, run_url

__all__ = ["NAME_LIMIT", "create_app", "parse_json", "run_url"]

_STATIC = {
    "inbox.css": "text/css; charset=utf-8",
    "inbox.js": "text/javascript; charset=utf-8",
    "favicon.svg": "image/svg+xml",
}
_TABS = [
    ("Finished and failed", ("finished", "failed")),
    ("Finished", ("finished",)),
    ("Failed", ("failed",)),
    ("Running", ("running",)),
    ("Ready", ("ready",)),
    ("Waiting", ("awaiting",)),
    ("All", ()),
]


def create_app(
    store: RunStore,
    *,
    token: str,
    origins: Collection[str] = (),
    poll_interval: float = 2.0,
    session_hours: float = 12.0,
    close_store: bool = False,
) -> Starlette:
    """The inbox as an ASGI app over ``store``.

    Args:
        store: The runs: any ``RunStore`` (``open_store(url)``).
        token: What a person gives at the login page; at least 16 characters.
        origins: The origins the inbox is reached at besides its own (``https://inbox.example.com``
            behind a reverse proxy that does not pass the ``Host`` header on): forms posted from
            pages of any other origin are refused.
        poll_interval: Seconds between two looks at the store for the live list.
        session_hours: How long a login lasts.
        close_store: Close ``store`` when the app shuts down.
    """
    _check_token(token)
    inbox = _Inbox(
        store, Sessions(token, max_age=session_hours * 3_600), _checked_origins(origins), poll_interval
    )
    app = Starlette(routes=inbox.routes(), lifespan=_lifespan(store, close_store))
    app.add_middleware(BodyLimit)
    app.add_middleware(SecurityHeaders)  # the outer one: every response has the headers, a 413 too
    return app


def _check_token(token: object) -> None:
    from ._auth import MIN_TOKEN

    if not isinstance(token, str) or len(token) < MIN_TOKEN:
        raise ValueError(
            f"the inbox's token must be a string of at least {MIN_TOKEN} characters; leave it out to have one "
            "generated, or make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`."
        )


def _checked_origins(origins: Collection[str]) -> frozenset[str]:
    checked = {origin_of(origin) for origin in origins}
    if None in checked:
        raise ValueError(f"origins must be URLs like 'https://inbox.example.com', not {sorted(origins)!r}.")
    return frozenset(origin for origin in checked if origin is not None)


def _lifespan(store: RunStore, close_store: bool) -> Callable[[Starlette], AbstractAsyncContextManager[None]]:
    """The app's lifespan: at its end, the store closed if ``close_store`` says so."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            close = getattr(store, "close", None)
            if close_store and callable(close):
                close()

    return lifespan


class _Inbox(Deciding):
    def __init__(
        self, store: RunStore, sessions: Sessions, origins: frozenset[str], poll_interval: float
    ) -> None:
        super().__init__(store, sessions, origins, poll_interval)
        package = resources.files("toolrunner.inbox") / "static"
        self.static = {name: (package / name).read_bytes() for name in _STATIC}

    def routes(self) -> list[Route]:
        return [
            Route("/login", self.login_page, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self.form(self.logout), methods=["POST"]),
            Route("/", self.page(self.waiting), methods=["GET"]),
            Route("/fragments/waiting", self.page(self.waiting_fragment, api=True), methods=["GET"]),
            Route("/events", self.page(self.events, api=True), methods=["GET"]),
            Route("/runs", self.page(self.runs), methods=["GET"]),
            Route("/run", self.page(self.run), methods=["GET"]),
            Route("/run/approve", self.form(self.approve), methods=["POST"]),
            Route("/run/deny", self.form(self.deny), methods=["POST"]),
            Route("/run/answer", self.form(self.answer), methods=["POST"]),
            Route("/static/{name}", self.static_file, methods=["GET"]),
            Route("/favicon.ico", self.favicon, methods=["GET"]),
            Route("/healthz", self.health, methods=["GET"]),
        ]

    # -- logging in and out ------------------------------------------------------------------------

    async def login_page(self, request: Request) -> Response:
        target = safe_next(request.query_params.get("next"))
        if self.session(request) is not None:
            return redirect(request, target)
        return self.render(request, None, "login.html", error="", next=target, name="")

    async def login(self, request: Request) -> Response:
        if not self.same_origin(request):
            return self.refused(request, None)
        form = await request.form(max_part_size=BODY_LIMIT)
        token, given_name, target = form.get("token"), form.get("name"), safe_next(form.get("next"))
        name = given_name.strip() if isinstance(given_name, str) else ""  # kept as given, but for the ends
        error = ""
        if not isinstance(token, str) or not self.sessions.check_token(token):
            error = "That is not the inbox's token; give the one `toolrunner inbox` printed, or was given."
        elif not 0 < len(name) <= NAME_LIMIT:
            error = f"Give your name (at most {NAME_LIMIT} characters): it is recorded with each decision you take."
        elif unshowable(name) is not None:
            error = (
                f"Your name holds {unshowable(name)}, which a run's record cannot keep; give it as printable "
                "text on one line."
            )
        if error:
            return self.render(
                request,
                None,
                "login.html",
                status=401 if "token" in error else 400,
                error=error,
                next=target,
                name=printable(name[:NAME_LIMIT]),
            )
        response = redirect(request, target)
        response.set_cookie(
            COOKIE,
            self.sessions.issue(name),
            max_age=int(self.sessions.max_age),
            path=root(request) + "/",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="lax",
        )
        return response

    async def logout(self, request: Request, session: Session, form: FormData) -> Response:
        response = redirect(request, "/login")
        response.delete_cookie(COOKIE, path=root(request) + "/")
        return response

    # -- the lists ---------------------------------------------------------------------------------

    async def waiting(self, request: Request, session: Session) -> Response:
        context = await self._waiting_context(request)
        return self.render(request, session, "waiting.html", section="waiting", **context)

    async def waiting_fragment(self, request: Request, session: Session) -> Response:
        context = await self._waiting_context(request)
        html = self.templates.get_template("waiting_rows.html").render(root=root(request), **context)
        return HTMLResponse(sendable_text(html), headers=NO_STORE)

    async def _waiting_context(self, request: Request) -> dict[str, Any]:
        cursor = request.query_params.get("cursor")
        page = await self.store.list_runs(status=RunStatus.AWAITING, limit=PAGE, cursor=cursor)
        now = datetime.now(UTC)
        runs = [
            {
                "run_id": summary.run_id,
                "waiting": [
                    {
                        "name": printable(call.name),
                        "input": printable(call_text(call, limit=120)[len(call.name) + 1 :]),
                    }
                    for call in summary.waiting
                ],
                # A run listed here whose summary row is damaged shows why (_stores.sql.summary_of).
                "problem": printable(outcome(summary, now)) if summary.failure is not None else "",
                "turns": summary.turns,
                "cost": cost(summary),
                "updated": when(summary.updated, now),
            }
            for summary in page.runs
        ]
        fragment = "/fragments/waiting" + (f"?{urlencode({'cursor': cursor})}" if cursor else "")
        return {"runs": runs, "cursor": page.cursor, "fragment": fragment}

    async def events(self, request: Request, session: Session) -> Response:
        """Server-sent events: ``waiting`` (with a version) each time the first page of waiting
        runs changes, the first time at once; a comment every 15 s keeps proxies from closing it."""

        async def stream() -> AsyncIterator[str]:
            async for version in waiting_versions(self.store, self.poll_interval, keepalive=15.0):
                yield ": keep-alive\n\n" if version is None else f"event: waiting\ndata: {version}\n\n"

        return StreamingResponse(
            stream(),
            media_type="text/event-stream",
            headers={**NO_STORE, "x-accel-buffering": "no"},  # nginx: pass each event on at once
        )

    async def runs(self, request: Request, session: Session) -> Response:
        wanted = tuple(request.query_params.getlist("status")) or ("finished", "failed")
        page = await self.store.list_runs(
            status=wanted or None, limit=PAGE, cursor=request.query_params.get("cursor")
        )
        now = datetime.now(UTC)
        tabs = [
            {"label": label, "url": _runs_url(statuses), "current": set(statuses) == set(wanted)}
            for label, statuses in _TABS
        ]
        runs = [
            {
                "run_id": summary.run_id,
                "status": summary.status.value,
                "outcome": printable(outcome(summary, now)),
                "turns": summary.turns,
                "cost": cost(summary),
                "updated": when(summary.updated, now),
            }
            for summary in page.runs
        ]
        next_page = None if page.cursor is None else _runs_url(wanted, page.cursor)
        return self.render(
            request, session, "runs.html", section="runs", runs=runs, tabs=tabs, next_page=next_page
        )

    # -- the rest ----------------------------------------------------------------------------------

    async def static_file(self, request: Request) -> Response:
        name = request.path_params["name"]
        if name not in self.static:
            return PlainTextResponse("Not Found", status_code=404)
        return self._static(name)

    def _static(self, name: str) -> Response:
        return Response(self.static[name], media_type=_STATIC[name], headers={"cache-control": "no-cache"})

    async def favicon(self, request: Request) -> Response:
        """The icon, for what asks for ``/favicon.ico`` rather than read the pages' link to it."""
        return self._static("favicon.svg")

    async def health(self, request: Request) -> Response:
        return PlainTextResponse("ok", headers=NO_STORE)


def _runs_url(statuses: Sequence[str], cursor: str | None = None) -> str:
    query = [("status", status) for status in statuses]
    if cursor is not None:
        query.append(("cursor", cursor))
    return "/runs" + (f"?{urlencode(query)}" if query else "")

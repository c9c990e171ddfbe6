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
and no page may be framed.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Collection, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from importlib import resources
from typing import Any, cast
from urllib.parse import quote, urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.applications import Starlette
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response, StreamingResponse
from starlette.routing import Route

from .._core.errors import (
    ApprovalError,
    CheckpointConflictError,
    CheckpointError,
    ParamsError,
    StateError,
    ToolInputError,
)
from .._core.ids import unshowable
from .._core.state import CallRecord, plain_data
from .._core.unicode import sendable_text
from .._ops.render import call_text, going_on, plural, printable
from .._stores.deciding import input_problems, parse_json
from .._stores.protocol import RunStore
from .._stores.runs import RunStatus, RunSummary, waiting_calls
from ._auth import COOKIE, Session, Sessions, origin_of, safe_next, same_origin
from ._http import BODY_LIMIT, BodyLimit, SecurityHeaders
from ._live import PAGE, waiting_versions
from ._pages import Problem, ShownRecord, code_spans, cost, shown_record, shown_run, when

__all__ = ["NAME_LIMIT", "create_app", "parse_json", "run_url"]

NAME_LIMIT = 80
"""The most characters of a name given at login."""
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
    from ._auth import MIN_TOKEN

    if not isinstance(token, str) or len(token) < MIN_TOKEN:
        raise ValueError(
            f"the inbox's token must be a string of at least {MIN_TOKEN} characters; leave it out to have one "
            "generated, or make one with `python -c 'import secrets; print(secrets.token_urlsafe(32))'`."
        )
    checked = {origin_of(origin) for origin in origins}
    if None in checked:
        raise ValueError(f"origins must be URLs like 'https://inbox.example.com', not {sorted(origins)!r}.")
    inbox = _Inbox(
        store,
        Sessions(token, max_age=session_hours * 3_600),
        frozenset(origin for origin in checked if origin is not None),
        poll_interval,
    )

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncGenerator[None]:
        try:
            yield
        finally:
            close = getattr(store, "close", None)
            if close_store and callable(close):
                close()

    app = Starlette(routes=inbox.routes(), lifespan=lifespan)
    app.add_middleware(BodyLimit)
    app.add_middleware(SecurityHeaders)  # the outer one: every response has the headers, a 413 too
    return app


@dataclass
class _Form:
    """What a run's page shows again after a decision failed: the person's drafts, and the
    problems next to each field."""

    drafts: dict[str, dict[str, str]]
    problems: dict[tuple[str, str], list[Problem]]
    notices: dict[str, str]
    alert: str = ""
    taken: ShownRecord | None = None  # the call someone else decided first


_Handler = Callable[[Request, Session], Awaitable[Response]]
_FormHandler = Callable[[Request, Session, FormData], Awaitable[Response]]


class _Inbox:
    def __init__(
        self, store: RunStore, sessions: Sessions, origins: frozenset[str], poll_interval: float
    ) -> None:
        self.store = store
        self.sessions = sessions
        self.origins = origins
        self.poll_interval = poll_interval
        self.templates = Environment(
            loader=PackageLoader("toolrunner.inbox", "templates"),
            autoescape=True,  # every value is text, whoever wrote it
            undefined=StrictUndefined,
        )
        cast("dict[str, Any]", self.templates.globals).update(run_url=run_url, name_limit=NAME_LIMIT)
        cast("dict[str, Any]", self.templates.filters).update(code_spans=code_spans)
        package = resources.files("toolrunner.inbox") / "static"
        self.static = {name: (package / name).read_bytes() for name in _STATIC}

    def routes(self) -> list[Route]:
        return [
            Route("/login", self.login_page, methods=["GET"]),
            Route("/login", self.login, methods=["POST"]),
            Route("/logout", self._form(self.logout), methods=["POST"]),
            Route("/", self._page(self.waiting), methods=["GET"]),
            Route("/fragments/waiting", self._page(self.waiting_fragment, api=True), methods=["GET"]),
            Route("/events", self._page(self.events, api=True), methods=["GET"]),
            Route("/runs", self._page(self.runs), methods=["GET"]),
            Route("/run", self._page(self.run), methods=["GET"]),
            Route("/run/approve", self._form(self.approve), methods=["POST"]),
            Route("/run/deny", self._form(self.deny), methods=["POST"]),
            Route("/run/answer", self._form(self.answer), methods=["POST"]),
            Route("/static/{name}", self.static_file, methods=["GET"]),
            Route("/favicon.ico", self.favicon, methods=["GET"]),
            Route("/healthz", self.health, methods=["GET"]),
        ]

    # -- sessions and forms ------------------------------------------------------------------------

    def session(self, request: Request) -> Session | None:
        return self.sessions.read(request.cookies.get(COOKIE))

    def _page(self, handler: _Handler, *, api: bool = False) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` behind the login: without a session, a page sends the person to log in,
        and what a script fetches is refused."""

        async def endpoint(request: Request) -> Response:
            session = self.session(request)
            if session is None:
                if api:
                    return PlainTextResponse("Log in first.", status_code=401, headers=_NO_STORE)
                here = _route_path(request) + (f"?{request.url.query}" if request.url.query else "")
                return _redirect(request, f"/login?{urlencode({'next': here})}")
            try:
                return await handler(request, session)
            except ParamsError as error:  # a cursor or status in the URL that is not one
                return self.error(request, session, "Not a page of the inbox", str(error), status=400)
            except (CheckpointError, StateError) as error:
                return self.error(request, session, "The store failed", str(error), status=503)

        return endpoint

    def _form(self, handler: _FormHandler) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` of a form that changes something: it needs a session, a page of the inbox
        as its origin, and the session's CSRF token; anything else is refused before it acts."""

        async def endpoint(request: Request) -> Response:
            session = self.session(request)
            if session is None:
                return self.render(
                    request,
                    None,
                    "login.html",
                    status=401,
                    error="Your session ended (or you never logged in): log in, then decide again.",
                    next="/",
                    name="",
                )
            if not self.same_origin(request):
                return self.refused(request, session)
            form = await request.form(max_part_size=BODY_LIMIT)
            if not self.sessions.check_csrf(session, form.get("csrf")):
                return self.refused(request, session)
            try:
                return await handler(request, session, form)
            except ParamsError as error:  # a run id in the form that is not one
                return self.error(request, session, "Not a run of the inbox", str(error), status=400)
            except (CheckpointError, StateError) as error:
                return self.error(request, session, "The store failed", str(error), status=503)

        return endpoint

    def same_origin(self, request: Request) -> bool:
        own = origin_of(str(request.base_url))
        allowed = self.origins | ({own} if own is not None else set[str]())
        headers = request.headers
        return same_origin(
            headers.get("origin"), headers.get("referer"), allowed, fetch_site=headers.get("sec-fetch-site")
        )

    def refused(self, request: Request, session: Session | None) -> Response:
        return self.error(
            request,
            session,
            "Refused",
            "This form did not come from a page of the inbox (another site's page, or an old page from "
            "before you logged in again), so nothing was done. Open the run in the inbox and decide there.",
            status=403,
        )

    # -- rendering ---------------------------------------------------------------------------------

    def render(
        self, request: Request, session: Session | None, template: str, *, status: int = 200, **context: Any
    ) -> HTMLResponse:
        html = self.templates.get_template(template).render(
            {"section": "", "root": _root(request), **context},
            session=session,
            csrf="" if session is None else self.sessions.csrf(session),
        )
        # A lone surrogate (a tool's input may hold one) cannot be sent as UTF-8: shown as U+FFFD.
        return HTMLResponse(sendable_text(html), status_code=status, headers=_NO_STORE)

    def error(
        self, request: Request, session: Session | None, title: str, message: str, *, status: int
    ) -> HTMLResponse:
        return self.render(
            request, session, "error.html", status=status, title=title, message=printable(message)
        )

    # -- logging in and out ------------------------------------------------------------------------

    async def login_page(self, request: Request) -> Response:
        target = safe_next(request.query_params.get("next"))
        if self.session(request) is not None:
            return _redirect(request, target)
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
        response = _redirect(request, target)
        response.set_cookie(
            COOKIE,
            self.sessions.issue(name),
            max_age=int(self.sessions.max_age),
            path=_root(request) + "/",
            secure=request.url.scheme == "https",
            httponly=True,
            samesite="lax",
        )
        return response

    async def logout(self, request: Request, session: Session, form: FormData) -> Response:
        response = _redirect(request, "/login")
        response.delete_cookie(COOKIE, path=_root(request) + "/")
        return response

    # -- the lists ---------------------------------------------------------------------------------

    async def waiting(self, request: Request, session: Session) -> Response:
        context = await self._waiting_context(request)
        return self.render(request, session, "waiting.html", section="waiting", **context)

    async def waiting_fragment(self, request: Request, session: Session) -> Response:
        context = await self._waiting_context(request)
        html = self.templates.get_template("waiting_rows.html").render(root=_root(request), **context)
        return HTMLResponse(sendable_text(html), headers=_NO_STORE)

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
                "problem": printable(_outcome(summary, now)) if summary.failure is not None else "",
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
            headers={**_NO_STORE, "x-accel-buffering": "no"},  # nginx: pass each event on at once
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
                "outcome": printable(_outcome(summary, now)),
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

    # -- a run -------------------------------------------------------------------------------------

    async def run(self, request: Request, session: Session) -> Response:
        return await self._run_page(request, session, request.query_params.get("id", ""))

    async def _run_page(
        self, request: Request, session: Session, run_id: str, form: _Form | None = None, status: int = 200
    ) -> Response:
        summary = await self.store.get_run(run_id)
        loaded = await self.store.load(run_id)
        if summary is None or loaded is None:
            return self.error(
                request, session, "No such run", f"The store has no run named {run_id!r}.", status=404
            )
        state = loaded.state
        total = state.total
        now = datetime.now(UTC)
        run = {
            "run_id": summary.run_id,
            "status": summary.status.value,
            "turns": summary.turns,
            "tokens": f"{total.input_tokens:,} input and {total.output_tokens:,} output tokens",
            "cost": cost(summary) if summary.cost is not None else "cost unknown",
            "created": when(summary.created, now),
            "updated": when(summary.updated, now),
            "outcome": printable(_outcome(summary, now)),
        }
        form = form or _Form({}, {}, {})
        return self.render(
            request,
            session,
            "run.html",
            status=status,
            run=run,
            shown=shown_run(state),
            drafts=form.drafts,
            problem_lists=form.problems,
            notices=form.notices,
            alert=form.alert,
            taken=form.taken,
        )

    # -- deciding ----------------------------------------------------------------------------------

    async def approve(self, request: Request, session: Session, form: FormData) -> Response:
        run_id, call_id = _text(form, "run"), _text(form, "call")
        text = form.get("input")
        edited: object = None
        record = await self._waiting_record(run_id, call_id)
        if isinstance(text, str) and record is not None:  # else the store says why it cannot be decided
            problems: list[Problem] = []
            try:
                data = parse_json(text)
            except ValueError as error:
                problems = [Problem("", f"This is not JSON: {error}.")]
            else:
                if data != plain_data(record.call.input, "input"):
                    edited = data  # the store checks it again, and refuses an edit it cannot check
                    if (record.tool or {}).get("input_schema") is not None:
                        try:
                            problems = [
                                Problem(path, message) for path, message in input_problems(record, data)
                            ]
                        except ToolInputError as error:
                            problems = [Problem("", str(error))]
            if problems:
                return await self._failed(request, session, run_id, call_id, form, "input", problems)
        return await self._decide(
            request,
            session,
            run_id,
            call_id,
            form,
            "input",
            lambda: self.store.approve_call(run_id, call_id, input=edited, by=session.name),
        )

    async def deny(self, request: Request, session: Session, form: FormData) -> Response:
        run_id, call_id = _text(form, "run"), _text(form, "call")
        given = _text(form, "reason")
        reason = given.strip() or None  # left empty: the default reason
        if given and reason is None:  # only spaces: a reason the model cannot read, as the store says
            problem = Problem(
                "", "The reason holds only spaces; write one the model can read, or leave it empty."
            )
            return await self._failed(request, session, run_id, call_id, form, "reason", [problem])
        return await self._decide(
            request,
            session,
            run_id,
            call_id,
            form,
            "reason",
            lambda: self.store.deny_call(run_id, call_id, reason, by=session.name),
        )

    async def answer(self, request: Request, session: Session, form: FormData) -> Response:
        run_id, call_id = _text(form, "run"), _text(form, "call")
        result: object = _text(form, "result")
        if form.get("json"):
            try:
                result = parse_json(str(result))
            except ValueError as error:
                problem = Problem(
                    "", f"This is not JSON: {error}; untick “the result is JSON” to send it as text."
                )
                return await self._failed(request, session, run_id, call_id, form, "result", [problem])
        is_error = bool(form.get("error"))
        return await self._decide(
            request,
            session,
            run_id,
            call_id,
            form,
            "result",
            lambda: self.store.answer_call(run_id, call_id, result, is_error=is_error, by=session.name),
        )

    async def _waiting_record(self, run_id: str, call_id: str) -> CallRecord | None:
        loaded = await self.store.load(run_id)
        if loaded is None or not any(call.id == call_id for call in waiting_calls(loaded.state)):
            return None
        return loaded.state.calls[call_id]

    async def _decide(
        self,
        request: Request,
        session: Session,
        run_id: str,
        call_id: str,
        form: FormData,
        field: str,
        decide: Callable[[], Awaitable[CallRecord]],
    ) -> Response:
        try:
            await decide()
        except ToolInputError as error:
            return await self._failed(
                request, session, run_id, call_id, form, field, [Problem("", str(error))]
            )
        except (ApprovalError, CheckpointConflictError) as error:
            # Decided by someone else first (the page says who and when), or no longer waiting.
            loaded = await self.store.load(run_id)
            record = None if loaded is None else loaded.state.calls.get(call_id)
            alert = f"Nothing was decided: {error}"
            page = _Form({}, {}, {call_id: alert}, alert=alert)
            if record is not None and record.decision is not None:
                page.taken = shown_record(record)
            return await self._run_page(request, session, run_id, page, status=409)
        except CheckpointError as error:
            if await self.store.get_run(run_id) is None:
                return self.error(
                    request, session, "No such run", f"The store has no run named {run_id!r}.", status=404
                )
            raise error
        return _redirect(request, f"{run_url(run_id)}#call-{quote(call_id, safe='')}")

    async def _failed(
        self,
        request: Request,
        session: Session,
        run_id: str,
        call_id: str,
        form: FormData,
        field: str,
        problems: Sequence[Problem],
    ) -> Response:
        draft: dict[str, str] = {}
        for key in ("input", "reason", "result", "json", "error"):
            value = form.get(key)
            if isinstance(value, str):
                draft[key] = value
        page = _Form(
            {call_id: draft},
            {(call_id, field): [Problem(p.path, printable(p.message)) for p in problems]},
            {},
        )
        return await self._run_page(request, session, run_id, page, status=400)

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
        return PlainTextResponse("ok", headers=_NO_STORE)


_NO_STORE = {"cache-control": "no-store"}


def _root(request: Request) -> str:
    """The path the inbox is served under (``/inbox`` behind a proxy that serves it there and says
    so through uvicorn's ``--root-path``), without its last slash; ``""`` at the root."""
    root = request.scope.get("root_path", "")
    return root.rstrip("/") if isinstance(root, str) else ""


def _route_path(request: Request) -> str:
    """The request's path within the inbox (without the root it is served under)."""
    path, root = request.url.path, _root(request)
    return path[len(root) :] if root and path.startswith(root + "/") else path


def _redirect(request: Request, path: str) -> RedirectResponse:
    """See other: ``path`` (a path of the inbox, ``/run?id=...``) under the inbox's root."""
    return RedirectResponse(_root(request) + path, status_code=303)


def run_url(run_id: str) -> str:
    """The page of a run (its id in the query, so that no id can be read as a path)."""
    return f"/run?{urlencode({'id': run_id})}"


def _runs_url(statuses: Sequence[str], cursor: str | None = None) -> str:
    query = [("status", status) for status in statuses]
    if cursor is not None:
        query.append(("cursor", cursor))
    return "/runs" + (f"?{urlencode(query)}" if query else "")


def _outcome(summary: RunSummary, now: datetime) -> str:
    if summary.failure is not None:
        return f"failed: {summary.failure.get('type')}: {summary.failure.get('message')}"
    if summary.status is RunStatus.FINISHED:
        return f"ended: {summary.end_reason}"
    if summary.status is RunStatus.AWAITING:
        return f"{plural(len(summary.waiting), 'call')} waiting"
    return going_on(summary, now)


def _text(form: FormData, key: str) -> str:
    value = form.get(key)
    return value if isinstance(value, str) else ""

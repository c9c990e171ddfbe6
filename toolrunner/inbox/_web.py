"""What every page and form of the inbox goes through: the session a request carries, the checks a
form that changes something passes (its origin, its CSRF token), the templates a page is rendered
with, and the inbox's paths under the root it is served at. ``_app`` and ``_deciding`` build on
``Pages``."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, cast
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined
from starlette.datastructures import FormData
from starlette.requests import Request
from starlette.responses import HTMLResponse, PlainTextResponse, RedirectResponse, Response

from .._core.errors import CheckpointError, ParamsError, StateError
from .._core.unicode import sendable_text
from .._ops.render import printable
from .._stores.protocol import RunStore
from ._auth import COOKIE, Session, Sessions, origin_of, same_origin
from ._http import BODY_LIMIT
from ._pages import code_spans

__all__ = [
    "NAME_LIMIT",
    "NO_STORE",
    "FormHandler",
    "Handler",
    "Pages",
    "form_text",
    "redirect",
    "root",
    "run_url",
]

NAME_LIMIT = 80
"""The most characters of a name given at login."""
NO_STORE = {"cache-control": "no-store"}
"""The headers of a response no cache may keep."""

Handler = Callable[[Request, Session], Awaitable[Response]]
FormHandler = Callable[[Request, Session, FormData], Awaitable[Response]]


class Pages:
    """The store, the sessions and the templates; the wrappers of the handlers behind the login."""

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

    # -- sessions and forms ------------------------------------------------------------------------

    def session(self, request: Request) -> Session | None:
        return self.sessions.read(request.cookies.get(COOKIE))

    def page(self, handler: Handler, *, api: bool = False) -> Callable[[Request], Awaitable[Response]]:
        """``handler`` behind the login: without a session, a page sends the person to log in,
        and what a script fetches is refused."""

        async def endpoint(request: Request) -> Response:
            session = self.session(request)
            if session is None:
                if api:
                    return PlainTextResponse("Log in first.", status_code=401, headers=NO_STORE)
                here = _route_path(request) + (f"?{request.url.query}" if request.url.query else "")
                return redirect(request, f"/login?{urlencode({'next': here})}")
            try:
                return await handler(request, session)
            except ParamsError as error:  # a cursor or status in the URL that is not one
                return self.error(request, session, "Not a page of the inbox", str(error), status=400)
            except (CheckpointError, StateError) as error:
                return self.error(request, session, "The store failed", str(error), status=503)

        return endpoint

    def form(self, handler: FormHandler) -> Callable[[Request], Awaitable[Response]]:
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
            {"section": "", "root": root(request), **context},
            session=session,
            csrf="" if session is None else self.sessions.csrf(session),
        )
        # A lone surrogate (a tool's input may hold one) cannot be sent as UTF-8: shown as U+FFFD.
        return HTMLResponse(sendable_text(html), status_code=status, headers=NO_STORE)

    def error(
        self, request: Request, session: Session | None, title: str, message: str, *, status: int
    ) -> HTMLResponse:
        return self.render(
            request, session, "error.html", status=status, title=title, message=printable(message)
        )


def root(request: Request) -> str:
    """The path the inbox is served under (``/inbox`` behind a proxy that serves it there and says
    so through uvicorn's ``--root-path``), without its last slash; ``""`` at the root."""
    path = request.scope.get("root_path", "")
    return path.rstrip("/") if isinstance(path, str) else ""


def _route_path(request: Request) -> str:
    """The request's path within the inbox (without the root it is served under)."""
    path, under = request.url.path, root(request)
    return path[len(under) :] if under and path.startswith(under + "/") else path


def redirect(request: Request, path: str) -> RedirectResponse:
    """See other: ``path`` (a path of the inbox, ``/run?id=...``) under the inbox's root."""
    return RedirectResponse(root(request) + path, status_code=303)


def run_url(run_id: str) -> str:
    """The page of a run (its id in the query, so that no id can be read as a path)."""
    return f"/run?{urlencode({'id': run_id})}"


def form_text(form: FormData, key: str) -> str:
    """A form's field as text; ``""`` when it is missing (or a file)."""
    value = form.get(key)
    return value if isinstance(value, str) else ""

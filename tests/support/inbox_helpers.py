"""What the inbox's tests share: its token, a person using it through the app's ASGI interface,
and saved runs that hold hostile text or secrets.

``Person`` talks to the app in process (httpx2's ``ASGITransport``), or to an inbox served in a
process of its own, as a browser would: it logs in, keeps the session cookie, reads each page's
CSRF token and sends the ``Origin`` header a browser sends with a form.
"""

from __future__ import annotations

import contextlib
import functools
import re
from typing import Any

import httpx2
from starlette.applications import Starlette

from tests.support.helpers import MODEL
from tests.support.stores import USER, look, pay
from toolrunner import AwaitingApprovalError, RunStore, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

__all__ = [
    "HOSTILE_ID",
    "ORIGIN",
    "PAYLOAD",
    "SECRETS",
    "TOKEN",
    "Person",
    "hostile_run",
    "secret_run",
]

TOKEN = "test-token-0123456789abcdef"
ORIGIN = "http://127.0.0.1:8765"

PAYLOAD = (
    '<script>window.__xss = "script"</script>'
    '<img src="x" onerror="window.__xss = \'img\'">'
    '<a id="evil" href="javascript:window.__xss = \'link\'">click me</a>'
)
"""Text a model or a tool might write, which must show as text and never run."""
HOSTILE_ID = "<img src=x onerror=\"window.__xss = 'id'\">"
"""A run id that is HTML."""

SECRETS = ("Bearer sk-header-secret-1", "bound-api-key-secret-2")
"""What a run was given that no page may show: a request header, a tool's bound argument."""


class Person:
    """One person using the inbox's app: their own cookies, the page they last read. Without an
    app, the inbox served at ``base_url``, over HTTP."""

    def __init__(self, app: Starlette | None = None, *, base_url: str = ORIGIN) -> None:
        transport = None if app is None else httpx2.ASGITransport(app=app)
        self.client = httpx2.AsyncClient(transport=transport, base_url=base_url)
        self.origin = base_url
        self.last = ""

    async def __aenter__(self) -> Person:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.client.aclose()

    async def log_in(self, name: str = "ada", token: str = TOKEN) -> httpx2.Response:
        return await self.post("/login", {"token": token, "name": name, "next": "/"})

    async def get(self, path: str, **params: str) -> httpx2.Response:
        response = await self.client.get(path, params=params) if params else await self.client.get(path)
        self.last = response.text
        return response

    @property
    def csrf(self) -> str:
        """The CSRF token of the page read last."""
        found = re.search(r'name="csrf" value="([^"]*)"', self.last)
        assert found is not None, "the page read last has no form"
        return found[1]

    async def post(
        self, path: str, data: dict[str, str], *, origin: str | None = "", csrf: bool = False
    ) -> httpx2.Response:
        """Post a form (with the last page's CSRF token when ``csrf``), from ``origin`` (the
        inbox's own by default; ``None``: no Origin header)."""
        headers = {} if origin is None else {"origin": origin or self.origin}
        if csrf:
            data = {"csrf": self.csrf, **data}
        response = await self.client.post(path, data=data, headers=headers)
        self.last = response.text
        return response

    async def decide(self, action: str, run_id: str, call_id: str, **fields: str) -> httpx2.Response:
        """Read the run's page, then post one of its forms (``approve``, ``deny``, ``answer``)."""
        await self.get("/run", id=run_id)
        return await self.post(f"/run/{action}", {"run": run_id, "call": call_id, **fields}, csrf=True)


def runner(store: RunStore, run_id: str, script: list[Any], **options: Any) -> ToolRunner:
    options.setdefault("tools", [pay, look])
    return ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=options.pop("messages", [USER]),
        checkpointer=store,
        run_id=run_id,
        **options,
    )


async def hostile_run(store: RunStore, run_id: str = HOSTILE_ID) -> str:
    """A run that waits, whose user message, reply text, tool inputs and tool result all hold
    ``PAYLOAD``; the id of its waiting call."""
    script = [
        tool_reply(tool_call("look", {"q": PAYLOAD}, id="toolu_look"), text=PAYLOAD),
        tool_reply(tool_call("pay", {"amount": 5, "to": PAYLOAD}, id="toolu_pay")),
        text_reply("Paid."),
    ]
    with contextlib.suppress(AwaitingApprovalError):
        await runner(store, run_id, script, messages=[{"role": "user", "content": PAYLOAD}]).until_done()
    return "toolu_pay"


async def charge(amount: int, api_key: str) -> str:
    """Charge a card."""
    return f"charged {amount}"


async def secret_run(store: RunStore, run_id: str = "secretive") -> str:
    """A run given a secret header and a tool with a secret bound argument, that waits for a
    decision on a call to that tool; the call's id."""
    bound = tool(name="charge", requires_approval=True)(functools.partial(charge, api_key=SECRETS[1]))
    script = [tool_reply(tool_call("charge", {"amount": 7}, id="toolu_charge")), text_reply("Charged.")]
    with contextlib.suppress(AwaitingApprovalError):
        await runner(
            store,
            run_id,
            script,
            tools=[bound],
            extra_headers={"Authorization": SECRETS[0]},
            system="You charge cards.",
        ).until_done()
    return "toolu_charge"

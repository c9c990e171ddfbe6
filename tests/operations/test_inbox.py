"""The inbox's app through its ASGI interface: logging in, the lists, a run's page, the decisions
and who took them, and each protection (the token, the session cookie, CSRF tokens, the origin
check, escaping, the security headers), each with a test that fails without it.

The browser tests (tests/operations/test_inbox_browser.py) drive the same app, served, in Chromium.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import anyio
import httpx2
import pytest
from starlette.applications import Starlette
from starlette.types import Message

from tests.support.inbox_helpers import (
    HOSTILE_ID,
    PAYLOAD,
    SECRETS,
    TOKEN,
    Person,
    hostile_run,
    runner,
    secret_run,
)
from tests.support.stores import Clock, finished_run, look, paid, paused_run, pay, running_run, save_changed
from toolrunner import (
    ApprovalError,
    CheckpointError,
    MemoryCheckpointer,
    RunStore,
    SQLiteCheckpointer,
    ToolRunner,
)
from toolrunner.inbox import app_from_environment, create_app
from toolrunner.inbox._auth import Sessions, safe_next
from toolrunner.inbox._http import BODY_LIMIT
from toolrunner.inbox._live import waiting_versions
from toolrunner.inbox._pages import Moment, decided_moment, editor_text, when
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


@pytest.fixture
def store() -> MemoryCheckpointer:  # the contract's fixture of the same name is every store
    return MemoryCheckpointer()


@pytest.fixture
def app(store: MemoryCheckpointer) -> Starlette:
    return create_app(store, token=TOKEN)


@pytest.fixture
async def ada(app: Starlette) -> AsyncIterator[Person]:
    async with Person(app) as person:
        await person.log_in("ada")
        yield person


async def waiting_ids(store: RunStore, run_id: str) -> list[str]:
    summary = await store.get_run(run_id)
    assert summary is not None
    return [call.id for call in summary.waiting]


# -- the token and the session ------------------------------------------------------------------------


async def test_without_a_session_nothing_but_the_login_page_is_served(
    app: Starlette, store: MemoryCheckpointer
) -> None:
    await paused_run(store, "order-42", 120)
    async with Person(app) as stranger:
        response = await stranger.get("/run", id="order-42")
        assert response.status_code == 303
        assert response.headers["location"] == "/login?next=%2Frun%3Fid%3Dorder-42"
        for path in ("/", "/runs"):
            assert (await stranger.get(path)).headers["location"].startswith("/login")
        for path in ("/fragments/waiting", "/events"):
            response = await stranger.get(path)
            assert response.status_code == 401
            assert "order-42" not in response.text
        response = await stranger.post("/run/approve", {"run": "order-42", "call": "order-42_pay0"})
        assert response.status_code == 401
        assert "order-42" not in response.text
        login = await stranger.get("/login")
        assert login.status_code == 200
        assert 'name="token"' in login.text
        assert "order-42" not in login.text
        assert (await stranger.get("/static/inbox.js")).status_code == 200
        assert (await stranger.get("/healthz")).text == "ok"
    assert await waiting_ids(store, "order-42") == ["order-42_pay0"]


async def test_the_icon_is_served_without_a_session_and_every_page_links_it(
    app: Starlette, ada: Person
) -> None:
    async with Person(app) as stranger:
        icon = await stranger.get("/favicon.ico")  # asked for by what does not read the page's link
        assert icon.status_code == 200
        assert icon.headers["content-type"] == "image/svg+xml"
        assert icon.content.startswith(b'<svg xmlns="http://www.w3.org/2000/svg"')
        assert b"<script" not in icon.content
        linked = await stranger.get("/static/favicon.svg")
        assert (linked.status_code, linked.content) == (200, icon.content)
        login = (await stranger.get("/login")).text
    for page in (login, (await ada.get("/")).text, (await ada.get("/runs")).text):
        assert '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">' in page


async def test_logging_in_needs_the_token_and_a_name_and_sets_a_guarded_cookie(app: Starlette) -> None:
    async with Person(app) as person:
        response = await person.log_in("ada", token=TOKEN[:-1] + "x")
        assert response.status_code == 401
        assert "That is not the inbox&#39;s token" in response.text
        assert "set-cookie" not in response.headers
        response = await person.log_in("   ")
        assert response.status_code == 400
        assert "Give your name" in response.text
        assert "set-cookie" not in response.headers
        for name in ("ada\nbob", "\u202eada", "ada\x1b[2J"):  # refused, not rewritten into another name
            response = await person.log_in(name)
            assert response.status_code == 400
            assert "which a run&#39;s record cannot keep" in response.text
            assert "set-cookie" not in response.headers
        response = await person.log_in("  ada lovelace ")  # the ends trimmed, the name kept
        assert response.status_code == 303
        session = Sessions(TOKEN, max_age=3_600).read(response.cookies["toolrunner_inbox"])
        assert session is not None
        assert session.name == "ada lovelace"
        response = await person.log_in("ada")
        assert response.status_code == 303
        cookie = response.headers["set-cookie"]
        assert cookie.startswith("toolrunner_inbox=")
        attributes = {part.strip().lower() for part in cookie.split(";")[1:]}
        assert {"httponly", "samesite=lax", "path=/"} <= attributes
        assert "secure" not in attributes  # over plain HTTP on loopback; over HTTPS, below
        assert (await person.get("/")).status_code == 200
    async with Person(
        create_app(MemoryCheckpointer(), token=TOKEN), base_url="https://inbox.example.com"
    ) as person:
        response = await person.log_in("ada")
        assert "secure" in {part.strip().lower() for part in response.headers["set-cookie"].split(";")}


async def test_a_forged_or_foreign_session_cookie_is_refused(app: Starlette, ada: Person) -> None:
    cookie = ada.client.cookies["toolrunner_inbox"]
    body, signature = cookie.rsplit(".", 1)
    forged = Sessions("another-token-0123456789", max_age=3_600).issue("mallory")  # signed with another token
    for value in (forged, f"{body}x.{signature}", f"{body}.{signature[:-2]}", "garbage", ""):
        async with Person(app) as person:
            person.client.cookies.set("toolrunner_inbox", value)
            assert (await person.get("/")).status_code == 303, value


def test_a_session_ends_after_its_hours() -> None:
    clock = Clock(1_000_000.0)
    sessions = Sessions(TOKEN, max_age=3_600, now=clock)
    cookie = sessions.issue("ada")
    session = sessions.read(cookie)
    assert session is not None
    assert session.name == "ada"
    clock.now += 3_599
    assert sessions.read(cookie) is not None
    clock.now += 1
    assert sessions.read(cookie) is None


async def test_logging_in_goes_back_to_the_page_asked_for_and_never_to_another_site(app: Starlette) -> None:
    async with Person(app) as person:
        response = await person.post("/login", {"token": TOKEN, "name": "ada", "next": "/run?id=x"})
        assert response.headers["location"] == "/run?id=x"
    for target in (
        "//evil.example/",
        "/\\evil.example",
        "https://evil.example/",
        "javascript:alert(1)",
        "/\t/x",
    ):
        assert safe_next(target) == "/", target


async def test_logging_out_ends_the_session_in_this_browser(ada: Person) -> None:
    await ada.get("/")
    response = await ada.post("/logout", {}, csrf=True)
    assert response.headers["location"] == "/login"
    assert (await ada.get("/")).status_code == 303


def test_the_token_must_be_long_and_the_origins_urls() -> None:
    with pytest.raises(ValueError, match="at least 16 characters"):
        create_app(MemoryCheckpointer(), token="short")
    with pytest.raises(ValueError, match="origins must be URLs"):
        create_app(MemoryCheckpointer(), token=TOKEN, origins=["inbox.example.com"])


# -- CSRF and origins ---------------------------------------------------------------------------------


async def test_a_form_without_the_sessions_csrf_token_is_refused(
    app: Starlette, store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    fields = {"run": "order-42", "call": "order-42_pay0"}
    response = await ada.post("/run/approve", fields)  # the right origin, the session, no token
    assert response.status_code == 403
    assert "nothing was done" in response.text
    async with Person(app) as bob:
        await bob.log_in("bob")
        await bob.get("/")
        response = await ada.post("/run/approve", {**fields, "csrf": bob.csrf})  # another session's
        assert response.status_code == 403
    response = await ada.post("/run/approve", {**fields, "csrf": "0" * 64})
    assert response.status_code == 403
    assert await waiting_ids(store, "order-42") == ["order-42_pay0"]
    assert (await ada.decide("approve", "order-42", "order-42_pay0")).status_code == 303


async def test_a_form_posted_from_a_page_of_another_origin_is_refused(
    store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    await ada.get("/run", id="order-42")
    fields = {"run": "order-42", "call": "order-42_pay0", "csrf": ada.csrf}
    for origin in ("http://evil.example", "http://127.0.0.1:9999", "https://127.0.0.1:8765", "null"):
        response = await ada.post("/run/approve", fields, origin=origin)
        assert response.status_code == 403, origin
    # A browser that sends no Origin sends the Referer of the page the form was on.
    response = await ada.client.post(
        "/run/approve", data=fields, headers={"referer": "http://evil.example/x"}
    )
    assert response.status_code == 403
    assert await waiting_ids(store, "order-42") == ["order-42_pay0"]
    response = await ada.client.post(
        "/run/approve", data=fields, headers={"referer": "http://127.0.0.1:8765/run?id=order-42"}
    )
    assert response.status_code == 303


async def test_a_form_the_browser_says_another_site_sent_is_refused_without_an_origin(
    store: MemoryCheckpointer, ada: Person
) -> None:
    """Sec-Fetch-Site, which no page can set: a form sent from another site or another port of
    this one, with Origin and Referer stripped (by a proxy or a privacy setting), is refused."""
    await paused_run(store, "order-42", 120)
    await ada.get("/run", id="order-42")
    fields = {"run": "order-42", "call": "order-42_pay0", "csrf": ada.csrf}
    for site in ("cross-site", "same-site"):
        response = await ada.client.post("/run/approve", data=fields, headers={"sec-fetch-site": site})
        assert response.status_code == 403, site
    assert await waiting_ids(store, "order-42") == ["order-42_pay0"]
    response = await ada.client.post("/run/approve", data=fields, headers={"sec-fetch-site": "same-origin"})
    assert response.status_code == 303


async def test_served_under_a_root_path_every_link_redirect_and_cookie_keeps_it(
    store: MemoryCheckpointer,
) -> None:
    """Behind a proxy that serves the inbox at /inbox (uvicorn --root-path /inbox)."""
    await paused_run(store, "order-42", 120)
    app = create_app(store, token=TOKEN)
    transport = httpx2.ASGITransport(app=app, root_path="/inbox")
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1:8765") as client:
        response = await client.get("/inbox/run", params={"id": "order-42"})
        assert response.status_code == 303
        assert response.headers["location"] == "/inbox/login?next=%2Frun%3Fid%3Dorder-42"
        response = await client.post(
            "/inbox/login",
            data={"token": TOKEN, "name": "ada", "next": "/run?id=order-42"},
            headers={"origin": "http://127.0.0.1:8765"},
        )
        assert response.headers["location"] == "/inbox/run?id=order-42"
        assert "Path=/inbox/" in response.headers["set-cookie"]
        page = (await client.get("/inbox/run", params={"id": "order-42"})).text
        links = re.findall(r'(?:href|src|action|data-live|data-fragment)="([^"#]*)', page)
        assert links
        assert all(link.startswith("/inbox/") for link in links), links
        csrf = re.search(r'name="csrf" value="([^"]*)"', page)
        assert csrf is not None
        response = await client.post(
            "/inbox/run/approve",
            data={"run": "order-42", "call": "order-42_pay0", "csrf": csrf[1]},
            headers={"origin": "http://127.0.0.1:8765"},
        )
        assert response.headers["location"] == "/inbox/run?id=order-42#call-order-42_pay0"
        page = (await client.get("/inbox/")).text
        links = re.findall(r'(?:href|src|action|data-live|data-fragment)="([^"#]*)', page)
        assert all(link.startswith("/inbox/") for link in links), links


async def test_the_origins_given_are_the_inboxs_own_behind_a_proxy(store: MemoryCheckpointer) -> None:
    await paused_run(store, "order-42", 120)
    app = create_app(store, token=TOKEN, origins=["https://inbox.example.com"])
    async with Person(app) as ada:  # the proxy speaks to the app at 127.0.0.1:8765
        await ada.log_in("ada")
        await ada.get("/run", id="order-42")
        fields = {"run": "order-42", "call": "order-42_pay0", "csrf": ada.csrf}
        assert (await ada.post("/run/approve", fields, origin="https://evil.example.com")).status_code == 403
        assert (await ada.post("/run/approve", fields, origin="https://inbox.example.com")).status_code == 303


async def test_logging_in_from_another_origin_is_refused(app: Starlette) -> None:
    async with Person(app) as person:
        response = await person.post(
            "/login", {"token": TOKEN, "name": "ada", "next": "/"}, origin="http://evil.example"
        )
        assert response.status_code == 403
        assert "set-cookie" not in response.headers


# -- what every response says to the browser ---------------------------------------------------------


async def test_every_response_forbids_other_scripts_and_framing_and_pages_are_not_cached(ada: Person) -> None:
    for path in ("/", "/login", "/static/inbox.js"):
        headers = (await ada.get(path)).headers
        policy = headers["content-security-policy"]
        assert "script-src 'self'" in policy
        assert "default-src 'none'" in policy
        assert "frame-ancestors 'none'" in policy
        assert "form-action 'self'" in policy
        assert headers["x-frame-options"] == "DENY"
        assert headers["x-content-type-options"] == "nosniff"
    assert (await ada.get("/")).headers["cache-control"] == "no-store"


# -- the lists ----------------------------------------------------------------------------------------


async def test_the_waiting_list_shows_the_runs_that_wait_newest_first_a_page_at_a_time(
    store: MemoryCheckpointer, ada: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = Clock()
    monkeypatch.setattr(store, "_now", clock)
    for run_id in ("first", "second", "third"):
        clock.now += 60
        await paused_run(store, run_id, 120, 80)
    clock.now += 60
    await finished_run(store, "done")
    monkeypatch.setattr("toolrunner.inbox._app.PAGE", 2)
    page = (await ada.get("/")).text
    assert re.findall(r'<tr data-run="([^"]+)"', page) == ["third", "second"]
    assert '<code>pay</code> <span class="input">{&#34;amount&#34;: 120}</span>' in page
    older = re.search(r'href="(/\?cursor=[^"]+)"', page)
    assert older is not None
    page = (await ada.get(older[1].replace("&amp;", "&"))).text
    assert re.findall(r'<tr data-run="([^"]+)"', page) == ["first"]
    fragment = (await ada.get("/fragments/waiting")).text
    assert fragment.startswith("<table")
    assert re.findall(r'<tr data-run="([^"]+)"', fragment) == ["third", "second"]


async def test_finished_and_failed_runs_are_listed_with_their_cost_and_turns(
    store: MemoryCheckpointer, ada: Person
) -> None:
    await finished_run(store, "done")
    await running_run(store, "mid")
    await running_run(store, "broken")
    await save_changed(
        store,
        "broken",
        lambda state: state.replace(failure={"type": "APIStatusError", "message": "overloaded"}),
    )
    assert rows((await ada.get("/runs")).text) == [
        ["broken", "failed", "failed: APIStatusError: overloaded", "1", "$0.0001"],
        ["done", "finished", "ended: model", "2", "$0.0002"],
    ]
    assert [row[0] for row in rows((await ada.get("/runs", status="running")).text)] == ["mid"]
    assert [row[0] for row in rows((await ada.get("/runs", status="finished")).text)] == ["done"]


async def test_a_run_decided_in_full_is_ready_never_running_and_says_who_takes_it_up(
    store: MemoryCheckpointer, ada: Person
) -> None:
    [call] = await paused_run(store, "decided", 120)
    await store.approve_call("decided", call, by="ada")
    await running_run(store, "mid")
    ready = (await ada.get("/runs", status="ready")).text
    assert rows(ready) == [
        [
            "decided",
            "ready",
            "decided: goes on once a resumer takes it up, or the app resumes it",
            "1",
            "$0.0001",
        ]
    ]
    assert 'class="status-ready"' in ready
    assert '<a href="/runs?status=ready" aria-current="page">Ready</a>' in ready
    assert [row[0] for row in rows((await ada.get("/runs", status="running")).text)] == ["mid"]
    assert await store.lease_runs("resumer-1", lease=60) == ("decided",)
    page = (await ada.get("/run", id="decided")).text
    assert '<span class="badge status-ready">ready</span>' in page
    assert "decided: resumer resumer-1 takes it up" in page


def rows(page: str) -> list[list[str]]:
    """The runs table's rows: each cell's text, without the last (when the run was saved)."""
    return [
        [re.sub(r"<[^>]+>", "", cell).strip() for cell in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)][:-1]
        for row in re.findall(r"<tr data-run=.*?</tr>", page, re.S)
    ]


async def test_the_live_list_has_a_new_version_when_a_run_starts_or_stops_waiting(
    store: MemoryCheckpointer,
) -> None:
    versions = waiting_versions(store, 0.0, keepalive=3_600.0)
    empty = await anext(versions)
    await finished_run(store, "done")  # no run waits: the same list
    await paused_run(store, "order-42", 120)
    waiting = await anext(versions)
    assert waiting not in (None, empty)
    await store.approve_call("order-42", "order-42_pay0", by="ada")
    assert await anext(versions) == empty
    await versions.aclose()


async def test_the_live_list_sends_a_keepalive_while_nothing_changes(store: MemoryCheckpointer) -> None:
    versions = waiting_versions(store, 0.0, keepalive=0.0)
    assert await anext(versions) is not None
    assert await anext(versions) is None
    await versions.aclose()


# -- a run's page ---------------------------------------------------------------------------------------


async def test_a_runs_page_shows_its_conversation_and_each_waiting_calls_tool_description_and_input(
    store: MemoryCheckpointer, ada: Person
) -> None:
    long_text = "\n".join(f"line {n}" for n in range(40))
    script = [
        tool_reply(tool_call("look", {"q": "invoices"}, id="toolu_look"), text="Let me look."),
        tool_reply(tool_call("pay", {"amount": 120}, id="toolu_pay"), text=long_text),
    ]
    async for _ in runner(store, "order-42", script):
        pass
    page = (await ada.get("/run", id="order-42")).text
    assert '<span class="badge status-awaiting">awaiting</span>' in page
    conversation = page[page.index('<section class="conversation">') :]
    assert re.findall(r'<article class="message role-(\w+)">', conversation) == [
        "user",
        "assistant",
        "user",
        "assistant",
    ]
    assert "Pay the invoices." in conversation
    assert "Let me look." in conversation
    assert '<code>look</code> <span class="id">toolu_look</span>' in conversation
    assert '<span class="id">toolu_look</span><div class="text">found invoices</div>' in conversation
    assert "(the latest reply)" in conversation
    fold = re.search(
        r'<details class="fold"><summary><span class="text preview">(.*?)</span>', conversation, re.S
    )
    assert fold is not None
    assert "line 39" not in fold[1]  # the long text is folded
    assert "(28 more lines)" in fold[1]
    assert "line 39" in conversation  # and whole, behind the fold
    waiting = page[page.index('<section class="waiting">') : page.index('<section class="conversation">')]
    assert '<article class="call" id="call-toolu_pay" data-call="toolu_pay">' in waiting
    assert '<div class="description">Pay an amount.</div>' in waiting
    assert "&#34;amount&#34;: 120" in waiting
    assert (
        '<dt><code>amount</code> <span class="type">integer</span> <span class="required">required</span></dt>'
        in waiting
    )
    assert "<dd>In euros, at most 1000.</dd>" in waiting


async def test_a_run_that_is_not_there_is_a_404(ada: Person) -> None:
    response = await ada.get("/run", id="ghost")
    assert response.status_code == 404
    assert "The store has no run named &#39;ghost&#39;." in response.text


async def test_a_failing_store_is_shown_as_such_not_raised(
    store: MemoryCheckpointer, ada: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    async def fail(**_: object) -> None:
        raise CheckpointError("'/var/lib/app/runs.db' is locked by another process; try again.")

    monkeypatch.setattr(store, "list_runs", fail)
    response = await ada.get("/")
    assert response.status_code == 503
    assert "is locked by another process" in response.text


# -- deciding -------------------------------------------------------------------------------------------


async def resume(store: RunStore, run_id: str) -> ToolRunner:
    fake = FakeMessagesAPI([text_reply("Paid.")])
    runner = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id=run_id, tools=[pay, look]
    )
    await runner.until_done()
    return runner


async def test_an_edited_input_is_approved_by_who_logged_in_and_the_resumed_run_runs_it(
    store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    response = await ada.decide("approve", "order-42", "order-42_pay0", input='{"amount": 100, "to": "Bob"}')
    assert response.status_code == 303
    assert response.headers["location"] == "/run?id=order-42#call-order-42_pay0"
    loaded = await store.load("order-42")
    assert loaded is not None
    record = loaded.state.calls["order-42_pay0"]
    assert (record.decision, record.decided_by, record.approved_input) == (
        "approved",
        "ada",
        {"amount": 100, "to": "Bob"},
    )
    page = (await ada.get("/run", id="order-42")).text
    assert re.search(r'<p class="decision">approved by ada at <time datetime="[^"]+">[^<]+</time></p>', page)
    assert "Runs with the input" in page
    await resume(store, "order-42")
    assert paid == [100]
    # Once the run went on, the journal no longer holds the call; the page's audit still shows
    # who approved, when, the model's input and the one that ran.
    page = (await ada.get("/run", id="order-42")).text
    audit = page.split('<section class="audit">', 1)[1].split("</section>", 1)[0]
    assert 'data-decision="order-42_pay0"' in audit
    assert re.search(
        r'<p class="decision">approved by ada at <time datetime="[^"]+">[^<]+</time> \(through the store\)</p>',
        audit,
    )
    assert "Input, as the model sent it" in audit
    assert "&#34;amount&#34;: 120" in audit or '"amount": 120' in audit
    assert "Ran with the input" in audit
    assert "&#34;to&#34;: &#34;Bob&#34;" in audit or '"to": "Bob"' in audit


async def test_approving_the_input_as_it_is_approves_without_an_edit(
    store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    await ada.get("/run", id="order-42")
    shown = re.search(r'<textarea id="input-order-42_pay0"[^>]*>\n(.*?)</textarea>', ada.last, re.S)
    assert shown is not None
    text = shown[1].replace("&#34;", '"')
    assert (
        await ada.post("/run/approve", {"run": "order-42", "call": "order-42_pay0", "input": text}, csrf=True)
    ).status_code == 303
    loaded = await store.load("order-42")
    assert loaded is not None
    assert loaded.state.calls["order-42_pay0"].approved_input is None
    await resume(store, "order-42")
    assert paid == [120]


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            "{amount: 100}",
            "This is not JSON: Expecting property name enclosed in double quotes: line 1 column 2 (char 1).",
        ),
        ('{"amount": "lots"}', "<code>amount</code>: &#39;lots&#39; is not of type &#39;integer&#39;"),
        ('{"amount": 5, "tip": 1}', "Additional properties are not allowed (&#39;tip&#39; was unexpected)"),
        ("{}", "&#39;amount&#39; is a required property"),
        ("[1]", "must be a JSON object (the tool&#39;s arguments)"),
    ],
)
async def test_an_edit_that_does_not_fit_is_shown_back_with_its_problems_next_to_the_field(
    store: MemoryCheckpointer, ada: Person, text: str, problem: str
) -> None:
    await paused_run(store, "order-42", 120)
    response = await ada.decide("approve", "order-42", "order-42_pay0", input=text)
    assert response.status_code == 400
    editor = re.search(
        r'<textarea id="input-order-42_pay0"[^>]*>\n(.*?)</textarea>\s*<ul class="problems" role="alert">(.*?)</ul>',
        response.text,
        re.S,
    )
    assert editor is not None, "the problems follow the field"
    assert editor[1] == text.replace('"', "&#34;")  # the draft is kept
    assert problem in editor[2]
    assert await waiting_ids(store, "order-42") == ["order-42_pay0"]


async def test_a_call_saved_without_its_schema_can_be_approved_as_it_is_but_not_edited(
    store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120, schema=False)
    page = (await ada.get("/run", id="order-42")).text
    assert "can be approved as it is, not edited" in page
    assert 'name="input"' not in page
    response = await ada.post(
        "/run/approve", {"run": "order-42", "call": "order-42_pay0", "input": '{"amount": 1}'}, csrf=True
    )
    assert response.status_code == 400  # a hand-made post cannot edit it either
    assert "saved without its tool&#39;s input schema" in response.text
    assert (
        await ada.post("/run/approve", {"run": "order-42", "call": "order-42_pay0"}, csrf=True)
    ).status_code == 303
    await resume(store, "order-42")
    assert paid == [120]


async def test_deny_with_a_reason_and_answer_with_a_result(store: MemoryCheckpointer, ada: Person) -> None:
    await paused_run(store, "order-42", 120, 80, 60)
    assert (await ada.decide("deny", "order-42", "order-42_pay0", reason="Too much.")).status_code == 303
    refused = await ada.decide("deny", "order-42", "order-42_pay1", reason="  ")
    assert refused.status_code == 400  # as the store refuses it; left empty, it is the default reason
    assert "The reason holds only spaces" in refused.text
    assert (await ada.decide("deny", "order-42", "order-42_pay1", reason="")).status_code == 303
    response = await ada.decide("answer", "order-42", "order-42_pay2", result='{"paid": 60}', json="1")
    assert response.status_code == 303
    loaded = await store.load("order-42")
    assert loaded is not None
    calls = loaded.state.calls
    assert calls["order-42_pay0"].result == {
        "type": "tool_result",
        "tool_use_id": "order-42_pay0",
        "content": "Too much.",
        "is_error": True,
    }
    assert "denied" in str(calls["order-42_pay1"].result)  # the runner's own wording
    assert calls["order-42_pay2"].result == {
        "type": "tool_result",
        "tool_use_id": "order-42_pay2",
        "content": '{"paid": 60}',
    }
    assert {record.decided_by for record in calls.values()} == {"ada"}
    page = (await ada.get("/run", id="order-42")).text
    journal = page.split('<section class="journal">', 1)[1].split("</section>", 1)[0]
    assert journal.count('<p class="decision">denied by ada at ') == 2
    assert journal.count('<p class="decision">answered by ada at ') == 1
    audit = page.split('<section class="audit">', 1)[1].split("</section>", 1)[0]  # the same, kept
    assert audit.count('<p class="decision">denied by ada at ') == 2
    assert audit.count('<p class="decision">answered by ada at ') == 1
    runner = await resume(store, "order-42")
    assert paid == []
    assert runner.state.end_reason == "model"


async def test_an_answer_that_is_not_json_says_so_next_to_the_field(
    store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    response = await ada.decide("answer", "order-42", "order-42_pay0", result="{nope", json="1", error="1")
    assert response.status_code == 400
    field = re.search(
        r'<textarea id="result-order-42_pay0"[^>]*>\n(.*?)</textarea>\s*<ul class="problems" role="alert">(.*?)</ul>',
        response.text,
        re.S,
    )
    assert field is not None
    assert field[1] == "{nope"
    assert "This is not JSON" in field[2]
    assert 'name="json" value="1" checked' in response.text
    assert 'name="error" value="1" checked' in response.text
    response = await ada.decide("answer", "order-42", "order-42_pay0", result="refunded by hand", error="1")
    assert response.status_code == 303
    loaded = await store.load("order-42")
    assert loaded is not None
    assert loaded.state.calls["order-42_pay0"].result == {
        "type": "tool_result",
        "tool_use_id": "order-42_pay0",
        "content": "refunded by hand",
        "is_error": True,
    }


async def test_of_two_people_deciding_one_call_one_wins_and_the_other_is_told_who(
    app: Starlette, store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    async with Person(app) as bob:
        await bob.log_in("bob")
        await bob.get("/run", id="order-42")  # both read the page while the call waits
        await ada.get("/run", id="order-42")
        assert (
            await ada.post(
                "/run/approve",
                {"run": "order-42", "call": "order-42_pay0", "input": '{"amount": 90}'},
                csrf=True,
            )
        ).status_code == 303
        response = await bob.post(
            "/run/deny", {"run": "order-42", "call": "order-42_pay0", "reason": "No."}, csrf=True
        )
        assert response.status_code == 409
        assert re.search(
            r'<p class="alert" role="alert">Nothing was decided: the call <code>order-42_pay0</code> was approved by '
            r'ada at <time datetime="[^"]+">[^<]+</time> first; it cannot be decided again.</p>',
            response.text,
        )
        assert '<p class="decision">approved by ada at <time ' in response.text  # the page as it is now
    loaded = await store.load("order-42")
    assert loaded is not None
    assert loaded.state.calls["order-42_pay0"].decided_by == "ada"


async def test_two_people_deciding_one_call_at_once_on_sqlite_one_wins(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    await paused_run(store, "order-42", 120)
    app = create_app(store, token=TOKEN)
    statuses: dict[str, int] = {}
    async with Person(app) as ada, Person(app) as bob:
        for person, name in ((ada, "ada"), (bob, "bob")):
            await person.log_in(name)
            await person.get("/run", id="order-42")

        async def decide(person: Person, name: str, action: str) -> None:
            fields = {"run": "order-42", "call": "order-42_pay0", "reason": "No."}
            statuses[name] = (await person.post(f"/run/{action}", fields, csrf=True)).status_code

        async with anyio.create_task_group() as group:
            group.start_soon(decide, ada, "ada", "approve")
            group.start_soon(decide, bob, "bob", "deny")
    assert sorted(statuses.values()) == [303, 409]
    loaded = await store.load("order-42")
    assert loaded is not None
    winner = next(name for name, status in statuses.items() if status == 303)
    assert loaded.state.calls["order-42_pay0"].decided_by == winner
    store.close()


# -- times and messages, as a person reads them ----------------------------------------------------------

NOV_27 = datetime(2026, 11, 27, 12, 0, 5, 123_000, tzinfo=UTC)
SHOWN = '<time datetime="2026-11-27T12:00:05Z">27 Nov 2026, 12:00 UTC</time>'
"""How the inbox shows ``NOV_27``: readable, and exact in the element's ``datetime``."""


def iso_texts(page: str) -> list[str]:
    """Times a page shows as ISO text (``2026-11-27T12:00:05.123+00:00``) rather than readable."""
    return re.findall(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}", re.sub(r'datetime="[^"]*"', "", page))


async def test_every_time_is_shown_readable_in_a_time_element(
    app: Starlette, store: MemoryCheckpointer, ada: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store, "_now", Clock(NOV_27.timestamp()))
    await paused_run(store, "order-42", 120, 80)
    await finished_run(store, "done")
    assert (await ada.decide("approve", "order-42", "order-42_pay0")).status_code == 303
    async with Person(app) as bob:
        await bob.log_in("bob")
        conflict = await bob.decide("deny", "order-42", "order-42_pay0", reason="No.")  # ada was first
    assert conflict.status_code == 409
    pages = {
        "waiting": (await ada.get("/")).text,
        "fragment": (await ada.get("/fragments/waiting")).text,
        "runs": (await ada.get("/runs")).text,
        "run": (await ada.get("/run", id="order-42")).text,
        "conflict": conflict.text,
    }
    for name, page in pages.items():
        assert SHOWN in page, name
        assert iso_texts(page) == [], name
    assert re.search(
        rf"<td data-label=\"Last saved\">{re.escape(SHOWN)} <span class=\"ago\">\(\d+[smhd] ago\)</span></td>",
        pages["runs"],
    )
    assert f"Created {SHOWN}" in pages["run"]
    assert f'<p class="decision">approved by ada at {SHOWN}</p>' in pages["run"]
    assert (
        "Nothing was decided: the call <code>order-42_pay0</code> was approved by ada at "
        f"{SHOWN} first; it cannot be decided again."
    ) in pages["conflict"]


def test_a_time_is_shown_in_utc_and_a_decision_time_that_is_not_one_as_saved() -> None:
    assert when(NOV_27.astimezone(timezone(timedelta(hours=-5)))) == Moment(
        "2026-11-27T12:00:05Z", "27 Nov 2026, 12:00 UTC"
    )
    assert when(datetime(2026, 1, 2, 3, 4, tzinfo=UTC), datetime(2026, 1, 2, 4, 4, tzinfo=UTC)) == Moment(
        "2026-01-02T03:04:00Z", "2 Jan 2026, 03:04 UTC", "1h ago"
    )
    assert decided_moment("2026-11-27T12:00:05.123+00:00") == Moment(
        "2026-11-27T12:00:05Z", "27 Nov 2026, 12:00 UTC"
    )
    assert decided_moment("yesterday") == Moment("", "yesterday")
    assert decided_moment(None) is None


def shown_text(page: str) -> str:
    """What a person reads of a page's main part: its text, without the tags."""
    main = page.split("<main>", 1)[1].split("</main>", 1)[0]
    return re.sub(r"<[^>]+>", "", main)


async def test_a_command_in_a_message_is_shown_as_code_never_between_backticks(
    app: Starlette, store: MemoryCheckpointer, ada: Person, monkeypatch: pytest.MonkeyPatch
) -> None:
    async with Person(app) as person:
        wrong_token = (await person.log_in("ada", token=TOKEN[:-1] + "x")).text
    assert "give the one <code>toolrunner inbox</code> printed" in wrong_token
    await finished_run(store, "done-1")
    nothing_waits = (await ada.decide("deny", "done-1", "done-1_look")).text
    assert "<code>toolrunner runs list --status awaiting</code>" in nothing_waits  # the store's message

    async def fail(**_: object) -> None:
        raise CheckpointError("the store at `<b>runs.db</b>` is locked; run `toolrunner runs list` later.")

    monkeypatch.setattr(store, "list_runs", fail)
    failed = (await ada.get("/")).text
    assert (
        "the store at <code>&lt;b&gt;runs.db&lt;/b&gt;</code> is locked; run <code>toolrunner runs list</code> later."
    ) in failed  # a code span is escaped like any text
    for page in (wrong_token, nothing_waits, failed):
        assert "`" not in shown_text(page)


# -- what a model or a tool wrote is text; what is secret is not shown -----------------------------------


async def test_what_a_model_or_a_tool_wrote_is_escaped_on_every_page(
    app: Starlette, store: MemoryCheckpointer
) -> None:
    call_id = await hostile_run(store)
    async with Person(app) as person:
        await person.log_in(name="<img src=x onerror=alert(1)>")  # a name is text too
        pages = [
            (await person.get("/")).text,
            (await person.get("/fragments/waiting")).text,
            (await person.get("/run", id=HOSTILE_ID)).text,
        ]
        response = await person.decide(
            "approve", HOSTILE_ID, call_id, input='{"amount": "<script>x</script>"}'
        )
        pages.append(response.text)
        assert (await person.decide("answer", HOSTILE_ID, call_id, result=PAYLOAD)).status_code == 303
        pages.append((await person.get("/run", id=HOSTILE_ID)).text)
        pages.append((await person.get("/runs", status="running")).text)
    for page in pages:
        assert "<script>window" not in page
        assert "<script>x" not in page
        assert "<img" not in page
        assert '<a id="evil"' not in page
        assert 'href="javascript:' not in page
    run_page = pages[2]
    # The user's message, the reply's text, the lookup's result (as text); both inputs (as JSON).
    assert run_page.count("&lt;script&gt;window.__xss = &#34;script&#34;&lt;/script&gt;") == 3
    assert run_page.count("&lt;script&gt;window.__xss = \\&#34;script\\&#34;&lt;/script&gt;") >= 2
    assert 'href="/run?id=%3Cimg+src%3Dx+onerror%3D%22window.__xss+%3D+%27id%27%22%3E"' in pages[0]


async def test_control_characters_and_lone_surrogates_are_shown_not_sent(
    store: MemoryCheckpointer, ada: Person
) -> None:
    script = [
        tool_reply(
            tool_call("pay", {"amount": 1, "to": "\x1b[31mred"}, id="toolu_pay"), text="bell\x07 caf\udce9"
        )
    ]
    async for _ in runner(store, "odd", script):
        pass
    with pytest.raises(ApprovalError, match="lone surrogates"):  # as `--by` from a non-UTF-8 argv: not a name
        await store.answer_call("odd", "toolu_pay", "done", by="caf\udce9")
    await store.answer_call("odd", "toolu_pay", "done", by="café")
    response = await ada.get("/run", id="odd")
    assert response.status_code == 200
    assert "bell\\x07 caf\ufffd" in response.text
    assert "\x07" not in response.text
    assert "\x1b" not in response.text
    assert "answered by café at" in response.text


async def test_the_editor_shows_an_input_exactly(store: MemoryCheckpointer, ada: Person) -> None:
    script = [tool_reply(tool_call("pay", {"amount": 1, "to": "Zoë \x1b[31m"}, id="toolu_pay"))]
    async for _ in runner(store, "odd", script):
        pass
    editor = re.search(
        r'<textarea id="input-toolu_pay"[^>]*>\n(.*?)</textarea>',
        (await ada.get("/run", id="odd")).text,
        re.S,
    )
    assert editor is not None
    text = editor[1].replace("&#34;", '"')
    assert text == '{\n  "amount": 1,\n  "to": "Zoë \\u001b[31m"\n}'
    response = await ada.post("/run/approve", {"run": "odd", "call": "toolu_pay", "input": text}, csrf=True)
    assert response.status_code == 303
    loaded = await store.load("odd")
    assert loaded is not None
    assert loaded.state.calls["toolu_pay"].approved_input is None  # the same input: approved as it is
    # A lone surrogate, which a page cannot carry, is written as its escape.
    assert json.loads(editor_text({"to": "caf\udce9"})) == {"to": "caf\udce9"}


async def test_no_page_shows_a_runs_secrets_or_request_params(store: MemoryCheckpointer, ada: Person) -> None:
    call_id = await secret_run(store)
    await save_changed(  # even a secret that reached the params by hand is not shown
        store,
        "secretive",
        lambda state: state.replace(params={**state.params, "metadata": {"user_id": "params-secret-3"}}),
    )
    pages = [
        (await ada.get(path, **params)).text
        for path, params in (("/", {}), ("/run", {"id": "secretive"}), ("/runs", {"status": "awaiting"}))
    ]
    assert (await ada.decide("approve", "secretive", call_id)).status_code == 303
    pages.append((await ada.get("/run", id="secretive")).text)
    assert "charge" in pages[1]
    for page in pages:
        for secret in (*SECRETS, "params-secret-3", "You charge cards.", "api_key"):
            assert secret not in page


# -- how it is served -------------------------------------------------------------------------------------


def test_import_toolrunner_imports_neither_the_inbox_nor_starlette() -> None:
    code = (
        "import sys, toolrunner, toolrunner.testing\n"
        "loaded = [m for m in ('toolrunner.inbox', 'starlette', 'jinja2', 'uvicorn', 'multipart', 'python_multipart') "
        "if m in sys.modules]\n"
        "assert not loaded, loaded\n"
    )
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", code], capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def test_the_app_for_uvicorn_workers_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TOOLRUNNER_INBOX_TOKEN", raising=False)
    monkeypatch.setenv("TOOLRUNNER_STORE", f"sqlite:///{tmp_path / 'runs.db'}")
    with pytest.raises(ValueError, match=r"\$TOOLRUNNER_INBOX_TOKEN"):
        app_from_environment()
    monkeypatch.setenv("TOOLRUNNER_INBOX_TOKEN", TOKEN)
    monkeypatch.setenv("TOOLRUNNER_INBOX_ORIGINS", "https://inbox.example.com, https://other.example.com")
    assert isinstance(app_from_environment(), Starlette)


# -- hostile requests ---------------------------------------------------------------------------------


async def test_a_cursor_or_status_that_is_not_one_is_a_400_that_says_so(ada: Person) -> None:
    for path, params in (
        ("/", {"cursor": "garbage"}),
        ("/fragments/waiting", {"cursor": "garbage"}),
        ("/runs", {"status": "bogus"}),
        ("/runs", {"cursor": "x"}),
    ):
        response = await ada.get(path, **params)
        assert response.status_code == 400, (path, params)
        assert "is not a" in response.text


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"amount": NaN}', "NaN is not a JSON number"),
        ('{"amount": Infinity}', "Infinity is not a JSON number"),
        ('{"amount": 1e400}', "1e400 is too large"),
    ],
)
async def test_an_edit_json_cannot_carry_is_shown_back_and_nothing_is_decided(
    store: MemoryCheckpointer, ada: Person, text: str, problem: str
) -> None:
    await paused_run(store, "order-42", 120)
    response = await ada.decide("approve", "order-42", "order-42_pay0", input=text)
    assert response.status_code == 400
    assert problem in response.text
    response = await ada.decide("answer", "order-42", "order-42_pay0", result=text, json="1")
    assert response.status_code == 400
    assert problem in response.text
    assert await waiting_ids(store, "order-42") == ["order-42_pay0"]


async def test_a_body_too_large_is_refused_before_it_is_read(
    app: Starlette, store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    huge = "x" * (BODY_LIMIT + 1)
    async with Person(app) as stranger:  # not logged in: the login form is read before anyone is known
        response = await stranger.post("/login", {"token": huge, "name": "eve", "next": "/"})
        assert response.status_code == 413
        assert "set-cookie" not in response.headers
        assert "content-security-policy" in response.headers
    response = await ada.decide("answer", "order-42", "order-42_pay0", result=huge)
    assert response.status_code == 413
    assert await waiting_ids(store, "order-42") == ["order-42_pay0"]
    # Within the limit, a field larger than Starlette's own limit of a form's part (1 MiB) is read.
    edit = json.dumps({"amount": 5, "to": "x" * (BODY_LIMIT // 2)})
    assert (await ada.decide("approve", "order-42", "order-42_pay0", input=edit)).status_code == 303


async def test_deciding_on_a_run_deleted_or_finished_since_the_page_was_read(
    store: MemoryCheckpointer, ada: Person
) -> None:
    await paused_run(store, "order-42", 120)
    await ada.get("/run", id="order-42")
    assert await store.delete_run("order-42")
    response = await ada.post("/run/approve", {"run": "order-42", "call": "order-42_pay0"}, csrf=True)
    assert response.status_code == 404
    assert "no run named &#39;order-42&#39;" in response.text
    await finished_run(store, "done-1")
    response = await ada.post("/run/deny", {"run": "done-1", "call": "done-1_look"}, csrf=True)
    assert response.status_code == 409
    assert "Nothing was decided" in response.text


async def test_a_body_of_no_stated_length_is_refused_once_it_grows_too_large(app: Starlette) -> None:
    chunk = b"x" * (1024 * 1024)
    pending: list[Message] = [{"type": "http.request", "body": chunk, "more_body": True}] * (
        BODY_LIMIT // len(chunk) + 2
    )
    read: list[int] = []

    async def receive() -> Message:
        read.append(1)
        return pending.pop()

    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/login",
        "raw_path": b"/login",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"host", b"127.0.0.1:8765"), (b"transfer-encoding", b"chunked")],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8765),
    }
    await app(scope, receive, send)
    assert sent[0]["status"] == 413
    assert len(read) == BODY_LIMIT // len(chunk) + 1  # it stopped reading at the limit

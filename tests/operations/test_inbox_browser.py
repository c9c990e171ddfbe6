"""The inbox in a real browser: ``python -m toolrunner inbox`` serving an SQLite store, driven in
Debian's Chromium through Playwright (tests/support/inbox_browser.py).

A person logs in, edits a waiting call's input and approves it, and the resumed run executes the
edited input; denies and answers; a second person deciding the same call is told who decided it
first; text a model or a tool wrote with ``<script>``, ``<img onerror>`` and ``javascript:`` links
shows as text and never runs, also when the live list puts it in place; a form another site's page
posts is refused; the waiting list updates itself when a run starts or stops waiting.

The runs are made and resumed in this process, on the same SQLite file, as another process of the
application would. Waits for the browser are bounded (Playwright's ``expect``), never measured.
"""

from __future__ import annotations

import http.server
import re
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import closing
from pathlib import Path
from typing import Any

import httpx2
import pytest
from playwright.sync_api import Browser, BrowserContext, Page, ViewportSize, expect, sync_playwright

from tests.support.inbox_browser import in_thread, launch_chromium, log_in, served_inbox
from tests.support.inbox_helpers import HOSTILE_ID, PAYLOAD, TOKEN, hostile_run
from tests.support.stores import finished_run, look, paid, paused_run, pay
from toolrunner import SQLiteCheckpointer, ToolRunner
from toolrunner.inbox._app import run_url
from toolrunner.testing import FakeMessagesAPI, text_reply

WAIT = 15_000  # ms: the most a step may take before the test fails (a bound, not a measurement)


@pytest.fixture(scope="module")
def database(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("inbox") / "runs.db"


@pytest.fixture(scope="module")
def inbox(database: Path) -> Iterator[str]:
    async def first() -> None:  # the inbox serves a store that exists: one finished run in it
        with closing(SQLiteCheckpointer(database)) as store:
            await finished_run(store, "finished-1")

    in_thread(first)
    with served_inbox(f"sqlite:///{database}", token=TOKEN, log=database.with_suffix(".log")) as url:
        yield url


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def context(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context()
    context.set_default_timeout(WAIT)
    yield context
    context.close()


@pytest.fixture
def page(context: BrowserContext, inbox: str) -> Page:
    page = context.new_page()
    log_in(page, inbox, name="ada", token=TOKEN)
    return page


@pytest.fixture(autouse=True)
def _no_payments() -> None:
    paid.clear()


def make_paused_run(database: Path, run_id: str, *amounts: int) -> list[str]:
    async def make() -> list[str]:
        with closing(SQLiteCheckpointer(database)) as store:
            return await paused_run(store, run_id, *amounts)

    return in_thread(make)


def resume(database: Path, run_id: str) -> tuple[ToolRunner, FakeMessagesAPI]:
    """Resume the run in this process, as the application's worker would; the runner and what the
    model was sent."""
    fake = FakeMessagesAPI([text_reply("Done.")])

    async def go() -> ToolRunner:
        with closing(SQLiteCheckpointer(database)) as store:
            runner = await ToolRunner.resume(
                fake.async_client(), checkpointer=store, run_id=run_id, tools=[pay, look]
            )
            await runner.until_done()
            return runner

    return in_thread(go), fake


def waiting(database: Path, run_id: str) -> list[str]:
    async def ids() -> list[str]:
        with closing(SQLiteCheckpointer(database)) as store:
            summary = await store.get_run(run_id)
            return [] if summary is None else [call.id for call in summary.waiting]

    return in_thread(ids)


def tool_results(fake: FakeMessagesAPI) -> dict[str, Any]:
    """The tool_result blocks of the last request, by the id of the call each answers."""
    content = fake.requests[-1].messages[-1]["content"]
    return {block["tool_use_id"]: block for block in content if block.get("type") == "tool_result"}


def test_a_missing_browser_is_an_error_that_says_how_to_install_it(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.support import inbox_browser

    monkeypatch.setattr(inbox_browser, "CHROMIUM", Path("/nonexistent/chromium"))
    with sync_playwright() as playwright, pytest.raises(RuntimeError, match=r"apt-get install -y chromium"):
        inbox_browser.launch_chromium(playwright)


def test_ci_installs_the_browser_when_it_is_missing() -> None:
    script = (Path(__file__).resolve().parents[2] / ".ci" / "run").read_text()
    assert "if [ ! -x /usr/bin/chromium ]; then" in script
    assert "apt-get install -y -qq chromium" in script


def test_the_script_of_the_docs_picture_makes_it(tmp_path: Path) -> None:
    picture = tmp_path / "inbox.png"
    root = Path(__file__).resolve().parents[2]
    done = subprocess.run(
        [sys.executable, str(root / "scripts" / "inbox_screenshot.py"), str(picture)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (root / "docs" / "inbox.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the committed one


def test_the_inbox_makes_a_token_prints_it_once_and_listens_on_loopback(database: Path, inbox: str) -> None:
    log = database.with_name("made-token.log")
    with served_inbox(f"sqlite:///{database}", token=None, log=log) as url:
        output = log.read_text()
        made = re.search(r"Log in with the token (\S+)", output)
        assert made is not None, output
        assert output.count(made[1]) == 1
        assert url.startswith("http://127.0.0.1:")
        with httpx2.Client(base_url=url) as client:
            assert client.get("/").status_code == 303  # to the login page: no token, no data
            refused = client.post("/login", data={"token": TOKEN, "name": "ada"}, headers={"origin": url})
            assert refused.status_code == 401
            given = client.post("/login", data={"token": made[1], "name": "ada"}, headers={"origin": url})
            assert given.status_code == 303
            assert client.get("/").status_code == 200


def test_logging_in_takes_the_token_and_goes_back_to_the_page_asked_for(
    context: BrowserContext, inbox: str, database: Path
) -> None:
    make_paused_run(database, "login-1", 10)
    page = context.new_page()
    page.goto(inbox + run_url("login-1"))
    expect(page.locator("h1")).to_have_text("Log in")
    page.fill("#token", "not-the-token-at-all")
    page.fill("#name", "mallory")
    page.click("form[action$='/login'] button[type=submit]")
    expect(page.locator(".alert")).to_contain_text("not the inbox's token")
    page.fill("#token", TOKEN)
    page.fill("#name", "ada")
    page.click("form[action$='/login'] button[type=submit]")
    expect(page.locator("h1")).to_contain_text("login-1")
    expect(page.locator("header .who span")).to_have_text("ada")


def test_an_edited_input_is_checked_approved_and_run_as_edited(
    page: Page, inbox: str, database: Path
) -> None:
    [call] = make_paused_run(database, "edit-1", 120)
    page.goto(inbox + run_url("edit-1"))
    article = page.locator(f"article.call[data-call='{call}']")
    expect(article.locator("h3")).to_contain_text("pay")
    expect(article.locator(".description")).to_contain_text("Pay an amount.")
    editor = article.locator("textarea[name=input]")
    expect(editor).to_have_value('{\n  "amount": 120\n}')

    editor.fill('{"amount": "lots"}')  # the schema wants an integer
    article.locator("button.approve").click()
    problems = page.locator(f"article.call[data-call='{call}'] form.approve ul.problems")
    expect(problems).to_contain_text("amount")
    expect(page.locator(f"article.call[data-call='{call}'] textarea[name=input]")).to_have_value(
        '{"amount": "lots"}'
    )
    assert waiting(database, "edit-1") == [call]

    page.locator(f"article.call[data-call='{call}'] textarea[name=input]").fill('{"amount": 7, "to": "Bob"}')
    page.locator(f"article.call[data-call='{call}'] button.approve").click()
    record = page.locator(f"article.record[data-call='{call}']")
    expect(record.locator(".decision")).to_contain_text("approved by ada")
    expect(record).to_contain_text('"to": "Bob"')
    assert waiting(database, "edit-1") == []

    _, fake = resume(database, "edit-1")
    assert paid == [7]
    assert tool_results(fake)[call]["content"] == "paid 7 to Bob"


def test_deny_with_a_reason_and_answer_with_a_result(page: Page, inbox: str, database: Path) -> None:
    denied, answered = make_paused_run(database, "deny-1", 500, 60)
    page.goto(inbox + run_url("deny-1"))
    article = page.locator(f"article.call[data-call='{denied}']")
    article.locator("textarea[name=reason]").fill("Over the limit.")
    article.locator("button.deny").click()
    expect(page.locator(f"article.record[data-call='{denied}'] .decision")).to_contain_text("denied by ada")

    article = page.locator(f"article.call[data-call='{answered}']")
    article.locator("textarea[name=result]").fill("Paid by hand on Monday.")
    article.locator("button.answer").click()
    expect(page.locator(f"article.record[data-call='{answered}'] .decision")).to_contain_text(
        "answered by ada"
    )
    expect(page.locator("section.waiting")).to_have_count(0)

    _, fake = resume(database, "deny-1")
    assert paid == []
    results = tool_results(fake)
    assert results[denied]["content"] == "Over the limit."
    assert results[denied]["is_error"] is True
    assert results[answered]["content"] == "Paid by hand on Monday."


def test_of_two_people_deciding_one_call_the_second_is_told_who_decided_first(
    browser: Browser, inbox: str, database: Path
) -> None:
    [call] = make_paused_run(database, "race-1", 30)
    pages: list[Page] = []
    for name in ("ada", "bob"):
        context = browser.new_context()
        context.set_default_timeout(WAIT)
        page = context.new_page()
        log_in(page, inbox, name=name, token=TOKEN, path=run_url("race-1"))
        expect(page.locator(f"article.call[data-call='{call}']")).to_have_count(1)
        pages.append(page)
    ada, bob = pages
    ada.locator(f"article.call[data-call='{call}'] button.approve").click()
    expect(ada.locator(f"article.record[data-call='{call}'] .decision")).to_contain_text("approved by ada")
    bob.locator(f"article.call[data-call='{call}'] textarea[name=reason]").fill("No.")
    bob.locator(
        f"article.call[data-call='{call}'] button.deny"
    ).click()  # his page is older than ada's decision
    expect(bob.locator("p.alert").first).to_contain_text("Nothing was decided")
    expect(bob.locator("p.alert").first).to_contain_text("ada")
    expect(bob.locator(f"article.record[data-call='{call}'] .decision")).to_contain_text("approved by ada")
    for page in pages:
        page.context.close()
    resume(database, "race-1")
    assert paid == [30]


HAS_ROW = "id => Array.from(document.querySelectorAll('tr[data-run]')).some(row => row.dataset.run === id)"
"""Whether the page lists the run ``id`` (any text: no CSS selector can quote the hostile id)."""


def no_script_ran(page: Page) -> None:
    """Nothing of ``PAYLOAD`` became an element or ran; the inbox's own script is the only one."""
    assert page.evaluate("typeof window.__xss") == "undefined"
    assert page.locator("img").count() == 0
    assert page.locator("a#evil, a[href^='javascript:']").count() == 0
    scripts = page.evaluate("Array.from(document.scripts).map(s => s.getAttribute('src'))")
    assert scripts == ["/static/inbox.js"]


def test_what_a_model_or_a_tool_wrote_shows_as_text_and_never_runs(
    page: Page, inbox: str, database: Path
) -> None:
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(inbox + "/")  # open before the run exists: the live list puts the hostile row in place

    async def make() -> str:
        with closing(SQLiteCheckpointer(database)) as store:
            return await hostile_run(store)

    call = in_thread(make)
    page.wait_for_function(HAS_ROW, arg=HOSTILE_ID)
    expect(page.locator("#waiting")).to_contain_text("<script>window.__xss")  # shown, as text
    no_script_ran(page)

    page.goto(inbox + run_url(HOSTILE_ID))
    expect(page.locator("h1 .run-id")).to_have_text(HOSTILE_ID)
    expect(page.locator("section.conversation")).to_contain_text(PAYLOAD)  # shown, as text
    expect(page.locator(f"article.call[data-call='{call}'] textarea[name=input]")).to_contain_text("<script>")
    page.get_by_text("click me").first.click()  # text, not a link: clicking it runs nothing
    no_script_ran(page)

    page.goto(inbox + "/runs?status=awaiting")
    page.wait_for_function(HAS_ROW, arg=HOSTILE_ID)
    no_script_ran(page)
    assert errors == []


ATTACK = """<!doctype html>
<form id="f" method="post" action="{action}">
<input type="hidden" name="run" value="{run}"><input type="hidden" name="call" value="{call}">
<input type="hidden" name="csrf" value="guessed">
</form>
<script>document.getElementById("f").submit()</script>
"""


@pytest.fixture
def attacker(inbox: str) -> Iterator[tuple[str, dict[str, str]]]:
    """A page of another origin (another port of 127.0.0.1: the same site, so even a SameSite
    cookie goes along) whose form posts itself to the inbox; its URL, and the page to serve."""
    served: dict[str, str] = {}

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = served["page"].encode()
            self.send_response(200)
            self.send_header("content-type", "text/html; charset=utf-8")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/", served
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def test_a_form_another_sites_page_posts_is_refused(
    page: Page, inbox: str, database: Path, attacker: tuple[str, dict[str, str]]
) -> None:
    [call] = make_paused_run(database, "csrf-1", 900)
    url, served = attacker
    served["page"] = ATTACK.format(action=f"{inbox}/run/approve", run="csrf-1", call=call)
    with page.expect_navigation(url=f"{inbox}/run/approve"):
        page.goto(url)
    expect(page.locator("h1")).to_have_text("Refused")
    expect(page.locator(".alert")).to_contain_text("nothing was done")
    assert waiting(database, "csrf-1") == [call]


def test_the_waiting_list_updates_itself_when_a_run_starts_or_stops_waiting(
    page: Page, inbox: str, database: Path
) -> None:
    page.goto(inbox + "/")
    # Connected: the first event came, and the list was fetched once.
    expect(page.locator("#waiting")).to_have_attribute("data-version", re.compile(r"^[0-9a-f]{16}$"))
    row = page.locator("tr[data-run='live-1']")
    expect(row).to_have_count(0)
    [call] = make_paused_run(database, "live-1", 15)
    expect(row).to_have_count(1)  # no reload: the page was told, and fetched the list again
    expect(row).to_contain_text("pay")
    assert page.locator("#waiting tbody tr").first.get_attribute("data-run") == "live-1"  # newest first

    async def deny() -> None:
        with closing(SQLiteCheckpointer(database)) as store:
            await store.deny_call("live-1", call, "Not now.", by="bob")

    in_thread(deny)
    expect(row).to_have_count(0)


# -- on a phone ---------------------------------------------------------------------------------------

PHONE: ViewportSize = {"width": 390, "height": 844}
"""A phone's screen, in CSS pixels (an iPhone 14's)."""
LONG_NAME = "Augusta Ada King, Countess of Lovelace, of the Analytical Engine Society, London"
"""A name as long as the login takes (80 characters): the header must still show "Log out"."""


@pytest.fixture
def phone(browser: Browser) -> Iterator[BrowserContext]:
    context = browser.new_context(viewport=PHONE, is_mobile=True, has_touch=True)
    context.set_default_timeout(WAIT)
    yield context
    context.close()


@pytest.fixture
def failed_requests(phone: BrowserContext) -> list[str]:
    """The requests of the phone's pages that failed or were answered with an error (a 404 too)."""
    failed: list[str] = []
    phone.on("requestfailed", lambda request: failed.append(f"failed {request.url}"))
    phone.on(
        "response",
        lambda response: (
            failed.append(f"{response.status} {response.url}") if response.status >= 400 else None
        ),
    )
    return failed


def fits_the_screen(page: Page) -> None:
    """Nothing on the page is wider than the screen: no sideways scrolling. A phone zooms a page
    wider than its screen out to fit (``innerWidth`` grows with it), so the width is checked too."""
    scroll_width, inner_width = page.evaluate("[document.documentElement.scrollWidth, window.innerWidth]")
    assert (scroll_width, inner_width) == (PHONE["width"], PHONE["width"])


def in_view_and_clickable(page: Page, selector: str) -> None:
    """The element is whole inside the screen, and it is what a tap at its middle reaches."""
    box = page.locator(selector).bounding_box()
    assert box is not None, selector
    left, top, right, bottom = box["x"], box["y"], box["x"] + box["width"], box["y"] + box["height"]
    assert (min(left, top) >= 0, right <= PHONE["width"], bottom <= PHONE["height"]) == (True, True, True), (
        box
    )
    middle = [box["x"] + box["width"] / 2, box["y"] + box["height"] / 2]
    reached = "([x, y, selector]) => document.elementFromPoint(x, y) === document.querySelector(selector)"
    assert page.evaluate(reached, [*middle, selector]), selector


def time_lines(page: Page) -> list[int]:
    """How many lines each time the page shows takes, with what follows it in its cell or sentence."""
    return page.evaluate(
        """() => Array.from(document.querySelectorAll('main time')).map(time => {
            const range = document.createRange();
            range.setStartBefore(time);
            const ago = time.nextElementSibling;
            range.setEndAfter(ago && ago.classList.contains('ago') ? ago : time);
            return new Set(Array.from(range.getClientRects()).map(rect => Math.round(rect.bottom))).size;
        })"""
    )


def on_a_phone(page: Page, failed: list[str]) -> None:
    """What every page of the inbox keeps on a phone: it fits the screen, "Log out" is in reach,
    each time takes one or two lines, and nothing it asks for is missing (its icon included)."""
    fits_the_screen(page)
    in_view_and_clickable(page, "header .who button")
    lines = time_lines(page)
    assert lines, "the page shows no time"
    assert max(lines) <= 2, lines
    page.wait_for_load_state("networkidle")
    assert failed == []


def test_on_a_phone_the_login_page_fits_the_screen(
    phone: BrowserContext, inbox: str, failed_requests: list[str]
) -> None:
    page = phone.new_page()
    page.goto(inbox + "/")
    expect(page.locator("h1")).to_have_text("Log in")
    fits_the_screen(page)
    in_view_and_clickable(page, "form[action$='/login'] button[type=submit]")
    page.wait_for_load_state("networkidle")
    assert failed_requests == []


def test_on_a_phone_the_waiting_list_fits_the_screen(
    phone: BrowserContext, inbox: str, database: Path, failed_requests: list[str]
) -> None:
    make_paused_run(database, "phone-waiting-" + "x" * 60, 10, 20)
    page = phone.new_page()
    log_in(page, inbox, name=LONG_NAME, token=TOKEN)
    expect(page.locator("#waiting tbody tr").first).to_be_visible()
    on_a_phone(page, failed_requests)


def test_on_a_phone_the_finished_runs_fit_the_screen(
    phone: BrowserContext, inbox: str, failed_requests: list[str]
) -> None:
    page = phone.new_page()
    log_in(page, inbox, name=LONG_NAME, token=TOKEN, path="/runs")
    expect(page.locator("tr[data-run='finished-1']")).to_be_visible()
    on_a_phone(page, failed_requests)


def test_on_a_phone_a_run_with_a_waiting_call_fits_the_screen_and_log_out_works(
    phone: BrowserContext, inbox: str, database: Path, failed_requests: list[str]
) -> None:
    run_id = "phone-run-" + "y" * 60
    first, _ = make_paused_run(database, run_id, 10, 20)

    async def deny() -> None:  # a decided call, to show when it was decided
        with closing(SQLiteCheckpointer(database)) as store:
            await store.deny_call(run_id, first, "Not now.", by=LONG_NAME)

    in_thread(deny)
    page = phone.new_page()
    log_in(page, inbox, name=LONG_NAME, token=TOKEN, path=run_url(run_id))
    expect(page.locator("article.call")).to_have_count(1)
    expect(page.locator(".journal article.record .decision time")).to_have_count(1)
    expect(page.locator(".audit article.record .decision time")).to_have_count(1)  # the same, in the audit
    on_a_phone(page, failed_requests)
    page.locator("header .who button").tap()
    expect(page.locator("h1")).to_have_text("Log in")


def test_on_a_phone_a_message_naming_a_long_id_fits_the_screen(phone: BrowserContext, inbox: str) -> None:
    page = phone.new_page()
    log_in(page, inbox, name="ada", token=TOKEN, path=run_url("n" * 120))  # one word, no place to break
    expect(page.locator("h1")).to_have_text("No such run")
    fits_the_screen(page)
    in_view_and_clickable(page, "header .who button")

"""The example pages in a real browser: ``agui_app``'s and ``ui_message_stream_app``'s ``GET /``
driven in Debian's Chromium through Playwright (tests/support/inbox_browser.py launches it), the
apps on uvicorn over each agent (``backend``: an ``Agent`` on a store, a ``TemporalAgent`` on
Temporal's time-skipping test server, its worker in this process), the fake Messages API behind
the agent streaming with small delays.

For each page: the answer streams in, a tool call shows with its input and result, the call that
waits shows an approval prompt whose Approve button decides it through the protocol (by whom the
page was told), and the run ends with the final text; a reload while the call waits reconnects
to the conversation in the URL and shows it waiting, and deciding after the reload works. What
the model or a tool wrote shows as text, never as markup. Waits are bounded (``expect``), never
measured.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

from tests.support.inbox_browser import launch_chromium
from tests.support.web_server import replies
from tests.web.backends import AppOf, Backend
from toolrunner.testing import FakeMessagesAPI
from toolrunner.web import agui_app, ui_message_stream_app

WAIT = 15_000  # ms: the most a step may take before the test fails (a bound, not a measurement)
HOSTILE = '<img src=x onerror="window.pwned=1">'
APPS: dict[str, AppOf] = {"agui": agui_app, "chat": ui_message_stream_app}
PARAMETER = {"agui": "thread", "chat": "chat"}


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    with sync_playwright() as playwright:
        chromium = launch_chromium(playwright)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context()
    context.set_default_timeout(WAIT)
    yield context.new_page()
    context.close()


def ask(page: Page, url: str, *, who: str) -> None:
    page.goto(url + "/")
    expect(page.locator("#status")).to_have_text("ready")
    page.fill("#who", who)
    page.fill("#prompt", "Pay Ada 3.")
    page.click("#ask button[type=submit]")


def shows_the_call_waiting(page: Page, name: str) -> None:
    expect(page.locator(".message.user p")).to_have_text("Pay Ada 3.")
    expect(page.locator(".message.assistant p").first).to_have_text("Let me look.")
    look = page.locator("li.call[data-call='look-1']")
    expect(look.locator(".name")).to_have_text("look")
    expect(look.locator(".input")).to_contain_text(name.replace('"', '\\"'))
    expect(look.locator(".result")).to_have_text(f"{name}: account 7")
    pay = page.locator("li.call[data-call='pay-1']")
    expect(pay).to_have_attribute("data-state", "waiting")
    expect(pay.locator(".input")).to_have_text('{"amount":3}')
    expect(page.locator("#status")).to_have_text("waiting for approval")


def approve_and_see_the_end(page: Page) -> None:
    page.locator("li.call[data-call='pay-1'] button.approve").click()
    pay = page.locator("li.call[data-call='pay-1']")
    expect(pay.locator(".result")).to_have_text("paid 3")
    expect(pay).to_have_attribute("data-state", "done")
    expect(page.locator(".message.assistant p").last).to_have_text("Ada is paid.")
    expect(page.locator("#status")).to_have_text("done")


def decided_by(backend: Backend, run_id: str) -> list[tuple[str, str | None]]:
    return [(record.call.id, record.by) for record in backend.state(run_id).decisions]


def conversation_id(page: Page, protocol: str) -> str:
    found = page.evaluate(f"new URL(location.href).searchParams.get({PARAMETER[protocol]!r})")
    assert isinstance(found, str)
    assert found
    return found


@pytest.mark.parametrize("protocol", ["agui", "chat"])
def test_the_page_streams_the_answer_asks_for_approval_and_ends(
    page: Page, protocol: str, backend: Backend
) -> None:
    with backend.served(APPS[protocol], FakeMessagesAPI(replies(delay=0.02))) as url:
        ask(page, url, who="ada")
        shows_the_call_waiting(page, "Ada")
        expect(page.locator("li.call[data-call='pay-1'] button.deny")).to_be_visible()
        approve_and_see_the_end(page)
        assert decided_by(backend, conversation_id(page, protocol)) == [("pay-1", "ada")]


@pytest.mark.parametrize("protocol", ["agui", "chat"])
def test_a_reload_while_a_call_waits_reconnects_and_deciding_works(
    page: Page, protocol: str, backend: Backend
) -> None:
    with backend.served(APPS[protocol], FakeMessagesAPI(replies(delay=0.02, name=HOSTILE))) as url:
        ask(page, url, who="ada")
        expect(page.locator("li.call[data-call='pay-1']")).to_have_attribute("data-state", "waiting")
        page.reload()
        assert f"?{PARAMETER[protocol]}=" in page.url
        shows_the_call_waiting(page, HOSTILE)
        assert page.locator("#conversation img").count() == 0
        page.fill("#who", "bob")
        approve_and_see_the_end(page)
        assert page.evaluate("window.pwned") is None
        assert decided_by(backend, conversation_id(page, protocol)) == [("pay-1", "bob")]

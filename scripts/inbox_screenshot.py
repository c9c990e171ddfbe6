"""Make docs/inbox.png, the picture of docs/inbox.md: a run of a support agent that waits for a
person to approve a refund, as the inbox shows it in Chromium.

    python scripts/inbox_screenshot.py [PATH]

It saves runs (played against the fake Messages API, offline) in a new SQLite file, serves the
inbox over it with ``python -m toolrunner inbox``, logs in and takes the picture, as the browser
tests do (tests/support/inbox_browser.py; Debian's Chromium, ``apt-get install -y chromium``).
tests/operations/test_inbox_browser.py runs it too, into a temporary file.
"""

from __future__ import annotations

import contextlib
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PICTURE = ROOT / "docs" / "inbox.png"
TOKEN = "screenshot-token-0123456789"


async def save_runs(database: Path) -> None:
    """Three runs that wait, the last of them the support agent's refund."""
    from toolrunner import AwaitingApprovalError, SQLiteCheckpointer, ToolRunner, tool
    from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

    @tool
    async def lookup_order(order_id: str) -> dict[str, object]:
        """Look an order up by its id."""
        return {"order_id": order_id, "total": 129.90, "currency": "EUR", "status": "delivered"}

    @tool(requires_approval=True)
    async def refund(order_id: str, amount: float, reason: str) -> str:
        """Refund a customer's order, in part or in full.

        Args:
            order_id: The order to refund.
            amount: How much to give back, in the order's currency.
            reason: What the customer is told.
        """
        return f"refunded {amount} on {order_id}"

    @tool(requires_approval=True)
    async def send_email(to: str, subject: str, body: str) -> str:
        """Send an email to a customer."""
        return "sent"

    runs = {
        "ticket-4398": (
            "Tell customer 4398 their parcel ships tomorrow.",
            [
                tool_reply(
                    tool_call(
                        "send_email",
                        {
                            "to": "kim@example.com",
                            "subject": "Your parcel",
                            "body": "Hello Kim, your parcel ships tomorrow.",
                        },
                        id="toolu_mail_4398",
                    )
                )
            ],
        ),
        "ticket-4411": (
            "Customer 4411 says order A-1009 arrived broken. Sort it out.",
            [
                tool_reply(
                    tool_call("lookup_order", {"order_id": "A-1009"}, id="toolu_lookup_4411"),
                    text="I'll look the order up first.",
                ),
                tool_reply(
                    tool_call(
                        "refund",
                        {"order_id": "A-1009", "amount": 129.9, "reason": "The item arrived broken."},
                        id="toolu_refund_4411",
                    ),
                    text="The order was delivered for 129.90 EUR. I'll refund it in full.",
                ),
            ],
        ),
    }
    store = SQLiteCheckpointer(database)
    try:
        for run_id, (ask, script) in runs.items():
            runner = ToolRunner(
                FakeMessagesAPI([*script, text_reply("Done.")]).async_client(),
                model="claude-sonnet-4-6",
                max_tokens=1024,
                messages=[{"role": "user", "content": ask}],
                tools=[lookup_order, refund, send_email],
                checkpointer=store,
                run_id=run_id,
            )
            with contextlib.suppress(AwaitingApprovalError):
                await runner.until_done()
    finally:
        store.close()


def make_picture(path: Path) -> None:
    """Save the runs, serve the inbox, and take the picture of the refund's page into ``path``."""
    import anyio
    from playwright.sync_api import sync_playwright

    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support.inbox_browser import launch_chromium, log_in, served_inbox

    with tempfile.TemporaryDirectory() as directory:
        database = Path(directory) / "runs.db"
        anyio.run(save_runs, database)
        with (
            served_inbox(f"sqlite:///{database}", token=TOKEN, log=Path(directory) / "inbox.log") as url,
            sync_playwright() as playwright,
        ):
            browser = launch_chromium(playwright)
            page = browser.new_page(viewport={"width": 1100, "height": 1200}, device_scale_factor=1)
            log_in(page, url, name="Ada", token=TOKEN, path="/run?id=ticket-4411")
            page.screenshot(path=str(path), full_page=True)
            browser.close()


def main() -> None:
    path = Path(sys.argv[1]) if len(sys.argv) > 1 else PICTURE
    make_picture(path)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()

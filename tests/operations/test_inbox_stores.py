"""The inbox on every store: MemoryCheckpointer, SQLiteCheckpointer and PostgresCheckpointer (on a
real server the tests start)."""

from __future__ import annotations

import pytest

from tests.support.inbox_helpers import TOKEN, Person
from tests.support.stores import look, paid, paused_run, pay
from toolrunner import RunStore, ToolRunner
from toolrunner.inbox import create_app
from toolrunner.testing import FakeMessagesAPI, text_reply

pytestmark = pytest.mark.anyio


async def test_a_call_decided_in_the_inbox_runs_as_decided_when_the_run_is_resumed(store: RunStore) -> None:
    paid.clear()
    await paused_run(store, "order-42", 120, 80)
    async with Person(create_app(store, token=TOKEN)) as ada:
        await ada.log_in("ada")
        assert '<tr data-run="order-42">' in (await ada.get("/")).text
        assert (
            await ada.decide("approve", "order-42", "order-42_pay0", input='{"amount": 7}')
        ).status_code == 303
        assert (await ada.decide("deny", "order-42", "order-42_pay1", reason="No.")).status_code == 303
        assert '<tr data-run="order-42">' not in (await ada.get("/")).text
    runner = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid.")]).async_client(),
        checkpointer=store,
        run_id="order-42",
        tools=[pay, look],
    )
    await runner.until_done()
    assert paid == [7]

"""The inbox and a call waiting inside a sub-agent's run (issue 30): the run's page shows the call
with its path and the sub-agent's conversation, and approving it there decides it in the tree, as
who logged in; the resumed run pays once. The run is listed and shown with what its whole tree
spent."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from tests.support.inbox_helpers import TOKEN, Person
from toolrunner import (
    MemoryCheckpointer,
    Price,
    RunStatus,
    RunStore,
    SubAgent,
    ToolRunner,
    tool,
)
from toolrunner._core.nested import record_in_tree
from toolrunner.inbox import create_app
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

paid: list[int] = []


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    paid.append(amount)
    return f"paid {amount}"


PAYER = SubAgent(name="payer", description="Pays bills.", model="claude-sub", max_tokens=200, tools=[pay])
PRICES = {
    model: Price(input=1000, output=1000, cache_read=0, cache_write=0)
    for model in ("claude-parent", "claude-sub")
}
"""A token costs a thousandth of a dollar."""


def fake() -> FakeMessagesAPI:
    scripts: dict[str, list[ScriptEntry]] = {
        "claude-parent": [
            tool_reply(tool_call("payer", {"task": "Pay <b>5</b>."}, id="toolu_p1")),
            text_reply("Paid."),
        ],
        "claude-sub": [
            tool_reply(tool_call("pay", {"amount": 5}, id="toolu_c1"), text="I will pay <i>5</i>."),
            text_reply("I paid 5."),
        ],
    }

    def respond(request: RecordedRequest) -> ScriptEntry:
        return scripts[request.body["model"]].pop(0)

    return FakeMessagesAPI(responder=respond)


@pytest.fixture
async def ada() -> AsyncIterator[tuple[Person, MemoryCheckpointer]]:
    store = MemoryCheckpointer()
    async with Person(create_app(store, token=TOKEN)) as person:
        await person.log_in("ada")
        yield person, store


def runner(client: Any, store: RunStore, **options: Any) -> ToolRunner:
    return ToolRunner(
        client,
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Pay the bill."}],
        tools=[PAYER],
        checkpointer=store,
        run_id="bill",
        **options,
    )


async def test_the_inbox_shows_a_nested_call_with_its_path_and_decides_it(
    ada: tuple[Person, MemoryCheckpointer],
) -> None:
    paid.clear()
    person, store = ada
    api = fake()
    paused = runner(api.async_client(), store)
    async for _ in paused:
        pass
    assert paused.end_reason == "awaiting_approval"
    page = await person.get("/run", id="bill")
    assert page.status_code == 200
    assert '<p class="path">In a sub-agent\'s run: toolu_p1 → payer</p>' in person.last
    assert 'id="call-toolu_c1"' in person.last
    conversation = person.last.split('<details class="sub-run">', 1)[1].split("</details>", 1)[0]
    assert "Pay &lt;b&gt;5&lt;/b&gt;." in conversation  # the sub-agent's task, escaped
    assert "I will pay &lt;i&gt;5&lt;/i&gt;." in conversation
    approved = await person.post("/run/approve", {"run": "bill", "call": "toolu_c1"}, csrf=True)
    assert approved.status_code == 303
    summary = await store.get_run("bill")
    assert summary is not None
    assert summary.status is RunStatus.READY
    saved = await store.load("bill")
    assert saved is not None
    record = record_in_tree(saved.state, "toolu_c1")
    assert record is not None
    assert (record.decision, record.decided_by) == ("approved", "ada")  # who logged in
    await person.get("/run", id="bill")  # the audit shows the decision in flight, with its path
    audit = person.last.split('<section class="audit">', 1)[1].split("</section>", 1)[0]
    assert 'data-decision="toolu_c1"' in audit
    assert '<p class="path">In a sub-agent\'s run: toolu_p1 → payer</p>' in audit
    later = await ToolRunner.resume(api.async_client(), checkpointer=store, run_id="bill", tools=[PAYER])
    await later.until_done()
    assert paid == [5]
    assert later.messages[-1]["content"][0]["text"] == "Paid."
    await person.get("/run", id="bill")  # and once the turn ended, from the root's own audit
    audit = person.last.split('<section class="audit">', 1)[1].split("</section>", 1)[0]
    assert '<p class="path">In a sub-agent\'s run: toolu_p1 → payer</p>' in audit
    assert "approved by ada" in audit

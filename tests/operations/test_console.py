"""``EventPrinter``: what a person watching a run reads, one line an event."""

from __future__ import annotations

import io
import re

import pytest

from tests.support.helpers import MODEL, USER
from toolrunner import (
    AwaitingApprovalError,
    EventPrinter,
    MemoryCheckpointer,
    Price,
    ToolError,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


class Ticks:
    """A clock that moves a quarter of a second each time it is read."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        self.now += 0.25
        return self.now


@tool
async def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


@tool
async def fail() -> str:
    """Always fails."""
    raise ToolError("no luck")


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    return f"paid {amount}"


async def test_the_printer_shows_replies_calls_durations_decisions_and_the_usage_at_the_end() -> None:
    out = io.StringIO()
    script = [
        tool_reply(tool_call("look", {"q": "tides"}, id="toolu_look"), text="Looking it up.\nThen more."),
        tool_reply(tool_call("fail", {}, id="toolu_fail")),
        tool_reply(tool_call("pay", {"amount": 120}, id="toolu_pay")),
        text_reply("Paid 120."),
    ]
    runner = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look, fail, pay],
        on_event=EventPrinter(file=out, clock=Ticks()),
    )
    with pytest.raises(AwaitingApprovalError):
        await runner.until_done()  # pauses: pay waits
    runner.approve("toolu_pay")
    await runner.until_done()
    lines = out.getvalue().splitlines()
    # Durations come from the runner's own clock: the lines are checked without them.
    assert [line.split(" in ")[0] if " in 0." in line else line for line in lines] == [
        "    0.0s reply 1 (tool_use): 10 in, 5 out tokens",
        "           Looking it up.…",
        '    0.2s   start    look {"q": "tides"}  [toolu_look]',
        "    0.5s   done     look",
        "    0.8s reply 2 (tool_use): 10 in, 5 out tokens",
        "    1.0s   start    fail {}  [toolu_fail]",
        "    1.2s   error    fail",
        "    1.5s reply 3 (tool_use): 10 in, 5 out tokens",
        '    1.8s   waits    pay {"amount": 120}: needs a decision  [toolu_pay]',
        "    2.0s paused: calls wait for a decision: 3 replies, 30 in and 15 out tokens, $0.0003",
        "    2.2s   approved pay  [toolu_pay]",
        '    2.5s   start    pay {"amount": 120}  [toolu_pay]',
        "    2.8s   done     pay",
        "    3.0s reply 4 (end_turn): 10 in, 5 out tokens",
        "           Paid 120.",
        "    3.2s ended (model): 4 replies, 40 in and 20 out tokens, $0.0004",
    ]
    assert all(
        line.endswith(("s  [toolu_look]", "s  [toolu_fail]", "s  [toolu_pay]"))
        for line in lines
        if " in 0." in line
    )


async def test_an_edited_approval_prints_the_input_that_runs_and_who_decided() -> None:
    out = io.StringIO()
    store = MemoryCheckpointer()
    script = [
        tool_reply(
            tool_call("pay", {"amount": 500}, id="toolu_a"), tool_call("pay", {"amount": 700}, id="toolu_b")
        ),
        text_reply("Paid 50."),
    ]
    runner = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[pay],
        checkpointer=store,
        run_id="r",
        on_event=EventPrinter(file=out, clock=Ticks()),
    )
    with pytest.raises(AwaitingApprovalError):
        await runner.until_done()
    runner.approve("toolu_a", input={"amount": 50}, by="ada")
    await store.deny_call("r", "toolu_b", "Too much.", by="bob")  # through the store: taken over
    await runner.until_done()
    text = re.sub(r"^ *[0-9.]+s ", "", out.getvalue(), flags=re.MULTILINE)
    assert "  approved pay by 'ada', to run as pay {\"amount\": 50}  [toolu_a]\n" in text
    assert "  denied   pay by 'bob' (through the store): Too much.  [toolu_b]\n" in text
    assert '  start    pay {"amount": 50} (edited on approval)  [toolu_a]\n' in text
    assert '{"amount": 500}: needs a decision' in text  # what the model asked, while it waited
    assert 'start    pay {"amount": 500}' not in text


async def test_the_whole_text_on_request_and_standard_error_by_default(
    capsys: pytest.CaptureFixture[str],
) -> None:
    text = "First line.\nSecond line, " + "long " * 40
    runner = ToolRunner(
        FakeMessagesAPI([text_reply(text)]).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        on_event=EventPrinter(text=True),
    )
    await runner.until_done()
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "  First line.\n" in captured.err
    assert "long " * 39 + "long\n" in captured.err
    assert "ended (model): 1 reply, 10 in and 5 out tokens" in captured.err


@pytest.mark.parametrize("printer_of_the_resumed_run", ["new", "the same"])
async def test_after_a_resume_replies_are_numbered_in_the_run_and_the_usage_is_the_runs(
    printer_of_the_resumed_run: str,
) -> None:
    store = MemoryCheckpointer()
    prices = {MODEL: Price(input=100, output=1_000, cache_read=10, cache_write=125)}  # $0.006 a reply
    out = io.StringIO()
    printer = EventPrinter(file=out, clock=Ticks(), prices=prices)
    script = [
        tool_reply(tool_call("look", {"q": "tides"}, id="toolu_look")),
        tool_reply(tool_call("pay", {"amount": 120}, id="toolu_pay")),
    ]
    runner = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look, pay],
        checkpointer=store,
        run_id="tides-1",
        on_event=printer,
    )
    with pytest.raises(AwaitingApprovalError):
        await runner.until_done()  # saved, paused: pay waits
    await store.approve_call("tides-1", "toolu_pay", by="ada")

    # Later, maybe in another process: a new runner goes on with the run.
    if printer_of_the_resumed_run == "new":
        out = io.StringIO()
        printer = EventPrinter(file=out, clock=Ticks(), prices=prices)
    mark = len(out.getvalue())
    resumed = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Paid 120.")]).async_client(),
        checkpointer=store,
        run_id="tides-1",
        tools=[look, pay],
        on_event=printer,
    )
    await resumed.until_done()
    lines = [re.sub(r"^ *(\d+\.\ds)? +", "", line) for line in out.getvalue()[mark:].splitlines()]
    assert [line.split(" in 0.")[0] for line in lines] == [
        "approved pay by 'ada' (through the store)  [toolu_pay]",  # taken over by this runner
        'start    pay {"amount": 120}  [toolu_pay]',
        "done     pay",
        "reply 3 (end_turn): 10 in, 5 out tokens",  # the run's third, not this runner's first
        "Paid 120.",
        "ended (model): 3 replies, 30 in and 15 out tokens, $0.0180",  # the whole run's
    ]
    assert (resumed.usage.total.input_tokens, resumed.usage.total.output_tokens) == (30, 15)


async def test_a_denial_by_the_approve_callback_prints_its_reason() -> None:
    out = io.StringIO()
    runner = ToolRunner(
        FakeMessagesAPI(
            [tool_reply(tool_call("pay", {"amount": 500}, id="toolu_a")), text_reply("Not paid.")]
        ).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[pay],
        approve=lambda call: "Over the limit; ask first.",
        on_event=EventPrinter(file=out, clock=Ticks()),
    )
    await runner.until_done()
    text = re.sub(r"^ *[0-9.]+s ", "", out.getvalue(), flags=re.MULTILINE)
    assert "  denied   pay (by the approve callback): Over the limit; ask first.  [toolu_a]\n" in text

"""Mistakes of the model (input, unknown tools) and failures of tools (results that cannot be sent,
tools that hang, BaseException) become ``is_error`` results that tell the model what to do, and the
loop goes on; a BaseException propagates as itself. (tests/runner/test_execution.py and
tests/tools/test_tools.py cover the first cases; these extend them.)
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import CoroutineType
from typing import Any

import anyio
import pytest
from pydantic import BaseModel

from tests.support.helpers import TEA_USER, build, results
from tests.support.reliability_helpers import plain, quiet_tool_failures
from toolrunner import (
    tool,
)
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

GUARD = 10


# -- what tools return ----------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_result_that_cannot_be_serialised_tells_the_model_and_the_loop_goes_on() -> None:
    @tool
    async def lookup(kind: str) -> object:
        """Return something."""
        return {"object": object(), "nested": {"when": threading.Lock()}}[kind]

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("lookup", {"kind": "object"}, id="a"),
                tool_call("lookup", {"kind": "nested"}, id="b"),
            ),
            text_reply("ok"),
        ]
    )
    runner = build(fake, tools=[lookup])
    with quiet_tool_failures():
        await runner.until_done()
    for tool_use_id, content, is_error in results(runner):
        assert is_error, tool_use_id
        assert "as a tool result; return a str, dict, list" in content
        assert "or subclass ToolResultAdapter to convert it" in content
    fake.assert_complete()


@pytest.mark.anyio
async def test_a_returned_path_that_cannot_be_read_names_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "report.pdf"

    @tool
    async def report() -> Path:
        """Return the report file."""
        return missing

    fake = FakeMessagesAPI([tool_reply(tool_call("report", {}, id="r")), text_reply("ok")])
    runner = build(fake, tools=[report])
    with quiet_tool_failures():
        await runner.until_done()
    [(_, content, is_error)] = results(runner)
    assert is_error
    assert "report.pdf" in content


@pytest.mark.anyio
async def test_a_sync_tool_returning_a_coroutine_is_told_to_be_async_without_a_warning() -> None:
    created: list[CoroutineType[Any, Any, str]] = []

    async def fetch() -> str:
        return "data"

    @tool
    def forgot_await() -> object:
        """Return data (but returns a coroutine by mistake)."""
        created.append(fetch())
        return created[-1]

    fake = FakeMessagesAPI([tool_reply(tool_call("forgot_await", {}, id="f")), text_reply("ok")])
    runner = build(fake, tools=[forgot_await])
    try:
        with quiet_tool_failures():
            await runner.until_done()
        [(_, content, is_error)] = results(runner)
        assert is_error
        assert "coroutine" in content
        # Closed, it can never warn "coroutine ... was never awaited" (a warning is an error here).
        assert created[0].cr_frame is None, "the runner left the coroutine open"
    finally:
        created[0].close()


# -- tools that hang -------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_tools_own_timeout_wins_over_the_runners() -> None:
    @tool(timeout=0.05)
    async def hang() -> str:
        """Never finish."""
        await anyio.sleep_forever()
        raise AssertionError

    fake = FakeMessagesAPI([tool_reply(tool_call("hang", {}, id="h")), text_reply("ok")])
    runner = build(fake, tools=[hang], tool_timeout=GUARD)
    with anyio.fail_after(GUARD / 2):
        await runner.until_done()
    [(_, content, is_error)] = results(runner)
    assert is_error
    assert content.startswith("Tool 'hang' did not finish within its 0.05 s timeout")
    assert "Try again with a smaller request, or answer without this tool." in content


# -- BaseException from tools --------------------------------------------------------------------------


class Abort(BaseException):
    """A BaseException that is neither cancellation nor an interrupt."""


@pytest.mark.anyio
async def test_keyboard_interrupt_from_an_async_tool_propagates_as_itself_and_the_history_is_untouched() -> (
    None
):
    @tool
    async def interrupted() -> str:
        """Get interrupted."""
        raise KeyboardInterrupt

    fake = FakeMessagesAPI([tool_reply(tool_call("interrupted", {}, id="k")), text_reply("ok")])
    runner = build(fake, tools=[interrupted])
    with pytest.raises(KeyboardInterrupt):
        await runner.until_done()
    assert plain(runner.messages) == [TEA_USER]
    assert runner.requests_sent == 1


@pytest.mark.anyio
async def test_system_exit_from_a_sync_tool_propagates_and_the_runner_resumes() -> None:
    exits = [True]

    @tool
    def maybe_exit() -> str:
        """Exit the first time."""
        if exits.pop(0) if exits else False:
            raise SystemExit(3)
        return "stayed"

    fake = FakeMessagesAPI([tool_reply(tool_call("maybe_exit", {}, id="x")), text_reply("ok")])
    runner = build(fake, tools=[maybe_exit])
    with pytest.raises(SystemExit):
        await runner.until_done()
    assert plain(runner.messages) == [TEA_USER]
    await runner.until_done()
    assert results(runner) == [("x", "stayed", False)]


@pytest.mark.anyio
async def test_a_base_exception_from_one_of_several_calls_propagates_as_itself() -> None:
    @tool
    async def abort(n: int) -> str:
        """Abort on 0."""
        if n == 0:
            raise Abort
        await anyio.sleep(0.01)
        return "fine"

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("abort", {"n": 0}, id="a"), tool_call("abort", {"n": 1}, id="b")),
            text_reply("ok"),
        ]
    )
    runner = build(fake, tools=[abort])
    with pytest.raises(Abort):
        await runner.until_done()


# -- input from the model ----------------------------------------------------------------------------------


class Address(BaseModel):
    city: str
    zip: int


@tool
async def ship(item: str, quantity: int, address: Address) -> str:
    """Ship an item.

    Args:
        item: What to ship.
        quantity: How many.
        address: Where to.
    """
    return f"shipped {quantity} {item} to {address.city}"


GOOD_ADDRESS = {"city": "Oslo", "zip": 150}


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool_input", "expected"),
    [
        (
            {"item": "tea", "quantity": "lots", "address": GOOD_ADDRESS},
            "- quantity: Input should be a valid integer",
        ),
        ({"item": "tea", "address": GOOD_ADDRESS}, "- quantity: Field required"),
        (
            {"item": "tea", "quantity": 1, "address": GOOD_ADDRESS, "colour": "red"},
            "- colour: Extra inputs are not permitted (received 'red')",
        ),
        (
            {"item": "tea", "quantity": 1, "address": {"city": "Oslo", "zip": "N-0150"}},
            "- address.zip: Input should be",
        ),
        ({"item": ["tea"], "quantity": 1, "address": "Oslo"}, "(2 errors)"),
        ({}, "(3 errors)"),
    ],
    ids=["wrong type", "missing", "extra", "nested wrong type", "two wrong", "empty"],
)
async def test_wrong_input_from_the_model_names_the_fields_and_asks_for_a_new_call(
    tool_input: dict[str, Any], expected: str
) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("ship", tool_input, id="s")), text_reply("ok")])
    runner = build(fake, tools=[ship])
    await runner.until_done()
    [(_, content, is_error)] = results(runner)
    assert is_error
    assert content.startswith("The input for tool 'ship' is invalid")
    assert expected in content
    assert content.endswith("Call ship again with corrected input.")


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("tool_input", "what"),
    [
        (None, "a NoneType"),
        ([1, 2], "a list"),
        (7, "a int"),
        ("ship it", "a str that is not valid JSON"),
        ('["tea"]', "a str holding a JSON array"),
    ],
    ids=["null", "array", "number", "garbage string", "json array string"],
)
async def test_input_that_is_not_an_object_says_so_and_asks_for_an_object(
    tool_input: object, what: str
) -> None:
    fake = FakeMessagesAPI(
        [
            message_reply(
                [{"type": "tool_use", "id": "s", "name": "ship", "input": tool_input}], stop_reason="tool_use"
            )
        ]
    )
    runner = build(fake, tools=[ship])
    # The service only sends objects, and the SDK warns when it serialises any other input, so
    # the result is read in the body and the loop closed there.
    response = None
    async for _ in runner:
        response = await runner.generate_tool_response()
        runner.close()
    [block] = plain(response)["content"]
    assert block["is_error"]
    assert f"must be a JSON object matching its input_schema, but it was {what}" in block["content"]
    assert block["content"].endswith("Call ship again with an object as its input.")


@pytest.mark.anyio
async def test_an_unknown_tool_when_none_are_runnable_says_there_are_none() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("ship", {}, id="s")), text_reply("ok")])
    runner = build(fake, tools=[])
    await runner.until_done()
    assert results(runner) == [("s", "There is no tool named 'ship'. The available tools are: none.", True)]

"""The kit's doubles for code that uses toolrunner: ``override_tool`` and ``FailingCheckpointer``."""

from __future__ import annotations

import errno
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from anthropic import beta_tool

from tests.support.helpers import MODEL, USER, results_of
from toolrunner import (
    CheckpointConflictError,
    MemoryCheckpointer,
    SQLiteCheckpointer,
    SyncToolRunner,
    ToolRunner,
    tool,
)
from toolrunner.testing import (
    FailingCheckpointer,
    FakeMessagesAPI,
    override_tool,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

calls: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    calls.clear()


@tool
async def get_weather(city: str) -> str:
    """Get the weather of a city (from a real service, which tests must not call)."""
    calls["real"] += 1
    return f"{city}: the real forecast"


def weather_fake() -> FakeMessagesAPI:
    return FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"city": "Paris"}, id="w")), text_reply("Mild.")]
    )


# -- override_tool ----------------------------------------------------------------------------------


async def test_the_override_runs_in_place_of_the_tool_and_the_tool_is_restored() -> None:
    def fake_weather(city: str) -> str:  # sync in place of async: the runner calls it as what it is
        calls["fake"] += 1
        return f"{city}: 21 °C"

    fake = weather_fake()
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[get_weather])
    with override_tool(get_weather, fake_weather):
        await runner.until_done()
        assert get_weather(city="Oslo") == "Oslo: 21 °C"  # calling the tool calls the override too
    assert results_of(runner.messages[2]) == [("w", "Paris: 21 °C", False)]
    assert calls == Counter({"fake": 2})
    assert get_weather.is_async
    assert await get_weather(city="Rome") == "Rome: the real forecast"


async def test_the_tool_keeps_its_schema_so_bad_input_never_reaches_the_override() -> None:
    async def fake_weather(city: str) -> str:
        calls["fake"] += 1
        return "never"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"town": "Paris"}, id="w")), text_reply("Oops.")]
    )
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[get_weather])
    with override_tool(get_weather, fake_weather):
        await runner.until_done()
    [(_, content, is_error)] = results_of(runner.messages[2])
    assert is_error
    assert "city" in content
    assert calls == Counter()


def answer(text: str) -> Any:
    def weather(city: str) -> str:
        return text

    return weather


async def test_overrides_nest_and_are_undone_when_the_block_raises() -> None:
    with override_tool(get_weather, answer("outer")):
        with pytest.raises(RuntimeError), override_tool(get_weather, answer("inner")):
            assert get_weather(city="x") == "inner"
            raise RuntimeError("the test failed inside the block")
        assert get_weather(city="x") == "outer"
    assert await get_weather(city="x") == "x: the real forecast"


def test_a_sync_runner_runs_the_override_from_its_own_thread() -> None:
    fake = weather_fake()
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER], tools=[get_weather])
    with override_tool(get_weather, answer("fake")):
        runner.until_done()
    assert results_of(runner.messages[2]) == [("w", "fake", False)]


def test_what_cannot_be_overridden_is_a_type_error() -> None:
    @beta_tool
    def sdk_weather(city: str) -> str:
        """Get the weather."""
        return city

    def plain(city: str) -> str:
        return city

    for target in (sdk_weather, plain):
        with (
            pytest.raises(TypeError, match="override_tool takes a tool made with toolrunner's @tool"),
            override_tool(target, plain),
        ):
            pass
    with (
        pytest.raises(TypeError, match="needs a function"),
        override_tool(get_weather, "21 °C"),  # pyright: ignore[reportArgumentType]
    ):
        pass
    assert get_weather.is_async


# -- FailingCheckpointer ----------------------------------------------------------------------------


@tool
async def charge_card(amount: int) -> str:
    """Charge the customer's card."""
    calls["charge"] += 1
    return f"charged {amount}"


def payment(store: Any) -> tuple[FakeMessagesAPI, ToolRunner]:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("charge_card", {"amount": 20}, id="c")), text_reply("Paid.")]
    )
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[charge_card],
        checkpointer=store,
        run_id="invoice",
    )
    return fake, runner


@pytest.mark.parametrize("failing", [1, 2, 3, 4, 5, 6])
async def test_a_failed_save_raises_from_its_step_and_the_run_goes_on_without_charging_twice(
    failing: int,
) -> None:
    store = FailingCheckpointer(MemoryCheckpointer(), fail_on=[failing])
    fake, runner = payment(store)
    with pytest.raises(OSError, match="No space left on device") as raised:
        await runner.until_done()
    assert raised.value.errno == errno.ENOSPC
    await runner.until_done()  # as an agent that retries would
    assert store.failed == [failing]
    assert calls == Counter({"charge": 1})
    assert len(fake.requests) == 2
    saved = await store.load("invoice")
    assert saved is not None
    assert saved.state.end_reason == "model"


async def test_a_refusing_store_stops_the_runners_saves() -> None:
    refused = CheckpointConflictError("the store refuses the run")
    store = FailingCheckpointer(MemoryCheckpointer(), fail_on=[2], error=refused)
    _, runner = payment(store)
    with pytest.raises(CheckpointConflictError, match="the store refuses the run"):
        await runner.until_done()
    with pytest.raises(CheckpointConflictError, match="the store refuses the run"):
        await runner.until_done()  # once refused, a runner saves no more
    assert store.saves == 2


async def test_the_error_may_be_made_per_save_and_other_methods_reach_the_inner_store(tmp_path: Path) -> None:
    store = FailingCheckpointer(
        SQLiteCheckpointer(tmp_path / "runs.db"),
        fail_on={1, 2},
        error=lambda number: ConnectionError(f"save {number}: the connection was lost"),
    )
    _, runner = payment(store)
    raised: list[str] = []
    for _ in range(5):  # a guard: the run ends after the failed saves
        try:
            await runner.until_done()
            break
        except ConnectionError as error:
            raised.append(str(error))
    assert runner.end_reason == "model"
    assert raised
    assert all(message.endswith(": the connection was lost") for message in raised)
    assert store.failed == [1, 2]
    assert calls == Counter({"charge": 1})
    store.close()  # SQLiteCheckpointer's own
    assert repr(store).startswith("FailingCheckpointer(")


def test_fail_on_takes_save_numbers_from_1() -> None:
    with pytest.raises(ValueError, match="fail_on takes the numbers of saves, from 1"):
        FailingCheckpointer(MemoryCheckpointer(), fail_on=[0])

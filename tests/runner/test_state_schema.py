"""A saved state is checked against its schema at load: hand-edited or damaged fields are refused
with a ``StateError`` that names them; text nested too deeply and run ids that cannot be saved are
refused with the project's errors, not Python's."""

from __future__ import annotations

import json
import re
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.helpers import MODEL, USER
from toolrunner import (
    MemoryCheckpointer,
    ParamsError,
    Phase,
    RunState,
    SQLiteCheckpointer,
    StateError,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@tool
def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def _saved() -> dict[str, Any]:
    """A state with every part filled in: a held reply, a finished call, usage, a cost."""

    async def main() -> str:
        fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("done")])
        runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[look])
        async for _ in runner:
            await runner.generate_tool_response()
            break
        return runner.state.to_json()

    return json.loads(anyio.run(main))


SAVED = _saved()

Edit = Callable[[dict[str, Any]], object]


def _set(path: tuple[str | int, ...], value: object) -> Edit:
    def edit(data: dict[str, Any]) -> None:
        target: Any = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return edit


def _drop_phase(data: dict[str, Any]) -> None:
    del data["phase"]


def _record_twice(data: dict[str, Any]) -> None:
    data["calls"].append(data["calls"][0])


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (_set(("messages",), "hello"), "messages is 'hello'"),
        (_set(("messages", 0), 7), "messages[0] is 7"),
        (_set(("messages", 0, "role"), "bot"), "messages[0].role is 'bot'"),
        (_set(("messages", 0, "content"), [{"text": "hi"}]), "messages[0].content[0].type is missing"),
        (_set(("tools",), "look"), "tools is 'look'"),
        (_set(("steered",), "false"), "steered is 'false'"),
        (_set(("total", "input_tokens"), "12"), "total.input_tokens is '12'"),
        (_set(("total", "output_tokens"), -1), "total.output_tokens is -1"),
        (_set(("usage", 0, "output_tokens"), "5"), "usage[0].output_tokens is '5'"),
        (_set(("calls", 0, "status"), "runnning"), "calls[0].status is 'runnning'"),
        (_set(("calls", 0, "result"), "found a"), "calls[0].result is 'found a'"),
        (_set(("calls", 0, "decision"), "maybe"), "calls[0].decision is 'maybe'"),
        (_set(("reply", "message", "content", 0, "id"), 3), "reply.message.content[0].id is 3"),
        (_set(("reply", "message", "usage", "input_tokens"), "10"), "reply.message.usage.input_tokens"),
        (_set(("cost",), "lots"), "cost is 'lots': a cost is an amount of US dollars as decimal text"),
        (_set(("opened_at",), True), "opened_at is True"),
        (_set(("phase",), "thinking"), "phase is 'thinking'"),
        (_set(("end_reason",), "bored"), "end_reason is 'bored'"),
        (_set(("params", "max_tokens"), "64"), "params.max_tokens is '64'"),
        (_set(("failure",), {"type": "APIErro"}), "failure.message is missing"),
        (_drop_phase, "phase is missing"),
        (_record_twice, "calls has two records of one tool_use id"),
        (_set(("reply",), None), "reply is None in the phase 'with_body'"),
    ],
)
def test_a_damaged_field_is_refused_and_named(edit: Edit, named: str) -> None:
    data = json.loads(json.dumps(SAVED))
    edit(data)
    with pytest.raises(
        StateError, match=f"damaged and cannot be loaded: {re.escape(named)}.*Restore it from a copy"
    ):
        RunState.from_json(json.dumps(data))


def test_the_state_a_runner_saves_loads_as_it_was() -> None:
    state = RunState.from_json(json.dumps(SAVED))
    assert state.phase is Phase.WITH_BODY
    assert state.steered is False
    assert json.loads(state.to_json()) == SAVED


def test_steered_false_as_a_string_is_refused_and_so_the_held_reply_is_kept() -> None:
    """Read as true, ``"false"`` made a resumed run drop the reply the loop body held."""
    data = {**SAVED, "steered": "false"}
    with pytest.raises(StateError, match="steered is 'false': input should be a valid boolean"):
        RunState.from_dict(data)


def test_an_older_version_with_damaged_calls_is_named_too() -> None:
    data = {**SAVED, "version": 1, "calls": "none"}
    with pytest.raises(StateError, match=r"version 1\) is damaged.*calls is 'none'"):
        RunState.from_dict(data)


def test_text_nested_too_deeply_is_a_state_error() -> None:
    with pytest.raises(StateError, match="nested too deeply"):
        RunState.from_json("[" * 100_000 + "]" * 100_000)
    # Nothing is left broken: a saved state loads as before.
    assert RunState.from_json(json.dumps(SAVED)).phase is Phase.WITH_BODY


def test_a_state_nested_too_deeply_to_save_is_a_state_error() -> None:
    deep: Any = "bottom"
    for _ in range(100_000):
        deep = [deep]
    state = RunState(params={"model": MODEL, "max_tokens": 5}, messages=({"role": "user", "content": deep},))
    with pytest.raises(StateError, match=r"messages\[0\] is nested too deeply to be saved"):
        state.to_json()


async def test_a_sqlite_row_nested_too_deeply_is_a_state_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)
    fake = FakeMessagesAPI([text_reply("done"), text_reply("done")])
    for run_id in ("r", "other"):
        runner = ToolRunner(
            fake.async_client(),
            model=MODEL,
            max_tokens=64,
            messages=[USER],
            checkpointer=store,
            run_id=run_id,
        )
        await runner.until_done()
    store.close()
    deep = "[" * 100_000 + "]" * 100_000
    with sqlite3.connect(path) as connection:
        connection.execute(
            "UPDATE toolrunner_messages SET message = ? WHERE run_id = 'r' AND position = 0", (deep,)
        )
    again = SQLiteCheckpointer(path)
    with pytest.raises(StateError, match=r"the saved run 'r' in .* cannot be loaded"):
        await again.load("r")
    loaded = await again.load("other")  # the store goes on
    again.close()
    assert loaded is not None
    assert loaded.state.end_reason == "model"


@pytest.mark.parametrize("store", ["memory", "sqlite"])
async def test_a_run_id_with_a_lone_surrogate_is_refused_before_the_run_starts(
    tmp_path: Path, store: str
) -> None:
    checkpointer = MemoryCheckpointer() if store == "memory" else SQLiteCheckpointer(tmp_path / "runs.db")
    fake = FakeMessagesAPI([text_reply("done")])
    with pytest.raises(ParamsError, match=r"run_id 'caf\\udce9' holds lone surrogates.*os.fsencode"):
        ToolRunner(
            fake.async_client(),
            model=MODEL,
            max_tokens=64,
            messages=[USER],
            checkpointer=checkpointer,
            run_id="caf\udce9",
        )
    with pytest.raises(ParamsError, match="holds lone surrogates"):
        await ToolRunner.resume(fake.async_client(), checkpointer=checkpointer, run_id="caf\udce9")
    assert fake.requests == []
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        checkpointer=checkpointer,
        run_id="café",
    )
    await runner.until_done()
    saved = await checkpointer.load("café")
    assert saved is not None
    assert saved.state.end_reason == "model"
    if isinstance(checkpointer, SQLiteCheckpointer):
        checkpointer.close()

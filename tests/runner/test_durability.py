"""Runs as data: RunState's JSON form, checkpoints at every step, resume (in one process).

The crash tests, with processes killed at generated points, are in ``test_crash_resume.py``.
"""

from __future__ import annotations

import json
import sqlite3
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.counted_tools import look_plain as look, runs
from tests.support.helpers import MODEL, USER, make_runner, plain, results_of, roles
from toolrunner import (
    STATE_VERSION,
    CallStatus,
    CheckpointError,
    MemoryCheckpointer,
    ParamsError,
    Phase,
    RunState,
    SQLiteCheckpointer,
    StateError,
    SyncToolRunner,
    ToolCallFinished,
    ToolRunner,
    tool,
)
from toolrunner._core.transitions import delivered
from toolrunner._stores.protocol import Checkpoint
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]


@tool(idempotent=True)
async def read(q: str) -> str:
    """Read something; reading twice is harmless."""
    runs[q] += 1
    return f"read {q}"


def script() -> list[Any]:
    return [
        tool_reply(tool_call("look", {"q": "a"}, id="a"), tool_call("look", {"q": "b"}, id="b")),
        tool_reply(tool_call("read", {"q": "c"}, id="c")),
        text_reply("done"),
    ]


def build(fake: FakeMessagesAPI, **options: Any) -> ToolRunner:
    return make_runner(fake, look, read, **options)


class Recording(MemoryCheckpointer):
    """A memory store that keeps every checkpoint it was given."""

    def __init__(self) -> None:
        super().__init__()
        self.checkpoints: list[Checkpoint] = []

    async def save(self, checkpoint: Checkpoint) -> None:
        await super().save(checkpoint)
        self.checkpoints.append(checkpoint)


# -- RunState as JSON ------------------------------------------------------------------------------


def round_trip(state: RunState) -> None:
    text = state.to_json()
    again = RunState.from_json(text)
    assert again.to_json() == text
    assert again.phase is state.phase
    assert plain(list(again.messages)) == plain(list(state.messages))
    assert again.usage == state.usage
    assert again.total == state.total
    assert again.cost == state.cost


async def test_the_state_round_trips_through_json_in_every_phase() -> None:
    seen: set[Phase] = set()
    runner = ToolRunner(
        FakeMessagesAPI(script()).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look, read],
        stream=True,
        run_tools_eagerly=True,
    )
    async with runner:
        round_trip(runner.state)
        seen.add(runner.state.phase)
        async for stream in runner:
            round_trip(runner.state)  # mid-stream
            seen.add(runner.state.phase)
            await stream.get_final_message()
            await runner.generate_tool_response()  # the runner takes the final message: WITH_BODY
            round_trip(runner.state)
            seen.add(runner.state.phase)
            if runner.state.calls:
                assert {record.status for record in runner.state.calls.values()} <= set(CallStatus)
    round_trip(runner.state)
    seen.add(runner.state.phase)
    # tests/runner/test_approvals.py round-trips AWAITING; RECEIVED lasts from a reply's save to its hand-over
    assert seen == set(Phase) - {Phase.AWAITING, Phase.RECEIVED}


async def test_a_state_with_calls_started_and_finished_round_trips() -> None:
    release, a_finished = anyio.Event(), anyio.Event()

    @tool
    async def slow() -> str:
        """Take a while."""
        await release.wait()
        return "slow"

    def on_event(event: Any) -> None:
        if isinstance(event, ToolCallFinished) and event.call.id == "a":
            a_finished.set()

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("look", {"q": "a"}, id="a"), tool_call("slow", {}, id="s")), text_reply("ok")]
    )
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look, slow],
        on_event=on_event,
    )
    async for _ in runner:
        async with anyio.create_task_group() as group:
            group.start_soon(runner.generate_tool_response)
            await a_finished.wait()
            state = runner.state
            assert state.calls["s"].status is CallStatus.STARTED
            round_trip(state)
            release.set()
        break


def test_a_state_from_a_newer_toolrunner_is_refused() -> None:
    data = json.loads(RunState(params={"model": MODEL, "max_tokens": 5}).to_json())
    data["version"] = STATE_VERSION + 1
    with pytest.raises(StateError, match=f"newer toolrunner.*version {STATE_VERSION + 1}.*upgrade"):
        RunState.from_json(json.dumps(data))


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "not a RunState"),
        ('{"version": 1, "phase": "nowhere"}', "damaged"),
        ('{"version": 1}', "damaged"),
    ],
)
def test_text_that_is_not_a_saved_state_is_refused(text: str, match: str) -> None:
    with pytest.raises(StateError, match=match):
        RunState.from_json(text)


def test_a_param_json_cannot_carry_is_named_when_saving() -> None:
    state = RunState(params={"model": MODEL, "metadata": {"when": object()}})
    with pytest.raises(StateError, match=r"params\['metadata'\]\['when'\] holds a 'object'"):
        state.to_json()


# -- checkpoints ------------------------------------------------------------------------------------


async def test_a_checkpointed_run_saves_at_every_step_and_ends_saved() -> None:
    store = Recording()
    runner = build(FakeMessagesAPI(script()), checkpointer=store, run_id="order-42")
    await runner.until_done()
    phases = [checkpoint.state.phase for checkpoint in store.checkpoints]
    assert phases[0] is Phase.READY  # before the first request
    assert phases[-1] is Phase.DONE
    # Every call's start is saved before it finished, and its finish is saved.
    statuses = [
        (checkpoint.state.calls[call].status, call)
        for checkpoint in store.checkpoints
        for call in checkpoint.state.calls
    ]
    for call in "abc":
        assert (CallStatus.STARTED, call) in statuses
        assert (CallStatus.FINISHED, call) in statuses
    assert [checkpoint.sequence for checkpoint in store.checkpoints] == list(range(len(store.checkpoints)))
    loaded = await store.load("order-42")
    assert loaded is not None
    assert loaded.state.to_json() == runner.state.to_json()


async def test_saves_write_only_what_is_new() -> None:
    store = Recording()
    replies = [tool_reply(tool_call("look", {"q": f"q{n}"})) for n in range(6)] + [text_reply("done")]
    runner = build(FakeMessagesAPI(replies), checkpointer=store, run_id="r")
    await runner.until_done()
    for before, after in zip(store.checkpoints, store.checkpoints[1:], strict=False):
        assert after.kept_messages == len(before.state.messages)
        assert after.kept_usage == len(before.state.usage)
        assert len(after.state.messages) - after.kept_messages <= 2  # a reply and its results at most


async def test_replacing_the_history_makes_the_next_save_write_all_of_it() -> None:
    store = Recording()
    runner = build(FakeMessagesAPI([text_reply("one"), text_reply("two")]), checkpointer=store, run_id="r")
    await runner.until_done()
    runner.set_messages_params(lambda params: {**params, "messages": [{"role": "user", "content": "Anew."}]})
    await runner.until_done()
    [replaced] = [c for c in store.checkpoints if c.kept_messages == 0 and c.sequence > 0]
    assert plain(list(replaced.state.messages))[0] == {"role": "user", "content": "Anew."}


async def test_resume_answers_finished_calls_from_the_journal_and_never_runs_them_again() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(script())
    first = build(fake, checkpointer=store, run_id="r")
    async for _ in first:
        await first.generate_tool_response()  # a and b ran; the process "stops" here
        break
    again = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=[look, read])
    assert again.state.phase is Phase.WITH_BODY
    await again.until_done()
    assert runs == {"a": 1, "b": 1, "c": 1}
    assert roles(again.messages) == ["user", "assistant", "user", "assistant", "user", "assistant"]
    assert [content for _, content, _ in results_of(again.messages[2])] == ["found a", "found b"]


async def test_an_interrupted_call_gets_an_error_result_unless_its_tool_is_idempotent() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("look", {"q": "a"}, id="a"), tool_call("read", {"q": "c"}, id="c")),
            text_reply("done"),
        ]
    )
    first = build(fake, checkpointer=store, run_id="r")
    async for _ in first:
        break
    # As a crash would leave it: both calls started, neither finished.
    loaded = await store.load("r")
    assert loaded is not None
    state = loaded.state
    for call in [record for record in _calls_of(state)]:
        state = _started(state, call)
    await store.save(Checkpoint("r", state, loaded.sequence + 1))
    again = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=[look, read])
    await again.until_done()
    assert runs == {"c": 1}  # the idempotent read ran again; look did not
    [(_, interrupted, is_error), (_, read_again, read_error)] = results_of(again.messages[2])
    assert is_error
    assert "was interrupted" in interrupted
    assert "may or may not have taken effect" in interrupted
    assert (read_again, read_error) == ("read c", False)


async def test_events_are_emitted_once_per_call_across_a_resume() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(script())
    started: list[str] = []

    def on_event(event: Any) -> None:
        if type(event).__name__ == "ToolCallStarted":
            started.append(event.call.id)

    first = build(fake, checkpointer=store, run_id="r", on_event=on_event)
    async for _ in first:
        await first.generate_tool_response()
        break
    again = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="r", tools=[look, read], on_event=on_event
    )
    await again.until_done()
    assert sorted(started) == ["a", "b", "c"]


async def test_resume_needs_every_tool_of_the_run_and_takes_no_request_params() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(script())
    first = build(fake, checkpointer=store, run_id="r")
    async for _ in first:
        break
    with pytest.raises(ParamsError, match=r"uses the tool\(s\) \['read'\]; pass them in tools="):
        await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=[look])
    with pytest.raises(ParamsError, match=r"\['extra'\] are not tools of the saved run"):
        await ToolRunner.resume(
            fake.async_client(), checkpointer=store, run_id="r", tools=[look, read, tool(extra)]
        )
    with pytest.raises(ParamsError, match=r"request params from the saved run.*\['model'\]"):
        await ToolRunner.resume(
            fake.async_client(),
            checkpointer=store,
            run_id="r",
            tools=[look, read],
            model=MODEL,  # pyright: ignore[reportCallIssue] - refused as a type too
        )
    with pytest.raises(CheckpointError, match="no saved run named 'nope'"):
        await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="nope", tools=[look, read])


async def test_two_runners_of_one_run_are_caught_and_a_new_run_cannot_take_a_saved_name() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI([*script(), *script()])
    first = build(fake, checkpointer=store, run_id="r")
    async for _ in first:
        break
    second = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=[look, read])
    await second.until_done()
    with pytest.raises(CheckpointError, match="saved by another runner since this one loaded it"):
        await first.until_done()
    with pytest.raises(CheckpointError, match="a run named 'r' is saved already; resume it"):
        await build(fake, checkpointer=store, run_id="r").until_done()


def test_a_sync_runner_checkpoints_and_resumes() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(script())
    runner = SyncToolRunner(
        fake.client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[look, read],
        checkpointer=store,
        run_id="s",
    )
    for _ in runner:
        runner.generate_tool_response()
        break
    again = SyncToolRunner.resume(fake.client(), checkpointer=store, run_id="s", tools=[look, read])
    again.until_done()
    assert runs == {"a": 1, "b": 1, "c": 1}
    assert again.end_reason == "model"


# -- SQLite ----------------------------------------------------------------------------------------------


async def test_the_sqlite_store_holds_the_runners_state_after_every_step(tmp_path: Path) -> None:
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    runner = build(FakeMessagesAPI(script()), checkpointer=store, run_id="order-42")
    async for _ in runner:
        loaded = await store.load("order-42")
        assert loaded is not None
        # The reply was saved before the body got it (RECEIVED): resumed from here, it is handed
        # over again; the rest is the runner's state.
        assert loaded.state.phase is Phase.RECEIVED
        assert delivered(loaded.state).to_json() == runner.state.to_json()
    loaded = await store.load("order-42")
    assert loaded is not None
    assert loaded.state.to_json() == runner.state.to_json()
    store.close()


async def test_sqlite_runs_of_several_runners_share_one_file(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    stores = [SQLiteCheckpointer(path) for _ in range(3)]
    async with anyio.create_task_group() as group:
        for n, store in enumerate(stores):
            group.start_soon(
                build(FakeMessagesAPI(script()), checkpointer=store, run_id=f"run-{n}").until_done
            )
    for n in range(3):
        loaded = await stores[0].load(f"run-{n}")
        assert loaded is not None
        assert loaded.state.end_reason == "model"
    for store in stores:
        store.close()


async def test_a_damaged_sqlite_row_is_named_and_left_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)
    await build(FakeMessagesAPI(script()), checkpointer=store, run_id="r").until_done()
    store.close()
    with sqlite3.connect(path) as connection:
        connection.execute("UPDATE toolrunner_runs SET state = '{broken' WHERE run_id = 'r'")
    with pytest.raises(StateError, match=r"the saved run 'r' in .*runs.db' cannot be loaded"):
        await SQLiteCheckpointer(path).load("r")
    with sqlite3.connect(path) as connection:
        assert connection.execute("SELECT state FROM toolrunner_runs").fetchone() == ("{broken",)


@pytest.mark.parametrize(
    ("damage", "match"),
    [
        (
            "DELETE FROM toolrunner_messages WHERE run_id = 'r' AND position = 1",
            "rows were deleted or added by hand",
        ),
        (
            'INSERT INTO toolrunner_messages VALUES (\'r\', 99, \'{"role": "user", "content": "x"}\')',
            "rows were deleted or added by hand",
        ),
        ("UPDATE toolrunner_runs SET state = json_set(state, '$.cost', 'lots')", "damaged"),
        ("UPDATE toolrunner_runs SET state = json_set(state, '$.version', 0)", "no toolrunner wrote"),
    ],
)
async def test_rows_changed_by_hand_are_named_when_loading(tmp_path: Path, damage: str, match: str) -> None:
    path = tmp_path / "runs.db"
    store = SQLiteCheckpointer(path)
    await build(FakeMessagesAPI(script()), checkpointer=store, run_id="r").until_done()
    store.close()
    with sqlite3.connect(path) as connection:
        connection.execute(damage)
    again = SQLiteCheckpointer(path)
    with pytest.raises(StateError, match=match):
        await again.load("r")
    again.close()


async def test_a_file_whose_toolrunner_tables_are_not_toolrunners_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "other.db"
    with sqlite3.connect(path) as connection:
        connection.execute("CREATE TABLE toolrunner_runs (run_id TEXT PRIMARY KEY, data TEXT)")
    store = SQLiteCheckpointer(path)
    with pytest.raises(CheckpointError, match="has a table 'toolrunner_runs' that toolrunner did not make"):
        await store.load("r")
    store.close()


async def test_a_file_that_is_not_a_database_is_refused_clearly(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("my notes, not a database " * 100)
    with pytest.raises(CheckpointError, match="cannot be used as a checkpoint database"):
        await SQLiteCheckpointer(path).load("r")
    assert path.read_text().startswith("my notes")


def extra(x: int) -> int:
    """Not a tool of the run."""
    return x


def _calls_of(state: RunState) -> list[Any]:
    from toolrunner._core.transitions import pending_calls

    return list(pending_calls(state))


def _started(state: RunState, call: Any) -> RunState:
    from toolrunner._core.transitions import call_started

    return call_started(state, call)


# -- the saved reply is the reply as the service sent it --------------------------------------------


async def _paused_after(reply: Any, checkpointer: Any, tools: list[Any]) -> ToolRunner:
    """A runner whose loop body holds ``reply`` (saved), for a resume to take up."""
    fake = FakeMessagesAPI([reply, text_reply("done")], validate=False)
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=tools,
        checkpointer=checkpointer, run_id="r",
    )  # fmt: skip
    await runner.__anext__()
    return runner


async def test_a_saved_reply_resumes_into_the_request_an_uninterrupted_run_sends(tmp_path: Path) -> None:
    """Blocks of a type this SDK does not know load as they were; fields the service did not send
    (``caller``, ``toolset_name``) are not added as nulls."""
    from toolrunner.testing import message_reply

    reply = message_reply(
        [
            {"type": "text", "text": "looking"},
            {"type": "mystery_block", "payload": {"k": [1, 2]}},
            {"type": "tool_use", "id": "a", "name": "look", "input": {"q": "a"}},
        ],
        stop_reason="tool_use",
    )
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    held = await _paused_after(reply, store, [look])
    sent = plain(held.state.reply.content if held.state.reply else [])  # type: ignore[union-attr]
    fake = FakeMessagesAPI([text_reply("done")], validate=False)
    later = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=[look])
    await later.until_done()
    store.close()
    assistant = fake.requests[0].messages[1]
    assert assistant["content"] == [
        {"type": "text", "text": "looking"},
        {"type": "mystery_block", "payload": {"k": [1, 2]}},
        {"type": "tool_use", "id": "a", "name": "look", "input": {"q": "a"}},
    ]
    assert len(sent) == 3


async def test_a_reply_with_lone_surrogates_or_a_deep_input_is_saved_and_resumed(tmp_path: Path) -> None:
    deep: Any = "bottom"
    for _ in range(300):
        deep = {"d": deep}
    reply = tool_reply(
        tool_call("look", {"q": "caf\udce9"}, id="a"), tool_call("look", {"q": "x", "deep": deep}, id="b"),
        text="caf\udce9",
    )  # fmt: skip
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    await _paused_after(reply, store, [look])
    fake = FakeMessagesAPI([text_reply("done")], validate=False)
    later = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=[look])
    await later.until_done()
    store.close()
    assert later.end_reason == "model"
    assert len(fake.requests) == 1
    assert fake.requests[0].messages[1]["content"][0] == {"type": "text", "text": "caf\ufffd"}


async def test_a_tool_input_with_a_lone_surrogate_is_the_historys_live_and_in_the_store(
    tmp_path: Path,
) -> None:
    """A tool gets the input as the history keeps it (a lone surrogate the model's JSON held is
    U+FFFD there, as in a saved reply), so a call is the same live and resumed; the journal holds
    it, and the store writes it and reads it back unchanged."""
    name = "caf\udce9.txt"
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("look", {"q": name}, id="a")), text_reply("done")], validate=False
    )
    store = SQLiteCheckpointer(tmp_path / "runs.db")
    runner = build(fake, checkpointer=store, run_id="r")
    await runner.until_done()
    saved = await store.load("r")
    store.close()
    assert saved is not None
    assert runs == Counter({"caf\ufffd.txt": 1})
    assert saved.state.to_json() == runner.state.to_json()

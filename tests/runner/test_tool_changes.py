"""Tools added and removed mid-run (``add_tools``/``remove_tools``), and ``role: "system"`` messages.

The fake validates every request as the service does, system messages included (their placement
and blocks; see docs/testing.md); what the runner sends is also compared exactly.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest
from anthropic.lib.tools import beta_tool

from tests.support.helpers import MODEL, USER, make_runner, plain, results_of, roles
from toolrunner import HistoryError, MemoryCheckpointer, ParamsError, RunState, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


@tool
def ping() -> str:
    """Ping."""
    return "pong"


@beta_tool
def late(city: str) -> str:
    """A tool added later."""
    return f"late {city}"


def runner_for(fake: FakeMessagesAPI, tools: list[Any], **options: Any) -> ToolRunner:
    return make_runner(fake, *tools, max_tokens=100, **options)


async def test_an_added_tool_runs_at_once_and_reaches_the_model_in_a_system_message() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("late", {"city": "Oslo"}, id="a")), text_reply("Done.")])
    runner = runner_for(fake, [ping])
    async for message in runner:
        if message.stop_reason == "tool_use":
            runner.add_tools(late)  # even for a call of the reply being handled
    assert results_of(runner.messages[2]) == [("a", "late Oslo", False)]
    second = fake.requests[1]
    assert second.tools == [ping.to_param()]  # the tools param is unchanged: the prompt cache holds
    assert roles(second.messages) == ["user", "assistant", "user", "system"]
    assert second.messages[3] == {
        "role": "system",
        "content": [
            {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": late.to_dict()}}
        ],
    }
    assert runner.state.tools == ("ping",)


async def test_a_removed_tool_stops_running_and_the_model_is_told() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("ping", {}, id="a")),
            tool_reply(tool_call("ping", {}, id="b")),
            text_reply("Done."),
        ],
    )
    runner = runner_for(fake, [ping, late])
    async for message in runner:
        if message.stop_reason == "tool_use" and runner.requests_sent == 1:
            assert await runner.generate_tool_response() is not None  # ran before the removal: kept
            runner.remove_tools("ping")
    assert results_of(runner.messages[2]) == [("a", "pong", False)]
    assert results_of(runner.messages[5]) == [
        ("b", "There is no tool named 'ping'. The available tools are: 'late'.", True)
    ]
    assert fake.requests[1].messages[3] == {
        "role": "system",
        "content": [{"type": "tool_removal", "tool": {"type": "tool_reference", "name": "ping"}}],
    }
    assert roles(fake.requests[2].messages) == ["user", "assistant", "user", "system", "assistant", "user"]


async def test_a_raw_definition_added_is_never_run_and_stops_a_tool_of_its_name() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="a")), text_reply("Done.")])
    runner = runner_for(fake, [ping])
    search = {"type": "web_search_20250305", "name": "ping"}
    async for message in runner:
        if message.stop_reason == "tool_use":
            runner.add_tools(search)
    assert results_of(runner.messages[2]) == [
        ("a", "Tool 'ping' is not run by this program; no result is available. Continue without it.", True)
    ]
    assert plain(fake.requests[1].messages[3])["content"][0]["tool"]["definition"] == search


async def test_tool_changes_wait_while_a_paused_turn_is_resumed() -> None:
    paused = message_reply([{"type": "text", "text": "Thinking..."}], stop_reason="pause_turn")
    fake = FakeMessagesAPI(
        [paused, tool_reply(tool_call("late", {"city": "Rome"}, id="a")), text_reply("Done.")]
    )
    runner = runner_for(fake, [ping])
    async for message in runner:
        if message.stop_reason == "pause_turn":
            runner.add_tools(late)
    # The paused turn is sent back as it is, last; the change follows the next tool results.
    assert roles(fake.requests[1].messages) == ["user", "assistant"]
    assert roles(fake.requests[2].messages) == ["user", "assistant", "assistant", "user", "system"]
    assert results_of(runner.messages[3]) == [("a", "late Rome", False)]


async def test_removing_a_tool_the_runner_does_not_have_is_refused() -> None:
    runner = runner_for(FakeMessagesAPI(), [ping])
    with pytest.raises(ParamsError, match=r"remove_tools\(\) got 'pong', which is not a tool of this runner"):
        runner.remove_tools("pong")


async def test_system_messages_are_taken_in_histories_push_messages_and_set_messages_params() -> None:
    fake = FakeMessagesAPI([text_reply("One."), text_reply("Two."), text_reply("Three.")])
    system = {"role": "system", "content": "Answer in French."}
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=100, messages=[USER, system], tools=[ping]
    )
    await runner.until_done()
    runner.push_messages({"role": "user", "content": "And?"}, {"role": "system", "content": "Be brief."})
    await runner.until_done()
    runner.set_messages_params(
        lambda params: {
            **params,
            "messages": [*params["messages"], {"role": "user", "content": "More?"}, system],
        }
    )
    await runner.until_done()
    assert roles(fake.requests[2].messages) == [
        "user",
        "system",
        "assistant",
        "user",
        "system",
        "assistant",
        "user",
        "system",
    ]


MISPLACED: list[tuple[list[dict[str, Any]], str]] = [
    ([{"role": "system", "content": "Hi."}, USER], r"messages\[0\] is a system message at the start"),
    (
        [USER, {"role": "assistant", "content": "Hi."}, {"role": "system", "content": "Be brief."}],
        r"messages\[2\] is a system message right after an assistant message",
    ),
    (
        [USER, {"role": "system", "content": "Be brief."}, {"role": "user", "content": "Go."}],
        r"messages\[1\] is a system message followed by a user message",
    ),
    (
        [USER, {"role": "system", "content": [{"type": "image", "source": {}}]}],
        r"messages\[1\] is a system message with a 'image' block",
    ),
    ([USER, {"role": "system", "content": []}], r"messages\[1\] is a system message with no content"),
]


@pytest.mark.parametrize(("messages", "match"), MISPLACED)
async def test_misplaced_system_messages_are_refused_before_they_are_sent(
    messages: list[dict[str, Any]], match: str
) -> None:
    fake = FakeMessagesAPI([text_reply("unused")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=messages)
    with pytest.raises(HistoryError, match=match):
        await runner.until_done()
    assert fake.requests == []


async def test_a_directive_only_system_message_may_stand_anywhere() -> None:
    fake = FakeMessagesAPI([text_reply("Oui.")])
    directive = {"role": "system", "output_config": {"effort": "high"}}
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER, directive])
    await runner.until_done()
    assert fake.requests[0].messages[1] == directive


# -- tool changes kept in the history and the state: they survive push_messages and resume ---------


def removal(name: str) -> dict[str, Any]:
    return {"type": "tool_removal", "tool": {"type": "tool_reference", "name": name}}


UNKNOWN_PING = "There is no tool named 'ping'. The available tools are: 'late'."


async def test_a_removal_in_the_given_history_stops_the_tool_as_the_sdks_runner_does() -> None:
    # (a) a history as the SDK's runner leaves it: its system message removed ping
    history: list[dict[str, Any]] = [
        USER,
        {"role": "assistant", "content": [{"type": "tool_use", "id": "a", "name": "ping", "input": {}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "a", "content": "pong"}]},
        {"role": "system", "content": [removal("ping")]},
    ]
    fake = FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="b")), text_reply("Done.")])
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=100, messages=history, tools=[ping, late]
    )
    await runner.until_done()
    assert results_of(runner.messages[5]) == [("b", UNKNOWN_PING, True)]


async def test_a_removal_pushed_into_the_history_stops_the_tool_and_an_addition_brings_it_back() -> None:
    # (a) push_messages of the SDK runner's system messages mid-run
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("ping", {}, id="a")),
            tool_reply(tool_call("ping", {}, id="b")),
            tool_reply(tool_call("ping", {}, id="c")),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [ping, late])
    addition = {"type": "tool_addition", "tool": {"type": "tool_definition", "definition": ping.to_param()}}
    async for message in runner:
        if runner.requests_sent in (1, 2):
            response = await runner.generate_tool_response()
            assert response is not None
            change = removal("ping") if runner.requests_sent == 1 else addition
            runner.push_messages(message, response, {"role": "system", "content": [change]})
    assert results_of(runner.messages[2]) == [("a", "pong", False)]
    assert results_of(runner.messages[5]) == [("b", UNKNOWN_PING, True)]
    assert results_of(runner.messages[8]) == [("c", "pong", False)]


async def test_a_tool_removed_before_a_checkpoint_stays_removed_when_the_run_is_resumed() -> None:
    # (b) remove_tools(); the process stops after the next reply; the resumed run does not run ping
    checkpointer = MemoryCheckpointer()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("ping", {}, id="a")),
            tool_reply(tool_call("ping", {}, id="b")),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [ping, late], checkpointer=checkpointer, run_id="run")
    async for message in runner:
        if message.stop_reason == "tool_use" and runner.requests_sent == 1:
            runner.remove_tools("ping")
        if runner.requests_sent == 2:
            break
    resumed = await ToolRunner.resume(
        fake.async_client(), checkpointer=checkpointer, run_id="run", tools=[ping, late]
    )
    await resumed.until_done()
    assert results_of(resumed.messages[5]) == [("b", UNKNOWN_PING, True)]
    assert roles(fake.requests[2].messages) == ["user", "assistant", "user", "system", "assistant", "user"]


async def test_tool_changes_not_yet_sent_are_in_the_checkpoint() -> None:
    # (c) the process dies while a tool runs, after remove_tools(): the checkpoint holds the change,
    # which the resumed run sends, and obeys
    checkpointer = MemoryCheckpointer()
    stopped = anyio.CancelScope()

    @tool(idempotent=True)
    async def stop() -> str:
        """Stops the process the first time."""
        if not stopped.cancel_called:
            stopped.cancel()
            await anyio.sleep_forever()
        return "stopped"

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("stop", {}, id="a")),
            tool_reply(tool_call("ping", {}, id="b")),
            text_reply("Done."),
        ]
    )
    runner = runner_for(fake, [ping, stop], checkpointer=checkpointer, run_id="run")
    with stopped:
        async for message in runner:
            if message.stop_reason == "tool_use":
                runner.remove_tools("ping")
                assert runner.state.tool_changes == (removal("ping"),)
    loaded = await checkpointer.load("run")
    assert loaded is not None
    assert loaded.state.tool_changes == (removal("ping"),)
    resumed = await ToolRunner.resume(
        fake.async_client(), checkpointer=checkpointer, run_id="run", tools=[ping, stop]
    )
    await resumed.until_done()
    assert fake.requests[1].messages[-1] == {"role": "system", "content": [removal("ping")]}
    assert results_of(resumed.messages[5]) == [
        ("b", "There is no tool named 'ping'. The available tools are: 'stop'.", True)
    ]
    assert resumed.state.tool_changes == ()


async def test_a_tool_added_mid_run_is_given_again_on_resume_and_runs_without_changing_the_tools_param() -> (
    None
):
    # (d) add_tools(late); the run is resumed with late given again: the requests are those of the
    # uninterrupted run
    def script() -> FakeMessagesAPI:
        return FakeMessagesAPI(
            [
                tool_reply(tool_call("ping", {}, id="a")),
                tool_reply(tool_call("late", {"city": "Oslo"}, id="b")),
                text_reply("Done."),
            ]
        )

    whole = script()
    runner = runner_for(whole, [ping])
    async for message in runner:
        if message.stop_reason == "tool_use" and runner.requests_sent == 1:
            runner.add_tools(late)

    checkpointer = MemoryCheckpointer()
    fake = script()
    runner = runner_for(fake, [ping], checkpointer=checkpointer, run_id="run")
    async for message in runner:
        if message.stop_reason == "tool_use" and runner.requests_sent == 1:
            runner.add_tools(late)
        if runner.requests_sent == 2:
            break
    with pytest.raises(ParamsError, match=r"\['ping'\].*pass them in tools"):
        await ToolRunner.resume(fake.async_client(), checkpointer=checkpointer, run_id="run", tools=[late])
    resumed = await ToolRunner.resume(
        fake.async_client(), checkpointer=checkpointer, run_id="run", tools=[ping, late]
    )
    await resumed.until_done()
    assert results_of(resumed.messages[5]) == [("b", "late Oslo", False)]
    assert fake.requests[1].body == whole.requests[1].body
    assert fake.requests[2].body == whole.requests[2].body  # the tools param and the tool_addition above all
    assert fake.requests[2].tools == [ping.to_param()]
    assert resumed.state.tools == ("ping",)


async def test_a_tool_neither_of_the_run_nor_added_by_it_is_refused_on_resume() -> None:
    checkpointer = MemoryCheckpointer()
    fake = FakeMessagesAPI([text_reply("Done.")])
    await runner_for(fake, [ping], checkpointer=checkpointer, run_id="run").until_done()
    with pytest.raises(ParamsError, match=r"\['late'\] are not tools of the saved run 'run'"):
        await ToolRunner.resume(
            fake.async_client(), checkpointer=checkpointer, run_id="run", tools=[ping, late]
        )


def test_pending_tool_changes_round_trip_and_older_states_load_with_none() -> None:
    state = RunState(params={"model": MODEL}, messages=(USER,), tool_changes=(removal("ping"),))
    text = state.to_json()
    assert RunState.from_json(text).tool_changes == (removal("ping"),)
    assert RunState.from_json(text).to_json() == text
    data = json.loads(text)
    del data["tool_changes"]
    data["version"] = 2
    assert RunState.from_json(json.dumps(data)).tool_changes == ()


async def test_a_removal_stays_in_force_when_a_compaction_replaces_the_message_that_sent_it() -> None:
    # as the SDK's runner: the compaction block carries no tool_changes here, and ping, removed by a
    # system message the compaction replaced, stays removed
    compacted = message_reply([{"type": "compaction", "content": "Ping was used."}], stop_reason="compaction")
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("ping", {}, id="a")),
            tool_reply(tool_call("late", {"city": "Oslo"}, id="b")),
            compacted,
            tool_reply(tool_call("ping", {}, id="c")),
            text_reply("Done."),
        ],
        validate=False,  # the fake does not know compaction blocks, which stand first in the history
    )
    runner = runner_for(fake, [ping, late])
    async for message in runner:
        if runner.requests_sent == 1:
            response = await runner.generate_tool_response()
            assert response is not None
            runner.push_messages(message, response, {"role": "system", "content": [removal("ping")]})
        if runner.requests_sent == 2:
            runner.compact_before_next_turn()
    assert roles(fake.requests[3].messages) == ["assistant"]
    assert results_of(runner.messages[2]) == [("c", UNKNOWN_PING, True)]


PUSHED_MISPLACED: list[tuple[list[dict[str, Any]], str]] = [
    (
        [{"role": "system", "content": "Be brief."}],
        r"messages\[2\] is a system message right after an assistant",
    ),
    (
        [{"role": "user", "content": "And?"}, {"role": "system", "content": "Be brief."}, USER],
        r"messages\[3\] is a system message followed by a user message",
    ),
    (
        [
            {"role": "user", "content": "And?"},
            {"role": "system", "content": [{"type": "image", "source": {}}]},
        ],
        r"messages\[3\] is a system message with a 'image' block",
    ),
    (
        [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_x", "content": "?"}]}],
        r"messages\[2\] has tool_result block\(s\) for \['toolu_x'\]",
    ),
]


@pytest.mark.parametrize(("pushed", "match"), PUSHED_MISPLACED)
async def test_push_messages_refuses_a_history_that_could_never_be_sent_and_appends_nothing(
    pushed: list[dict[str, Any]], match: str
) -> None:
    fake = FakeMessagesAPI([text_reply("One.")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER])
    await runner.until_done()
    before = runner.messages
    with pytest.raises(HistoryError, match=match):
        runner.push_messages(*pushed)
    assert runner.messages == before
    assert runner.end_reason == "model"  # the loop stays ended: nothing was steered


async def test_set_messages_params_refuses_a_history_that_could_never_be_sent_and_changes_nothing() -> None:
    fake = FakeMessagesAPI([text_reply("One.")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[ping])
    await runner.until_done()
    before, tools = runner.messages, runner.params["tools"]
    with pytest.raises(HistoryError, match=r"messages\[0\] is a system message at the start"):
        runner.set_messages_params(
            lambda params: {**params, "tools": [], "messages": [{"role": "system", "content": "Hi."}, USER]}
        )
    assert runner.messages == before
    assert runner.params["tools"] == tools


async def test_a_pushed_reply_may_wait_for_its_results() -> None:
    # The body may push a reply whose calls the run answers next: it is not refused at the push.
    fake = FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="toolu_p")), text_reply("Done.")])
    runner = ToolRunner(fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[ping])
    async for message in runner:
        if message.stop_reason == "tool_use":
            runner.push_messages(message)
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]

"""Mistakes of the program, each with a message that says what to do: constructor arguments, pushed
messages, ``set_messages_params`` and histories the service would reject raise at once, before
anything is sent, and leave the runner as it was. (tests/runner/test_construction.py covers the
first cases; these extend them. Mistakes of the model and failures of tools:
tests/tools/test_tool_failures.py.)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any, cast

import anthropic
import anyio
import pytest

from tests.support.helpers import MODEL, TEA_USER, build, results
from tests.support.reliability_helpers import pairing_problems, plain
from toolrunner import (
    HistoryError,
    ParamsError,
    ToolContext,
    ToolRunner,
    ToolRunnerError,
    UnansweredToolUseError,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

# -- constructor arguments -------------------------------------------------------------------------------


def _case_id(value: object) -> str:
    return repr(cast("dict[str, Any]", value)) if isinstance(value, dict) else ""


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"max_iterations": True}, "max_iterations must be a positive int or None, not True"),
        ({"max_iterations": 2.5}, "max_iterations must be a positive int or None, not 2.5"),
        ({"max_concurrency": 0}, "max_concurrency must be a positive int or None, not 0"),
        ({"max_concurrency": "4"}, "max_concurrency must be a positive int or None, not '4'"),
        ({"tool_timeout": -1}, "tool_timeout must be a positive number of seconds or None, not -1"),
        ({"tool_timeout": "30s"}, "tool_timeout must be a positive number of seconds or None, not '30s'"),
        (
            {"tool_timeout": float("nan")},
            "tool_timeout must be a positive number of seconds or None, not nan",
        ),
        ({"messages": None}, "messages must be a list of message params, not 'NoneType'; for example"),
        ({"messages": b"hi"}, "messages must be a list of message params, not 'bytes'"),
        (
            {"maxtokens": 64},
            "'maxtokens' is not a parameter of client.messages.create. Did you mean 'max_tokens'",
        ),
    ],
    ids=_case_id,
)
def test_invalid_numbers_and_params_are_refused_with_what_to_pass(
    overrides: dict[str, Any], match: str
) -> None:
    with pytest.raises(ParamsError, match=match.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        build(**overrides)


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        (
            {"messages": [{"content": "hi"}]},
            HistoryError,
            "message 0 has role None; a message's role is 'user', 'assistant' or 'system'",
        ),
        (
            {"messages": [TEA_USER, "and more"]},
            HistoryError,
            "message 1 is a 'str'; a message is a dict like",
        ),
        ({"messages": [{"role": "user"}]}, HistoryError, "message 0 has content of type 'NoneType'"),
    ],
)
def test_invalid_messages_at_construction_name_the_message(
    overrides: dict[str, Any], error: type[Exception], match: str
) -> None:
    with pytest.raises(error, match=match):
        build(**overrides)


def test_a_boolean_tool_timeout_is_refused() -> None:
    with pytest.raises(ParamsError, match="tool_timeout"):
        build(tool_timeout=True)


def test_a_result_adapter_that_is_not_one_is_refused() -> None:
    with pytest.raises(ParamsError, match="result_adapter"):
        build(result_adapter="json")


# -- what the program pushes ------------------------------------------------------------------------------


def dangling(tool_use_id: str = "t_dangling") -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": tool_use_id, "name": "ping", "input": {}}],
    }


@pytest.mark.anyio
async def test_a_pushed_dangling_tool_use_is_refused_before_sending_and_can_be_repaired() -> None:
    fake = FakeMessagesAPI([text_reply("Hi"), text_reply("Pong.")])
    runner = build(fake)
    with pytest.raises(UnansweredToolUseError) as caught:
        async for message in runner:
            runner.push_messages(
                message, {"role": "user", "content": "x"}, dangling(), {"role": "user", "content": "?"}
            )
    text = str(caught.value)
    assert "messages[3] has tool_use block(s) ['t_dangling'] that messages[4] does not answer" in text
    assert "Follow that assistant message with a user message that starts with a tool_result for each" in text
    assert len(fake.requests) == 1  # nothing was sent
    runner.set_messages_params(lambda params: {**params, "messages": params["messages"][:2]})
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert len(fake.requests) == 2


@pytest.mark.anyio
async def test_a_pushed_tool_use_as_the_last_message_is_answered_not_refused() -> None:
    fake = FakeMessagesAPI([text_reply("Hi"), text_reply("Pong.")])
    runner = build(fake)
    async for message in runner:
        if runner.requests_sent == 1:
            runner.push_messages(message, {"role": "user", "content": "ping"}, dangling("t_last"))
    assert plain(fake.requests[1].body["messages"][-1]) == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t_last", "content": "pong"}],
    }


@pytest.mark.parametrize(
    ("messages", "match"),
    [
        (("hello",), "message 0 is a 'str'; a message is a dict like"),
        (([TEA_USER, TEA_USER],), "message 0 is a 'list'; a message is a dict like"),
        ((None,), "message 0 is a 'NoneType'"),
        (
            ({"role": "model", "content": "Be brief."},),
            "role 'model'.*for the system prompt, use the system= param",
        ),
        (({"role": "user"},), "message 0 has content of type 'NoneType'; content is a string or a list"),
        (({"role": "user", "content": {"type": "text", "text": "hi"}},), "content of type 'dict'"),
        ((TEA_USER, {"content": "no role"}), "message 1 has role None"),
    ],
    ids=["string", "list not unpacked", "None", "unknown role", "no content", "content a block", "no role"],
)
def test_push_messages_refuses_wrong_shapes_and_appends_nothing(
    messages: tuple[Any, ...], match: str
) -> None:
    runner = build()
    with pytest.raises(HistoryError, match=match):
        runner.push_messages(*messages)
    assert plain(runner.messages) == [TEA_USER]


# -- set_messages_params -----------------------------------------------------------------------------------


def _without_messages(params: dict[str, Any]) -> Any:
    return {key: value for key, value in params.items() if key != "messages"}


def _with(**changes: Any) -> Callable[[dict[str, Any]], Any]:
    return lambda params: {**params, **changes}


def _with_bad_message(params: dict[str, Any]) -> Any:
    return {**params, "messages": [*params["messages"], 3]}


def _items(params: dict[str, Any]) -> Any:
    return params.items()


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        (_without_messages, ParamsError, "params need 'messages'"),
        (_with(messages="hi"), ParamsError, "messages must be a list of message params, not 'str'"),
        (_with_bad_message, HistoryError, "message 1 is a 'int'"),
        (
            _with(stop_sequence=["END"]),
            ParamsError,
            "'stop_sequence' is not a parameter.*Did you mean 'stop_sequences'",
        ),
        (_with(max_iterations=3), ParamsError, "Pass runner options"),
        (_items, ParamsError, "returned 'dict_items', not a mapping"),
    ],
    ids=["no messages", "messages a string", "a bad message", "misspelt param", "runner option", "items"],
)
def test_set_messages_params_refuses_bad_params_and_keeps_the_old_ones(
    change: Callable[[dict[str, Any]], Any], error: type[Exception], match: str
) -> None:
    runner = build()
    before = dict(runner.params)
    with pytest.raises(error, match=match):
        runner.set_messages_params(change)
    assert dict(runner.params) == before


def test_an_error_inside_the_function_given_to_set_messages_params_propagates_unchanged() -> None:
    runner = build()

    def broken(params: dict[str, Any]) -> dict[str, Any]:
        raise KeyError("system")

    with pytest.raises(KeyError, match="system"):
        runner.set_messages_params(broken)
    assert plain(runner.messages) == [TEA_USER]


@pytest.mark.anyio
async def test_after_a_refused_change_the_loop_goes_on_as_before() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="p")), text_reply("Pong.")])
    runner = build(fake)
    async for _ in runner:
        with pytest.raises(ParamsError):
            runner.set_messages_params(lambda _: None)  # type: ignore[arg-type, return-value]
        with pytest.raises(HistoryError):
            runner.push_messages({"role": "tool", "content": "x"})
    # Neither refused change counts as a change: the reply and its results were appended.
    assert [m["role"] for m in plain(runner.messages)] == ["user", "assistant", "user", "assistant"]
    assert results(runner) == [("p", "pong", False)]


def test_a_sync_client_error_names_the_async_runner() -> None:
    with pytest.raises(ParamsError, match=r"not 'module'; create one with anthropic\.AsyncAnthropic\(\)"):
        ToolRunner(anthropic, model=MODEL, max_tokens=1, messages=[TEA_USER])  # type: ignore[arg-type]


# -- histories the service would reject, made by the program ---------------------------------------------


@pytest.mark.anyio
async def test_a_pushed_tool_result_without_its_tool_use_is_refused_before_sending() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("ping", {}, id="p")), text_reply("Pong.")])
    runner = build(fake)
    with pytest.raises(HistoryError, match="'p'"):
        async for _ in runner:
            response = await runner.generate_tool_response()
            if response is not None:
                runner.push_messages(response)  # forgot to push the reply first
    assert len(fake.requests) == 1


@pytest.mark.anyio
async def test_a_tool_that_pushes_messages_while_it_runs_cannot_break_the_history() -> None:
    @tool
    async def take_note(ctx: ToolContext) -> str:
        """Take a note (and, by mistake, push it into the history)."""
        ctx.runner.push_messages({"role": "user", "content": "a note from the tool"})
        return "noted"

    fake = FakeMessagesAPI([tool_reply(tool_call("take_note", {}, id="n")), text_reply("Noted.")])
    runner = build(fake, tools=[take_note])
    # Refusing the push is a fix too; either way no request may break the pairing.
    with contextlib.suppress(ToolRunnerError, anthropic.BadRequestError):
        await runner.until_done()
    assert not pairing_problems(runner.messages, allow_trailing=True)
    for request in fake.requests:
        assert not pairing_problems(request.messages), request.messages


@pytest.mark.anyio
async def test_a_tool_that_closes_the_runner_while_it_runs_ends_the_loop_with_a_whole_history() -> None:
    @tool
    async def stop_here(ctx: ToolContext) -> str:
        """Stop the loop after this call."""
        ctx.runner.close()
        return "stopping"

    fake = FakeMessagesAPI([tool_reply(tool_call("stop_here", {}, id="s")), text_reply("never sent")])
    runner = build(fake, tools=[stop_here])
    await runner.until_done()
    assert len(fake.requests) == 1
    assert runner.finished
    assert [m["role"] for m in plain(runner.messages)][:2] == ["user", "assistant"]
    assert sum(m["role"] == "assistant" for m in plain(runner.messages)) == 1
    assert not pairing_problems(runner.messages, allow_trailing=True)


@pytest.mark.anyio
async def test_iterating_one_runner_from_two_tasks_is_refused_and_the_first_goes_on() -> None:
    gate = anyio.Event()
    runs: list[str] = []

    @tool
    async def slow_ping() -> str:
        """Answer pong, once the gate opens."""
        runs.append("ping")
        await gate.wait()
        return "pong"

    fake = FakeMessagesAPI([tool_reply(tool_call("slow_ping", {}, id="p")), text_reply("Pong.")])
    runner = build(fake, tools=[slow_ping])
    async for _ in runner:
        break  # the body holds a reply whose call is pending
    async with anyio.create_task_group() as group:
        group.start_soon(runner.until_done)
        await anyio.sleep(0.01)  # the first task now runs the tool
        with pytest.raises(
            ToolRunnerError, match="already advancing in another task; iterate a runner from one"
        ):
            await runner.until_done()
        with pytest.raises(ToolRunnerError, match="change the history from the loop body"):
            runner.push_messages({"role": "user", "content": "and now?"})
        gate.set()
    assert runs == ["ping"]
    assert len(fake.requests) == 2
    assert runner.finished

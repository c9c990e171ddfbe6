"""Mistakes at construction raise at once, with a message that says what to do."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.helpers import MODEL, USER, make_runner
from toolrunner import HistoryError, ParamsError, ToolDefinitionError, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI


@tool
async def ping() -> str:
    """Ping."""
    return "pong"


def build(**overrides: Any) -> ToolRunner:
    return make_runner(FakeMessagesAPI([]), ping, **overrides)


def test_a_valid_runner_exposes_its_params() -> None:
    runner = build()
    assert runner.params["model"] == MODEL
    assert runner.params["messages"] == [USER]
    assert runner.params["tools"] == [ping]
    with pytest.raises(TypeError):
        runner.params["model"] = "other"  # type: ignore[index]


def test_the_callers_messages_list_is_not_changed() -> None:
    messages = [USER]
    runner = build(messages=messages)
    runner.push_messages({"role": "assistant", "content": "hi"})
    assert messages == [USER]


@pytest.mark.parametrize("missing", ["model", "max_tokens", "messages"])
def test_missing_required_params(missing: str) -> None:
    options: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [USER]}
    del options[missing]
    with pytest.raises(ParamsError, match=rf"need '{missing}'"):
        ToolRunner(FakeMessagesAPI([]).async_client(), **options)


@pytest.mark.parametrize(
    ("overrides", "error", "match"),
    [
        ({"messages": "hello"}, ParamsError, "messages must be a list"),
        ({"messages": {"role": "user"}}, ParamsError, "messages must be a list"),
        ({"messages": [{"role": "bot", "content": "x"}]}, HistoryError, "role 'bot'.*system= param"),
        ({"messages": [42]}, HistoryError, "message 0 is a 'int'"),
        ({"messages": [{"role": "user", "content": 3}]}, HistoryError, "content is a string or a list"),
        ({"tools": [ping, ping]}, ToolDefinitionError, "two tools are named 'ping'"),
        ({"tools": [42]}, ToolDefinitionError, "42 is not a tool"),
        ({"tools": [{"type": "web_search_20250305"}]}, ParamsError, "has no 'name'"),
        ({"tools": "ping"}, ParamsError, "tools must be a list"),
        ({"max_token": 5}, ParamsError, "'max_token' is not a parameter.*Did you mean 'max_tokens'"),
        ({"max_iterations": 0}, ParamsError, "max_iterations must be a positive int"),
        ({"max_concurrency": -1}, ParamsError, "max_concurrency must be a positive int"),
        ({"tool_timeout": 0}, ParamsError, "tool_timeout must be a positive number"),
    ],
)
def test_bad_arguments(overrides: dict[str, Any], error: type[Exception], match: str) -> None:
    with pytest.raises(error, match=match):
        build(**overrides)


def test_a_client_that_is_not_an_anthropic_client() -> None:
    with pytest.raises(ParamsError, match=r"anthropic\.AsyncAnthropic"):
        ToolRunner(object(), model=MODEL, max_tokens=1, messages=[USER])  # type: ignore[arg-type]


def test_plain_functions_are_made_into_tools() -> None:
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    runner = build(tools=[add])
    assert runner.params["tools"][0].name == "add"


def test_push_messages_checks_shape_and_role() -> None:
    runner = build()
    with pytest.raises(HistoryError, match="message 1 has role 'tool'"):
        runner.push_messages({"role": "user", "content": "ok"}, {"role": "tool", "content": "x"})
    assert runner.messages == [USER]  # nothing was appended


@pytest.mark.parametrize("returned", [None, 42, ["messages"]])
def test_set_messages_params_with_a_function_that_returns_no_mapping(returned: object) -> None:
    runner = build()
    with pytest.raises(ParamsError, match=r"returned .* not a mapping"):
        runner.set_messages_params(lambda _: returned)  # type: ignore[arg-type,return-value]
    assert runner.messages == [USER]


def test_set_messages_params_with_something_else() -> None:
    with pytest.raises(ParamsError, match="takes a mapping of params or a function"):
        build().set_messages_params(42)  # type: ignore[arg-type]


def test_streaming_options_that_do_not_fit() -> None:
    with pytest.raises(ParamsError, match="run_tools_eagerly=True needs stream=True"):
        build(run_tools_eagerly=True)
    with pytest.raises(ParamsError, match=r"ToolRunner\(stream=True\) needs an anthropic\.AsyncAnthropic"):
        ToolRunner(FakeMessagesAPI([]).client(), model=MODEL, max_tokens=1, messages=[USER], stream=True)  # type: ignore[call-overload]


@pytest.mark.parametrize(
    ("overrides", "match"),
    [
        ({"max_total_tokens": 0}, "max_total_tokens must be a positive int"),
        ({"max_cost": -1}, "max_cost must be a positive amount"),
        ({"max_cost": "lots"}, "max_cost must be a positive amount"),
        ({"on_limit": "panic"}, "on_limit must be 'stop' or 'final_answer'"),
        ({"max_cost": 1, "model": "my-own-model"}, "max_cost needs a price for model 'my-own-model'"),
    ],
)
def test_bad_budgets(overrides: dict[str, Any], match: str) -> None:
    with pytest.raises(ParamsError, match=match):
        build(**overrides)

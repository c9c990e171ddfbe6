"""A program's misuse is refused before anything is sent, with what to do instead (docs/errors.md,
"Hostile replies"): params no request could carry, the wrong front end (a plain ``for`` loop, a sync
runner inside an event loop), a misspelled option, histories holding NaN.
"""

from __future__ import annotations

from typing import Any

import anthropic
import anyio
import pytest

from tests.support.counted_tools import look_numbered as look
from tests.support.helpers import MODEL, USER, make_runner
from toolrunner import (
    HistoryError,
    ParamsError,
    SyncToolRunner,
    ToolRunner,
    ToolRunnerError,
)
from toolrunner.testing import FakeMessagesAPI, text_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

# -- 12. params that cannot be sent ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("params", "match"),
    [
        ({"model": None, "max_tokens": 10}, "model must be a model id"),
        ({"model": "", "max_tokens": 10}, "model must be a model id"),
        ({"model": MODEL, "max_tokens": "100"}, "max_tokens must be a positive int, not '100'"),
        ({"model": MODEL, "max_tokens": 0}, "max_tokens must be a positive int"),
        ({"model": MODEL, "max_tokens": True}, "max_tokens must be a positive int"),
        ({"model": MODEL, "max_token": 10}, "'max_token' is not a parameter.*Did you mean 'max_tokens'"),
    ],
)
async def test_params_that_cannot_be_sent_are_refused_before_anything_is_sent(
    params: dict[str, Any], match: str
) -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    with pytest.raises(ParamsError, match=match):
        ToolRunner(fake.async_client(), messages=[USER], **params)
    runner = make_runner(fake, look)
    with pytest.raises(ParamsError, match=match):
        runner.set_messages_params({"messages": [USER], **params})
    assert fake.requests == []


# -- 13. the wrong front end ---------------------------------------------------------------------------


def test_a_plain_for_loop_over_a_tool_runner_says_what_to_use() -> None:
    runner = make_runner(FakeMessagesAPI([]), look)
    with pytest.raises(TypeError, match=r"use `async for message in runner`.*SyncToolRunner"):
        iter(runner)  # pyright: ignore[reportUnusedCallResult]  # what a `for` loop calls first


async def test_a_sync_runner_inside_an_event_loop_is_refused() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER])
    with pytest.raises(ToolRunnerError, match=r"inside a running (asyncio|trio) event loop"):
        for _ in runner:
            pass
    with pytest.raises(ToolRunnerError, match="inside a running"):
        runner.until_done()
    assert fake.requests == []


async def test_a_sync_runner_in_a_worker_thread_of_an_event_loop_runs() -> None:
    fake = FakeMessagesAPI([text_reply("fine")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER])
    final = await anyio.to_thread.run_sync(runner.until_done)
    assert isinstance(final, anthropic.types.Message)


# -- params and histories no request could carry ---------------------------------------------------


@pytest.mark.parametrize(
    ("options", "hint"),
    [
        ({"max_iteration": 3}, "max_iterations"),
        ({"max_total_token": 9}, "max_total_tokens"),
        ({"max_token": 9}, "max_tokens"),
    ],
)
def test_a_misspelled_option_or_param_gets_the_nearest_name(options: dict[str, Any], hint: str) -> None:
    with pytest.raises(ParamsError, match=f"Did you mean {hint!r}"):
        make_runner(FakeMessagesAPI([]), look, **options)


def test_a_param_with_lone_surrogates_is_refused_before_anything_is_sent() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    with pytest.raises(ParamsError, match="'system' holds text with lone surrogates"):
        make_runner(fake, look, system="Files: caf\udce9.txt")
    runner = make_runner(fake, look)
    with pytest.raises(ParamsError, match="'system' holds text with lone surrogates"):
        runner.set_messages_params(lambda params: {**params, "system": "caf\udce9"})
    assert fake.requests == []


@pytest.mark.parametrize("number", [float("nan"), float("inf"), -float("inf")])
def test_a_given_history_holding_nan_is_refused_with_what_to_do(number: float) -> None:
    history = [
        USER,
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "a", "name": "look", "input": {"v": number}}],
        },
    ]
    with pytest.raises(HistoryError, match="message 1 holds a NaN or infinite number"):
        ToolRunner(FakeMessagesAPI([]).async_client(), model=MODEL, max_tokens=64, messages=history)
    runner = make_runner(FakeMessagesAPI([]), look)
    with pytest.raises(HistoryError, match="message 0 holds a NaN"):
        runner.push_messages({"role": "user", "content": [{"type": "text", "text": "x", "v": number}]})

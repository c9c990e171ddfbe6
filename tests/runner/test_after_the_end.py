"""A finished conversation opens again only by a follow-up (docs/errors.md, "Hostile replies"): a
follow-up pushed after the end, new params, and a token budget that counts the whole runner.
"""

from __future__ import annotations

import pytest

from tests.support.counted_tools import look_numbered as look
from tests.support.helpers import make_runner, roles
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

# -- 10. a follow-up after the end ----------------------------------------------------------------------


async def test_a_follow_up_pushed_after_the_end_opens_the_loop_again() -> None:
    fake = FakeMessagesAPI(
        [text_reply("Paris."), tool_reply(tool_call("look", {"q": "b"})), text_reply("Berlin.")]
    )
    runner = make_runner(fake, look, max_iterations=2)
    await runner.until_done()
    assert runner.finished
    runner.push_messages({"role": "user", "content": "And Berlin?"})
    assert not runner.finished
    assert runner.end_reason is None
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert len(fake.requests) == 3  # max_iterations counts from the reopening: 2 more
    assert runner.end_reason == "model"
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant", "user", "assistant"]


async def test_a_closed_loop_yields_nothing_until_a_follow_up_opens_it_again() -> None:
    fake = FakeMessagesAPI([text_reply("one"), text_reply("two")])
    runner = make_runner(fake, look)
    await runner.aclose()
    assert [message async for message in runner] == []
    assert runner.end_reason == "closed"
    runner.push_messages({"role": "user", "content": "Still there?"})
    assert (await runner.until_done()).content[0].type == "text"
    assert len(fake.requests) == 1


async def test_set_messages_params_after_the_end_opens_the_loop_again() -> None:
    fake = FakeMessagesAPI([text_reply("one"), text_reply("two")])
    runner = make_runner(fake, look)
    await runner.until_done()
    runner.set_messages_params(lambda params: {**params, "messages": [{"role": "user", "content": "Again."}]})
    assert (await runner.until_done()).content[0].type == "text"
    assert len(fake.requests) == 2


async def test_a_token_budget_counts_the_whole_runner_so_a_follow_up_over_it_is_not_sent() -> None:
    fake = FakeMessagesAPI([text_reply("one")])
    runner = make_runner(fake, look, max_total_tokens=10)
    await runner.until_done()  # the fake's usage: 15 tokens
    runner.push_messages({"role": "user", "content": "More?"})
    async for _ in runner:
        pytest.fail("no request over the budget")
    assert runner.end_reason == "token_budget"
    assert len(fake.requests) == 1

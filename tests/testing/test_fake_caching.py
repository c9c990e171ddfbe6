"""The fake's prompt-cache accounting, through the real SDK: reads, writes, and what stops them."""

from __future__ import annotations

from typing import Any, cast

import anthropic
import pytest
from anthropic.types import Message, Usage

from toolrunner.testing import FakeMessagesAPI, PromptCache, text_reply

FIVE: dict[str, Any] = {"type": "ephemeral"}
HOUR: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"}
BIG = "All work and no play makes Jack a dull boy. " * 40  # about 450 tokens of the fake's counting


def text(value: str, cache_control: dict[str, Any] | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "text", "text": value}
    return block if cache_control is None else {**block, "cache_control": cache_control}


def user(*blocks: dict[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(value: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text(value)]}


def create(client: anthropic.Anthropic, **body: Any) -> Message:
    """``client.messages.create`` with params written as plain dicts."""
    return cast(Message, client.messages.create(**body))


def send(fake: FakeMessagesAPI, messages: list[dict[str, Any]], **params: Any) -> Usage:
    fake.add(text_reply("ok"))
    with fake.client() as client:
        return create(client, model="claude-sonnet-4-6", max_tokens=10, messages=messages, **params).usage


def tokens(cache: PromptCache, *blocks: object) -> int:
    return sum(cache.count_tokens(block) for block in blocks)


def test_without_breakpoints_every_input_token_is_uncached_and_counted() -> None:
    cache = PromptCache(min_tokens=0)
    fake = FakeMessagesAPI(prompt_cache=cache)
    first = send(fake, [user(text(BIG))], system=BIG)
    assert first.input_tokens == tokens(cache, text(BIG), text(BIG))
    assert first.output_tokens == tokens(cache, text("ok"))
    again = send(fake, [user(text(BIG))], system=BIG)
    assert again == first  # nothing asked to cache, so nothing is read
    assert len(cache) == 0


def test_a_prefix_is_written_once_then_read_and_the_conversation_moves_forward() -> None:
    cache = PromptCache(min_tokens=0)
    fake = FakeMessagesAPI(prompt_cache=cache)
    history = [user(text(BIG))]
    first = send(fake, history, system=BIG, cache_control=FIVE)
    prompt = tokens(cache, text(BIG), text(BIG))
    assert (first.input_tokens, first.cache_read_input_tokens, first.cache_creation_input_tokens) == (
        0,
        0,
        prompt,
    )
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_5m_input_tokens == prompt
    history += [assistant("Read it."), user(text("And now?"))]
    second = send(fake, history, system=BIG, cache_control=FIVE)
    new = tokens(cache, text("Read it."), text("And now?"))
    assert (second.input_tokens, second.cache_read_input_tokens, second.cache_creation_input_tokens) == (
        0,
        prompt,
        new,
    )


def test_the_tokens_after_the_last_breakpoint_are_plain_input() -> None:
    cache = PromptCache(min_tokens=0)
    fake = FakeMessagesAPI(prompt_cache=cache)
    system = [text(BIG, FIVE)]
    first = send(fake, [user(text("Question one?"))], system=system)
    second = send(fake, [user(text("Question two, longer?"))], system=system)
    assert first.cache_creation_input_tokens == second.cache_read_input_tokens == tokens(cache, text(BIG))
    assert second.cache_creation_input_tokens == 0
    assert second.input_tokens == tokens(cache, text("Question two, longer?"))


def test_a_prefix_shorter_than_the_minimum_is_not_cached() -> None:
    cache = PromptCache()  # 1,024 tokens
    fake = FakeMessagesAPI(prompt_cache=cache)
    usage = send(fake, [user(text("Short."))], cache_control=FIVE)
    assert (usage.input_tokens, usage.cache_creation_input_tokens) == (tokens(cache, text("Short.")), 0)
    assert len(cache) == 0


def test_a_breakpoint_looks_back_twenty_blocks_and_no_further() -> None:
    cache = PromptCache(min_tokens=0)
    fake = FakeMessagesAPI(prompt_cache=cache)
    history = [user(text(BIG))]
    send(fake, history, cache_control=FIVE)
    near = [*history, assistant("a"), user(*(text(str(n)) for n in range(18)))]  # 19 blocks later
    assert send(fake, near, cache_control=FIVE).cache_read_input_tokens == tokens(cache, text(BIG))
    cache.expire()
    send(fake, history, cache_control=FIVE)
    far = [*history, assistant("a"), user(*(text(str(n)) for n in range(19)))]  # 20 blocks later
    assert send(fake, far, cache_control=FIVE).cache_read_input_tokens == 0


def test_one_hour_writes_are_reported_apart_and_outlive_a_five_minute_pause() -> None:
    cache = PromptCache(min_tokens=0)
    fake = FakeMessagesAPI(prompt_cache=cache)
    messages = [user(text(BIG))]
    first = send(fake, messages, system=[text(BIG, HOUR)], cache_control=FIVE)
    assert first.cache_creation is not None
    assert first.cache_creation.ephemeral_1h_input_tokens == tokens(cache, text(BIG))
    assert first.cache_creation.ephemeral_5m_input_tokens == tokens(cache, text(BIG))
    cache.expire("5m")
    after_pause = send(fake, messages, system=[text(BIG, HOUR)], cache_control=FIVE)
    assert after_pause.cache_read_input_tokens == tokens(cache, text(BIG))  # the system prompt's hour entry
    assert after_pause.cache_creation_input_tokens == tokens(cache, text(BIG))
    cache.expire()
    assert send(fake, messages, system=[text(BIG, HOUR)], cache_control=FIVE).cache_read_input_tokens == 0


def test_a_breakpoint_is_not_content_but_the_model_and_tool_choice_are_part_of_the_prefix() -> None:
    cache = PromptCache(min_tokens=0)
    fake = FakeMessagesAPI(prompt_cache=cache)
    tools = [{"name": "look", "description": BIG, "input_schema": {"type": "object"}}]
    send(fake, [user(text(BIG))], tools=tools, system=[text(BIG, FIVE)], cache_control=FIVE)
    moved = send(
        fake, [user(text(BIG)), assistant("x"), user(text("y"))], tools=tools, system=BIG, cache_control=FIVE
    )
    assert moved.cache_read_input_tokens == tokens(cache, tools[0], text(BIG), text(BIG))
    other_choice = send(
        fake,
        [user(text(BIG))],
        tools=tools,
        system=[text(BIG, FIVE)],
        cache_control=FIVE,
        tool_choice={"type": "none"},
    )
    assert other_choice.cache_read_input_tokens == tokens(cache, tools[0], text(BIG))  # tools and system only
    with fake.client() as client:
        fake.add(text_reply("ok"))
        other_model = create(
            client, model="claude-opus-4-8", max_tokens=10, messages=[user(text(BIG))], cache_control=FIVE
        ).usage
    assert other_model.cache_read_input_tokens == 0


def test_a_streamed_reply_reports_the_same_usage() -> None:
    cache = PromptCache(min_tokens=0)
    fake = FakeMessagesAPI([text_reply("ok"), text_reply("ok")], prompt_cache=cache)
    with fake.client() as client:
        body: dict[str, Any] = {
            "model": "m",
            "max_tokens": 10,
            "messages": [user(text(BIG))],
            "cache_control": FIVE,
        }
        with client.messages.stream(**body) as stream:
            streamed = stream.get_final_message().usage
        plain = create(client, **body).usage
    assert streamed.cache_creation_input_tokens == plain.cache_read_input_tokens == tokens(cache, text(BIG))


def test_a_replys_own_usage_wins() -> None:
    fake = FakeMessagesAPI(prompt_cache=PromptCache(min_tokens=0))
    fake.add(text_reply("ok", usage={"input_tokens": 7, "cache_read_input_tokens": 3}))
    with fake.client() as client:
        usage = create(
            client, model="m", max_tokens=10, messages=[{"role": "user", "content": BIG}], cache_control=FIVE
        ).usage
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (7, 3)


def rejection(body: dict[str, Any]) -> str:
    fake = FakeMessagesAPI([text_reply("never sent")])
    with fake.client() as client, pytest.raises(anthropic.BadRequestError) as caught:
        client.post("/v1/messages", body={"model": "m", "max_tokens": 10, **body}, cast_to=object)
    return cast(dict[str, Any], caught.value.body)["error"]["message"]


def test_more_than_four_breakpoints_are_rejected_as_the_service_does() -> None:
    five_blocks = [user(*(text(str(n), FIVE) for n in range(4)))]
    assert rejection({"messages": five_blocks, "cache_control": FIVE}) == (
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    )
    nested = {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [text("r", FIVE)],
        "cache_control": FIVE,
    }
    calls: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "toolu_1", "name": "t", "input": {}}],
    }
    history = [user(text("a", FIVE), text("b", FIVE)), calls, user(nested)]
    assert rejection({"messages": history, "system": [text("s", FIVE)]}).endswith("Found 5.")


def test_a_one_hour_breakpoint_after_a_five_minute_one_is_rejected() -> None:
    message = rejection({"messages": [user(text("doc", HOUR))], "system": [text("s", FIVE)]})
    assert message.startswith("cache_control: a breakpoint with ttl '1h' comes after one with ttl '5m'")
    fake = FakeMessagesAPI([text_reply("ok")], validate=False)
    with fake.client() as client:
        create(client, model="m", max_tokens=10, messages=[user(text("doc", HOUR))], system=[text("s", FIVE)])


def test_the_cache_refuses_settings_it_cannot_take() -> None:
    with pytest.raises(ValueError, match=r"PromptCache lookback must be an int of at least 1, not 0"):
        PromptCache(lookback=0)
    with pytest.raises(ValueError, match=r"expire\(\) takes '5m' or '1h', not '2h'"):
        PromptCache().expire(cast(Any, "2h"))
    with pytest.raises(TypeError, match=r"prompt_cache must be a PromptCache or None, not 'bool'"):
        FakeMessagesAPI(prompt_cache=cast(Any, True))

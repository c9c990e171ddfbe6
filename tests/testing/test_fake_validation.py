"""The fake rejects what the real service rejects, with a 400 in the service's words."""

from __future__ import annotations

from typing import Any, cast

import anthropic
import pytest

from toolrunner.testing import FakeMessagesAPI, text_reply

QUESTION: dict[str, Any] = {"role": "user", "content": "Weather in Paris?"}


def calls(*ids: str) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": id_, "name": "get_weather", "input": {}} for id_ in ids],
    }


def results(*ids: str) -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": id_, "content": "ok"} for id_ in ids],
    }


def rejection(request_body: dict[str, Any]) -> str:
    """Send `body` through the SDK; return the 400's message after checking the error's shape."""
    fake = FakeMessagesAPI([text_reply("never sent")])
    with fake.client() as client, pytest.raises(anthropic.BadRequestError) as caught:
        client.post("/v1/messages", body=request_body, cast_to=object)
    assert caught.value.status_code == 400
    body = cast(dict[str, Any], caught.value.body)
    error: dict[str, Any] = body["error"]
    assert body["type"] == "error"
    assert error["type"] == "invalid_request_error"
    assert len(fake.requests) == 1
    assert len(fake.unused) == 1
    return error["message"]


def request(*messages: dict[str, Any]) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 10, "messages": list(messages)}


def test_a_tool_result_without_its_tool_use_is_rejected_in_the_recorded_words() -> None:
    assert rejection(request(QUESTION, calls("toolu_a"), results("toolu_x"))) == (
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x. "
        "Each `tool_result` block must have a corresponding `tool_use` block in the previous message."
    )


def test_consecutive_same_role_messages_merge_as_in_the_recorded_answer() -> None:
    # missing_assistant_turn_400.json: [user text, user tool_result] -> messages.0.content.1
    assert rejection(request(QUESTION, results("toolu_01GHndag5wQmbzNihYmV2UBj"))).startswith(
        "messages.0.content.1: unexpected `tool_use_id` found in `tool_result` blocks: toolu_01GHndag5wQmbzNihYmV2UBj."
    )


def test_a_tool_use_without_its_tool_result_is_rejected() -> None:
    assert rejection(request(QUESTION, calls("toolu_a", "toolu_b"), results("toolu_b"))) == (
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a. "
        "Each `tool_use` block must have a corresponding `tool_result` block in the next message."
    )


def test_a_final_assistant_tool_use_is_rejected() -> None:
    assert rejection(request(QUESTION, calls("toolu_a"))).startswith(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a."
    )


def test_tool_results_must_come_first_in_their_message() -> None:
    late = {"role": "user", "content": [{"type": "text", "text": "Here:"}, *results("toolu_a")["content"]]}
    assert rejection(request(QUESTION, calls("toolu_a"), late)) == (
        "messages.2: Did not find 1 `tool_result` block(s) at the beginning of this message. "
        "Messages following `tool_use` blocks must begin with a matching number of `tool_result` blocks."
    )


def test_tool_results_may_come_in_any_order() -> None:
    fake = FakeMessagesAPI([text_reply("fine")])
    with fake.client() as client:
        client.messages.create(
            model="m",
            max_tokens=10,
            messages=[QUESTION, calls("toolu_a", "toolu_b"), results("toolu_b", "toolu_a")],  # pyright: ignore[reportArgumentType]
        )
    fake.assert_complete()


def test_an_unknown_role_is_rejected() -> None:
    assert rejection(request(QUESTION, {"role": "system", "content": "Be brief."})) == (
        "messages.1.role: Input should be 'user' or 'assistant'"
    )


def test_the_first_message_must_be_a_user_message() -> None:
    assert rejection(request({"role": "assistant", "content": "Hello."}, QUESTION)) == (
        'messages: first message must use the "user" role'
    )


@pytest.mark.parametrize("empty", ["", []])
def test_empty_content_is_rejected(empty: Any) -> None:
    assert rejection(request(QUESTION, {"role": "assistant", "content": empty}, QUESTION)) == (
        "messages.1: all messages must have non-empty content except for the optional final assistant message"
    )


def test_a_final_assistant_message_may_be_empty() -> None:
    fake = FakeMessagesAPI([text_reply("prefilled")])
    with fake.client() as client:
        client.post(
            "/v1/messages", body=request(QUESTION, {"role": "assistant", "content": ""}), cast_to=object
        )
    fake.assert_complete()


@pytest.mark.parametrize("field", ["model", "max_tokens", "messages"])
def test_required_fields_are_checked(field: str) -> None:
    body = request(QUESTION)
    del body[field]
    assert rejection(body) == f"{field}: Field required"


def test_validation_can_be_switched_off() -> None:
    fake = FakeMessagesAPI([text_reply("anything goes")], validate=False)
    with fake.client() as client:
        client.post("/v1/messages", body={"messages": [{"role": "robot", "content": ""}]}, cast_to=object)
    fake.assert_complete()

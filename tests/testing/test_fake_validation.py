"""The fake rejects what the real service rejects, with a 400 in the service's words."""

from __future__ import annotations

from typing import Any, cast

import anthropic
import pytest
from anthropic import beta_tool

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
    assert rejection(request(QUESTION, {"role": "robot", "content": "Beep."})) == (
        "messages.1.role: Input should be 'user', 'assistant' or 'system'"
    )


def test_the_first_message_must_be_a_user_message() -> None:
    assert rejection(request({"role": "assistant", "content": "Hello."}, QUESTION)) == (
        'messages: first message must use the "user" role'
    )


COMPACTION: dict[str, Any] = {"type": "compaction", "content": "The user asked about Paris."}


def test_a_history_may_go_on_from_an_assistant_message_that_opens_with_a_compaction_block() -> None:
    fake = FakeMessagesAPI([text_reply("fine")])
    with fake.client() as client:
        client.beta.messages.create(
            model="m",
            max_tokens=10,
            messages=[{"role": "assistant", "content": [COMPACTION]}, QUESTION],  # pyright: ignore[reportArgumentType]
            betas=["compact-2026-01-12"],
        )
    fake.assert_complete()


@pytest.mark.parametrize(
    "content",
    [[{"type": "text", "text": "Hello."}, COMPACTION], [{"type": "text", "text": "Hello."}]],
    ids=["compaction-not-first", "no-compaction"],
)
def test_any_other_assistant_message_first_is_still_rejected(content: list[dict[str, Any]]) -> None:
    assert rejection(request({"role": "assistant", "content": content}, QUESTION)) == (
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


# -- role: "system" messages (mid-conversation system messages and tool changes) ---------------------
#
# The expected texts are the service's, as third-party emulators of the API recorded them in
# October 2026 (see the module docstring of toolrunner/testing/_validation.py); the cases are the
# placement rules of docs/en/build-with-claude/mid-conversation-system-messages ("Limitations").

DIRECTIVE_NOTE = "; the directive-only form (content: [] with output_config) is accepted at any position"
MUST_FOLLOW = (
    "role 'system' must follow a 'user' message or an 'assistant' message ending in a server tool result"
    + DIRECTIVE_NOTE
)
MUST_PRECEDE = "role 'system' must precede an 'assistant' message or end the array" + DIRECTIVE_NOTE
WEATHER_TOOL: dict[str, Any] = {"name": "get_weather", "input_schema": {"type": "object"}}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def system(content: Any, **fields: Any) -> dict[str, Any]:
    return {"role": "system", "content": content, **fields}


def change(kind: str, tool: dict[str, Any]) -> dict[str, Any]:
    return {"type": kind, "tool": tool}


def reference(name: str) -> dict[str, Any]:
    return {"type": "tool_reference", "name": name}


def definition(name: str) -> dict[str, Any]:
    return {"type": "tool_definition", "definition": {"name": name, "input_schema": {"type": "object"}}}


SEARCHED: dict[str, Any] = {
    "role": "assistant",
    "content": [
        {"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "Paris"}},
        {"type": "web_search_tool_result", "tool_use_id": "srvtoolu_1", "content": []},
    ],
}


def accept(body: dict[str, Any]) -> None:
    """Send `body` through the SDK and check that the fake answered it with its script."""
    fake = FakeMessagesAPI([text_reply("accepted")])
    with fake.client() as client:
        client.post("/v1/messages", body=body, cast_to=object)
    fake.assert_complete()


@pytest.mark.parametrize(
    "messages",
    [
        # the docs' example: after a user message, ending the array
        [QUESTION, assistant("Sunny."), user("And tomorrow?"), system("Answer in French.")],
        # the docs' agentic loop: right after the tool results, then the model's next turn
        [
            QUESTION,
            calls("toolu_a"),
            results("toolu_a"),
            system("Be brief."),
            assistant("Done."),
            user("Thanks."),
        ],
        # consecutive system messages are one section; several sections
        [QUESTION, system("One."), system("Two."), assistant("Ok."), user("Next."), system("Last.")],
        # after an assistant message ending in a server tool result
        [QUESTION, SEARCHED, system("Cite your sources.")],
        # string content, text blocks and tool changes mixed in one message
        [
            QUESTION,
            system(
                [
                    {"type": "text", "text": "Weather is back."},
                    change("tool_addition", reference("get_weather")),
                ]
            ),
        ],
    ],
    ids=["ends-the-array", "after-tool-results", "sections", "after-server-tool-result", "blocks"],
)
def test_system_messages_where_the_service_takes_them_are_accepted(messages: list[dict[str, Any]]) -> None:
    accept(request(*messages) | {"tools": [WEATHER_TOOL]})


@pytest.mark.parametrize(
    ("messages", "expected"),
    [
        (
            [system("One."), system("Two."), QUESTION],
            f"messages.0: use the top-level 'system' parameter for the initial system prompt{DIRECTIVE_NOTE}",
        ),
        ([QUESTION, assistant("Hello."), system("x"), user("ok")], f"messages.2: {MUST_FOLLOW}"),
        (
            [QUESTION, assistant("Hello."), system("one"), system("two"), user("ok")],
            f"messages.2: {MUST_FOLLOW}",
        ),
        ([QUESTION, system("one"), system("two"), user("ok")], f"messages.2: {MUST_PRECEDE}"),
        (
            [QUESTION, user("there"), assistant("Hello."), system("one"), user("ok")],
            f"messages.3: {MUST_FOLLOW}",
        ),
        ([QUESTION, calls("toolu_a"), system("x"), results("toolu_a")], f"messages.2: {MUST_FOLLOW}"),
        ([QUESTION, assistant("Hello."), system("x"), assistant("More.")], f"messages.2: {MUST_FOLLOW}"),
    ],
    ids=[
        "first",
        "after-assistant",
        "section-after-assistant",
        "section-before-user",
        "counts-messages-not-turns",
        "between-tool-use-and-result",
        "precedes-assistant-but-follows-assistant",
    ],
)
def test_misplaced_system_messages_are_rejected_in_the_services_words(
    messages: list[dict[str, Any]], expected: str
) -> None:
    assert rejection(request(*messages)) == expected


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ([], "messages.1: system content must contain at least one block"),
        ("", "messages.1: system content must contain at least one block"),
        ([{"type": "text", "text": ""}], "messages: text content blocks must be non-empty"),
        (
            [
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="},
                }
            ],
            "messages.1: role 'system' supports text, tool_addition, and tool_removal blocks only",
        ),
    ],
    ids=["empty-list", "empty-string", "empty-text", "image"],
)
def test_system_content_is_checked_in_the_services_words(content: Any, expected: str) -> None:
    assert rejection(request(QUESTION, system(content))) == expected


def test_a_directive_only_system_message_may_stand_anywhere() -> None:
    directive = system([], output_config={"effort": "low"})
    accept(request(QUESTION, assistant("Hello."), directive, user("ok")))
    accept(request(directive, QUESTION))
    assert rejection(request(QUESTION, system([], output_config={}))) == (
        "messages.1: system content must contain at least one block"
    )


def test_tool_changes_may_name_declared_tools_and_tools_defined_earlier() -> None:
    accept(
        request(
            QUESTION,
            system(
                [
                    change("tool_removal", reference("get_weather")),
                    change("tool_addition", definition("get_time")),
                ]
            ),
            assistant("Ok."),
            user("Now the time, please."),
            system([change("tool_removal", reference("get_time"))]),
        )
        | {"tools": [WEATHER_TOOL | {"defer_loading": True}]}
    )


def test_a_tool_change_naming_an_unknown_tool_is_rejected() -> None:
    text = {"type": "text", "text": "Tools changed."}
    body = request(QUESTION, system([text, change("tool_removal", reference("get_time"))]))
    assert rejection(body | {"tools": [WEATHER_TOOL]}) == (
        "messages.1.content.1.tool: tool_removal names 'get_time', which is neither declared in `tools` nor "
        "defined by an earlier `tool_addition`; declare it in `tools` (`defer_loading: true` holds it back "
        "until a `tool_addition`) or define it in an earlier one."
    )


def test_a_system_section_counts_as_one_turn_in_the_tool_checks() -> None:
    history = [
        QUESTION,
        calls("toolu_a"),
        results("toolu_a"),
        system("Be brief."),
        system("Very brief."),
        calls("toolu_b"),
        results("toolu_x"),
    ]
    # The seventh message is turn 5: the two system messages make one turn. Which count the service
    # uses here is not recorded; this is the fake's reading (see docs/testing.md).
    assert rejection(request(*history)).startswith(
        "messages.5.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_x."
    )


def test_a_tool_use_before_a_trailing_system_message_still_needs_its_result() -> None:
    searched_and_called = {
        "role": "assistant",
        "content": [*calls("toolu_a")["content"], *SEARCHED["content"]],
    }
    assert rejection(request(QUESTION, searched_and_called, system("Hurry."))).startswith(
        "messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: toolu_a."
    )


def test_a_final_assistant_message_before_a_directive_may_be_empty() -> None:
    accept(
        request(QUESTION, {"role": "assistant", "content": ""}, system([], output_config={"effort": "high"}))
    )


def test_the_sdks_own_tool_runner_adding_tools_mid_run_is_accepted() -> None:
    @beta_tool
    def get_weather(city: str) -> str:
        """The weather in a city.

        Args:
            city: The city's name.
        """
        return f"{city}: sunny"

    @beta_tool
    def get_time(city: str) -> str:
        """The time in a city.

        Args:
            city: The city's name.
        """
        return f"{city}: noon"

    fake = FakeMessagesAPI.automatic()
    with fake.client() as client:
        runner = client.beta.messages.tool_runner(
            model="m",
            max_tokens=100,
            messages=[QUESTION],  # pyright: ignore[reportArgumentType]
            tools=[get_weather],
            thread=False,
            betas=["inline-tools-2026-09-15"],
            max_iterations=5,
        )
        for message in runner:
            if message.content[0].type == "tool_use" and message.content[0].name == "get_weather":
                runner.add_tools(get_time)
    # The SDK sends the tool_addition in a system message after the tool results; the fake takes it.
    assert [message["role"] for message in fake.requests[1].messages] == [
        "user",
        "assistant",
        "user",
        "system",
    ]
    assert [message["role"] for message in fake.requests[2].messages][-2:] == ["assistant", "user"]
    assert len(fake.requests) == 3


def test_a_tool_use_id_the_service_rejects_gets_its_400() -> None:
    body = {"model": "m", "max_tokens": 5, "messages": [QUESTION, calls("call 1"), results("call 1")]}
    assert (
        rejection(body) == "messages.1.content.0.tool_use.id: String should match pattern '^[a-zA-Z0-9_-]+$'"
    )


def test_a_tool_use_answered_twice_is_rejected() -> None:
    assert rejection(request(QUESTION, calls("toolu_a"), results("toolu_a", "toolu_a"))) == (
        "messages.2.content.1: each `tool_use` must have a single result. Found multiple `tool_result` "
        "blocks with id: toolu_a"
    )

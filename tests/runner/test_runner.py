"""The lifecycle of docs/lifecycle.md, one test per statement, through the public API."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from typing import Any

import anthropic
import anyio
import pytest
from anthropic.resources.beta.messages import Messages as BetaMessages
from anthropic.resources.messages import Messages
from anthropic.types.beta import BetaMessage

from tests.support import helpers
from tests.support.helpers import MODEL, USER, plain, results_of, roles, sent_messages
from toolrunner import ToolResultAdapter, ToolRunner, UnansweredToolUseError, tool
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

runs: Counter[str] = Counter()


@tool
async def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
    """
    runs[city] += 1
    return f"{city}: sunny"


@pytest.fixture(autouse=True)
def _reset_runs() -> None:
    runs.clear()


def paris_berlin() -> Any:
    return tool_reply(
        tool_call("get_weather", {"city": "Paris"}, id="toolu_paris"),
        tool_call("get_weather", {"city": "Berlin"}, id="toolu_berlin"),
        text="Let me check.",
    )


def make_runner(fake: FakeMessagesAPI, **kwargs: Any) -> ToolRunner:
    return helpers.make_runner(fake, get_weather, max_tokens=256, **kwargs)


# -- 2. send a request built from the current params, yield the reply ------------------------------


async def test_yields_each_reply_as_an_sdk_message() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("Sunny in both.")])
    runner = make_runner(fake)
    replies = [message async for message in runner]
    assert [type(m) for m in replies] == [anthropic.types.Message, anthropic.types.Message]
    assert replies[-1].content[0].type == "text"
    assert len(fake.requests) == 2
    fake.assert_complete()


async def test_each_request_is_built_from_the_current_params() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("done")])
    runner = make_runner(fake)
    async for _ in runner:
        runner.set_messages_params(lambda p: {**p, "model": "claude-haiku-4-5", "max_tokens": 99})
        break
    await runner.until_done()
    assert fake.requests[0].body["model"] == MODEL
    assert fake.requests[1].body["model"] == "claude-haiku-4-5"
    assert fake.requests[1].body["max_tokens"] == 99


# -- 3. the reply is appended only if the body left the history alone -------------------------------


async def test_reply_and_results_are_appended_when_the_body_does_nothing() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("Sunny in both.")])
    runner = make_runner(fake)
    final = await runner.until_done()
    history = plain(runner.messages)
    assert roles(history) == ["user", "assistant", "user", "assistant"]
    assert history[3] == plain(final.to_param())
    assert results_of(history[2]) == [
        ("toolu_paris", "Paris: sunny", False),
        ("toolu_berlin", "Berlin: sunny", False),
    ]
    assert sent_messages(fake)[1] == history[:3]


async def test_push_messages_in_the_body_means_the_reply_is_not_appended() -> None:
    fake = FakeMessagesAPI([text_reply("Hi!"), text_reply("Bye!")])
    runner = make_runner(fake)
    seen = 0
    async for _ in runner:
        seen += 1
        if seen == 1:
            runner.push_messages(
                {"role": "assistant", "content": "edited"}, {"role": "user", "content": "more"}
            )
    assert plain(sent_messages(fake)[1]) == [
        USER,
        {"role": "assistant", "content": "edited"},
        {"role": "user", "content": "more"},
    ]
    assert plain(runner.messages)[-1]["content"][0]["text"] == "Bye!"


async def test_set_messages_params_in_the_body_means_the_reply_is_not_appended() -> None:
    fake = FakeMessagesAPI([text_reply("Hi!"), text_reply("Second")])
    runner = make_runner(fake)
    other = [{"role": "user", "content": "Something else"}]
    seen = 0
    async for _ in runner:
        seen += 1
        if seen == 1:
            runner.set_messages_params({**runner.params, "messages": other})
    assert plain(sent_messages(fake)[1]) == other
    assert roles(runner.messages) == ["user", "assistant"]


# -- 4. tool handling: one user message, tool_use order; the stop reason decides ----------------------


async def test_results_keep_tool_use_order_whatever_order_the_calls_finish_in() -> None:
    finished: list[str] = []

    @tool
    async def slow(name: str, delay: float) -> str:
        """Sleep, then answer."""
        await anyio.sleep(delay)
        finished.append(name)
        return name

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("slow", {"name": "a", "delay": 0.05}, id="a"),
                tool_call("slow", {"name": "b", "delay": 0.0}, id="b"),
                tool_call("slow", {"name": "c", "delay": 0.02}, id="c"),
            ),
            text_reply("done"),
        ]
    )
    runner = make_runner(fake, tools=[slow])
    await runner.until_done()
    assert finished == ["b", "c", "a"]
    assert [r[0] for r in results_of(runner.messages[2])] == ["a", "b", "c"]


async def test_pause_turn_sends_the_turn_back_unchanged() -> None:
    paused = message_reply(
        [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}],
        stop_reason="pause_turn",
    )
    fake = FakeMessagesAPI([paused, text_reply("Found it.")])
    runner = make_runner(fake, tools=[{"type": "web_search_20250305", "name": "web_search"}])
    await runner.until_done()
    second = plain(sent_messages(fake)[1])
    assert roles(second) == ["user", "assistant"]
    assert second[1]["content"][0]["id"] == "srvtoolu_1"


@pytest.mark.parametrize(
    "stop_reason",
    [
        "end_turn",
        "stop_sequence",
        "max_tokens",
        "refusal",
        "model_context_window_exceeded",
        "reason_from_the_future",
    ],
)
async def test_other_stop_reasons_end_the_loop_without_running_tools(stop_reason: str) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("get_weather", {"city": "Paris"}), stop_reason=stop_reason)])
    runner = make_runner(fake)
    final = await runner.until_done()
    assert final.stop_reason == stop_reason
    assert runs == {}
    assert len(fake.requests) == 1
    assert roles(runner.messages) == ["user", "assistant"]
    assert await runner.generate_tool_response() is None


async def test_the_runner_answers_a_different_tool_use_message_set_by_the_body() -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"city": "Paris"}, id="toolu_paris")), text_reply("ok")]
    )
    runner = make_runner(fake)
    london = {
        "role": "assistant",
        "content": [
            {"type": "tool_use", "id": "toolu_london", "name": "get_weather", "input": {"city": "London"}}
        ],
    }
    async for message in runner:
        if message.stop_reason == "tool_use":
            runner.set_messages_params(lambda p: {**p, "messages": [USER, london]})
    assert runs == {"London": 1}
    second = plain(sent_messages(fake)[1])
    assert second == [
        USER,
        london,
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_london", "content": "London: sunny"}],
        },
    ]


# -- 5. when the loop ends -----------------------------------------------------------------------


async def test_a_changed_history_continues_the_loop_even_after_end_turn() -> None:
    fake = FakeMessagesAPI([text_reply("Hi!"), text_reply("Fine, thanks.")])
    runner = make_runner(fake)
    seen = 0
    async for message in runner:
        seen += 1
        if seen == 1:
            runner.push_messages(message, {"role": "user", "content": "How are you?"})
    assert seen == 2
    fake.assert_complete()


async def test_end_turn_with_an_unchanged_history_ends_the_loop() -> None:
    fake = FakeMessagesAPI([text_reply("Hi!")])
    runner = make_runner(fake)
    assert [m.stop_reason async for m in runner] == ["end_turn"]
    assert runner.finished
    assert [m async for m in runner] == []  # iterating a finished runner yields nothing more


# -- 1. closed or max_iterations ----------------------------------------------------------------------


async def test_max_iterations_stops_after_that_many_requests_with_results_appended() -> None:
    fake = FakeMessagesAPI([paris_berlin(), paris_berlin(), text_reply("never sent")])
    runner = make_runner(fake, max_iterations=2)
    # the same ids twice would be answered from the cache: use fresh ids
    fake.script[1] = tool_reply(tool_call("get_weather", {"city": "Rome"}))
    count = 0
    async for _ in runner:
        count += 1
    assert count == 2
    assert len(fake.requests) == 2
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant", "user"]
    assert runs == {"Paris": 1, "Berlin": 1, "Rome": 1}


async def test_close_before_iterating_sends_nothing() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    runner = make_runner(fake)
    runner.close()
    assert [m async for m in runner] == []
    assert fake.requests == []


async def test_close_in_the_body_appends_the_reply_and_runs_no_tools() -> None:
    fake = FakeMessagesAPI([paris_berlin()])
    runner = make_runner(fake)
    async for _ in runner:
        runner.close()
    assert runs == {}
    assert roles(runner.messages) == ["user", "assistant"]
    assert runner.finished


async def test_async_context_manager_closes() -> None:
    fake = FakeMessagesAPI([text_reply("Hi"), text_reply("never")])
    async with make_runner(fake) as runner:
        async for _ in runner:
            runner.push_messages({"role": "user", "content": "more"})
            break
    assert [m async for m in runner] == []
    assert len(fake.requests) == 1


# -- break and resume -----------------------------------------------------------------------------


async def test_until_done_after_break_resumes_where_the_loop_stopped() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("Sunny in both.")])
    runner = make_runner(fake)
    async for _ in runner:
        break
    assert runs == {}
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert runs == {"Paris": 1, "Berlin": 1}
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]


async def test_until_done_on_a_finished_runner_returns_the_final_reply_again() -> None:
    fake = FakeMessagesAPI([text_reply("Hi")])
    runner = make_runner(fake)
    first = await runner.until_done()
    assert await runner.until_done() is first


# -- caching: each tool runs exactly once -----------------------------------------------------------


async def test_generate_tool_response_in_the_body_is_reused_by_the_loop() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("done")])
    runner = make_runner(fake)
    async for message in runner:
        if message.stop_reason == "tool_use":
            first = await runner.generate_tool_response()
            second = await runner.generate_tool_response()
            assert first == second
            assert roles(runner.messages) == ["user"]  # it never changes the history
    assert runs == {"Paris": 1, "Berlin": 1}
    assert roles(runner.messages) == ["user", "assistant", "user", "assistant"]


async def test_pushing_the_reply_and_the_results_leaves_only_the_next_request() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("done")])
    runner = make_runner(fake)
    async for message in runner:
        response = await runner.generate_tool_response()
        if response is not None:
            runner.push_messages(message, response)
    assert runs == {"Paris": 1, "Berlin": 1}
    assert roles(sent_messages(fake)[1]) == ["user", "assistant", "user"]


async def test_pushing_only_the_reply_after_generating_appends_the_cached_results() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("done")])
    runner = make_runner(fake)
    async for message in runner:
        if await runner.generate_tool_response() is not None:
            runner.push_messages(message)
    assert runs == {"Paris": 1, "Berlin": 1}
    assert roles(sent_messages(fake)[1]) == ["user", "assistant", "user"]


async def test_concurrent_callers_share_one_run() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("done")])
    runner = make_runner(fake)
    responses: list[Any] = []

    async def call() -> None:
        responses.append(await runner.generate_tool_response())

    async for message in runner:
        if message.stop_reason == "tool_use":
            async with anyio.create_task_group() as group:
                for _ in range(5):
                    group.start_soon(call)
    assert runs == {"Paris": 1, "Berlin": 1}
    assert len(responses) == 5
    assert all(r == responses[0] for r in responses)


async def test_generate_tool_response_is_none_without_pending_calls() -> None:
    fake = FakeMessagesAPI([text_reply("Hi")])
    runner = make_runner(fake)
    assert await runner.generate_tool_response() is None
    async for _ in runner:
        assert await runner.generate_tool_response() is None


# -- container, history checks, endpoints ------------------------------------------------------------


def oslo_with_container(container_id: str) -> Any:
    oslo = {
        "type": "tool_use",
        "id": f"toolu_{container_id}",
        "name": "get_weather",
        "input": {"city": "Oslo"},
    }
    container = {"id": container_id, "expires_at": "2026-12-01T00:00:00Z"}
    return message_reply([oslo], stop_reason="tool_use", container=container)


async def test_a_replys_container_id_is_sent_back() -> None:
    fake = FakeMessagesAPI(
        [
            oslo_with_container("container_1"),
            text_reply("done"),
        ]
    )
    runner = make_runner(fake)
    await runner.until_done()
    assert "container" not in fake.requests[0].body
    assert fake.requests[1].body["container"] == "container_1"


async def test_an_object_container_gets_the_id_and_a_given_id_is_kept() -> None:
    def script() -> list[Any]:
        return [
            oslo_with_container("container_new"),
            text_reply("done"),
        ]

    fake = FakeMessagesAPI(script())
    await make_runner(fake, container={"skills": []}).until_done()
    assert fake.requests[1].body["container"] == {"skills": [], "id": "container_new"}

    fake = FakeMessagesAPI(script())
    await make_runner(fake, container="container_mine").until_done()
    assert fake.requests[1].body["container"] == "container_mine"


async def test_an_unanswered_tool_use_fails_locally_before_sending() -> None:
    fake = FakeMessagesAPI([text_reply("never")])
    dangling: dict[str, Any] = {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "get_weather", "input": {}}],
    }
    runner = make_runner(fake, messages=[USER, dangling, {"role": "user", "content": "hello?"}])
    with pytest.raises(UnansweredToolUseError, match=r"messages\[1\].*'t1'"):
        await runner.until_done()
    assert fake.requests == []


async def test_betas_go_through_the_beta_endpoint() -> None:
    fake = FakeMessagesAPI([text_reply("Hi")])
    runner = make_runner(fake, betas=["context-management-2025-06-27"])
    final = await runner.until_done()
    assert isinstance(final, BetaMessage)
    assert fake.requests[0].headers["anthropic-beta"] == "context-management-2025-06-27"


BETA_ONLY_VALUES: dict[str, Any] = {
    "fallbacks": [{"model": "claude-opus-4-6"}],
    "mcp_servers": [{"type": "url", "url": "https://mcp.example/sse", "name": "notes"}],
    "context_management": {"edits": [{"type": "clear_tool_uses_20250919"}]},
    "billing_policy": {"type": "standard"},
    "fallback_credit_token": "token",
}


# Every param that the installed SDK's beta create takes and its GA create does not, but those a
# runner refuses ('thread', 'compaction'), with a value of the right shape where one is known.
@pytest.mark.parametrize(
    "name",
    sorted(
        set(inspect.signature(BetaMessages.create).parameters)
        - set(inspect.signature(Messages.create).parameters)
        - {"betas", "thread", "compaction"}
    ),
)
async def test_a_param_only_the_beta_endpoint_takes_sends_through_it_without_betas(name: str) -> None:
    value = BETA_ONLY_VALUES.get(name, {"type": "auto"})
    fake = FakeMessagesAPI([text_reply("Hi")])
    final = await make_runner(fake, **{name: value}).until_done()
    assert isinstance(final, BetaMessage)
    assert fake.requests[0].body[name] == value
    assert "anthropic-beta" not in fake.requests[0].headers


async def test_ga_endpoint_by_default() -> None:
    fake = FakeMessagesAPI([text_reply("Hi")])
    await make_runner(fake).until_done()
    assert "beta" not in str(fake.requests[0].url)


async def test_raw_tool_definitions_are_sent_as_given_and_never_run() -> None:
    by_hand = {"name": "ask_human", "description": "Ask the human.", "input_schema": {"type": "object"}}
    fake = FakeMessagesAPI([tool_reply(tool_call("ask_human", {}, id="h1")), text_reply("ok")])
    runner = make_runner(fake, tools=[get_weather, by_hand])
    await runner.until_done()
    assert fake.requests[0].body["tools"][1] == by_hand
    [(tool_use_id, content, is_error)] = results_of(runner.messages[2])
    assert (tool_use_id, is_error) == ("h1", True)
    assert "not run by this program" in content


async def test_a_body_can_answer_a_hand_run_tool_itself() -> None:
    by_hand = {"name": "ask_human", "description": "Ask the human.", "input_schema": {"type": "object"}}
    fake = FakeMessagesAPI([tool_reply(tool_call("ask_human", {}, id="h1")), text_reply("ok")])
    runner = make_runner(fake, tools=[by_hand])
    async for message in runner:
        if message.stop_reason == "tool_use":
            runner.push_messages(
                message,
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "h1", "content": "yes"}]},
            )
    assert results_of(runner.messages[2]) == [("h1", "yes", False)]


async def test_editing_a_generated_response_does_not_change_the_cache() -> None:
    fake = FakeMessagesAPI([paris_berlin(), text_reply("done")])
    runner = make_runner(fake)
    async for message in runner:
        response = await runner.generate_tool_response()
        if response is not None:
            response["content"][0]["content"] = "edited"
            again = await runner.generate_tool_response()
            assert again is not None
            assert again["content"][0].get("content") == "Paris: sunny"
            assert message.stop_reason == "tool_use"
    assert results_of(runner.messages[2])[0] == ("toolu_paris", "Paris: sunny", False)


async def test_a_tool_returning_a_dict_shaped_like_an_invalid_block_sends_it_as_data() -> None:
    """The Notion API returns rich text as ``{"type": "text", "text": {...}}``: sent as a block, the
    service would answer 400; it is data, sent as JSON text, and the fake (which validates as the
    service does) takes the request."""
    page = {"type": "text", "text": {"content": "Meeting notes", "link": None}}

    @tool
    def read_page(page_id: str) -> dict[str, Any]:
        """Read a page's title."""
        return page

    class Raw(ToolResultAdapter):
        def to_content(self, value: object) -> Any:
            return [value]  # a custom adapter that does no checking

    for adapter in (ToolResultAdapter(), Raw()):
        fake = FakeMessagesAPI(
            [tool_reply(tool_call("read_page", {"page_id": "p"}, id="a")), text_reply("Meeting notes.")]
        )
        runner = ToolRunner(
            fake.async_client(),
            model=MODEL,
            max_tokens=64,
            messages=[USER],
            tools=[read_page],
            result_adapter=adapter,
        )
        await runner.until_done()
        [(_, content, is_error)] = results_of(fake.requests[1].messages[2])
        assert not is_error
        text = content if isinstance(content, str) else content[0]["text"]
        assert json.loads(text) == page

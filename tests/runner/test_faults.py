"""Faults from the service, through the fake: each ends in recovery, or in the SDK's own error with
the runner's state intact and resumable, and never runs a tool twice.

tests/runner/test_service_errors.py covers a fault after tools ran and the SDK retrying 429/529 once; the
property test in test_properties.py interleaves generated faults with generated replies. Here each
fault gets a named test, and every test also checks that no response stream was left open.

Streaming (``stream=True``) is a separate issue: a stream cut mid-way is covered for the raw SDK in
tests/testing/test_fake_faults.py, and here only as a non-streamed body that breaks off.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import anthropic
import httpx2
import pytest

from tests.support.reliability_helpers import CountingTransport, pairing_problems, plain, skeleton
from toolrunner import MalformedReplyError, ToolRunner, UnansweredToolUseError, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    ScriptedReply,
    ScriptEntry,
    disconnect,
    fault,
    message_reply,
    stream_cut,
    text_reply,
    tool_call,
    tool_reply,
    truncated_tool_reply,
)

pytestmark = pytest.mark.anyio

MODEL = "claude-sonnet-4-6"
USER = {"role": "user", "content": "Charge the card for order 7."}

charges: Counter[str] = Counter()


@pytest.fixture(autouse=True)
def _reset() -> None:
    charges.clear()


@tool
async def charge(order: int) -> str:
    """Charge the card for an order.

    Args:
        order: The order number.
    """
    charges[f"order {order}"] += 1
    return f"charged order {order}"


def charge_then_done() -> list[ScriptEntry]:
    return [tool_reply(tool_call("charge", {"order": 7}, id="tu_7")), text_reply("Charged.")]


class Harness:
    """A runner over the fake through a transport that counts open response streams."""

    def __init__(
        self,
        script: Sequence[ScriptEntry],
        *,
        max_retries: int = 0,
        rewrite: Callable[[int, httpx2.Response], httpx2.Response] | None = None,
    ) -> None:
        self.fake = FakeMessagesAPI(script)
        self.transport = CountingTransport(self.fake.async_transport(), rewrite)
        self.client = anthropic.AsyncAnthropic(
            api_key="sk-ant-fake-key",
            base_url="https://api.anthropic.com",
            max_retries=max_retries,
            http_client=httpx2.AsyncClient(transport=self.transport),
        )
        self.runner = ToolRunner(self.client, model=MODEL, max_tokens=64, messages=[USER], tools=[charge])

    async def close(self) -> None:
        await self.client.close()
        assert self.transport.open_streams == 0, "a response stream was left open"

    def resent_identically(self) -> bool:
        """Whether each request answered by a fault was sent again unchanged (by the SDK or on resume)."""
        bodies = [request.body["messages"] for request in self.fake.requests]
        failed = [n for n, entry in enumerate(self.fake.script) if not isinstance(entry, ScriptedReply)]
        return all(n + 1 < len(bodies) and bodies[n] == bodies[n + 1] for n in failed)


async def reference() -> list[Any]:
    """The history a run without faults ends with."""
    async with FakeMessagesAPI(charge_then_done()).async_client() as client:
        runner = ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[charge])
        await runner.until_done()
    charges.clear()
    return skeleton(runner.messages)


# -- retried by the SDK -------------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 529])
async def test_retry_after_on_the_first_request_is_retried_by_the_sdk(status: int) -> None:
    expected = await reference()
    harness = Harness([fault(status, retry_after=0.001), *charge_then_done()], max_retries=1)
    await harness.runner.until_done()
    await harness.close()
    requests = harness.fake.requests
    assert requests[1].headers["x-stainless-retry-count"] == "1"
    assert requests[0].body == requests[1].body
    assert skeleton(harness.runner.messages) == expected
    assert charges == {"order 7": 1}


async def test_retries_exhausted_after_tools_ran_surface_the_sdk_error_and_resume_runs_nothing_again() -> (
    None
):
    expected = await reference()
    script = [
        charge_then_done()[0],
        fault(529, retry_after=0.001),
        fault(529, retry_after=0.001),
        text_reply("Charged."),
    ]
    harness = Harness(script, max_retries=1)
    with pytest.raises(anthropic.OverloadedError):
        await harness.runner.until_done()
    assert [role for role, _ in skeleton(harness.runner.messages)] == ["user", "assistant", "user"]
    assert harness.runner.requests_sent == 1
    await harness.runner.until_done()
    await harness.close()
    assert skeleton(harness.runner.messages) == expected
    assert charges == {"order 7": 1}
    assert harness.resent_identically()


async def test_a_reset_connection_is_retried_by_the_sdk_and_tools_run_once() -> None:
    expected = await reference()
    harness = Harness([charge_then_done()[0], disconnect(), charge_then_done()[1]], max_retries=1)
    await harness.runner.until_done()  # the SDK's own backoff: about half a second
    await harness.close()
    assert skeleton(harness.runner.messages) == expected
    assert charges == {"order 7": 1}
    assert harness.resent_identically()


async def test_a_fault_while_a_paused_turn_is_resent_keeps_the_paused_turn() -> None:
    paused = message_reply(
        [{"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "q"}}],
        stop_reason="pause_turn",
    )
    harness = Harness([paused, fault(500), text_reply("Found it.")])
    with pytest.raises(anthropic.InternalServerError):
        await harness.runner.until_done()
    assert [role for role, _ in skeleton(harness.runner.messages)] == ["user", "assistant"]
    final = await harness.runner.until_done()
    await harness.close()
    assert final.content[0].type == "text"
    requests = harness.fake.requests
    assert requests[1].body["messages"] == requests[2].body["messages"]


async def test_a_fault_after_the_body_changed_the_history_keeps_the_bodys_history() -> None:
    harness = Harness([text_reply("Which card?"), fault(500), text_reply("Charged.")])
    runner = harness.runner
    with pytest.raises(anthropic.InternalServerError):
        async for message in runner:
            if runner.requests_sent == 1:
                runner.push_messages(message, {"role": "user", "content": "The Visa."})
    kept = plain(runner.messages)
    assert [m["role"] for m in kept] == ["user", "assistant", "user"]
    await runner.until_done()
    await harness.close()
    assert harness.fake.requests[2].body["messages"] == kept


# -- surfaced as the SDK's own error ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("failure", "error"),
    [
        (fault(500), anthropic.InternalServerError),
        (fault(400), anthropic.BadRequestError),
        (disconnect(), anthropic.APIConnectionError),
        (stream_cut(text_reply("cut"), after_events=2), anthropic.APIConnectionError),
    ],
    ids=["500", "400", "reset connection", "body cut mid-way"],
)
async def test_a_fault_on_the_first_request_leaves_the_state_as_it_was(
    failure: ScriptEntry, error: type[anthropic.APIError]
) -> None:
    expected = await reference()
    harness = Harness([failure, *charge_then_done()])
    with pytest.raises(error):
        await harness.runner.until_done()
    assert harness.runner.requests_sent == 0
    assert harness.runner.last_message is None
    assert plain(harness.runner.messages) == [USER]
    await harness.runner.until_done()
    await harness.close()
    assert skeleton(harness.runner.messages) == expected
    assert charges == {"order 7": 1}


PLACEHOLDER = text_reply("replaced by the transport")


def _json_200(
    body: bytes, content_type: str = "application/json"
) -> Callable[[int, httpx2.Response], httpx2.Response]:
    """Answer the first request with a 200 carrying ``body``; pass later answers through."""

    def rewrite(number: int, response: httpx2.Response) -> httpx2.Response:
        if number:
            return response
        return httpx2.Response(200, headers={"content-type": content_type}, content=body)

    return rewrite


async def test_a_200_with_a_body_that_is_not_json_raises_and_the_request_can_be_sent_again() -> None:
    """The SDK raises ``json.JSONDecodeError`` here (not an ``anthropic.APIError``): the runner
    lets it through unchanged and keeps its state."""
    expected = await reference()
    harness = Harness([PLACEHOLDER, *charge_then_done()], rewrite=_json_200(b'{"type": "message", "id": '))
    with pytest.raises(json.JSONDecodeError):
        await harness.runner.until_done()
    assert harness.runner.requests_sent == 0
    assert plain(harness.runner.messages) == [USER]
    await harness.runner.until_done()
    await harness.close()
    assert skeleton(harness.runner.messages) == expected
    assert charges == {"order 7": 1}


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        (b"<html><body>502 Bad Gateway</body></html>", "text/html"),
        (json.dumps({"type": "message", "id": "msg_1"}).encode(), "application/json"),
    ],
    ids=["html page", "json without fields"],
)
async def test_a_200_that_is_not_a_message_raises_a_clear_error_and_the_request_can_be_sent_again(
    body: bytes, content_type: str
) -> None:
    expected = await reference()
    harness = Harness([PLACEHOLDER, *charge_then_done()], rewrite=_json_200(body, content_type))
    with pytest.raises(MalformedReplyError):
        await harness.runner.until_done()
    assert harness.runner.requests_sent == 0
    assert plain(harness.runner.messages) == [USER]
    await harness.runner.until_done()
    await harness.close()
    assert skeleton(harness.runner.messages) == expected


# -- what the service may add: unknown blocks and stop reasons ------------------------------------------


async def test_an_unknown_block_type_is_kept_in_history_and_sent_back_as_it_came() -> None:
    hologram = {"type": "hologram", "frames": [1, 2, 3]}
    harness = Harness(
        [
            message_reply(
                [hologram, {"type": "tool_use", "id": "tu_7", "name": "charge", "input": {"order": 7}}],
                stop_reason="tool_use",
            ),
            text_reply("Charged."),
        ]
    )
    await harness.runner.until_done()
    await harness.close()
    assert harness.fake.requests[1].body["messages"][1]["content"][0] == hologram
    assert charges == {"order 7": 1}
    assert not pairing_problems(harness.runner.messages)


async def test_an_unknown_stop_reason_with_an_unknown_block_ends_the_loop_and_keeps_the_reply() -> None:
    harness = Harness(
        [message_reply([{"type": "hologram"}, {"type": "text", "text": "Hm."}], stop_reason="teleported")]
    )
    final = await harness.runner.until_done()
    await harness.close()
    assert final.stop_reason == "teleported"
    assert harness.runner.finished
    assert plain(harness.runner.messages)[1]["content"][0] == {"type": "hologram"}


async def test_a_reply_cut_by_max_tokens_runs_none_of_its_calls() -> None:
    harness = Harness(
        [
            truncated_tool_reply(
                tool_call("charge", {"order": 7}), tool_call("charge", {"order": 8, "note": "x"})
            )
        ]
    )
    final = await harness.runner.until_done()
    await harness.close()
    assert final.stop_reason == "max_tokens"
    assert charges == {}
    assert harness.runner.finished
    assert await harness.runner.generate_tool_response() is None


async def test_continuing_after_a_cut_tool_use_works_by_following_the_errors_advice() -> None:
    harness = Harness(
        [truncated_tool_reply(tool_call("charge", {"order": 7, "note": "x"}, id="tu_cut")), text_reply("Ok.")]
    )
    runner = harness.runner
    # The advice: answer the cut call with an is_error tool_result at the start of the next message.
    answer = {
        "type": "tool_result",
        "tool_use_id": "tu_cut",
        "is_error": True,
        "content": "The input was cut off.",
    }
    async for message in runner:
        if message.stop_reason != "max_tokens":
            continue
        before = runner.messages
        # A follow-up that leaves the cut call unanswered is refused when it is pushed, and nothing
        # is appended (it could never be sent).
        with pytest.raises(UnansweredToolUseError, match="answer them yourself") as caught:
            runner.push_messages(message, {"role": "user", "content": "Please try again."})
        assert "['tu_cut']" in str(caught.value)
        assert runner.messages == before
        runner.push_messages(
            message, {"role": "user", "content": [answer, {"type": "text", "text": "Again."}]}
        )
    final = runner.last_message
    assert final is not None
    assert len(harness.fake.requests) == 2
    await harness.close()
    assert final.content[0].type == "text"
    assert charges == {}

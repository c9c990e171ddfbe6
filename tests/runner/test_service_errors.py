"""SDK errors reach the caller unchanged; the runner's state stays as it was and can be retried."""

from __future__ import annotations

from collections import Counter

import anthropic
import pytest

from tests.support.helpers import MODEL, USER, roles, sent_messages
from toolrunner import ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, disconnect, fault, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

runs: Counter[str] = Counter()


@tool
async def charge(amount: int) -> str:
    """Charge a card."""
    runs[f"charge {amount}"] += 1
    return "charged"


def runner_for(fake: FakeMessagesAPI, max_retries: int = 0) -> ToolRunner:
    client = fake.async_client(max_retries=max_retries)
    return ToolRunner(client, model=MODEL, max_tokens=64, messages=[USER], tools=[charge])


@pytest.fixture(autouse=True)
def _reset() -> None:
    runs.clear()


async def test_an_error_on_the_first_request_propagates_and_iterating_again_retries_it() -> None:
    fake = FakeMessagesAPI([fault(500), text_reply("Hello")])
    runner = runner_for(fake)
    with pytest.raises(anthropic.InternalServerError):
        await runner.until_done()
    assert roles(runner.messages) == ["user"]
    assert runner.requests_sent == 0
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert sent_messages(fake)[0] == sent_messages(fake)[1]


@pytest.mark.parametrize("failure", [fault(500), fault(529), fault(400), disconnect()], ids=str)
async def test_an_error_after_tools_ran_keeps_their_results_and_never_reruns_them(failure: object) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("charge", {"amount": 5})), failure, text_reply("Done")])  # type: ignore[list-item]
    runner = runner_for(fake)
    with pytest.raises(anthropic.APIError):
        async for _ in runner:
            pass
    assert roles(runner.messages) == ["user", "assistant", "user"]
    await runner.until_done()
    assert runs == {"charge 5": 1}
    assert sent_messages(fake)[1] == sent_messages(fake)[2]


async def test_the_sdk_retries_429_and_tools_run_once() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("charge", {"amount": 7})),
            fault(429, retry_after=0.01),
            fault(529),
            text_reply("Done"),
        ]
    )
    runner = runner_for(fake, max_retries=2)
    await runner.until_done()
    assert runs == {"charge 7": 1}
    assert len(fake.requests) == 4
    fake.assert_complete()


async def test_the_error_is_the_sdks_own() -> None:
    fake = FakeMessagesAPI([fault(429, retry_after=0.01, message="slow down")])
    runner = runner_for(fake)
    with pytest.raises(anthropic.RateLimitError) as caught:
        await runner.until_done()
    assert "slow down" in str(caught.value)

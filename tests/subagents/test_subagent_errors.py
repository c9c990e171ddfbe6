"""An API error inside a sub-run (issue 30, audit finding F6). One the same request meets again
(400, 401, 403, 404, 413, 422: ``_core.api_errors.permanent``) ends the sub-run: its call is
answered with an ``is_error`` result naming the sub-agent and the error, which the parent's model
can act on, as a sub-run at its limit is; the run goes on. One that may pass (5xx, 529, 429, a
connection lost: ``transient``) is raised as before, the run resumable, with a note (PEP 678)
naming the path of the sub-run it came from."""

from __future__ import annotations

import logging
from typing import Any

import anthropic
import pytest

from tests.support.subagents import by_model, lookup, ran
from toolrunner import MemoryCheckpointer, SubAgent, ToolRunner, text_of
from toolrunner._core.api_errors import permanent, transient
from toolrunner._ops.resumer import transient as resumer_transient
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    disconnect,
    fault,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

PERMANENT = (400, 401, 403, 404, 413, 422)
TRANSIENT = (408, 409, 429, 500, 503, 529)


def leaf() -> SubAgent:
    return SubAgent(name="leaf", description="Looks up.", model="claude-leaf", max_tokens=100, tools=[lookup])


def mid() -> SubAgent:
    return SubAgent(name="mid", description="Delegates.", model="claude-mid", max_tokens=100, tools=[leaf()])


def runner_of(client: Any, tools: list[Any], **options: Any) -> ToolRunner:
    return ToolRunner(
        client,
        model="claude-top",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=tools,
        **options,
    )


async def error_of(entry: ScriptEntry) -> BaseException:
    """The error the SDK raises for a request answered with ``entry`` (no retries)."""
    async with FakeMessagesAPI([entry]).async_client(max_retries=0) as client:
        try:
            await client.messages.create(
                model="m", max_tokens=1, messages=[{"role": "user", "content": "Hi."}]
            )
        except anthropic.APIError as error:
            return error
    raise AssertionError("no error")


# -- the classification: one rule, the SDK's, read by the sub-runs and the resumer ---------------------


@pytest.mark.parametrize("status", PERMANENT + TRANSIENT)
async def test_an_api_error_is_transient_or_permanent_as_the_sdk_retries_it(status: int) -> None:
    error = await error_of(fault(status))
    assert isinstance(error, anthropic.APIStatusError)
    assert transient(error) is (status in TRANSIENT)
    assert permanent(error) is (status in PERMANENT)
    assert resumer_transient(error) is transient(error)  # the resumer reads the same rule


async def test_a_lost_connection_is_transient_and_other_errors_are_neither() -> None:
    lost = await error_of(disconnect())
    assert isinstance(lost, anthropic.APIConnectionError)
    assert (transient(lost), permanent(lost)) == (True, False)
    for other in (RuntimeError("a bug"), ValueError("bad")):
        assert (transient(other), permanent(other)) == (False, False)


# -- a permanent error ends the sub-run, and the parent's model is told ----------------------------


@pytest.mark.parametrize("status", PERMANENT)
async def test_a_permanent_error_of_a_sub_runs_request_answers_its_call_with_an_error_result(
    status: int, caplog: pytest.LogCaptureFixture
) -> None:
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-top": [
                    tool_reply(tool_call("leaf", {"task": "Weather in Oslo?"}, id="toolu_1")),
                    text_reply("I answered without it."),
                ],
                "claude-leaf": [fault(status)],
            }
        )
    )
    async with fake.async_client(max_retries=0) as client:
        runner = runner_of(client, [leaf()])
        with caplog.at_level(logging.WARNING, logger="toolrunner"):
            final = await runner.until_done()
    assert text_of(final) == "I answered without it."
    assert runner.end_reason == "model"
    [result] = runner.messages[2]["content"]
    assert result["is_error"] is True
    assert result["content"].startswith(
        "The sub-agent 'leaf' stopped before it finished: its request to the API failed with "
    )
    assert f"(status {status}): Error code: {status}" in result["content"]
    assert result["content"].endswith(
        "which asking again would not change. What it had found so far: nothing yet."
    )
    assert [request.body["model"] for request in fake.requests] == ["claude-top", "claude-leaf", "claude-top"]
    [summary] = runner.state.sub_runs  # it ended: its summary stays, with no end reason of the loop's
    assert (summary.path, summary.end_reason, summary.usage) == (("toolu_1", "leaf"), None, ())
    assert any(
        "'leaf'" in record.getMessage() and "toolu_1" in record.getMessage() for record in caplog.records
    )


async def test_two_levels_down_the_sub_run_above_reads_the_error_and_goes_on() -> None:
    ran.clear()
    fake = FakeMessagesAPI(
        responder=by_model(
            {
                "claude-top": [
                    tool_reply(tool_call("mid", {"task": "Research Oslo."}, id="toolu_1")),
                    text_reply("Oslo: done."),
                ],
                "claude-mid": [
                    tool_reply(tool_call("leaf", {"task": "Oslo?"}, id="toolu_2")),
                    text_reply("The leaf failed: I looked nothing up."),
                ],
                "claude-leaf": [fault(404, message="model: claude-leaf")],
            }
        )
    )
    async with fake.async_client(max_retries=0) as client:
        runner = runner_of(client, [mid()])
        assert text_of(await runner.until_done()) == "Oslo: done."
    mids = [request for request in fake.requests if request.body["model"] == "claude-mid"]
    told = mids[1].messages[-1]["content"][0]
    assert told["is_error"] is True
    assert "'leaf'" in told["content"]
    assert "model: claude-leaf" in told["content"]
    assert runner.messages[2]["content"][0] == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": "The leaf failed: I looked nothing up.",
    }
    assert sorted(summary.path for summary in runner.state.sub_runs) == [
        ("toolu_1", "mid"),
        ("toolu_1", "mid", "toolu_2", "leaf"),
    ]


async def test_after_its_own_work_the_sub_agent_says_what_it_had_found() -> None:
    ran.clear()
    replies: dict[str, list[ScriptEntry]] = {
        "claude-top": [tool_reply(tool_call("leaf", {"task": "Oslo?"}, id="toolu_1")), text_reply("Fine.")],
        "claude-leaf": [
            tool_reply(tool_call("lookup", {"city": "Oslo"}, id="toolu_2"), text="Oslo first."),
            fault(413),
        ],
    }
    store = MemoryCheckpointer()
    async with FakeMessagesAPI(responder=by_model(replies)).async_client(max_retries=0) as client:
        runner = runner_of(client, [leaf()], checkpointer=store, run_id="r")
        await runner.until_done()
    assert ran == ["Oslo"]
    content = runner.messages[2]["content"][0]["content"]
    assert "(status 413)" in content
    assert content.endswith("What it had found so far: Oslo first.")
    saved = await store.load("r")
    assert saved is not None
    assert saved.state.end_reason == "model"
    assert [summary.path for summary in saved.state.sub_runs] == [("toolu_1", "leaf")]


# -- a transient error is raised, naming where it came from, and the run goes on after it ------------


def flaky(first: ScriptEntry) -> Any:
    """Two levels; the leaf's first request is answered with ``first``, its next ones well."""
    leaf_replies: list[ScriptEntry] = [
        first,
        tool_reply(tool_call("lookup", {"city": "Oslo"}, id="toolu_3")),
        text_reply("Oslo: 20 C."),
    ]
    scripts: dict[str, list[ScriptEntry]] = {
        "claude-top": [tool_reply(tool_call("mid", {"task": "Oslo?"}, id="toolu_1")), text_reply("Done.")],
        "claude-mid": [
            tool_reply(tool_call("leaf", {"task": "Oslo?"}, id="toolu_2")),
            text_reply("It is 20 C."),
        ],
        "claude-leaf": leaf_replies,
    }

    def respond(request: RecordedRequest) -> ScriptEntry:
        return scripts[request.body["model"]].pop(0)

    return respond


@pytest.mark.parametrize(
    "first", [fault(500), fault(529), fault(429), disconnect()], ids=["500", "529", "429", "lost"]
)
async def test_a_transient_error_is_raised_with_the_sub_runs_path_and_the_run_goes_on(
    first: ScriptEntry,
) -> None:
    ran.clear()
    fake = FakeMessagesAPI(responder=flaky(first))
    async with fake.async_client(max_retries=0) as client:
        runner = runner_of(client, [mid()])
        with pytest.raises(anthropic.APIError) as raised:
            await runner.until_done()
        assert transient(raised.value)
        assert raised.value.__notes__ == ["raised in a sub-agent's run: toolu_1 → mid → toolu_2 → leaf"]
        assert runner.state.failure is not None
        assert runner.state.failure["type"] == type(raised.value).__name__
        assert text_of(await runner.until_done()) == "Done."  # the same runner goes on where it was
    assert ran == ["Oslo"]
    assert [request.body["model"] for request in fake.requests] == [
        "claude-top",
        "claude-mid",
        "claude-leaf",  # the error
        "claude-leaf",
        "claude-leaf",
        "claude-mid",
        "claude-top",
    ]


async def test_a_transient_error_leaves_a_saved_run_that_a_new_runner_resumes() -> None:
    ran.clear()
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(responder=flaky(fault(503)))
    async with fake.async_client(max_retries=0) as client:
        with pytest.raises(anthropic.InternalServerError) as raised:
            await runner_of(client, [mid()], checkpointer=store, run_id="r").until_done()
        assert raised.value.__notes__ == ["raised in a sub-agent's run: toolu_1 → mid → toolu_2 → leaf"]
        summary = await store.get_run("r")
        assert summary is not None
        assert summary.failure is not None
        assert summary.failure["type"] == type(raised.value).__name__
        resumed = await ToolRunner.resume(client, checkpointer=store, run_id="r", tools=[mid()])
        assert text_of(await resumed.until_done()) == "Done."
    assert ran == ["Oslo"]

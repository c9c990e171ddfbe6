"""Hooks that can refuse or change a tool call, and per-tool call limits (issue 29): ``hooks=Hooks(...)``
and ``max_calls=``, on asyncio and trio, the sync runner, and across a crash and a resume."""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.lowlevel
import pydantic
import pytest
from anthropic.types import ToolResultBlockParam

from tests.support.helpers import make_runner, make_sync_runner, results_of
from toolrunner import (
    CallStatus,
    Deny,
    HookDecided,
    Hooks,
    MemoryCheckpointer,
    OutputValidationError,
    ParamsError,
    RequestInfo,
    RequestRefusedError,
    RunnerEvent,
    RunWith,
    ToolCallInfo,
    ToolRunner,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply, truncated_tool_reply

pytestmark = pytest.mark.anyio

ran: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


@tool
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(f"delete {path}")
    return f"deleted {path}"


@tool(idempotent=True)
def read(path: str) -> str:
    """Read a file."""
    ran.append(f"read {path}")
    return f"contents of {path}"


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    ran.append(f"pay {amount}")
    return f"paid {amount}"


def script(*calls: Any) -> FakeMessagesAPI:
    return FakeMessagesAPI([tool_reply(*calls), text_reply("done")])


def guard(info: ToolCallInfo) -> Deny | RunWith | None:
    match info.input:
        case {"path": str(path)} if path.startswith("/etc"):
            return Deny(f"{path} is off limits")
        case {"path": str(path)} if path.startswith("~"):
            return RunWith({"path": "/home/ada" + path[1:]})
        case _:
            return None


async def test_before_tool_call_denies_rewrites_and_lets_run() -> None:
    events: list[RunnerEvent] = []
    fake = script(
        tool_call("delete", {"path": "/etc/passwd"}, id="a"),
        tool_call("delete", {"path": "~/old"}, id="b"),
        tool_call("delete", {"path": "/tmp/x"}, id="c"),
    )
    runner = make_runner(fake, delete, hooks=Hooks(before_tool_call=guard), on_event=events.append)
    await runner.until_done()
    assert sorted(ran) == ["delete /home/ada/old", "delete /tmp/x"]  # the calls run at once
    assert results_of(runner.messages[2]) == [
        ("a", "/etc/passwd is off limits", True),
        ("b", "deleted /home/ada/old", False),
        ("c", "deleted /tmp/x", False),
    ]
    hooked = [
        (event.call.id, event.decision, event.input)
        for event in events
        if isinstance(event, HookDecided) and event.call is not None
    ]
    assert sorted(hooked, key=str) == [
        ("a", "denied", None),
        ("b", "rewritten", {"path": "/home/ada/old"}),
        ("c", "run", None),
    ]


async def test_an_async_hook_and_what_it_sees_of_an_approved_call() -> None:
    seen: list[ToolCallInfo] = []

    async def hook(info: ToolCallInfo) -> None:
        seen.append(info)

    async def approve(call: Any) -> bool:
        return True

    fake = script(tool_call("pay", {"amount": 5}, id="p"), tool_call("delete", {"path": "/tmp/x"}, id="d"))
    runner = make_runner(fake, pay, delete, hooks=Hooks(before_tool_call=hook), approve=approve, run_id="r1")
    await runner.until_done()
    assert sorted((info.id, info.name, info.input, info.approved, info.run_id) for info in seen) == [
        ("d", "delete", {"path": "/tmp/x"}, False, "r1"),
        ("p", "pay", {"amount": 5}, True, "r1"),
    ]


async def test_the_hook_runs_after_a_person_approved_and_sees_who() -> None:
    seen: list[ToolCallInfo] = []

    def hook(info: ToolCallInfo) -> RunWith:
        seen.append(info)
        return RunWith({"amount": 4})

    fake = script(tool_call("pay", {"amount": 5}, id="p"))
    runner = make_runner(fake, pay, hooks=Hooks(before_tool_call=hook))
    async for _ in runner:
        pass
    assert seen == []  # waits for the person first
    runner.approve("p", input={"amount": 6}, by="ada")
    await runner.until_done()
    assert (seen[0].input, seen[0].approved, seen[0].approved_by) == ({"amount": 6}, True, "ada")
    assert ran == ["pay 4"]


async def test_a_hook_that_raises_or_answers_badly_denies_the_call() -> None:
    def broken(info: ToolCallInfo) -> Any:
        if info.id == "a":
            raise RuntimeError("boom")
        return RunWith({"nope": 1}) if info.id == "b" else "yes"

    fake = script(
        tool_call("delete", {"path": "/a"}, id="a"),
        tool_call("delete", {"path": "/b"}, id="b"),
        tool_call("delete", {"path": "/c"}, id="c"),
    )
    runner = make_runner(fake, delete, hooks=Hooks(before_tool_call=broken))
    await runner.until_done()
    assert ran == []
    results = results_of(runner.messages[2])
    assert all(is_error for _, _, is_error in results)
    assert "before_tool_call hook failed (RuntimeError: boom)" in results[0][1]


def test_the_sync_runner_asks_the_hook() -> None:
    fake = script(
        tool_call("delete", {"path": "/etc/x"}, id="a"), tool_call("delete", {"path": "~/y"}, id="b")
    )
    runner = make_sync_runner(fake, delete, hooks=Hooks(before_tool_call=guard))
    runner.until_done()
    assert ran == ["delete /home/ada/y"]
    assert results_of(runner.messages[2])[0] == ("a", "/etc/x is off limits", True)


class Crash(BaseException):
    """The process dies while the tool runs (after its start was saved)."""


async def test_a_resumed_run_never_asks_again_and_runs_the_rewritten_input() -> None:
    asked: list[str] = []
    crash = [True]

    @tool(name="read", idempotent=True)
    def flaky_read(path: str) -> str:
        """Read a file."""
        ran.append(f"read {path}")
        if crash[0]:
            crash[0] = False
            raise Crash
        return f"contents of {path}"

    def hook(info: ToolCallInfo) -> RunWith:
        asked.append(info.id)
        return RunWith({"path": "/safe" + str(info.input["path"])})  # type: ignore[index]

    store = MemoryCheckpointer()
    fake = script(tool_call("read", {"path": "/x"}, id="r"))
    runner = make_runner(fake, flaky_read, hooks=Hooks(before_tool_call=hook), checkpointer=store, run_id="c")
    with pytest.raises((Crash, BaseExceptionGroup)) as raised:
        await runner.until_done()
    assert raised.type is Crash or raised.group_contains(Crash)
    saved = await store.load("c")
    assert saved is not None
    record = saved.state.calls["r"]
    assert (record.status, record.hook, record.hook_input) == (
        CallStatus.STARTED,
        "rewritten",
        {"path": "/safe/x"},
    )

    resumed = await ToolRunner.resume(
        fake.async_client(),
        checkpointer=store,
        run_id="c",
        tools=[flaky_read],
        hooks=Hooks(before_tool_call=hook),
    )
    await resumed.until_done()
    assert asked == ["r"]  # once, before the crash
    assert ran == ["read /safe/x", "read /safe/x"]
    assert results_of(resumed.messages[2]) == [("r", "contents of /safe/x", False)]


async def test_a_denial_is_saved_and_not_asked_again() -> None:
    store = MemoryCheckpointer()
    fake = script(tool_call("delete", {"path": "/etc/x"}, id="a"))
    runner = make_runner(fake, delete, hooks=Hooks(before_tool_call=guard), checkpointer=store, run_id="d")
    await runner.until_done()
    saved = await store.load("d")
    assert saved is not None
    assert results_of(saved.state.messages[2]) == [("a", "/etc/x is off limits", True)]


# -- max_calls -----------------------------------------------------------------------------------


async def test_max_calls_stops_a_tool_over_its_limit_and_tells_the_model() -> None:
    events: list[RunnerEvent] = []
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("read", {"path": "/1"}, id="1"), tool_call("read", {"path": "/2"}, id="2")),
            tool_reply(
                tool_call("read", {"path": "/3"}, id="3"), tool_call("delete", {"path": "/4"}, id="4")
            ),
            text_reply("done"),
        ]
    )
    runner = make_runner(fake, read, delete, max_calls={"read": 2}, on_event=events.append)
    await runner.until_done()
    assert sorted(ran) == ["delete /4", "read /1", "read /2"]
    (call_id, content, is_error), other = results_of(runner.messages[4])
    assert (call_id, is_error) == ("3", True)
    assert "at most 2 call(s) to 'read'" in content
    assert other == ("4", "deleted /4", False)
    assert [
        (e.hook, e.decision) for e in events if isinstance(e, HookDecided) and e.call and e.call.id == "3"
    ] == [("max_calls", "limited")]
    assert runner.state.call_counts == {"read": 2, "delete": 1}


async def test_max_calls_counts_over_a_resume() -> None:
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("read", {"path": "/1"}, id="1")),
            text_reply("pause"),
            tool_reply(tool_call("read", {"path": "/2"}, id="2")),
            text_reply("done"),
        ]
    )
    runner = make_runner(fake, read, max_calls={"read": 1}, checkpointer=store, run_id="m")
    await runner.until_done()
    resumed = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="m", tools=[read], max_calls={"read": 1}
    )
    resumed.append_messages({"role": "user", "content": "again"})
    await resumed.until_done()
    assert ran == ["read /1"]
    assert results_of(resumed.messages[6])[0][2] is True


async def test_max_calls_gives_its_places_in_the_models_order_whatever_starts_first() -> None:
    # The first call's hook takes a while, so the other calls start before it: the places still go
    # to the first two calls the model made, on either backend (trio's scheduling varies from run to
    # run), and the third is answered at once.
    async def slow_for_the_first(info: ToolCallInfo) -> None:
        if info.id == "1":
            for _ in range(5):
                await anyio.lowlevel.checkpoint()

    fake = script(*(tool_call("read", {"path": f"/{n}"}, id=str(n)) for n in (1, 2, 3)))
    runner = make_runner(fake, read, max_calls={"read": 2}, hooks=Hooks(before_tool_call=slow_for_the_first))
    await runner.until_done()
    assert sorted(ran) == ["read /1", "read /2"]
    assert [(call_id, is_error) for call_id, _, is_error in results_of(runner.messages[2])] == [
        ("1", False),
        ("2", False),
        ("3", True),
    ]


def test_max_calls_warns_of_a_name_no_tool_has(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="toolrunner"):
        make_sync_runner(FakeMessagesAPI(), read, max_calls={"raed": 1, "read": 2})
    [record] = [record for record in caplog.records if "max_calls" in record.getMessage()]
    assert record.getMessage() == (
        "max_calls names 'raed', which no tool of this runner has (did you mean 'read'?); a tool it misnames "
        "has no limit."
    )


def test_max_calls_on_the_sync_runner() -> None:
    fake = script(tool_call("read", {"path": "/1"}, id="1"), tool_call("read", {"path": "/2"}, id="2"))
    runner = make_sync_runner(fake, read, max_calls={"read": 1})
    runner.until_done()
    assert ran == ["read /1"]
    assert [is_error for _, _, is_error in results_of(runner.messages[2])] == [False, True]


# -- after_tool_call ---------------------------------------------------------------------------


async def test_after_tool_call_replaces_what_the_model_reads_and_the_journal_keeps_it() -> None:
    store = MemoryCheckpointer()

    async def redact(info: ToolCallInfo, result: ToolResultBlockParam) -> str | None:
        return "[redacted]" if info.name == "read" else None

    fake = script(tool_call("read", {"path": "/secret"}, id="r"), tool_call("delete", {"path": "/x"}, id="d"))
    runner = make_runner(
        fake, read, delete, hooks=Hooks(after_tool_call=redact), checkpointer=store, run_id="a"
    )
    await runner.until_done()
    assert results_of(runner.messages[2]) == [("r", "[redacted]", False), ("d", "deleted /x", False)]
    saved = await store.load("a")
    assert saved is not None
    assert results_of(saved.state.messages[2])[0] == ("r", "[redacted]", False)


async def test_a_call_cancelled_while_its_after_tool_call_hook_is_asked_never_runs_again() -> None:
    """The tool ran: cut off in its hook, the call is cut off as in its tool (found by the fault
    property, tests/properties/test_effect_faults.py: it ran again on the next iteration)."""
    scopes: list[anyio.CancelScope] = []

    async def after(info: ToolCallInfo, result: ToolResultBlockParam) -> None:
        if info.id == "d" and scopes:
            scopes.pop().cancel()
            await anyio.lowlevel.checkpoint()

    fake = script(tool_call("delete", {"path": "/x"}, id="d"), tool_call("read", {"path": "/y"}, id="r"))
    runner = make_runner(
        fake, delete, read, hooks=Hooks(after_tool_call=after), checkpointer=MemoryCheckpointer(), run_id="c"
    )
    with anyio.CancelScope() as scope:
        scopes.append(scope)
        await runner.until_done()
    assert scope.cancelled_caught
    await runner.until_done()
    assert ran.count("delete /x") == 1  # interrupted, as in its tool
    results = results_of(runner.messages[2])
    assert results[0][0] == "d"
    assert "interrupted" in results[0][1]
    assert results[1] == ("r", "contents of /y", False)  # an idempotent tool's call may run again


def test_after_tool_call_on_the_sync_runner_and_a_hook_that_raises() -> None:
    def hook(info: ToolCallInfo, result: ToolResultBlockParam) -> str:
        if info.id == "b":
            raise ValueError("no")
        return f"{result.get('content')}!"

    fake = script(tool_call("read", {"path": "/a"}, id="a"), tool_call("read", {"path": "/b"}, id="b"))
    runner = make_sync_runner(fake, read, hooks=Hooks(after_tool_call=hook))
    runner.until_done()
    (_, first, first_error), (_, second, second_error) = results_of(runner.messages[2])
    assert (first, first_error) == ("contents of /a!", False)
    assert second_error
    assert "after_tool_call hook failed" in second


# -- the options -----------------------------------------------------------------------------


def test_options_are_checked() -> None:
    with pytest.raises(ParamsError, match="hooks must be a Hooks"):
        make_runner(hooks=object())
    with pytest.raises(ParamsError, match="max_calls"):
        make_runner(max_calls={"read": -1})
    with pytest.raises(ParamsError, match="takes a function"):
        Hooks(before_tool_call=3)  # type: ignore[arg-type]


async def test_without_hooks_the_journal_and_the_state_are_as_before() -> None:
    store = MemoryCheckpointer()
    fake = script(tool_call("read", {"path": "/a"}, id="a"))
    runner = make_runner(fake, read, checkpointer=store, run_id="plain")
    await runner.until_done()
    data = runner.state.to_dict()
    assert "call_counts" not in data
    assert runner.state.call_counts == {}


# -- tracing -------------------------------------------------------------------------------------


async def test_the_tool_span_says_what_the_hook_decided() -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from toolrunner import Tracing

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    fake = script(tool_call("delete", {"path": "~/a"}, id="a"), tool_call("delete", {"path": "/b"}, id="b"))
    runner = make_runner(
        fake,
        delete,
        hooks=Hooks(before_tool_call=guard),
        tracing=Tracing(tracer_provider=provider, content=True),
    )
    await runner.until_done()
    tools = {
        span.attributes["gen_ai.tool.call.id"]: dict(span.attributes)
        for span in exporter.get_finished_spans()
        if span.attributes and span.attributes.get("gen_ai.operation.name") == "execute_tool"
    }
    assert tools["a"]["toolrunner.tool.hook"] == "rewritten"
    assert tools["a"]["gen_ai.tool.call.arguments"] == '{"path":"/home/ada/a"}'
    assert tools["b"]["toolrunner.tool.hook"] == "run"


# -- before_request --------------------------------------------------------------------------


async def test_before_request_refuses_and_nothing_is_lost() -> None:
    store = MemoryCheckpointer()
    seen: list[RequestInfo] = []
    allow = [True]
    events: list[RunnerEvent] = []

    async def tripwire(info: RequestInfo) -> Deny | None:
        seen.append(info)
        return None if allow[0] else Deny("too many requests for this user")

    fake = FakeMessagesAPI([tool_reply(tool_call("read", {"path": "/a"}, id="a")), text_reply("done")])
    runner = make_runner(
        fake,
        read,
        hooks=Hooks(before_request=tripwire),
        checkpointer=store,
        run_id="g",
        on_event=events.append,
    )
    await runner.__anext__()  # the first request goes
    allow[0] = False
    with pytest.raises(RequestRefusedError, match="too many requests") as raised:
        await runner.__anext__()
    assert raised.value.reason == "too many requests for this user"
    assert len(fake.requests) == 1
    assert [(e.hook, e.decision) for e in events if isinstance(e, HookDecided)] == [
        ("before_request", "refused")
    ]
    saved = await store.load("g")
    assert saved is not None
    assert saved.state.failure is not None
    assert saved.state.failure["type"] == "RequestRefusedError"
    assert len(saved.state.messages) == 3  # the tool ran, its result is saved
    assert [info.requests_sent for info in seen] == [0, 1]
    assert seen[1].run_id == "g"

    allow[0] = True
    resumed = await ToolRunner.resume(
        fake.async_client(),
        checkpointer=store,
        run_id="g",
        tools=[read],
        hooks=Hooks(before_request=tripwire),
    )
    final = await resumed.until_done()
    assert final.content[0].type == "text"
    assert ran == ["read /a"]
    assert resumed.state.failure is None


def test_before_request_on_the_sync_runner_and_a_hook_that_raises() -> None:
    def broken(info: RequestInfo) -> None:
        raise RuntimeError("guard down")

    runner = make_sync_runner(FakeMessagesAPI([text_reply("hi")]), hooks=Hooks(before_request=broken))
    with pytest.raises(RequestRefusedError, match="guard down") as raised:
        runner.until_done()
    assert isinstance(raised.value.__cause__, RuntimeError)
    assert runner.requests_sent == 0


# -- check_output ----------------------------------------------------------------------------


def no_maybe(answer: Any) -> Deny | None:
    text = answer.content[0].text
    return Deny("do not hedge") if "maybe" in text else None


async def test_check_output_sends_the_model_back_with_the_reason() -> None:
    events: list[RunnerEvent] = []
    fake = FakeMessagesAPI([text_reply("maybe 4"), text_reply("4")])
    runner = make_runner(fake, hooks=Hooks(check_output=no_maybe), on_event=events.append)
    final = await runner.until_done()
    assert final.content[0].type == "text"
    assert final.content[0].text == "4"
    assert runner.messages[2] == {
        "role": "user",
        "content": "Your answer was not accepted: do not hedge\nAnswer again.",
    }
    assert [(e.hook, e.decision) for e in events if isinstance(e, HookDecided)] == [
        ("check_output", "refused")
    ]


async def test_check_output_answers_the_calls_of_an_answer_cut_inside_a_tool_call() -> None:
    # The refused answer's reply was cut by max_tokens inside a tool call: the message that sends it
    # back answers the call first (the fake validates as the service does: no 400).
    fake = FakeMessagesAPI(
        [truncated_tool_reply(tool_call("fetch", {"url": "x"}, id="toolu_cut")), text_reply("4")]
    )
    runner = make_runner(fake, hooks=Hooks(check_output=lambda answer: Deny("finish the answer")))
    with pytest.raises(OutputValidationError, match="finish the answer"):
        await runner.until_done()
    [cut, reason] = fake.requests[1].body["messages"][-1]["content"]
    assert cut["tool_use_id"] == "toolu_cut"
    assert cut["is_error"] is True
    assert reason == {
        "type": "text",
        "text": "Your answer was not accepted: finish the answer\nAnswer again.",
    }


async def test_check_output_gives_up_after_output_retries() -> None:
    fake = FakeMessagesAPI([text_reply("maybe"), text_reply("maybe not"), text_reply("x")])
    runner = make_runner(fake, hooks=Hooks(check_output=no_maybe), output_retries=1)
    with pytest.raises(OutputValidationError, match="do not hedge") as raised:
        await runner.until_done()
    assert raised.value.errors == ["do not hedge"]
    assert runner.requests_sent == 2


async def test_check_output_shares_the_retries_of_a_typed_answer() -> None:
    class Answer(pydantic.BaseModel):
        value: int

    def small(answer: Any) -> Deny | None:
        parsed = answer.parsed_output
        assert isinstance(parsed, Answer)
        return Deny("too big") if parsed.value > 10 else None

    replies = [text_reply('{"value": "x"}'), text_reply('{"value": 50}'), text_reply('{"value": 5}')]
    runner = make_runner(FakeMessagesAPI(replies), output_format=Answer, hooks=Hooks(check_output=small))
    with pytest.raises(OutputValidationError, match="too big"):  # one retry, used by the validation
        await runner.until_done()
    runner = make_runner(
        FakeMessagesAPI(replies), output_format=Answer, output_retries=2, hooks=Hooks(check_output=small)
    )
    final = await runner.until_done()
    assert getattr(final, "parsed_output", None) == Answer(value=5)
    assert runner.state.output is not None
    assert runner.state.output.retries == 0


async def test_a_run_saved_in_a_check_output_retry_goes_on_after_a_resume() -> None:
    store = MemoryCheckpointer()
    runner = make_runner(
        FakeMessagesAPI([text_reply("maybe")]),
        hooks=Hooks(check_output=no_maybe),
        checkpointer=store,
        run_id="o",
    )
    with pytest.raises(Exception):  # noqa: B017, PT011  # the fake has no reply for the retry
        await runner.until_done()
    saved = await store.load("o")
    assert saved is not None
    assert saved.state.output is not None
    assert saved.state.output.retries == 1
    fake = FakeMessagesAPI([text_reply("maybe again")])
    resumed = await ToolRunner.resume(
        fake.async_client(), checkpointer=store, run_id="o", hooks=Hooks(check_output=no_maybe)
    )
    with pytest.raises(OutputValidationError):  # the one retry was used before the crash
        await resumed.until_done()
    assert len(fake.requests) == 1


def test_check_output_on_the_sync_runner() -> None:
    runner = make_sync_runner(
        FakeMessagesAPI([text_reply("maybe"), text_reply("yes")]), hooks=Hooks(check_output=no_maybe)
    )
    assert runner.until_done().content[0].type == "text"
    assert runner.requests_sent == 2


def test_output_retries_is_taken_with_check_output_alone() -> None:
    make_runner(hooks=Hooks(check_output=no_maybe), output_retries=3)
    with pytest.raises(ParamsError, match="output_retries"):
        make_runner(output_retries=3)


async def test_hooks_hold_for_calls_started_while_the_reply_streams() -> None:
    fake = script(
        tool_call("delete", {"path": "/etc/x"}, id="a"), tool_call("delete", {"path": "~/y"}, id="b")
    )
    runner = make_runner(
        fake,
        delete,
        stream=True,
        run_tools_eagerly=True,
        hooks=Hooks(
            before_tool_call=guard, after_tool_call=lambda info, result: f"[{result.get('content')}]"
        ),
        max_calls={"delete": 5},
    )
    async with runner:
        await runner.until_done()
    assert ran == ["delete /home/ada/y"]
    assert results_of(runner.messages[2]) == [
        ("a", "/etc/x is off limits", True),
        ("b", "[deleted /home/ada/y]", False),
    ]
    assert runner.state.call_counts == {"delete": 1}


async def test_max_calls_holds_for_calls_that_run_at_once_while_an_async_hook_is_asked() -> None:
    async def slow(info: ToolCallInfo) -> None:
        await anyio.sleep(0.01)

    fake = script(*(tool_call("read", {"path": f"/{n}"}, id=str(n)) for n in range(4)))
    runner = make_runner(fake, read, hooks=Hooks(before_tool_call=slow), max_calls={"read": 2})
    await runner.until_done()
    assert len(ran) == 2
    assert [is_error for _, _, is_error in results_of(runner.messages[2])].count(True) == 2
    assert runner.state.call_counts == {"read": 2}


# -- a refusal that says nothing (audit: Deny(None) let a guardrail fail open) --------------------


def test_deny_takes_only_a_reason_that_says_something() -> None:
    with pytest.raises(TypeError, match="as a str"):
        Deny(None)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match="needs a reason"):
        Deny("  ")
    assert Deny("no").reason == "no"


async def test_a_guardrail_that_denies_with_no_reason_fails_closed() -> None:
    policy: dict[str, str] = {}  # its "reason" key is missing

    def tripwire(info: RequestInfo) -> Deny | None:
        return Deny(policy.get("reason"))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]

    fake = FakeMessagesAPI([text_reply("hi")])
    runner = make_runner(fake, hooks=Hooks(before_request=tripwire))
    with pytest.raises(RequestRefusedError, match="TypeError"):
        await runner.until_done()
    assert fake.requests == []  # refused, not let through

    def judge(answer: Any) -> Deny | None:
        return Deny(policy.get("reason"))  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]

    checked = make_runner(FakeMessagesAPI([text_reply("hi")]), hooks=Hooks(check_output=judge))
    with pytest.raises(TypeError, match="as a str"):  # the answer is not accepted
        await checked.until_done()


async def test_an_error_result_replaced_with_nothing_is_withheld_instead() -> None:
    @tool
    def fails(path: str) -> str:
        """Fail."""
        raise OSError("disk gone")

    def blank(info: ToolCallInfo, block: ToolResultBlockParam) -> str:
        return ""

    fake = script(tool_call("fails", {"path": "/a"}, id="f"))
    await make_runner(fake, fails, hooks=Hooks(after_tool_call=blank)).until_done()
    [(call_id, content, is_error)] = results_of(fake.requests[1].body["messages"][-1])
    assert (call_id, is_error) == ("f", True)
    assert "withheld" in content
    assert "ValueError" in content

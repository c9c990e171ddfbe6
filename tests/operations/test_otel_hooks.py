"""tracing=Tracing(...) with hooks=Hooks(...) and max_calls= (issue 29): what the hooks decided is on
the spans. A call the hooks stopped (denied, over its limit) has an ``execute_tool`` span of its own;
a call whose result an ``after_tool_call`` hook replaced says so on its span; a request or an answer
a hook refused is an event on the run's span. A run without hooks makes no events for the trace.

Spans are read from the OpenTelemetry SDK's ``InMemorySpanExporter`` with a tracer provider of each
test's own; the client does not trace (its spans are ``test_otel``'s)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from anthropic.types import ToolResultBlockParam
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode
from opentelemetry.util.types import AttributeValue

from tests.support.helpers import MODEL, USER
from toolrunner import (
    Deny,
    HookDecided,
    Hooks,
    RequestInfo,
    RequestRefusedError,
    RunnerEvent,
    SyncToolRunner,
    ToolCallInfo,
    ToolRunner,
    Tracing,
    tool,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

GUARD = 10  # seconds before a test that would hang fails instead (not a timing)

ran: list[str] = []


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


PROVIDERS: dict[int, TracerProvider] = {}
"""Each test's tracer provider, by its exporter's id."""


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    PROVIDERS[id(exporter)] = provider
    yield exporter
    del PROVIDERS[id(exporter)]
    provider.shutdown()


@tool
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(f"delete {path}")
    return f"deleted {path}"


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount."""
    ran.append(f"pay {amount}")
    return f"paid {amount}"


def results(fake: FakeMessagesAPI, request: int) -> dict[str, Any]:
    """The tool results the ``request``-th request sent, by tool_use id."""
    return {block["tool_use_id"]: block for block in fake.requests[request].body["messages"][-1]["content"]}


@tool
def read(path: str) -> str:
    """Read a file."""
    ran.append(f"read {path}")
    return f"contents of {path}"


def build(
    fake: FakeMessagesAPI, exporter: InMemorySpanExporter, *, content: bool = False, **options: Any
) -> ToolRunner[Any]:
    provider = PROVIDERS[id(exporter)]
    settings: dict[str, Any] = {"model": MODEL, "max_tokens": 64, "messages": [USER], "tools": [delete, read]}
    settings.update(options)
    return ToolRunner(
        fake.async_client(open_telemetry=False),
        tracing=Tracing(tracer_provider=provider, content=content),
        **settings,
    )


def attributes(span: ReadableSpan) -> dict[str, AttributeValue]:
    return dict(span.attributes or {})


def tool_spans(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    spans: dict[str, ReadableSpan] = {}
    for span in exporter.get_finished_spans():
        if attributes(span).get("gen_ai.operation.name") == "execute_tool":
            call_id = str(attributes(span)["gen_ai.tool.call.id"])
            assert call_id not in spans, f"two spans for {call_id}"
            spans[call_id] = span
    return spans


def run_span(exporter: InMemorySpanExporter) -> ReadableSpan:
    (run,) = [
        span
        for span in exporter.get_finished_spans()
        if attributes(span).get("gen_ai.operation.name") == "invoke_agent"
    ]
    return run


def no_etc(info: ToolCallInfo) -> Deny | None:
    match info.input:
        case {"path": str(path)} if path.startswith("/etc"):
            return Deny(f"{path} is off limits")
        case _:
            return None


# -- calls the hooks stopped ---------------------------------------------------------------------


async def test_a_denied_and_a_limited_call_each_get_a_span_under_the_run_and_no_error_status(
    exporter: InMemorySpanExporter,
) -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("delete", {"path": "/etc/passwd"}, id="denied"),
                tool_call("read", {"path": "/a"}, id="read_a"),
                tool_call("read", {"path": "/b"}, id="limited"),
            ),
            text_reply("done"),
        ]
    )
    runner = build(fake, exporter, hooks=Hooks(before_tool_call=no_etc), max_calls={"read": 1})
    await runner.until_done()
    assert ran == ["read /a"]  # neither stopped call ran
    spans = tool_spans(exporter)
    assert set(spans) == {"denied", "read_a", "limited"}
    assert attributes(spans["denied"]) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "delete",
        "gen_ai.tool.call.id": "denied",
        "gen_ai.tool.type": "function",
        "toolrunner.tool.hook": "denied",
        "toolrunner.tool.hook_reason": "/etc/passwd is off limits",
    }
    assert attributes(spans["limited"]) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "read",
        "gen_ai.tool.call.id": "limited",
        "gen_ai.tool.type": "function",
        "toolrunner.tool.hook": "limited",
        "toolrunner.tool.hook_reason": results(fake, 1)["limited"]["content"],
    }
    assert "at most 1 call(s)" in str(attributes(spans["limited"])["toolrunner.tool.hook_reason"])
    assert attributes(spans["read_a"])["toolrunner.tool.hook"] == "run"
    run = run_span(exporter)
    for span in spans.values():
        assert span.name == f"execute_tool {attributes(span)['gen_ai.tool.name']}"
        assert span.status.status_code is StatusCode.UNSET  # the tool did not fail: it did not run
        assert not span.events  # no exception recorded
        assert span.parent is not None
        assert run.context is not None
        assert span.parent.span_id == run.context.span_id
    assert run.status.status_code is StatusCode.UNSET


async def test_with_content_a_stopped_call_records_its_arguments_and_no_result(
    exporter: InMemorySpanExporter,
) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("delete", {"path": "/etc/x"}, id="d")), text_reply("ok")])
    await build(fake, exporter, content=True, hooks=Hooks(before_tool_call=no_etc)).until_done()
    span = tool_spans(exporter)["d"]
    assert attributes(span)["gen_ai.tool.call.arguments"] == '{"path":"/etc/x"}'
    assert "gen_ai.tool.call.result" not in attributes(span)


async def test_a_call_stopped_as_a_run_starts_is_under_that_runs_span(exporter: InMemorySpanExporter) -> None:
    # A pause for approval ends the first run; the approved call is the second run's first act,
    # and the hook denies it before the second run sends any request.
    fake = FakeMessagesAPI([tool_reply(tool_call("pay", {"amount": 5}, id="p")), text_reply("ok")])
    runner = build(fake, exporter, tools=[pay], hooks=Hooks(before_tool_call=lambda info: Deny("no money")))
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    runner.approve("p")
    await runner.until_done()
    assert ran == []
    first, second = sorted(
        (s for s in exporter.get_finished_spans() if s.name == "invoke_agent"),
        key=lambda s: s.start_time or 0,
    )
    span = tool_spans(exporter)["p"]
    assert attributes(span)["toolrunner.tool.hook"] == "denied"
    assert span.parent is not None
    assert second.context is not None
    assert span.parent.span_id == second.context.span_id
    assert attributes(first)["toolrunner.end_reason"] == "awaiting_approval"


async def test_spans_and_events_both_hear_the_hooks_with_on_event_and_events(
    exporter: InMemorySpanExporter,
) -> None:
    heard: list[RunnerEvent] = []
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("delete", {"path": "/etc/a"}, id="first")),
            tool_reply(tool_call("delete", {"path": "/etc/b"}, id="second")),
            text_reply("done"),
        ]
    )
    runner = build(fake, exporter, hooks=Hooks(before_tool_call=no_etc), on_event=heard.append)
    await runner.__anext__()
    await runner.__anext__()  # "first" is answered, the second request sent
    streamed: list[RunnerEvent] = []
    async with runner.events() as events:
        async for event in events:
            streamed.append(event)
    decided = [(e.call.id if e.call else None, e.decision) for e in heard if isinstance(e, HookDecided)]
    assert decided == [("first", "denied"), ("second", "denied")]
    assert [e for e in streamed if isinstance(e, HookDecided)] == [
        e for e in heard if isinstance(e, HookDecided)
    ][1:]
    spans = tool_spans(exporter)
    assert {key: attributes(span)["toolrunner.tool.hook"] for key, span in spans.items()} == {
        "first": "denied",
        "second": "denied",
    }


# -- after_tool_call ---------------------------------------------------------------------------------


async def test_a_replaced_result_is_marked_on_the_calls_span_which_ends_after_the_hook(
    exporter: InMemorySpanExporter,
) -> None:
    open_in_hook: list[bool] = []

    def redact(info: ToolCallInfo, block: ToolResultBlockParam) -> str | None:
        # the call's span is still open while the hook runs (it ends once the hook answered)
        open_in_hook.append(info.id not in tool_spans(exporter))
        return "[redacted]" if info.id == "secret" else None

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("read", {"path": "/secret"}, id="secret"),
                tool_call("read", {"path": "/public"}, id="public"),
            ),
            text_reply("done"),
        ]
    )
    runner = build(fake, exporter, content=True, hooks=Hooks(after_tool_call=redact))
    await runner.until_done()
    assert open_in_hook == [True, True]
    spans = tool_spans(exporter)
    assert attributes(spans["secret"])["toolrunner.tool.result_replaced"] is True
    assert "toolrunner.tool.hook_reason" not in attributes(spans["secret"])
    # the tool's own result, as for any call (the model read the replacement)
    assert attributes(spans["secret"])["gen_ai.tool.call.result"] == "contents of /secret"
    assert "toolrunner.tool.result_replaced" not in attributes(spans["public"])
    for span in spans.values():
        assert attributes(span)["toolrunner.tool.hook"] == "run"
        assert span.status.status_code is StatusCode.UNSET
    assert fake.requests[1].body["messages"][-1]["content"][0]["content"] == "[redacted]"


async def test_a_replaced_result_of_a_call_started_early_is_marked_on_its_span(
    exporter: InMemorySpanExporter,
) -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("read", {"path": "/a"}, id="a"),
                tool_call("delete", {"path": "/etc/b"}, id="b"),
            ),
            text_reply("done"),
        ]
    )
    async with build(
        fake,
        exporter,
        stream=True,
        run_tools_eagerly=True,
        hooks=Hooks(before_tool_call=no_etc, after_tool_call=lambda info, block: "[redacted]"),
    ) as runner:
        async for stream in runner:
            await stream.get_final_message()
    spans = tool_spans(exporter)
    assert attributes(spans["a"])["toolrunner.tool.result_replaced"] is True
    assert attributes(spans["b"])["toolrunner.tool.hook"] == "denied"
    assert "toolrunner.tool.result_replaced" not in attributes(spans["b"])  # never ran: nothing to replace


def test_the_sync_runner_traces_what_the_hooks_decided(exporter: InMemorySpanExporter) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("delete", {"path": "/etc/a"}, id="a")), text_reply("ok")])
    runner = SyncToolRunner(
        fake.client(open_telemetry=False),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[delete],
        hooks=Hooks(before_tool_call=no_etc),
        tracing=Tracing(tracer_provider=PROVIDERS[id(exporter)]),
    )
    runner.until_done()
    assert attributes(tool_spans(exporter)["a"])["toolrunner.tool.hook"] == "denied"


async def test_an_after_tool_call_hook_that_raises_withholds_the_result_and_the_span_says_why(
    exporter: InMemorySpanExporter,
) -> None:
    def broken(info: ToolCallInfo, block: ToolResultBlockParam) -> None:
        raise RuntimeError("redactor down")

    fake = FakeMessagesAPI([tool_reply(tool_call("read", {"path": "/a"}, id="a")), text_reply("done")])
    runner = build(fake, exporter, hooks=Hooks(after_tool_call=broken))
    await runner.until_done()
    span = tool_spans(exporter)["a"]
    assert attributes(span)["toolrunner.tool.result_replaced"] is True
    assert attributes(span)["toolrunner.tool.hook_reason"] == results(fake, 1)["a"]["content"]
    assert "after_tool_call hook failed" in str(attributes(span)["toolrunner.tool.hook_reason"])


async def test_a_call_cut_off_in_its_after_tool_call_hook_ends_its_span_without_a_status(
    exporter: InMemorySpanExporter,
) -> None:
    entered = anyio.Event()

    async def stuck(info: ToolCallInfo, block: ToolResultBlockParam) -> None:
        entered.set()
        await anyio.sleep_forever()

    fake = FakeMessagesAPI([tool_reply(tool_call("read", {"path": "/a"}, id="a")), text_reply("done")])
    runner = build(fake, exporter, hooks=Hooks(after_tool_call=stuck))
    with anyio.fail_after(GUARD):
        async with anyio.create_task_group() as group:

            async def drive() -> None:
                await runner.until_done()

            group.start_soon(drive)
            await entered.wait()
            assert "a" not in tool_spans(exporter)  # held open while the hook runs
            group.cancel_scope.cancel()
    await runner.aclose()
    span = tool_spans(exporter)["a"]
    assert span.status.status_code is StatusCode.UNSET
    assert "toolrunner.tool.result_replaced" not in attributes(span)
    assert run_span(exporter).attributes is not None


# -- requests and answers refused -----------------------------------------------------------------


async def test_a_refused_request_is_an_event_on_the_runs_span(exporter: InMemorySpanExporter) -> None:
    def tripwire(info: RequestInfo) -> Deny | None:
        return Deny("over quota") if info.requests_sent >= 1 else None

    fake = FakeMessagesAPI([tool_reply(tool_call("read", {"path": "/a"}, id="a")), text_reply("done")])
    runner = build(fake, exporter, hooks=Hooks(before_request=tripwire))
    with pytest.raises(RequestRefusedError):
        await runner.until_done()
    await runner.aclose()
    run = run_span(exporter)
    hooks = [event for event in run.events if event.name == "toolrunner.hook"]
    assert [dict(event.attributes or {}) for event in hooks] == [
        {
            "toolrunner.hook.name": "before_request",
            "toolrunner.hook.decision": "refused",
            "toolrunner.hook.reason": "over quota",
        }
    ]
    assert [event.name for event in run.events] == [
        "toolrunner.hook",
        "exception",
    ]  # then the error it raised


async def test_a_request_refused_before_the_first_opens_the_runs_span(exporter: InMemorySpanExporter) -> None:
    runner = build(
        FakeMessagesAPI([text_reply("hi")]), exporter, hooks=Hooks(before_request=lambda info: Deny("closed"))
    )
    with pytest.raises(RequestRefusedError):
        await runner.until_done()
    await runner.aclose()
    run = run_span(exporter)
    refused, raised = run.events
    assert refused.name == "toolrunner.hook"
    assert dict(refused.attributes or {})["toolrunner.hook.reason"] == "closed"
    assert raised.name == "exception"
    assert run.status.status_code is StatusCode.ERROR  # closed after an iteration that failed


async def test_a_refused_answer_is_an_event_on_the_runs_span(exporter: InMemorySpanExporter) -> None:
    def no_maybe(answer: Any) -> Deny | None:
        return Deny("do not hedge") if "maybe" in answer.content[0].text else None

    fake = FakeMessagesAPI([text_reply("maybe 4"), text_reply("4")])
    await build(fake, exporter, hooks=Hooks(check_output=no_maybe)).until_done()
    run = run_span(exporter)
    assert [(event.name, dict(event.attributes or {})) for event in run.events] == [
        (
            "toolrunner.hook",
            {
                "toolrunner.hook.name": "check_output",
                "toolrunner.hook.decision": "refused",
                "toolrunner.hook.reason": "do not hedge",
            },
        )
    ]
    assert attributes(run)["toolrunner.end_reason"] == "model"


# -- no hooks, no cost -------------------------------------------------------------------------------


async def test_a_traced_run_without_hooks_makes_no_events(exporter: InMemorySpanExporter) -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("read", {"path": "/a"}, id="a")), text_reply("done")])
    runner = build(fake, exporter)
    assert runner._core.listener is None  # pyright: ignore[reportPrivateUsage]
    await runner.until_done()
    assert "toolrunner.tool.hook" not in attributes(tool_spans(exporter)["a"])
    hooked = build(FakeMessagesAPI([text_reply("hi")]), exporter, max_calls={"read": 1})
    assert hooked._core.listener is not None  # pyright: ignore[reportPrivateUsage]

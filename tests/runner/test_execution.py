"""Running tool calls: concurrency, limits, timeouts, failures, cancellation.

Concurrency is shown with barriers that only open when every call is running at once, never
with timings: a runner that ran calls one after another would time out in ``fail_after``.
"""

from __future__ import annotations

import logging
import subprocess
import sys
import textwrap
import threading
from typing import Any

import anyio
import anyio.lowlevel
import pytest
from pydantic import BaseModel

from tests.support.helpers import make_runner, plain, results_of, roles, sent_messages
from toolrunner import MemoryCheckpointer, ToolContext, ToolError, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, message_reply, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

GUARD = 10  # seconds: only reached when a barrier never opens, i.e. on failure


def calls(name: str, inputs: list[dict[str, Any]]) -> Any:
    return tool_reply(*(tool_call(name, item, id=f"{name}_{i}") for i, item in enumerate(inputs)))


def result_contents(runner: ToolRunner, index: int = 2) -> list[tuple[str, Any, bool]]:
    return results_of(runner.messages[index])


async def test_async_calls_of_one_message_run_concurrently() -> None:
    started = 0
    all_started = anyio.Event()

    @tool
    async def wait_for_all(n: int) -> str:
        """Wait until all four calls run."""
        nonlocal started
        started += 1
        if started == 4:
            all_started.set()
        await all_started.wait()
        return str(n)

    fake = FakeMessagesAPI([calls("wait_for_all", [{"n": i} for i in range(4)]), text_reply("ok")])
    with anyio.fail_after(GUARD):
        await make_runner(fake, wait_for_all).until_done()


async def test_sync_calls_run_concurrently_in_worker_threads() -> None:
    barrier = threading.Barrier(4, timeout=GUARD)
    threads: set[int] = set()

    @tool
    def block_until_all(n: int) -> str:
        """Block until all four calls run."""
        threads.add(threading.get_ident())
        barrier.wait()
        return str(n)

    fake = FakeMessagesAPI([calls("block_until_all", [{"n": i} for i in range(4)]), text_reply("ok")])
    runner = make_runner(fake, block_until_all)
    await runner.until_done()
    assert len(threads) == 4
    assert threading.get_ident() not in threads
    assert [c for _, c, _ in result_contents(runner)] == ["0", "1", "2", "3"]


async def test_max_concurrency_caps_the_calls_running_at_once() -> None:
    running = 0
    peak = 0

    @tool
    async def step(n: int) -> str:
        """Count the calls running at once."""
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        running -= 1
        return str(n)

    fake = FakeMessagesAPI([calls("step", [{"n": i} for i in range(6)]), text_reply("ok")])
    await make_runner(fake, step, max_concurrency=2).until_done()
    assert peak == 2


async def test_a_sequential_tool_runs_alone() -> None:
    running: set[str] = set()
    overlaps: list[set[str]] = []

    async def body(name: str) -> str:
        running.add(name)
        overlaps.append(set(running))
        for _ in range(5):
            await anyio.lowlevel.checkpoint()
        overlaps.append(set(running))
        running.discard(name)
        return name

    @tool
    async def normal(name: str) -> str:
        """Run with others."""
        return await body(name)

    @tool(sequential=True)
    async def alone(name: str) -> str:
        """Run alone."""
        return await body(name)

    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("normal", {"name": "n1"}, id="1"),
                tool_call("normal", {"name": "n2"}, id="2"),
                tool_call("alone", {"name": "s"}, id="3"),
                tool_call("normal", {"name": "n3"}, id="4"),
            ),
            text_reply("ok"),
        ]
    )
    runner = make_runner(fake, normal, alone)
    await runner.until_done()
    assert all(seen == {"s"} for seen in overlaps if "s" in seen)
    assert {"n1", "n2"} in overlaps  # the others did run together
    assert [c for _, c, _ in result_contents(runner)] == ["n1", "n2", "s", "n3"]


async def test_a_call_that_times_out_becomes_an_error_result_and_siblings_keep_theirs() -> None:
    @tool(timeout=0.05)
    async def hang() -> str:
        """Never finish."""
        await anyio.sleep_forever()
        raise AssertionError

    @tool
    async def quick() -> str:
        """Finish at once."""
        return "quick"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("hang", {}, id="h"), tool_call("quick", {}, id="q")), text_reply("ok")]
    )
    runner = make_runner(fake, hang, quick)
    with anyio.fail_after(GUARD):
        await runner.until_done()
    (hang_id, hang_content, hang_error), quick_result = result_contents(runner)
    assert (hang_id, hang_error) == ("h", True)
    assert "'hang' did not finish within its 0.05 s timeout" in hang_content
    assert quick_result == ("q", "quick", False)


async def test_runner_tool_timeout_applies_to_sync_tools_too() -> None:
    release = threading.Event()

    @tool
    def stuck() -> str:
        """Block until released."""
        release.wait(GUARD)
        return "late"

    fake = FakeMessagesAPI([tool_reply(tool_call("stuck", {}, id="s")), text_reply("ok")])
    runner = make_runner(fake, stuck, tool_timeout=0.05)
    try:
        with anyio.fail_after(GUARD):
            await runner.until_done()
    finally:
        release.set()
    [(_, content, is_error)] = result_contents(runner)
    assert is_error
    assert "timeout" in content


async def test_tool_error_gives_an_is_error_result_with_its_content() -> None:
    @tool
    async def refuse(item: str) -> str:
        """Refuse."""
        raise ToolError(f"{item} is out of stock; try another item.")

    @tool
    async def refuse_blocks() -> str:
        """Refuse with blocks."""
        raise ToolError([{"type": "text", "text": "no"}])

    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("refuse", {"item": "tea"}, id="a"), tool_call("refuse_blocks", {}, id="b")),
            text_reply("ok"),
        ]
    )
    runner = make_runner(fake, refuse, refuse_blocks)
    await runner.until_done()
    assert result_contents(runner) == [
        ("a", "tea is out of stock; try another item.", True),
        ("b", [{"type": "text", "text": "no"}], True),
    ]


async def test_an_exception_gives_an_error_result_naming_it_and_is_logged_as_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The model handles a tool's failure, so it is no ERROR of the application: a WARNING line
    without the traceback, and the traceback at DEBUG."""

    @tool
    async def broken() -> str:
        """Fail."""
        raise RuntimeError("Unexpected error, try again")

    @tool
    async def fine() -> str:
        """Work."""
        return "fine"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("broken", {}, id="a"), tool_call("fine", {}, id="b")), text_reply("ok")]
    )
    runner = make_runner(fake, broken, fine)
    with caplog.at_level(logging.DEBUG, logger="toolrunner"):
        await runner.until_done()
    assert result_contents(runner) == [
        ("a", "RuntimeError('Unexpected error, try again')", True),
        ("b", "fine", False),
    ]
    warning, debug = [record for record in caplog.records if record.name == "toolrunner"]
    assert warning.levelno == logging.WARNING
    assert warning.getMessage() == (
        "Tool 'broken' raised while answering tool_use 'a'; the model gets it as an is_error result: "
        "RuntimeError('Unexpected error, try again')"
    )
    assert warning.exc_info is None
    assert debug.levelno == logging.DEBUG
    assert debug.exc_info is not None
    assert debug.getMessage().startswith("The traceback of: Tool 'broken' raised")


async def test_at_the_default_level_a_tool_failure_is_one_warning_line(
    caplog: pytest.LogCaptureFixture,
) -> None:
    @tool
    async def broken() -> str:
        """Fail."""
        raise RuntimeError("no")

    fake = FakeMessagesAPI([tool_reply(tool_call("broken", {}, id="a")), text_reply("ok")])
    with caplog.at_level(logging.WARNING, logger="toolrunner"):
        await make_runner(fake, broken).until_done()
    assert [(record.levelno, record.exc_info) for record in caplog.records] == [(logging.WARNING, None)]


def test_an_application_without_logging_prints_nothing_of_a_tool_failure() -> None:
    """The package's logger has a NullHandler: Python's last-resort handler, which prints WARNING
    and above to stderr when no handler is found, never sees toolrunner's records."""
    program = textwrap.dedent(
        """
        from toolrunner import SyncToolRunner, tool
        from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

        @tool
        def broken() -> str:
            \"\"\"Fail.\"\"\"
            raise RuntimeError("no")

        fake = FakeMessagesAPI([tool_reply(tool_call("broken", {}, id="a")), text_reply("ok")])
        runner = SyncToolRunner(
            fake.client(), model="claude-sonnet-4-6", max_tokens=64,
            messages=[{"role": "user", "content": "Go."}], tools=[broken],
        )
        runner.until_done()
        print("done")
        """
    )
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True)
    assert done.stdout == "done\n"
    assert done.stderr == ""


class Abort(BaseException):
    """A BaseException that is not cancellation."""


async def test_base_exceptions_propagate_and_nothing_is_appended() -> None:
    @tool
    async def abort() -> str:
        """Abort."""
        raise Abort

    fake = FakeMessagesAPI([tool_reply(tool_call("abort", {}, id="a")), text_reply("ok")])
    runner = make_runner(fake, abort)
    with pytest.raises(Abort):
        await runner.until_done()
    assert roles(runner.messages) == ["user"]


async def test_an_unknown_tool_gets_an_error_listing_the_tools() -> None:
    @tool
    async def known() -> str:
        """Known."""
        return "k"

    fake = FakeMessagesAPI([tool_reply(tool_call("unknown", {}, id="u")), text_reply("ok")])
    runner = make_runner(fake, known)
    await runner.until_done()
    [(_, content, is_error)] = result_contents(runner)
    assert is_error
    assert content == "There is no tool named 'unknown'. The available tools are: 'known'."


async def test_invalid_input_tells_the_model_which_fields_and_why() -> None:
    @tool
    async def order(item: str, quantity: int) -> str:
        """Order."""
        return f"{quantity} {item}"

    fake = FakeMessagesAPI(
        [
            message_reply(
                [
                    {
                        "type": "tool_use",
                        "id": "bad",
                        "name": "order",
                        "input": {"item": "tea", "quantity": "lots"},
                    },
                    {
                        "type": "tool_use",
                        "id": "json",
                        "name": "order",
                        "input": '{"item": "tea", "quantity": 2}',
                    },
                    {"type": "tool_use", "id": "garbage", "name": "order", "input": "garbage"},
                ],
                stop_reason="tool_use",
            ),
        ]
    )
    runner = make_runner(fake, order)
    # The service only ever sends objects; the string inputs are checked in the body, since
    # the SDK warns when it serialises a tool_use block whose input is not an object.
    response = None
    async for _ in runner:
        response = await runner.generate_tool_response()
        runner.close()
    bad, json_string, garbage = results_of(response)
    assert bad[2]
    assert "quantity" in bad[1]
    assert "'lots'" in bad[1]
    assert json_string == ("json", "2 tea", False)
    assert garbage[2]
    assert "object" in garbage[1]


async def test_return_values_become_content() -> None:
    class Point(BaseModel):
        x: int
        y: int

    @tool
    async def value(kind: str) -> Any:
        """Return a value of a kind."""
        return {
            "str": "text",
            "dict": {"a": 1},
            "list": [1, 2],
            "model": Point(x=1, y=2),
            "none": None,
            "block": {"type": "text", "text": "as a block"},
        }[kind]

    kinds = ["str", "dict", "list", "model", "none", "block"]
    fake = FakeMessagesAPI([calls("value", [{"kind": k} for k in kinds]), text_reply("ok")])
    runner = make_runner(fake, value)
    await runner.until_done()
    blocks = plain(runner.messages[2])["content"]
    assert [b.get("content") for b in blocks] == [
        "text",
        '{"a": 1}',
        "[1, 2]",
        '{"x": 1, "y": 2}',
        None,
        [{"type": "text", "text": "as a block"}],
    ]
    assert "content" not in blocks[4]


async def test_the_context_gives_the_call_and_the_runner() -> None:
    seen: list[tuple[str, str, bool]] = []

    @tool
    async def introspect(ctx: ToolContext) -> str:
        """Look at the context."""
        seen.append((ctx.call.id, ctx.call.name, ctx.runner is runner))
        return "ok"

    fake = FakeMessagesAPI([tool_reply(tool_call("introspect", {}, id="i1")), text_reply("ok")])
    runner = make_runner(fake, introspect)
    await runner.until_done()
    assert seen == [("i1", "introspect", True)]
    assert "ctx" not in fake.requests[0].body["tools"][0]["input_schema"].get("properties", {})


# -- cancellation ---------------------------------------------------------------------------------


async def test_cancelling_while_tools_run_appends_nothing_and_resumes_without_rerunning_finished_calls() -> (
    None
):
    release = anyio.Event()
    runs: list[str] = []

    @tool
    async def fast() -> str:
        """Finish at once."""
        runs.append("fast")
        return "fast"

    @tool
    async def gated() -> str:
        """Wait for the gate."""
        runs.append("gated")
        await release.wait()
        return "gated"

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("fast", {}, id="f"), tool_call("gated", {}, id="g")), text_reply("ok")]
    )
    runner = make_runner(fake, fast, gated)
    with anyio.move_on_after(0.1):
        await runner.until_done()
    assert roles(runner.messages) == ["user"]  # nothing half-appended
    assert sorted(runs) == ["fast", "gated"]
    release.set()
    with anyio.fail_after(GUARD):
        await runner.until_done()
    assert sorted(runs) == ["fast", "gated", "gated"]  # the finished call did not run again
    assert roles(sent_messages(fake)[1]) == ["user", "assistant", "user"]
    assert [c for _, c, _ in result_contents(runner)] == ["fast", "gated"]


class Unprintable(Exception):
    """An exception whose ``__repr__`` raises (as a buggy library's may)."""

    def __repr__(self) -> str:
        raise AttributeError("'Unprintable' object has no attribute 'code'")


class Unshowable(Unprintable):
    """An exception whose ``__str__`` raises too."""

    def __str__(self) -> str:
        raise AttributeError("'Unshowable' object has no attribute 'code'")


async def test_an_exception_that_cannot_be_formatted_still_gives_one_error_result_and_runs_once() -> None:
    runs: list[str] = []

    @tool
    async def broken() -> str:
        """Fail with an exception whose repr raises."""
        runs.append("broken")
        raise Unprintable("the disk is full")

    @tool
    def worse() -> str:
        """Fail with an exception that cannot be shown at all."""
        runs.append("worse")
        raise Unshowable("never shown")

    @tool
    async def refuse() -> str:
        """Raise a ToolError whose content is an exception that cannot be shown."""
        runs.append("refuse")
        raise ToolError([{"type": "text", "text": "no"}, Unshowable()])  # type: ignore[list-item]

    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("broken", {}, id="a"), tool_call("worse", {}, id="b"), tool_call("refuse", {}, id="c")),
            text_reply("ok"),
        ]
    )  # fmt: skip
    runner = make_runner(fake, broken, worse, refuse, checkpointer=store, run_id="r")
    await runner.until_done()
    results = result_contents(runner)
    assert results[:2] == [
        ("a", "Unprintable('the disk is full')", True),
        ("b", "Unshowable('<its message cannot be shown: formatting it raised>')", True),
    ]
    assert results[2][2] is True
    assert sorted(runs) == ["broken", "refuse", "worse"]  # once each: the results are journaled
    saved = await store.load("r")
    assert saved is not None
    assert saved.state.end_reason == "model"


@pytest.mark.anyio
async def test_an_adapter_is_asked_once_whether_a_value_needs_a_thread() -> None:
    """An async tool's value goes through ``needs_thread`` once, then to a worker thread when it says
    so (an adapter whose check is costly, or counts, sees one question a result)."""
    from toolrunner import ToolResultAdapter

    asked: list[object] = []
    threads: list[str] = []

    class Offloading(ToolResultAdapter):
        def needs_thread(self, value: object) -> bool:
            asked.append(value)
            return True

        def to_content(self, value: object) -> Any:
            threads.append(threading.current_thread().name)
            return super().to_content(value)

    @tool
    async def data() -> dict[str, int]:
        """Some data."""
        return {"k": 1}

    fake = FakeMessagesAPI([tool_reply(tool_call("data", {}, id="toolu_a")), text_reply("ok")])
    await make_runner(fake, data, result_adapter=Offloading()).until_done()
    assert asked == [{"k": 1}]
    assert len(threads) == 1
    assert threads[0] != threading.main_thread().name
    assert results_of(fake.requests[1].messages[-1]) == [("toolu_a", '{"k": 1}', False)]

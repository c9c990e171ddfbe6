"""When does the tool phase of a streamed reply end? Eager tools against tools run after the reply.

    python benchmarks/streaming_eager.py [--runs N] [--quick]

One reply streams over about 1 s (loopback HTTP from ``toolrunner.testing.serve``) with 4 tool_use
blocks spread through it, text blocks between them and after the last one; each tool awaits
``anyio.sleep(0.3)``. Three contenders read the same reply:

- ``toolrunner_eager``: ``ToolRunner(stream=True, run_tools_eagerly=True)``; each call starts when
  its tool_use block closes, so the tool phase should end ~0.3 s after the *last tool_use block*;
- ``toolrunner``: ``ToolRunner(stream=True)``; the 4 calls run concurrently after the reply, so
  ~0.3 s after *message_stop*;
- ``sdk``: the SDK's ``client.beta.messages.tool_runner(..., stream=True, thread=False)`` in its
  default mode (not eager), which runs the calls one after another: ~4 x 0.3 = 1.2 s after
  *message_stop*.

The loop body of each reads the stream's events and timestamps (``time.perf_counter``) each tool_use
block's ``content_block_stop`` and the ``message_stop``. The tool phase ends when the next request
(carrying the 4 tool results) reaches the fake server: its responder timestamps it, the same measure
for all three. Printed: medians over N runs (interleaved, the order rotating each round) of that end
relative to the last tool_use block's close and to message_stop, and the stream's actual duration.
``--quick`` is one run of a shorter reply with shorter tools, for the smoke test. This is a benchmark,
not a test: nothing is asserted about times.

``measure(runs, quick)`` returns the figures as a dict, for ``benchmarks/run.py``.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import threading
import time
from collections.abc import AsyncIterable, Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, cast

import anthropic
import anyio
from anthropic.lib.tools import beta_async_tool
from anthropic.types.beta import BetaMessage

from toolrunner import ToolRunner, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    ServedFake,
    message_reply,
    serve,
    text_reply,
)

__all__ = ["CONTENDERS", "FULL", "LABELS", "QUICK", "Scenario", "main", "measure"]

MODEL = "claude-sonnet-4-6"
MAX_TOKENS = 1024
PROMPT = "Look up four things; this conversation is a benchmark."
CALLS = 4
FINAL_TEXT = "Done."
RUN_TIMEOUT = 60.0  # seconds; a contender that hangs fails the benchmark instead of hanging it

Contender: TypeAlias = Literal["toolrunner_eager", "toolrunner", "sdk"]
CONTENDERS: tuple[Contender, ...] = ("toolrunner_eager", "toolrunner", "sdk")
LABELS: dict[Contender, str] = {
    "toolrunner_eager": "toolrunner, run_tools_eagerly=True",
    "toolrunner": "toolrunner, tools after the reply",
    "sdk": "SDK tool_runner(stream=True), default",
}


@dataclass(frozen=True, slots=True)
class Scenario:
    """The reply's length in time and what each tool call takes."""

    stream_seconds: float
    """The target time from message_start to message_stop (the server's pacing; the actual time is measured)."""
    tool_seconds: float
    """How long each tool call awaits."""
    text: str
    """Each text block (the one before the first tool_use, between them and after the last)."""

    def expected(self, contender: Contender) -> str:
        """When the tool phase should end, in words, for the table."""
        if contender == "toolrunner_eager":
            return f"~{self.tool_seconds:g} s after the last tool_use"
        if contender == "toolrunner":
            return f"~{self.tool_seconds:g} s after message_stop"
        return f"~{CALLS * self.tool_seconds:g} s after message_stop"


FULL = Scenario(
    stream_seconds=1.0,
    tool_seconds=0.3,
    text="Let me look that up; this text stands in for the model's reasoning between two tool calls. ",
)
QUICK = Scenario(stream_seconds=0.25, tool_seconds=0.075, text="Looking that up. ")


def reply_content(scenario: Scenario) -> list[dict[str, Any]]:
    """text, then ``CALLS`` times (tool_use, text): the tool_use blocks spread through the reply."""
    content: list[dict[str, Any]] = [{"type": "text", "text": scenario.text}]
    for n in range(CALLS):
        content.append({"type": "tool_use", "id": None, "name": "look_up", "input": {"n": n}})
        content.append({"type": "text", "text": scenario.text})
    return content


def event_count(content: list[dict[str, Any]]) -> int:
    """How many SSE events the fake streams ``content`` in (see ``toolrunner/testing/_sse.py``):
    message_start, a ping after the first block's start, per block its start, stop and deltas (a
    text in 3 pieces; a tool input in an empty piece then 3 pieces), message_delta, message_stop."""
    count = 1 + 1 + 2
    for block in content:
        count += 2 + (3 if block["type"] == "text" else 4)
    return count


def paced_reply(scenario: Scenario) -> ScriptedReply:
    """The reply, paced so that its events span ``scenario.stream_seconds`` (the fake waits
    ``delay`` between events, none before the first)."""
    content = reply_content(scenario)
    delay = scenario.stream_seconds / (event_count(content) - 1)
    return message_reply(content, stop_reason="tool_use", delay=delay)


# -- the server side: the fake's responder ----------------------------------------------------------


class Responder:
    """Answers the first request of a run with the paced reply and the second (holding the tool
    results) with a short final text; timestamps when each request reaches the server."""

    def __init__(self, reply: ScriptedReply) -> None:
        self.reply = reply
        self.arrivals: list[float] = []
        self.tool_results: list[int] = []
        self._lock = threading.Lock()

    def reset(self) -> None:
        with self._lock:
            self.arrivals.clear()
            self.tool_results.clear()

    def __call__(self, request: RecordedRequest) -> ScriptedReply:
        arrived = time.perf_counter()
        results = sum(count_tool_results(message.get("content")) for message in request.messages)
        with self._lock:
            self.arrivals.append(arrived)
            self.tool_results.append(results)
        return self.reply if results == 0 else text_reply(FINAL_TEXT)


def count_tool_results(content: object) -> int:
    """How many tool_result blocks a message's wire ``content`` holds."""
    if not isinstance(content, list):
        return 0
    blocks = cast(list[object], content)
    return sum(
        1
        for block in blocks
        if isinstance(block, dict) and cast(dict[str, Any], block).get("type") == "tool_result"
    )


# -- the client side: what the loop body sees -------------------------------------------------------


@dataclass(slots=True)
class Timeline:
    """What the loop body saw of the first reply's stream (``time.perf_counter`` values)."""

    message_start: float | None = None
    tool_use_stops: list[float] = field(default_factory=list[float])
    message_stop: float | None = None
    replies: int = 0

    async def read(self, stream: AsyncIterable[Any]) -> None:
        """Read a reply's stream in the loop body, timestamping the first reply's events."""
        first = self.replies == 0
        self.replies += 1
        async for event in stream:
            if not first:
                continue
            now = time.perf_counter()
            if event.type == "message_start":
                self.message_start = now
            elif event.type == "content_block_stop" and event.content_block.type == "tool_use":
                self.tool_use_stops.append(now)
            elif event.type == "message_stop":
                self.message_stop = now


def make_tool_function(seconds: float) -> Callable[[int], Awaitable[str]]:
    """The tool both runners run: the same function, so the same schema and the same cost."""

    async def look_up(n: int) -> str:
        """Look something up (a benchmark tool that takes a fixed time).

        Args:
            n: The call's number.
        """
        await anyio.sleep(seconds)
        return f"result {n}"

    return look_up


def final_text(content: list[Any]) -> str:
    return "".join(block.text for block in content if block.type == "text")


async def run_toolrunner(
    client: anthropic.AsyncAnthropic, scenario: Scenario, timeline: Timeline, *, eager: bool
) -> str:
    runner = ToolRunner(
        client,
        stream=True,
        run_tools_eagerly=eager,
        model=MODEL,
        max_tokens=MAX_TOKENS,
        messages=[{"role": "user", "content": PROMPT}],
        tools=[tool(make_tool_function(scenario.tool_seconds))],
    )
    async with runner:  # run_tools_eagerly runs the calls in the runner's task group
        async for stream in runner:
            await timeline.read(stream)
    last = runner.last_message
    return final_text(list(last.content)) if last is not None else ""


async def run_sdk(client: anthropic.AsyncAnthropic, scenario: Scenario, timeline: Timeline) -> str:
    runner = client.beta.messages.tool_runner(
        model=MODEL,
        max_tokens=MAX_TOKENS,
        messages=[{"role": "user", "content": PROMPT}],
        tools=[beta_async_tool(make_tool_function(scenario.tool_seconds))],
        stream=True,
        thread=False,
    )
    last: BetaMessage | None = None
    async for stream in runner:
        await timeline.read(stream)
        last = await stream.get_final_message()
    return final_text(list(last.content)) if last is not None else ""


@dataclass(frozen=True, slots=True)
class Sample:
    """One run of one contender, in seconds."""

    stream: float
    """message_start to message_stop, as the loop body saw them."""
    last_tool_use: float
    """message_start to the last tool_use block's close."""
    after_last_tool_use: float
    """The next request's arrival at the server minus the last tool_use block's close."""
    after_message_stop: float
    """The next request's arrival at the server minus message_stop."""


def run_once(contender: Contender, scenario: Scenario, served: ServedFake, responder: Responder) -> Sample:
    """One run in a fresh client and event loop."""
    responder.reset()
    timeline = Timeline()

    async def main() -> str:
        with anyio.fail_after(RUN_TIMEOUT):
            async with served.async_client() as client:
                if contender == "sdk":
                    return await run_sdk(client, scenario, timeline)
                return await run_toolrunner(client, scenario, timeline, eager=contender == "toolrunner_eager")

    text = anyio.run(main)
    arrivals, results = list(responder.arrivals), list(responder.tool_results)
    start, stop, stops = timeline.message_start, timeline.message_stop, timeline.tool_use_stops
    if (
        text != FINAL_TEXT
        or results != [0, CALLS]
        or timeline.replies != 2
        or start is None
        or stop is None
        or len(stops) != CALLS
    ):
        raise RuntimeError(
            f"{contender}: expected 2 requests (the second with {CALLS} tool results), 2 streamed replies "
            f"ending with {FINAL_TEXT!r} and {CALLS} tool_use blocks; got tool results per request "
            f"{results}, {timeline.replies} replies, {len(stops)} tool_use blocks, final text {text!r}."
        )
    tool_phase_end = arrivals[1]
    return Sample(
        stream=stop - start,
        last_tool_use=stops[-1] - start,
        after_last_tool_use=tool_phase_end - stops[-1],
        after_message_stop=tool_phase_end - stop,
    )


def collect(scenario: Scenario, runs: int, *, warm_up: bool) -> dict[Contender, list[Sample]]:
    """``runs`` samples per contender, one of each per round, the order rotating every round."""
    warm = Scenario(stream_seconds=0.05, tool_seconds=0.01, text=scenario.text)
    samples: dict[Contender, list[Sample]] = {contender: [] for contender in CONTENDERS}
    fake = FakeMessagesAPI()
    with serve(fake) as served:
        if warm_up:  # lazy imports, schemas, first connections: untimed
            fake.responder = responder = Responder(paced_reply(warm))
            for contender in CONTENDERS:
                run_once(contender, warm, served, responder)
        fake.responder = responder = Responder(paced_reply(scenario))
        for number in range(runs):
            shift = number % len(CONTENDERS)
            for contender in CONTENDERS[shift:] + CONTENDERS[:shift]:
                gc.collect()  # so one contender's garbage is not collected during another's run
                samples[contender].append(run_once(contender, scenario, served, responder))
    return samples


def measure(runs: int = 5, quick: bool = False) -> dict[str, float]:
    """Run the benchmark; the medians over ``runs`` runs, in seconds.

    Keys: ``stream_seconds`` (message_start to message_stop, all runs), ``last_tool_use_seconds``
    (message_start to the last tool_use block's close), ``tool_seconds`` (each call's sleep),
    ``calls``, ``runs``, and for each contender ``c`` in ``CONTENDERS`` (``toolrunner_eager``,
    ``toolrunner``, ``sdk``): ``c.after_last_tool_use`` and ``c.after_message_stop``, when the tool
    phase ended (the next request reached the server) relative to those two events.
    """
    if runs < 1:
        raise ValueError(f"measure() needs runs >= 1, not {runs!r}.")
    scenario = QUICK if quick else FULL
    samples = collect(scenario, runs, warm_up=not quick)
    every = [sample for contender in CONTENDERS for sample in samples[contender]]
    figures: dict[str, float] = {
        "stream_seconds": statistics.median(sample.stream for sample in every),
        "last_tool_use_seconds": statistics.median(sample.last_tool_use for sample in every),
        "tool_seconds": scenario.tool_seconds,
        "calls": float(CALLS),
        "runs": float(runs),
    }
    for contender in CONTENDERS:
        mine = samples[contender]
        figures[f"{contender}.after_last_tool_use"] = statistics.median(s.after_last_tool_use for s in mine)
        figures[f"{contender}.after_message_stop"] = statistics.median(s.after_message_stop for s in mine)
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument(
        "--runs", type=int, default=None, help="runs per contender (default 5; 1 with --quick)"
    )
    parser.add_argument("--quick", action="store_true", help="one run of a shorter reply, for the smoke test")
    args = parser.parse_args()
    runs: int = args.runs if args.runs is not None else (1 if args.quick else 5)
    scenario = QUICK if args.quick else FULL
    figures = measure(runs, args.quick)
    print(
        f"One reply streamed over loopback HTTP: {figures['stream_seconds']:.3f} s from message_start to "
        f"message_stop (target {scenario.stream_seconds:g} s), its last of {CALLS} tool_use blocks closing at "
        f"{figures['last_tool_use_seconds']:.3f} s; each tool awaits {scenario.tool_seconds:g} s. "
        f"Medians of {runs} run{'s' if runs != 1 else ''}{' (quick)' if args.quick else ''}."
    )
    print("Tool phase end (the next request reaches the server), after:")
    header = ("contender", "last tool_use closes", "message_stop", "expected")
    rows = [
        (
            LABELS[contender],
            f"{figures[f'{contender}.after_last_tool_use']:.3f} s",
            f"{figures[f'{contender}.after_message_stop']:.3f} s",
            scenario.expected(contender),
        )
        for contender in CONTENDERS
    ]
    widths = [max(len(row[i]) for row in (header, *rows)) for i in range(len(header))]
    for row in (header, *rows):
        print("  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip())


if __name__ == "__main__":
    main()

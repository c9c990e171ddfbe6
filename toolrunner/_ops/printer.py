"""``EventPrinter``: an ``on_event`` that prints what a run does, one line an event, so that a person
can watch a long run from a script without writing a listener.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TextIO

from .._core.events import (
    ApprovalDecided,
    ApprovalRequested,
    LoopFinished,
    MessageFinished,
    RunnerEvent,
    TextDelta,
    ToolCallFinished,
    ToolCallStarted,
)
from .._core.types import ToolCall
from .._core.usage import DEFAULT_PRICES, Price, RequestUsage, UsageTracker, find_price, request_usage
from .render import call_text, plural, printable

__all__ = ["EventPrinter"]


class EventPrinter:
    """Prints a run's events as they happen: each reply (its stop reason, tokens and text), each
    tool call as it starts and finishes (with its duration, and whether it failed), each call that
    waits for a decision and each decision, and the run's usage and cost when the loop ends or
    pauses. Pass it as ``on_event=EventPrinter()``.

    ``[toolu_...]`` at the end of a line is the call's tool_use id (what ``toolrunner runs approve``
    takes); the time at the start of a line counts from the first event. Replies are numbered in
    the run and the usage at the end is the run's: a printer given to a resumed runner goes on from
    the requests of the run's earlier part (which the events carry), and one printer may follow a
    runner and then the runner that resumes its run.

    Args:
        file: Where to print; standard error when ``None`` (the output stays the script's own).
        text: Print each reply's text whole; by default its first line, cut at 100 characters.
        prices: The prices the cost at the end is counted with (``DEFAULT_PRICES`` when ``None``).
        clock: Seconds, for the times and durations shown (``time.monotonic``).
    """

    def __init__(
        self,
        *,
        file: TextIO | None = None,
        text: bool = False,
        prices: Mapping[str, Price] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.file = file
        self.text = text
        self._prices = DEFAULT_PRICES if prices is None else prices
        # The run's requests that got a reply, in order, priced with ``prices``: those this printer
        # saw exactly, and those of an earlier part (a resumed run's) from the usage the run saved.
        self._requests: list[RequestUsage] = []
        self._clock = clock
        self._start: float | None = None

    def __call__(self, event: RunnerEvent) -> None:
        if isinstance(event, TextDelta):
            return  # the reply's text comes whole, with its reply
        now = self._clock()
        if self._start is None:
            self._start = now
        stamp = f"{now - self._start:7.1f}s "
        for line in self._lines(event):
            print(stamp + printable(line), file=self.file or sys.stderr, flush=True)
            stamp = " " * len(stamp)

    def _lines(self, event: RunnerEvent) -> list[str]:
        if isinstance(event, MessageFinished):
            return self._reply(event)
        if isinstance(event, ToolCallStarted):
            early = " (while the reply streams)" if event.early else ""
            call = event.call
            if event.input is not None:  # a person edited it: what runs is what is shown
                shown = call_text(ToolCall(call.id, call.name, event.input), limit=100)
                return [f"  start    {shown} (edited on approval){early}  [{call.id}]"]
            return [f"  start    {call_text(call, limit=100)}{early}  [{call.id}]"]
        if isinstance(event, ToolCallFinished):
            outcome = "error" if event.is_error else "done"
            return [f"  {outcome:<8} {event.call.name} in {event.duration:.2f}s  [{event.call.id}]"]
        if isinstance(event, ApprovalRequested):
            return [f"  waits    {call_text(event.call, limit=100)}: needs a decision  [{event.call.id}]"]
        if isinstance(event, ApprovalDecided):
            return [self._decided(event)]
        if isinstance(event, LoopFinished):
            return [self._end(event)]
        return []

    def _decided(self, event: ApprovalDecided) -> str:
        """``approved refund by 'ada' (through the store), to run as refund {"amount": 50}  [id]``."""
        call = event.call
        line = f"  {event.decision:<8} {call.name}"
        if event.by is not None:
            line += f" by {printable(event.by)!r}"
        where = _WHERE.get(event.via or "")
        if where:
            line += f" ({where})"
        if event.input is not None:
            line += f", to run as {call_text(ToolCall(call.id, call.name, event.input), limit=100)}"
        if event.reason is not None and event.via in ("store", "runner", "callback", None):
            line += f": {printable(event.reason)[:100]}"
        return f"{line}  [{call.id}]"

    def _reply(self, event: MessageFinished) -> list[str]:
        message = event.message
        request = request_usage(message, self._prices)
        earlier = self._run(event.requests[:-1]) if event.requests else self._requests
        self._requests = [*earlier, request]
        usage = request.usage
        tokens = f"{usage.input_tokens:,} in, {usage.output_tokens:,} out"
        if usage.cache_read_input_tokens:
            tokens += f", {usage.cache_read_input_tokens:,} from the cache"
        lines = [f"reply {len(self._requests)} ({message.stop_reason}): {tokens} tokens"]
        words = "".join(
            getattr(block, "text", "") for block in message.content if block.type == "text"
        ).strip()
        if words and self.text:
            lines += [f"  {line}" for line in words.splitlines()]
        elif words:
            first = words.splitlines()[0]
            cut = len(first) > 100 or "\n" in words
            lines.append(f"  {first[:100]}{'…' if cut else ''}")
        return lines

    def _run(self, requests: Sequence[RequestUsage]) -> list[RequestUsage]:
        """The run's ``requests`` as this printer counts them: those it saw, then the rest (a
        resumed run's earlier part) priced from their saved usage, where a 1-hour cache write
        counts as a 5-minute one (the saved usage does not tell them apart)."""
        seen = self._requests[: len(requests)]
        for request in requests[len(seen) :]:
            price = find_price(self._prices, request.model)
            seen.append(
                RequestUsage(
                    request.model, request.usage, None if price is None else price.cost(request.usage)
                )
            )
        return seen

    def _end(self, event: LoopFinished) -> str:
        if event.requests:
            self._requests = self._run(event.requests)
        tracker = UsageTracker.of_requests(self._requests, prices=self._prices)
        total = tracker.total
        cost = "" if tracker.cost is None else f", ${tracker.cost:.4f}"
        what = (
            "paused: calls wait for a decision"
            if event.reason == "awaiting_approval"
            else f"ended ({event.reason})"
        )
        return (
            f"{what}: {plural(len(tracker.requests), 'reply', 'replies')}, {total.input_tokens:,} in and "
            f"{total.output_tokens:,} out tokens{cost}"
        )


_WHERE = {
    "store": "through the store",
    "callback": "by the approve callback",
    "gate": "its gate failed",
    "timeout": "no decision came in time",
}
"""How a line says where a decision came from (one taken in the runner says nothing more)."""

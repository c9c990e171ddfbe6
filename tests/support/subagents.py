"""What the tests of sub-agents share: a tool that counts its calls (``lookup``, into ``ran``), the
sub-agents over it (``searcher``, and ``researcher`` over a searcher), and a responder that plays
each model from its own script (``by_model``); a tool that needs approval (``pay``, into ``paid``),
a sub-agent over it (``payer``) and one over that (``outer``), with the scripts of a run that pays
two levels down (``paying_scripts``); what a store's files hold (``stored_bytes``); a tool that
holds its calls until released (``Held``); events as heard at each level (``unwrapped``,
``calls_heard``)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from toolrunner import RunnerEvent, SubAgent, SubRunEvent, Tool, ToolCallFinished, ToolCallStarted, tool
from toolrunner.testing import RecordedRequest, ScriptEntry, text_reply, tool_call, tool_reply

__all__ = [
    "Held",
    "by_model",
    "calls_heard",
    "lookup",
    "outer",
    "paid",
    "pay",
    "payer",
    "paying_scripts",
    "ran",
    "researcher",
    "searcher",
    "stored_bytes",
    "unwrapped",
    "used",
]

ran: list[str] = []
"""The cities ``lookup`` looked up, in order (a test that counts them clears it first)."""


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    ran.append(city)
    return f"{city}: 20 C"


def searcher(**changes: Any) -> SubAgent:
    """A sub-agent of model ``claude-sub`` with ``lookup``; ``changes`` replace its fields."""
    options: dict[str, Any] = {
        "name": "searcher",
        "description": "Finds facts.",
        "model": "claude-sub",
        "max_tokens": 200,
        "system": "You search.",
        "tools": [lookup],
    }
    return SubAgent(**(options | changes))


def researcher() -> SubAgent:
    """A sub-agent of model ``claude-mid`` whose tool is a ``searcher``: two levels."""
    return SubAgent(
        name="researcher",
        description="Researches, with a searcher.",
        model="claude-mid",
        max_tokens=200,
        tools=[searcher()],
    )


def by_model(scripts: dict[str, list[ScriptEntry]]) -> Callable[[RecordedRequest], ScriptEntry]:
    """A responder that answers each model from its own script, in order."""

    def respond(request: RecordedRequest) -> ScriptEntry:
        return scripts[request.body["model"]].pop(0)

    return respond


class Held:
    """A tool (``tool``, named ``slow_lookup`` unless told) whose calls each wait until
    ``release()``: ``started`` is set once a call began; ``ran`` and ``finished`` list the cities of
    the calls that began and that finished. Make it inside the test's event loop (its events are
    the running backend's)."""

    def __init__(self, name: str = "slow_lookup", *, idempotent: bool = False) -> None:
        self.ran: list[str] = []
        self.finished: list[str] = []
        self.started = anyio.Event()
        self._released = anyio.Event()

        async def slow_lookup(city: str) -> str:
            """Look a city up, slowly.

            Args:
                city: The city.
            """
            self.ran.append(city)
            self.started.set()
            await self._released.wait()
            self.finished.append(city)
            return f"{city}: 20 C"

        self.tool: Tool[Any, Any] = tool(slow_lookup, name=name, idempotent=idempotent)

    def release(self) -> None:
        """Let the calls waiting now, and every later one, finish."""
        self._released.set()


def unwrapped(event: RunnerEvent) -> tuple[tuple[str, ...], RunnerEvent]:
    """An event as the listener of the run where it happened heard it, and that run's path
    (``()`` for the root's own events)."""
    path: tuple[str, ...] = ()
    while isinstance(event, SubRunEvent):
        path, event = (*path, *event.path), event.event
    return path, event


def calls_heard(events: list[RunnerEvent]) -> list[tuple[str, str]]:
    """The ``ToolCallStarted``/``ToolCallFinished`` events heard, as (``"started"`` or
    ``"finished"``, the call's id), in order, at every level of the tree."""
    heard: list[tuple[str, str]] = []
    for event in events:
        _, inner = unwrapped(event)
        if isinstance(inner, ToolCallStarted):
            heard.append(("started", inner.call.id))
        elif isinstance(inner, ToolCallFinished):
            heard.append(("finished", inner.call.id))
    return heard


def used(tokens: int) -> dict[str, int]:
    """A reply's ``usage=`` of ``tokens`` in all: ten output tokens, the rest input."""
    return {
        "input_tokens": tokens - 10,
        "output_tokens": 10,
        "cache_read_input_tokens": 0,
        "cache_creation_input_tokens": 0,
    }


paid: list[int] = []
"""The amounts ``pay`` paid, in order (a test that counts them clears it first)."""


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount.

    Args:
        amount: How much.
    """
    paid.append(amount)
    return f"paid {amount}"


def payer(**changes: Any) -> SubAgent:
    """A sub-agent of model ``claude-sub`` with ``pay`` (which needs approval); ``changes`` replace
    its fields."""
    options: dict[str, Any] = {
        "name": "payer",
        "description": "Pays bills.",
        "model": "claude-sub",
        "max_tokens": 200,
        "tools": [pay],
    }
    return SubAgent(**(options | changes))


def outer(inner: object = None, **changes: Any) -> SubAgent:
    """A sub-agent of model ``claude-mid`` whose tool is ``inner`` (a ``payer`` by default): two
    levels; ``changes`` replace its fields."""
    options: dict[str, Any] = {
        "name": "outer",
        "description": "Has bills paid.",
        "model": "claude-mid",
        "max_tokens": 200,
        "tools": [payer() if inner is None else inner],
    }
    return SubAgent(**(options | changes))


def paying_scripts() -> dict[str, list[ScriptEntry]]:
    """The scripts (for ``by_model``) of a run of model ``claude-parent`` that calls ``outer``
    (``toolu_o1``), which calls ``payer`` (``toolu_p1``), which calls ``pay`` (``toolu_c1``, 5)."""
    return {
        "claude-parent": [
            tool_reply(tool_call("outer", {"task": "Pay 5."}, id="toolu_o1")),
            text_reply("Done."),
        ],
        "claude-mid": [
            tool_reply(tool_call("payer", {"task": "Pay 5."}, id="toolu_p1")),
            text_reply("Paid it."),
        ],
        "claude-sub": [tool_reply(tool_call("pay", {"amount": 5}, id="toolu_c1")), text_reply("I paid 5.")],
    }


def stored_bytes(folder: Path) -> bytes:
    """Every byte of the files under ``folder`` (a store's file, its journal and WAL files)."""
    return b"".join(path.read_bytes() for path in sorted(folder.rglob("*")) if path.is_file())

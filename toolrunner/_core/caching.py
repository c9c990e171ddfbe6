"""Prompt caching on by choice: the breakpoints the runner adds to a request; pure, no I/O.

The service caches a request's prompt up to each block that carries ``cache_control`` (a
breakpoint), in the order tools, system, messages. A request may have four breakpoints at most,
and the top-level ``cache_control`` param (automatic caching: the service puts a breakpoint on the
last cacheable block, so it moves forward as the conversation grows) takes one of the four.

``add_breakpoints`` adds the ones a ``CachePolicy`` asks for to a request's params, in this order
of priority, as long as slots are free: the top-level ``cache_control``, the last system block,
the last tool definition. The breakpoints already in the params, the tools and the history are the
caller's: they are counted first, never removed, moved or changed, and the policy's are added only
where the service's rule for TTLs holds (a 1-hour breakpoint never after a 5-minute one).

Counting the history's breakpoints walks its messages' blocks; ``HistoryBreakpoints`` walks each
message once, since the runner's history grows at its end (see its docstring).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from .errors import ParamsError
from .messages import field

__all__ = [
    "MAX_BREAKPOINTS",
    "Breakpoints",
    "CachePolicy",
    "Caching",
    "HistoryBreakpoints",
    "add_breakpoints",
    "block_breakpoints",
    "cache_policy",
    "history_breakpoints",
]

MAX_BREAKPOINTS = 4
"""The most ``cache_control`` breakpoints the service accepts in one request (the top-level one included)."""

TTL = Literal["5m", "1h"]


@dataclass(frozen=True, slots=True)
class CachePolicy:
    """Which prompt-cache breakpoints the runner adds to each request (the ``cache=`` option).

    ``cache=True`` is ``CachePolicy()``; ``cache="1h"`` is ``CachePolicy(ttl="1h")``.

    Attributes:
        ttl: How long the service keeps what the breakpoints cache: ``"5m"`` (writes cost 1.25x the
            input price) or ``"1h"`` (2x); reads cost about 0.1x either way.
        automatic: Send the top-level ``cache_control``: the service caches the whole prompt up to
            its last block, and the next request reads it back and caches only what is new.
        system: Also put a breakpoint on the last block of the system prompt, so that the tools
            and the system prompt stay cached when the conversation part cannot be read back (the
            history was replaced, ``tool_choice`` changed, a turn added more than 20 blocks).
        tools: Also put a breakpoint on the last tool definition (the tools alone).
    """

    ttl: TTL = "5m"
    automatic: bool = True
    system: bool = False
    tools: bool = False

    def __post_init__(self) -> None:
        if self.ttl not in ("5m", "1h"):
            raise ParamsError(f"CachePolicy ttl must be '5m' or '1h', not {self.ttl!r}.")
        for name in ("automatic", "system", "tools"):
            value = getattr(self, name)
            if not isinstance(value, bool):
                raise ParamsError(f"CachePolicy {name} must be True or False, not {value!r}.")

    @property
    def cache_control(self) -> dict[str, str]:
        """The ``cache_control`` value of the breakpoints this policy adds."""
        # "5m" is the service's default: leaving the ttl out keeps the value valid everywhere.
        return {"type": "ephemeral"} if self.ttl == "5m" else {"type": "ephemeral", "ttl": self.ttl}


def cache_policy(value: object) -> CachePolicy | None:
    """The policy the ``cache=`` option asks for; ``None`` for no caching.

    Raises:
        ParamsError: ``value`` is not one the option takes.
    """
    if value is None or value is False:
        return None
    if value is True:
        return CachePolicy()
    if isinstance(value, CachePolicy):
        return value
    if value in ("5m", "1h"):
        return CachePolicy(ttl=value)
    raise ParamsError(
        f"cache must be True, '5m', '1h', a CachePolicy or None, not {value!r}; "
        "for example cache=True, or cache=CachePolicy(ttl='1h', system=True)."
    )


# -- counting ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Breakpoints:
    """How many breakpoints some blocks carry, and with which TTLs (``"5m"`` when none is given)."""

    count: int = 0
    ttls: frozenset[str] = frozenset()

    def __add__(self, other: Breakpoints) -> Breakpoints:
        return Breakpoints(self.count + other.count, self.ttls | other.ttls)


def _ttl(cache_control: object) -> str:
    ttl = field(cache_control, "ttl")
    return ttl if isinstance(ttl, str) else "5m"


def block_breakpoints(blocks: Iterable[object]) -> Breakpoints:
    """The breakpoints of content blocks, those inside ``tool_result`` content included."""
    count = 0
    ttls: set[str] = set()
    for block in blocks:
        cache_control = field(block, "cache_control")
        if cache_control is not None:
            count += 1
            ttls.add(_ttl(cache_control))
        if field(block, "type") == "tool_result":
            content = field(block, "content")
            if isinstance(content, list):
                inner = block_breakpoints(cast("list[object]", content))
                count += inner.count
                ttls |= inner.ttls
    return Breakpoints(count, frozenset(ttls))


def _content_blocks(message: object) -> Sequence[object]:
    content = field(message, "content")
    return cast("list[object]", content) if isinstance(content, list) else ()


def history_breakpoints(messages: Iterable[object]) -> Breakpoints:
    """The breakpoints of a history's messages, counted whole."""
    found = Breakpoints()
    for message in messages:
        found += block_breakpoints(_content_blocks(message))
    return found


class HistoryBreakpoints:
    """The breakpoints of one runner's history, each message walked once.

    The runner's history grows at its end, so ``of`` remembers the last history it counted and,
    when the next one starts with it, walks only the messages after it. Whether it starts with it
    is one tuple comparison: elements compare by identity first (the runner keeps the same message
    objects), so it costs about what copying the history's references into the request's
    ``messages`` list costs, and it never walks blocks. A history that does not start with the
    last one (the loop body replaced it) is counted whole again. The answer never depends on what
    was remembered: ``of(messages) == history_breakpoints(messages)``.
    """

    def __init__(self) -> None:
        # One value, replaced whole, so that the messages and their count always agree.
        self._last: tuple[tuple[object, ...], Breakpoints] = ((), Breakpoints())

    def of(self, messages: Sequence[object]) -> Breakpoints:
        """The breakpoints of ``messages``."""
        history = tuple(messages)
        known, found = self._last
        if len(history) >= len(known) and history[: len(known)] == known:
            found += history_breakpoints(history[len(known) :])
        else:
            found = history_breakpoints(history)
        self._last = (history, found)
        return found


# -- placing -----------------------------------------------------------------------------------------


class Caching:
    """One runner's caching: its policy, and the count of its history's breakpoints."""

    def __init__(self, policy: CachePolicy) -> None:
        self.policy = policy
        self.history = HistoryBreakpoints()

    def params(self, kwargs: Mapping[str, Any], messages: Sequence[object]) -> dict[str, Any]:
        """``kwargs`` (a request's, whose history is ``messages``) with the policy's breakpoints."""
        return add_breakpoints(kwargs, self.policy, self.history.of(messages))


def add_breakpoints(kwargs: Mapping[str, Any], policy: CachePolicy, history: Breakpoints) -> dict[str, Any]:
    """A request's params with the breakpoints ``policy`` asks for, never more than four in all.

    Args:
        kwargs: The request's params (``tools`` as sent); they and what they hold are not changed.
        policy: The breakpoints to add.
        history: The breakpoints of ``kwargs["messages"]`` (see ``HistoryBreakpoints``).

    The params' own breakpoints (the top-level ``cache_control``, the tools', the system prompt's,
    the history's) count first. Then, while fewer than four are used: the top-level
    ``cache_control`` (unless the history's last block has a breakpoint already: it would fall
    there), a breakpoint on the last system block (a string system prompt is sent as one text
    block to carry it), one on the last tool definition that is not ``defer_loading``. A block
    that has a breakpoint keeps it as it is, and a breakpoint whose TTL would break the service's
    order (1-hour ones before 5-minute ones) is not added. A ``cache_control`` set to ``None`` (the
    top-level one, the last system block's, the last tool's) is the caller's too: none goes there.
    """
    new = dict(kwargs)
    prompt = _Prompt.of(kwargs, history)
    ttl, cache_control = policy.ttl, policy.cache_control
    if prompt.free > 0 and policy.automatic and _automatic_fits(kwargs, ttl, prompt):
        new["cache_control"] = cache_control
        prompt.free -= 1
    if (
        prompt.free > 0
        and policy.system
        and (system := _marked_system(prompt, ttl, cache_control)) is not None
    ):
        new["system"] = system
        prompt.free -= 1
    if prompt.free > 0 and policy.tools and (tools := _marked_tools(prompt, ttl, cache_control)) is not None:
        new["tools"] = tools
    return new


@dataclass(slots=True)
class _Prompt:
    """A request's prompt as ``add_breakpoints`` places breakpoints in it: its tools and system
    blocks, the TTLs of the caller's breakpoints in prompt order (tools, system, history,
    top-level; ``None`` for a block without one), and how many of the four slots are free."""

    tools: Sequence[object]
    system: object
    system_blocks: Sequence[object]
    tool_ttls: list[str | None]
    system_ttls: list[str | None]
    history_ttls: list[str]
    top_ttls: list[str]
    free: int

    @classmethod
    def of(cls, kwargs: Mapping[str, Any], history: Breakpoints) -> _Prompt:
        top = kwargs.get("cache_control")
        tools = _list(kwargs.get("tools"))
        system = kwargs.get("system")
        system_blocks = _list(system)
        tool_ttls = [_ttl_of(tool) for tool in tools]
        system_ttls = [_ttl_of(block) for block in system_blocks]
        top_ttls = [] if top is None else [_ttl(top)]
        used = sum(ttl is not None for ttl in (*tool_ttls, *system_ttls)) + history.count + len(top_ttls)
        return cls(
            tools=tools,
            system=system,
            system_blocks=system_blocks,
            tool_ttls=tool_ttls,
            system_ttls=system_ttls,
            history_ttls=sorted(history.ttls),
            top_ttls=top_ttls,
            free=MAX_BREAKPOINTS - used,
        )


def _automatic_fits(kwargs: Mapping[str, Any], ttl: str, prompt: _Prompt) -> bool:
    """Whether the top-level ``cache_control`` goes in: the caller set none (not even ``None``), the
    history's last block has none (it would fall there), and its TTL keeps the order."""
    return (
        "cache_control" not in kwargs
        and not _last_block_marked(kwargs.get("messages"))
        and _fits(ttl, before=[*prompt.tool_ttls, *prompt.system_ttls, *prompt.history_ttls], after=[])
    )


def _marked_system(prompt: _Prompt, ttl: str, cache_control: dict[str, str]) -> list[object] | None:
    """The ``system`` param with a breakpoint on its last block (a string becomes one text block),
    or ``None`` when none can go there."""
    system, blocks = prompt.system, prompt.system_blocks
    after = [*prompt.history_ttls, *prompt.top_ttls]
    if isinstance(system, str) and system and _fits(ttl, before=prompt.tool_ttls, after=after):
        return [{"type": "text", "text": system, "cache_control": cache_control}]
    if (
        blocks
        and (last := _text_block(blocks[-1])) is not None
        and "cache_control" not in last
        and _fits(ttl, before=[*prompt.tool_ttls, *prompt.system_ttls], after=after)
    ):
        return [*blocks[:-1], {**last, "cache_control": cache_control}]
    return None


def _marked_tools(prompt: _Prompt, ttl: str, cache_control: dict[str, str]) -> list[object] | None:
    """The ``tools`` param with a breakpoint on the last tool that is not ``defer_loading``, or
    ``None`` when none can go there."""
    tools = prompt.tools
    index = _last_loaded(tools)
    if (
        index is not None
        and isinstance(tool := tools[index], Mapping)
        and "cache_control" not in tool
        and _fits(
            ttl,
            before=prompt.tool_ttls[:index],
            after=[
                *prompt.tool_ttls[index + 1 :],
                *prompt.system_ttls,
                *prompt.history_ttls,
                *prompt.top_ttls,
            ],
        )
    ):
        marked = {**cast("Mapping[str, Any]", tool), "cache_control": cache_control}
        return [*tools[:index], marked, *tools[index + 1 :]]
    return None


def _fits(ttl: str, *, before: Sequence[str | None], after: Sequence[str | None]) -> bool:
    """Whether a breakpoint with ``ttl`` keeps the service's order: 1-hour ones before 5-minute ones."""
    return "5m" not in before if ttl == "1h" else "1h" not in after


def _ttl_of(item: object) -> str | None:
    """The TTL of an item's breakpoint, or ``None`` when it has none."""
    cache_control = field(item, "cache_control")
    return None if cache_control is None else _ttl(cache_control)


def _list(value: object) -> Sequence[object]:
    return cast("Sequence[object]", value) if isinstance(value, list | tuple) else ()


def _text_block(block: object) -> Mapping[str, Any] | None:
    """A system block that can take a breakpoint: a text block (as a dict) with text."""
    if not isinstance(block, Mapping):
        return None
    text_block = cast("Mapping[str, Any]", block)
    return text_block if text_block.get("text") else None


def _last_loaded(tools: Sequence[object]) -> int | None:
    """The index of the last tool that is not ``defer_loading`` (deferred tools are not in the prefix)."""
    for index in range(len(tools) - 1, -1, -1):
        if field(tools[index], "defer_loading") is not True:
            return index
    return None


def _last_block_marked(messages: object) -> bool:
    """Whether the history's last block has a breakpoint: the top-level one would fall on it."""
    if not isinstance(messages, list | tuple) or not messages:
        return False
    blocks = _content_blocks(cast("Sequence[object]", messages)[-1])
    return bool(blocks) and field(blocks[-1], "cache_control") is not None

"""`PromptCache`: the fake's prompt-cache accounting, roughly as the service does it; no I/O, no clock.

With a `PromptCache`, `FakeMessagesAPI` counts the tokens of every request and reports which of its
input tokens were read from the cache, written to it, or neither, the way the service's `usage`
does. The model it follows:

1. A request's prompt is a row of blocks in the service's order: each tool definition, each system
   block (a string system prompt is one text block), then each content block of each message (a
   string content is one text block). A block's tokens are the length of its JSON (keys sorted,
   `cache_control` left out) divided by `chars_per_token`, rounded up: deterministic, not the
   service's tokenizer. The reply's content is counted the same way for `output_tokens`.
2. A breakpoint is a block with `cache_control` (one inside a `tool_result`'s content counts as
   its `tool_result` block), and the top-level `cache_control` is one on the last block. The
   TTL is its `ttl`, `"5m"` when not given.
3. A prefix is identified by the model, every block up to its end (role included, `cache_control`
   left out), and, from the messages on, `tool_choice` and `thinking` (changing them invalidates
   the messages' cache, as on the service).
4. Reading: from each breakpoint, the fake looks back over at most `lookback` blocks (itself
   included) for a prefix an earlier request wrote; the longest found is read
   (`cache_read_input_tokens`).
5. Writing: each breakpoint after what was read writes its prefix, if that prefix has at least
   `min_tokens` tokens (shorter ones are not cached, without error). The tokens from the read
   prefix up to the last breakpoint are `cache_creation_input_tokens`: those up to the last 1-hour
   breakpoint at the 1-hour rate (`cache_creation.ephemeral_1h_input_tokens`), the rest at the
   5-minute rate. The tokens after the last breakpoint are `input_tokens`.

Where it is simpler than the service: there is no clock, so entries never expire by themselves
(`expire()` drops them, as a pause longer than their TTL would); one cache serves every API key,
workspace and concurrent request (an entry is there as soon as the reply that wrote it is
rendered); every block is cacheable, thinking blocks too; a request's fixed overhead (the
tool-use system prompt, message framing) is not counted; only the model, `tool_choice` and
`thinking` of the settings take part in the prefix.
"""

from __future__ import annotations

import hashlib
import json
import math
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal, cast

__all__ = ["PromptCache", "find_invalid_breakpoints"]

_MAX_BREAKPOINTS = 4


@dataclass(frozen=True, slots=True)
class _Block:
    key: str  # identifies the prefix that ends with this block
    tokens: int  # the prefix's tokens, this block's included
    ttl: str | None  # the TTL of its breakpoint, if it has one


class PromptCache:
    """The fake service's prompt cache: pass one to `FakeMessagesAPI(prompt_cache=...)`.

    Args:
        min_tokens: The shortest prefix that is cached (the service's minimum depends on the
            model: 1,024 tokens for `claude-sonnet-4-6`, 512 to 4,096 for others).
        lookback: How many blocks a breakpoint looks back over for an earlier entry, itself
            included (20 on the service).
        chars_per_token: Characters of a block's JSON per token, for counting tokens.
    """

    def __init__(self, *, min_tokens: int = 1024, lookback: int = 20, chars_per_token: int = 4) -> None:
        for name, value, least in (
            ("min_tokens", min_tokens, 0),
            ("lookback", lookback, 1),
            ("chars_per_token", chars_per_token, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"PromptCache {name} must be an int of at least {least}, not {value!r}.")
        self.min_tokens = min_tokens
        self.lookback = lookback
        self.chars_per_token = chars_per_token
        self._entries: dict[str, str] = {}  # prefix key -> TTL
        self._lock = threading.Lock()

    def __len__(self) -> int:
        """How many prefixes the cache holds."""
        return len(self._entries)

    def expire(self, ttl: Literal["5m", "1h"] = "1h") -> None:
        """Forget what a pause longer than `ttl` would: `"5m"` drops the 5-minute entries,
        `"1h"` (the default) every entry."""
        if ttl not in ("5m", "1h"):
            raise ValueError(f"expire() takes '5m' or '1h', not {ttl!r}.")
        with self._lock:
            self._entries = {key: kept for key, kept in self._entries.items() if ttl == "5m" and kept == "1h"}

    def count_tokens(self, value: object) -> int:
        """The tokens the fake counts for one block (or any JSON value): its JSON's length divided
        by `chars_per_token`, rounded up, at least 1; `cache_control` is left out."""
        text = json.dumps(
            _without_cache_control(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False
        )
        return max(1, math.ceil(len(text) / self.chars_per_token))

    def usage(self, body: Mapping[str, Any], content: object) -> dict[str, Any]:
        """The `usage` of a reply with `content` to the request `body`; the entries it writes are kept."""
        blocks = list(self._blocks(body))
        total = blocks[-1].tokens if blocks else 0
        output = sum(self.count_tokens(block) for block in _as_list(content))
        # Breakpoints whose prefix is too short are not cached: as if they were not there.
        marks = [
            (index, block)
            for index, block in enumerate(blocks)
            if block.ttl and block.tokens >= self.min_tokens
        ]
        with self._lock:
            hit = -1  # the last block of the longest prefix read from the cache
            for index, _ in marks:
                for back in range(index, max(index - self.lookback, hit), -1):
                    if blocks[back].key in self._entries:
                        hit = back
                        break
            read = blocks[hit].tokens if hit >= 0 else 0
            written = [(index, block) for index, block in marks if index > hit]
            for _, block in written:
                if self._entries.get(block.key) != "1h":
                    self._entries[block.key] = cast(str, block.ttl)
        last = written[-1][1].tokens if written else read
        hour = max((block.tokens for _, block in written if block.ttl == "1h"), default=read)
        return {
            "input_tokens": total - last,
            "output_tokens": output,
            "cache_read_input_tokens": read,
            "cache_creation_input_tokens": last - read,
            "cache_creation": {
                "ephemeral_5m_input_tokens": last - hour,
                "ephemeral_1h_input_tokens": hour - read,
            },
        }

    def _blocks(self, body: Mapping[str, Any]) -> Iterator[_Block]:
        """The request's blocks in prompt order, each with its prefix's key and tokens."""
        digest = hashlib.sha256(json.dumps(["model", body.get("model")]).encode())
        tokens = 0
        rows = list(_all_blocks(body))
        top = _field(body, "cache_control")
        in_messages = False
        for index, (where, block) in enumerate(rows):
            if where.startswith("message") and not in_messages:
                settings = ["settings", body.get("tool_choice"), body.get("thinking")]
                digest.update(json.dumps(settings, sort_keys=True).encode())
                in_messages = True
            count = self.count_tokens(block)
            digest.update(json.dumps([where, _without_cache_control(block)], sort_keys=True).encode())
            tokens += count
            ttl = _breakpoint_ttl(block)
            if index == len(rows) - 1 and top is not None:
                ttl = _later_ttl(ttl, _ttl(top))
            yield _Block(digest.hexdigest(), tokens, ttl)

    def __repr__(self) -> str:
        return f"<PromptCache {len(self._entries)} entries, min_tokens={self.min_tokens}>"


def find_invalid_breakpoints(body: Mapping[str, Any]) -> str | None:
    """The 400 the service gives for a request's `cache_control` breakpoints, or None.

    More than four (the top-level `cache_control` counts as one): the service's wording. A 1-hour
    breakpoint after a 5-minute one: the rule is the service's, the wording the fake's own.
    """
    ttls = [ttl for _, block in _all_blocks(body) for ttl in _block_ttls(block)]
    top = _field(body, "cache_control")
    if top is not None:
        ttls.append(_ttl(top))
    if len(ttls) > _MAX_BREAKPOINTS:
        return (
            f"A maximum of {_MAX_BREAKPOINTS} blocks with cache_control may be provided. Found {len(ttls)}."
        )
    if "5m" in ttls and "1h" in ttls[ttls.index("5m") :]:
        return (
            "cache_control: a breakpoint with ttl '1h' comes after one with ttl '5m'; 1-hour cache entries "
            "must come before 5-minute ones (tools, then system, then messages)."
        )
    return None


def _all_blocks(body: Mapping[str, Any]) -> Iterator[tuple[str, object]]:
    for tool in _as_list(body.get("tools")):
        yield "tool", tool
    for block in _as_list(body.get("system")):
        yield "system", block
    for message in _as_list(body.get("messages")):
        for block in _as_list(_field(message, "content")):
            yield f"message:{_field(message, 'role')}", block


def _block_ttls(block: object) -> list[str]:
    """The TTLs of a block's breakpoints: its own, then those inside a `tool_result`'s content."""
    ttls = [] if _field(block, "cache_control") is None else [_ttl(_field(block, "cache_control"))]
    if _field(block, "type") == "tool_result":
        ttls += [ttl for inner in _list_only(_field(block, "content")) for ttl in _block_ttls(inner)]
    return ttls


def _breakpoint_ttl(block: object) -> str | None:
    """The TTL the block's breakpoint(s) cache it with: the longest, or None without one."""
    ttls = _block_ttls(block)
    return "1h" if "1h" in ttls else ("5m" if ttls else None)


def _later_ttl(ttl: str | None, other: str) -> str:
    return "1h" if "1h" in (ttl, other) else "5m"


def _ttl(cache_control: object) -> str:
    ttl = _field(cache_control, "ttl")
    return ttl if isinstance(ttl, str) else "5m"


def _as_list(value: object) -> list[object]:
    """Blocks: a string is one text block, a list is itself, anything else none."""
    if isinstance(value, str):
        return [{"type": "text", "text": value}] if value else []
    return _list_only(value)


def _list_only(value: object) -> list[object]:
    return cast(list[object], value) if isinstance(value, list) else []


def _field(item: object, name: str) -> Any:
    return cast(dict[str, Any], item).get(name) if isinstance(item, dict) else None


def _without_cache_control(value: object) -> object:
    """`value` with every `cache_control` key left out, at any depth (a breakpoint is not content)."""
    if isinstance(value, dict):
        items = cast(dict[str, object], value).items()
        return {key: _without_cache_control(item) for key, item in items if key != "cache_control"}
    if isinstance(value, list):
        return [_without_cache_control(item) for item in cast(list[object], value)]
    return value

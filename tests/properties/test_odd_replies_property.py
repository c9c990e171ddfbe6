"""A generated hostile model and careless tools: every request stays encodable and service-valid,
and no call runs twice.

Replies bring odd tool_use ids (duplicates, ids reused across turns, ids the service rejects),
inputs nested deep or holding lone surrogates, empty contents, unknown block types, thinking
blocks, and any stop reason; tools return lone surrogates, NaN and infinities, deep lists, bytes,
pydantic models and nothing. The fake validates every request as the service does (a 400 fails
the property), and it could only receive requests the client managed to encode.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import anyio
import pydantic
from hypothesis import event, given, strategies as st

from tests.support._hypothesis_profiles import property_settings
from tests.support.helpers import MODEL, USER
from tests.support.reliability_helpers import pairing_problems, quiet_tool_failures
from toolrunner import MalformedReplyError, ToolContext, ToolRunner, tool
from toolrunner._core.messages import TOOL_ID_PATTERN
from toolrunner.testing import FakeMessagesAPI, ScriptedReply, message_reply, text_reply

ODD_TEXT = [
    "caf\udce9.txt",
    "\ud83d",
    "half \udc00 pair",
    "emoji 🎉",
    "",
    "\x00nul",
    "rtl \u202e text",
    "é" * 50,
]
ODD_IDS = ["call 1", "", "x" * 200, "ünï", "a/b"]


class Reading(pydantic.BaseModel):
    value: float
    label: str


def texts() -> st.SearchStrategy[str]:
    return st.one_of(st.sampled_from(ODD_TEXT), st.text(max_size=20))


def json_values(depth: int = 3) -> st.SearchStrategy[Any]:
    leaves = st.one_of(st.none(), st.booleans(), st.integers(), texts())
    return st.recursive(
        leaves,
        lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(texts(), inner, max_size=3)),
        max_leaves=8,
    )


def deep(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    inner = value
    for _ in range(depth):
        inner["key"] = {}
        inner = inner["key"]
    return value


@st.composite
def inputs(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["valid", "valid", "valid", "json", "deep"]))
    if kind == "valid":
        return {"key": draw(texts())}
    if kind == "deep":
        return deep(draw(st.integers(50, 300)))
    return draw(st.dictionaries(texts(), json_values(), max_size=3))


@st.composite
def blocks(draw: st.DrawFn, turn: int) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    for position in range(draw(st.sampled_from([0, 1, 2, 2, 3, 3, 4]))):
        kind = draw(st.sampled_from(["text", "tool_use", "tool_use", "tool_use", "thinking", "unknown"]))
        if kind == "text":
            content.append({"type": "text", "text": draw(texts()) or "."})
        elif kind == "thinking":
            content.append({"type": "thinking", "thinking": draw(texts()), "signature": "sig"})
        elif kind == "unknown":
            content.append({"type": "x_future_block", "data": draw(json_values())})
        else:
            id_kind = draw(st.sampled_from(["fresh", "fresh", "fresh", "reused", "duplicate", "odd"]))
            tool_use_id = {
                "fresh": f"toolu_{turn}_{position}",
                "reused": f"toolu_0_{position}",  # the same id as in the first turn
                "duplicate": "toolu_dup",
                "odd": draw(st.sampled_from(ODD_IDS)),
            }[id_kind]
            content.append({"type": "tool_use", "id": tool_use_id, "name": "act", "input": draw(inputs())})
    return content


@st.composite
def replies(draw: st.DrawFn) -> list[ScriptedReply]:
    script: list[ScriptedReply] = []
    for turn in range(draw(st.integers(1, 4))):
        content = draw(blocks(turn))
        uses_tools = any(block["type"] == "tool_use" for block in content)
        ends = ["end_turn", "pause_turn", "max_tokens", "x_new_reason"]
        stop = draw(st.sampled_from(["tool_use"] * 4 + ["max_tokens"] if uses_tools else ends))
        script.append(message_reply(content, stop_reason=stop))
    return script


returns = st.one_of(
    texts(),
    st.sampled_from([math.nan, math.inf, -math.inf]).map(lambda x: {"reading": x, "list": [x, 1]}),
    st.sampled_from([math.nan, math.inf]).map(lambda x: Reading(value=x, label="caf\udce9")),
    json_values(),
    st.binary(max_size=40),
    st.just([[[["deep"]]]]),
    st.none(),
)


def rejected(reply: ScriptedReply) -> bool:
    """Whether the runner must refuse the reply whole (the service would not take it back)."""
    ids = [block["id"] for block in reply.content if block["type"] == "tool_use"]
    return len(set(ids)) != len(ids) or not all(TOOL_ID_PATTERN.fullmatch(tool_use_id) for tool_use_id in ids)


@given(replies(), st.lists(returns, min_size=1, max_size=6), st.sampled_from(["asyncio", "trio"]))
@property_settings
def test_hostile_replies_and_careless_tools_never_break_a_request_and_no_call_runs_twice(
    script: list[ScriptedReply], values: list[Any], backend: str
) -> None:
    runs: Counter[tuple[int, str]] = Counter()

    @tool
    def act(key: str, ctx: ToolContext) -> Any:
        """Act on a key."""
        runs[(ctx.runner.requests_sent, ctx.call.id)] += 1
        return values[len(runs) % len(values)]

    fake = FakeMessagesAPI([*script, *[text_reply("the end")] * 3])
    refused = 0

    async def main() -> None:
        nonlocal refused
        runner = ToolRunner(
            fake.async_client(), model=MODEL, max_tokens=64, messages=[USER], tools=[act], max_iterations=12
        )
        while True:
            try:
                await runner.until_done()
            except MalformedReplyError:
                refused += 1
                continue
            break
        assert not pairing_problems(runner.messages, allow_trailing=True)

    with quiet_tool_failures():
        anyio.run(main, backend=backend)

    event(f"{refused} replies refused")
    event(f"{len(fake.requests)} requests")
    event(f"{len(runs)} tool calls ran")
    assert refused == sum(rejected(reply) for reply in script[: len(fake.requests)])
    assert all(count == 1 for count in runs.values()), runs

"""Prompt caching on by choice: where the runner puts breakpoints, and never more than four.

The pure part (``add_breakpoints``, ``HistoryBreakpoints``) is driven with generated params, tools
and histories that carry breakpoints of their own; the checks count breakpoints independently of
the code under test. The runner's part goes through the public API against the fake, whose
validation answers 400 to more than four breakpoints, as the service does.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, cast

import pytest
from hypothesis import given, strategies as st

from toolrunner import CachePolicy, ParamsError, SyncToolRunner, ToolRunner, tool
from toolrunner._core.caching import (
    MAX_BREAKPOINTS,
    Breakpoints,
    HistoryBreakpoints,
    add_breakpoints,
    cache_policy,
    history_breakpoints,
)
from toolrunner.testing import FakeMessagesAPI, PromptCache, text_reply, tool_call, tool_reply

FIVE: dict[str, Any] = {"type": "ephemeral"}
HOUR: dict[str, Any] = {"type": "ephemeral", "ttl": "1h"}

# -- an independent count of a request's breakpoints, in prompt order ------------------------------


def ttl(cache_control: Mapping[str, Any]) -> str:
    return str(cache_control.get("ttl", "5m"))


def block_ttls(block: object) -> list[str]:
    if not isinstance(block, Mapping):
        return []
    block = cast(Mapping[str, Any], block)
    found = [ttl(block["cache_control"])] if block.get("cache_control") is not None else []
    if block.get("type") == "tool_result" and isinstance(block.get("content"), list):
        found += [t for inner in block["content"] for t in block_ttls(inner)]
    return found


def request_ttls(kwargs: Mapping[str, Any]) -> list[str]:
    """Every breakpoint's TTL in prompt order: tools, system, messages, then the top-level one."""
    tools: list[Any] = kwargs.get("tools") or []
    found = [t for tool_ in tools for t in block_ttls(tool_)]
    system = kwargs.get("system")
    if isinstance(system, list):
        found += [t for block in cast(list[Any], system) for t in block_ttls(block)]
    for message in kwargs["messages"]:
        content = message["content"]
        if isinstance(content, list):
            found += [t for block in cast(list[Any], content) for t in block_ttls(block)]
    if kwargs.get("cache_control") is not None:
        found.append(ttl(kwargs["cache_control"]))
    return found


def in_order(ttls: Sequence[str]) -> bool:
    """The service's rule: no 1-hour breakpoint after a 5-minute one."""
    return not ("5m" in ttls and "1h" in ttls[ttls.index("5m") :])


# -- generated requests ---------------------------------------------------------------------------

UNSET: dict[str, Any] = {}  # no cache_control key (None stands for `"cache_control": None`)
cache_controls = st.sampled_from([UNSET, UNSET, None, FIVE, {"type": "ephemeral", "ttl": "5m"}, HOUR])


def marked(block: dict[str, Any], cache_control: dict[str, Any] | None) -> dict[str, Any]:
    return block if cache_control is UNSET else {**block, "cache_control": cache_control}


def text_block(text: str, cache_control: dict[str, Any] | None) -> dict[str, Any]:
    return marked({"type": "text", "text": text}, cache_control)


def tool_result(content: str | list[dict[str, Any]], cache_control: dict[str, Any] | None) -> dict[str, Any]:
    return marked({"type": "tool_result", "tool_use_id": "toolu_1", "content": content}, cache_control)


def message(role: str, content: str | list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "content": content}


text_blocks = st.builds(text_block, st.text(max_size=3), cache_controls)
tool_results = st.builds(
    tool_result, st.one_of(st.text(max_size=3), st.lists(text_blocks, max_size=3)), cache_controls
)
contents = st.one_of(
    st.text(max_size=3), st.lists(st.one_of(text_blocks, tool_results), min_size=1, max_size=4)
)
histories = st.lists(
    st.builds(message, st.sampled_from(["user", "assistant"]), contents), min_size=1, max_size=6
)


@st.composite
def tool_lists(draw: st.DrawFn) -> list[dict[str, Any]]:
    tools: list[dict[str, Any]] = []
    for index in range(draw(st.integers(0, 4))):
        definition: dict[str, Any] = {"name": f"tool_{index}", "input_schema": {"type": "object"}}
        if draw(st.booleans()) and draw(st.booleans()):
            definition["defer_loading"] = True
        tools.append(marked(definition, draw(cache_controls)))
    return tools


systems = st.one_of(st.none(), st.text(max_size=3), st.lists(text_blocks, max_size=3))
policies = st.builds(
    CachePolicy,
    ttl=st.sampled_from(["5m", "1h"]),
    automatic=st.booleans(),
    system=st.booleans(),
    tools=st.booleans(),
)


@st.composite
def requests(draw: st.DrawFn) -> dict[str, Any]:
    kwargs: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 10, "messages": draw(histories)}
    tools = draw(tool_lists())
    if tools:
        kwargs["tools"] = tools
    system = draw(systems)
    if system is not None:
        kwargs["system"] = system
    top = draw(cache_controls)
    if top is not UNSET:
        kwargs["cache_control"] = top
    return kwargs


def place(kwargs: dict[str, Any], policy: CachePolicy) -> dict[str, Any]:
    return add_breakpoints(kwargs, policy, history_breakpoints(kwargs["messages"]))


# -- the properties -------------------------------------------------------------------------------


@given(requests(), policies)
def test_never_more_than_four_breakpoints_and_the_ttl_order_kept(
    kwargs: dict[str, Any], policy: CachePolicy
) -> None:
    before = request_ttls(kwargs)
    after = request_ttls(place(kwargs, policy))
    if len(before) <= MAX_BREAKPOINTS:
        assert len(after) <= MAX_BREAKPOINTS
    else:
        assert after == before  # the caller's request is over the limit already: nothing is added
    if in_order(before):
        assert in_order(after)


@given(requests(), policies)
def test_nothing_the_caller_set_is_removed_or_changed(kwargs: dict[str, Any], policy: CachePolicy) -> None:
    original = copy.deepcopy(kwargs)
    new = place(kwargs, policy)
    assert kwargs == original  # the params, tools, system blocks and history are not mutated
    assert new["messages"] is kwargs["messages"]  # the history is neither copied nor changed
    added = policy.cache_control
    for name in kwargs.keys() - {"tools", "system"}:
        assert new[name] == kwargs[name], name
    if "cache_control" in new and "cache_control" not in kwargs:
        assert policy.automatic
        assert new["cache_control"] == added
    old_tools, new_tools = kwargs.get("tools", []), new.get("tools", [])
    assert len(new_tools) == len(old_tools)
    changed = [index for index, (old, now) in enumerate(zip(old_tools, new_tools, strict=True)) if old != now]
    assert len(changed) <= 1
    for index in changed:
        assert policy.tools
        assert "cache_control" not in old_tools[index]
        assert new_tools[index] == {**old_tools[index], "cache_control": added}
    old_system, new_system = kwargs.get("system"), new.get("system")
    if old_system != new_system:
        assert policy.system
        if isinstance(old_system, str):
            assert new_system == [{"type": "text", "text": old_system, "cache_control": added}]
        else:
            assert isinstance(old_system, list)
            assert isinstance(new_system, list)
            old_blocks, new_blocks = cast(list[Any], old_system), cast(list[Any], new_system)
            assert new_blocks[:-1] == old_blocks[:-1]
            assert "cache_control" not in old_blocks[-1]
            assert new_blocks[-1] == {**old_blocks[-1], "cache_control": added}


@given(requests(), policies)
def test_without_breakpoints_of_its_own_a_request_gets_every_one_the_policy_asks_for(
    kwargs: dict[str, Any], policy: CachePolicy
) -> None:
    plain = strip_breakpoints(kwargs)
    new = place(plain, policy)
    assert ("cache_control" in new) == policy.automatic
    system = plain.get("system")
    system_marked = bool(system) and (isinstance(system, str) or bool(system[-1]["text"]))
    assert (new.get("system") != system) == (policy.system and system_marked)
    loaded = [tool_ for tool_ in plain.get("tools", []) if not tool_.get("defer_loading")]
    assert (new.get("tools") != plain.get("tools")) == (policy.tools and bool(loaded))


def strip_breakpoints(value: Any) -> Any:
    if isinstance(value, dict):
        return {
            key: strip_breakpoints(item)
            for key, item in cast(dict[str, Any], value).items()
            if key != "cache_control"
        }
    if isinstance(value, list):
        return [strip_breakpoints(item) for item in cast(list[Any], value)]
    return value


@given(st.lists(st.tuples(st.booleans(), histories), min_size=1, max_size=8))
def test_the_history_count_remembered_between_requests_is_the_whole_count(
    steps: list[tuple[bool, list[dict[str, Any]]]],
) -> None:
    memo = HistoryBreakpoints()
    history: tuple[Any, ...] = ()
    for replace, messages in steps:
        # The runner's history grows at its end; steering replaces it (here: or an equal copy).
        history = tuple(copy.deepcopy(messages)) if replace else (*history, *messages)
        found = memo.of(history)
        assert found == history_breakpoints(history)
        ttls = [t for message in history for t in request_ttls({"messages": [message]})]
        assert found == Breakpoints(len(ttls), frozenset(ttls))


class CountingMessage(dict[str, Any]):
    """A message that counts how often its content is read."""

    reads = 0

    def get(self, key: str, default: Any = None) -> Any:
        if key == "content":
            CountingMessage.reads += 1
        return super().get(key, default)


def test_each_message_of_a_growing_history_is_walked_once() -> None:
    text = {"type": "text", "text": "hi", "cache_control": FIVE}
    history = tuple(CountingMessage(role="user", content=[text]) for _ in range(100))
    memo = HistoryBreakpoints()
    CountingMessage.reads = 0
    assert memo.of(history).count == 100
    assert CountingMessage.reads == 100
    grown = (*history, CountingMessage(role="assistant", content=[{"type": "text", "text": "ok"}]))
    assert memo.of(grown).count == 100
    assert CountingMessage.reads == 101  # only the new message was walked
    assert memo.of(grown[1:]).count == 99  # a replaced history is counted whole again
    assert CountingMessage.reads == 201


# -- examples of placement ------------------------------------------------------------------------

HISTORY: list[dict[str, Any]] = [{"role": "user", "content": "Hello"}]
TOOLS: list[dict[str, Any]] = [
    {"name": "a", "input_schema": {"type": "object"}},
    {"name": "b", "input_schema": {"type": "object"}},
    {"name": "late", "input_schema": {"type": "object"}, "defer_loading": True},
]


def test_the_policy_marks_the_end_the_last_system_block_and_the_last_loaded_tool() -> None:
    kwargs = {"messages": HISTORY, "system": "Be brief.", "tools": TOOLS}
    new = place(kwargs, CachePolicy(ttl="1h", system=True, tools=True))
    assert new["cache_control"] == HOUR
    assert new["system"] == [{"type": "text", "text": "Be brief.", "cache_control": HOUR}]
    assert [tool_.get("cache_control") for tool_ in new["tools"]] == [None, HOUR, None]
    assert CachePolicy().cache_control == FIVE  # 5m is the default: sent without a ttl


def test_slots_go_to_the_top_level_first_then_the_system_prompt_then_the_tools() -> None:
    three_of_theirs = [
        {
            "role": "user",
            "content": [
                *(marked({"type": "text", "text": t}, FIVE) for t in "xyz"),
                {"type": "text", "text": "Go."},
            ],
        }
    ]
    kwargs = {"messages": three_of_theirs, "system": "Be brief.", "tools": TOOLS}
    new = place(kwargs, CachePolicy(system=True, tools=True))
    assert new["cache_control"] == FIVE
    assert new["system"] == "Be brief."
    assert new["tools"] is TOOLS
    kwargs = {"messages": HISTORY[:], "system": "Be brief.", "tools": TOOLS, "cache_control": FIVE}
    new = place({**kwargs, "messages": three_of_theirs[:1]}, CachePolicy(system=True, tools=True))
    assert new == {**kwargs, "messages": three_of_theirs[:1]}  # four of theirs: nothing added


def test_a_breakpoint_that_would_break_the_ttl_order_is_not_added() -> None:
    doc, question = {"type": "text", "text": "doc"}, {"type": "text", "text": "Sum it up."}
    their_hour = [{"role": "user", "content": [marked(doc, HOUR), question]}]
    new = place({"messages": their_hour, "system": "s", "tools": TOOLS}, CachePolicy(system=True, tools=True))
    # A 5-minute breakpoint may not come before their 1-hour one; at the end it may.
    assert new["cache_control"] == FIVE
    assert new["system"] == "s"
    assert new["tools"] is TOOLS
    their_five = [{"role": "user", "content": [marked(doc, FIVE), question]}]
    new = place({"messages": their_five, "system": "s"}, CachePolicy(ttl="1h", system=True))
    assert "cache_control" not in new  # a 1-hour one may not come after their 5-minute one
    assert new["system"] == [{"type": "text", "text": "s", "cache_control": HOUR}]


def test_the_top_level_breakpoint_is_left_out_when_the_last_block_has_one() -> None:
    last_marked = [{"role": "user", "content": [marked({"type": "text", "text": "doc"}, FIVE)]}]
    assert "cache_control" not in place({"messages": last_marked}, CachePolicy())


def unchecked(value: object) -> Any:
    """A value as a caller without a type checker might pass it."""
    return value


def test_the_option_takes_true_a_ttl_a_policy_or_nothing() -> None:
    assert cache_policy(True) == CachePolicy()
    assert cache_policy("1h") == CachePolicy(ttl="1h")
    policy = CachePolicy(system=True)
    assert cache_policy(policy) is policy
    assert cache_policy(None) is None
    assert cache_policy(False) is None
    with pytest.raises(ParamsError, match=r"cache must be True, '5m', '1h', a CachePolicy or None, not '2h'"):
        cache_policy("2h")
    with pytest.raises(ParamsError, match=r"CachePolicy ttl must be '5m' or '1h', not '1d'"):
        CachePolicy(ttl=unchecked("1d"))
    with pytest.raises(ParamsError, match=r"CachePolicy tools must be True or False, not 'yes'"):
        CachePolicy(tools=unchecked("yes"))


# -- through the runner ---------------------------------------------------------------------------

pytestmark = pytest.mark.anyio

SYSTEM = "You review code. " * 400  # long enough to be cached (the fake's minimum is 1,024 tokens)


@tool
async def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file's path.
    """
    return f"# {path}\n" + "x = 1\n" * 50


def script(turns: int) -> list[Any]:
    calls = [tool_reply(tool_call("read_file", {"path": f"f{n}.py"})) for n in range(turns - 1)]
    return [*calls, text_reply("Done.")]


async def run(cache: Any, *, turns: int = 4, **params: Any) -> tuple[ToolRunner, FakeMessagesAPI]:
    fake = FakeMessagesAPI(script(turns), prompt_cache=PromptCache())
    params = {
        "system": SYSTEM,
        "messages": [{"role": "user", "content": "Review."}],
        "tools": [read_file],
        **params,
    }
    runner = ToolRunner(
        fake.async_client(), model="claude-sonnet-4-6", max_tokens=1024, cache=cache, **params
    )
    await runner.until_done()
    fake.assert_complete()
    return runner, fake


async def test_with_cache_true_each_request_reads_what_the_one_before_wrote() -> None:
    runner, fake = await run(True)
    assert [request.body.get("cache_control") for request in fake.requests] == [FIVE] * 4
    first, *rest = runner.usage.requests
    assert first.usage.cache_read_input_tokens == 0
    assert first.usage.cache_creation_input_tokens == first.usage.prompt_tokens
    for before, request in zip(runner.usage.requests, rest, strict=False):
        assert request.usage.cache_read_input_tokens == before.usage.prompt_tokens
        assert request.usage.input_tokens == 0
        assert request.saved is not None
        assert request.saved > 0
    assert runner.usage.saved == sum(request.saved or 0 for request in runner.usage.requests)


async def test_the_saving_is_the_cost_without_the_cache_minus_the_cost_with_it() -> None:
    cached, _ = await run(True, turns=6)
    uncached, _ = await run(None, turns=6)
    assert uncached.usage.total.cache_read_input_tokens == 0
    assert uncached.usage.saved == 0
    assert cached.usage.total.prompt_tokens == uncached.usage.total.prompt_tokens
    assert cached.usage.cost is not None
    assert uncached.usage.cost is not None
    assert cached.usage.saved == uncached.usage.cost - cached.usage.cost
    assert cached.usage.cost < uncached.usage.cost


async def test_the_callers_params_tools_and_history_stay_as_they_were() -> None:
    system = [{"type": "text", "text": SYSTEM}]
    raw_tool = {"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}
    history = [{"role": "user", "content": [{"type": "text", "text": "Review."}]}]
    originals = copy.deepcopy((system, raw_tool, history))
    runner, fake = await run(
        CachePolicy(ttl="1h", system=True, tools=True),
        system=system,
        tools=[read_file, raw_tool],
        messages=history,
    )
    assert (system, raw_tool, history) == originals
    assert runner.params["system"] == system  # the breakpoints are on the requests, not the params
    assert runner.messages[0] == history[0]
    body = fake.requests[-1].body
    assert body["system"][-1]["cache_control"] == HOUR
    assert body["tools"][-1]["cache_control"] == HOUR
    assert body["cache_control"] == HOUR


async def test_when_the_callers_breakpoints_use_all_four_none_is_added() -> None:
    system = [marked({"type": "text", "text": SYSTEM}, FIVE), marked({"type": "text", "text": "More."}, FIVE)]
    raw_tool = marked({"name": "lookup", "description": "Look up.", "input_schema": {"type": "object"}}, HOUR)
    history = [{"role": "user", "content": [marked({"type": "text", "text": "Review."}, FIVE)]}]
    _, fake = await run(
        CachePolicy(system=True, tools=True), system=system, tools=[read_file, raw_tool], messages=history
    )
    for request in fake.requests:  # the fake answers 400 to a fifth, as the service does
        assert "cache_control" not in request.body
        assert len(request_ttls(request.body)) == 4


async def test_a_streamed_loop_caches_the_same_way() -> None:
    fake = FakeMessagesAPI(script(3), prompt_cache=PromptCache())
    runner = ToolRunner(
        fake.async_client(),
        stream=True,
        model="claude-sonnet-4-6",
        max_tokens=1024,
        system=SYSTEM,
        messages=[{"role": "user", "content": "Review."}],
        tools=[read_file],
        cache="1h",
    )
    async for stream in runner:
        await stream.get_final_message()
    assert [request.body["cache_control"] for request in fake.requests] == [HOUR] * 3
    assert runner.usage.total.cache_read_input_tokens > 0


def test_the_sync_runner_takes_the_option_too() -> None:
    fake = FakeMessagesAPI(script(2), prompt_cache=PromptCache())
    with fake.client() as client:
        runner = SyncToolRunner(
            client,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            system=SYSTEM,
            messages=[{"role": "user", "content": "Review."}],
            tools=[read_file],
            cache=True,
        )
        runner.until_done()
        assert runner.usage.requests[1].usage.cache_read_input_tokens > 0


def test_a_cache_option_it_cannot_take_is_refused_at_construction() -> None:
    fake = FakeMessagesAPI()
    with pytest.raises(
        ParamsError, match=r"cache must be True, '5m', '1h', a CachePolicy or None, not 'always'"
    ):
        ToolRunner(fake.async_client(), model="m", max_tokens=1, messages=HISTORY, cache=unchecked("always"))

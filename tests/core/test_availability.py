"""The fold of a history's tool changes (``_core.tool_changes``), checked against the SDK's own.

``available_tool_names`` is private to the SDK: the library never imports it, this test does, so
that the two folds are compared on generated histories (system messages' tool_addition and
tool_removal blocks, MCP and unknown references, definitions without a name, and the
``tool_changes`` of compaction blocks, as dicts and as the SDK's response models).
"""

from __future__ import annotations

from typing import Any

from anthropic.lib.tools._tool_dispatch import available_tool_names  # pyright: ignore[reportPrivateUsage]
from anthropic.types.beta import BetaCompactionBlock
from hypothesis import given, strategies as st

from toolrunner._core.tool_changes import added_definitions, available_tools, last_changes, removed_tools

NAMES = ("alpha", "beta", "gamma", "delta")

names = st.sampled_from(NAMES)


def _tool(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["reference", "definition", "nameless", "mcp", "unknown"]))
    if kind == "reference":
        return {"type": "tool_reference", "name": draw(names)}
    if kind == "definition":
        return {
            "type": "tool_definition",
            "definition": {"name": draw(names), "input_schema": {"type": "object"}},
        }
    if kind == "nameless":
        return {"type": "tool_definition", "definition": {"type": "mcp_toolset", "mcp_server_name": "s"}}
    if kind == "mcp":
        return {"type": "mcp_tool_reference", "server_name": "s", "name": draw(names)}
    return {"type": "future_reference", "name": draw(names)}


@st.composite
def changes(draw: st.DrawFn) -> dict[str, Any]:
    kind = draw(st.sampled_from(["tool_addition", "tool_removal"]))
    return {"type": kind, "tool": _tool(draw)}


@st.composite
def system_block(draw: st.DrawFn) -> dict[str, Any]:
    if draw(st.integers(0, 4)) == 0:
        return {"type": "text", "text": "Be brief."}
    return draw(changes())


@st.composite
def compaction(draw: st.DrawFn) -> Any:
    references = [
        {
            "type": draw(st.sampled_from(["tool_addition", "tool_removal"])),
            "tool": {"type": "tool_reference", "name": name},
        }
        for name in draw(st.lists(names, max_size=3))
    ]
    if draw(st.booleans()):  # as the runner echoes a reply: the SDK's response model
        return BetaCompactionBlock.model_validate(
            {"type": "compaction", "content": "Summary.", "tool_changes": references}
        )
    block: dict[str, Any] = {"type": "compaction", "content": "Summary."}
    if draw(st.booleans()):
        block["tool_changes"] = references + draw(st.lists(changes(), max_size=2))
    return block


@st.composite
def message(draw: st.DrawFn) -> dict[str, Any]:
    role = draw(st.sampled_from(["user", "assistant", "system"]))
    if draw(st.integers(0, 5)) == 0:
        return {"role": role, "content": "Text."}
    if role == "system":
        return {"role": role, "content": draw(st.lists(system_block(), max_size=4))}
    if role == "assistant":
        blocks = draw(st.lists(st.one_of(st.just({"type": "text", "text": "Hi."}), compaction()), max_size=3))
        return {"role": role, "content": blocks}
    # a user message's blocks never change tools, even when they look like changes
    return {"role": role, "content": draw(st.lists(changes(), max_size=2))}


@given(st.lists(message(), max_size=8), st.frozensets(names))
def test_the_fold_is_the_sdks(history: list[dict[str, Any]], runnable: frozenset[str]) -> None:
    expected = available_tool_names(history, runnable)  # pyright: ignore[reportArgumentType]
    assert available_tools(history, runnable) == expected
    # what the runner uses: a runnable tool runs exactly when the SDK's fold keeps it
    assert runnable - removed_tools(history) == runnable & expected
    # a name whose last change is an addition has its definition when it came by value
    for name in added_definitions(history):
        assert last_changes(history)[name] is True


def test_a_later_addition_makes_a_removed_tool_available_again() -> None:
    def change(kind: str, name: str) -> dict[str, Any]:
        return {"type": kind, "tool": {"type": "tool_reference", "name": name}}

    history = [
        {"role": "user", "content": "Go."},
        {"role": "system", "content": [change("tool_removal", "alpha"), change("tool_removal", "beta")]},
        {"role": "assistant", "content": "Ok."},
        {"role": "user", "content": "More."},
        {"role": "system", "content": [change("tool_addition", "alpha")]},
    ]
    assert removed_tools(history) == {"beta"}
    assert available_tools(history, {"alpha", "beta", "gamma"}) == {"alpha", "gamma"}

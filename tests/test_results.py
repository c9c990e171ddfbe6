"""Tests of the tool result adapter: every mapping, fallback and error path."""

from __future__ import annotations

import dataclasses

import pydantic
import pytest
from anthropic.types import TextBlock

from toolrunner._errors import ToolError
from toolrunner._results import DEFAULT_ADAPTER, tool_result_block


class Point(pydantic.BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Pair:
    left: str
    right: str


def test_str_is_sent_as_is() -> None:
    assert DEFAULT_ADAPTER.to_content("héllo") == "héllo"


def test_none_is_an_empty_success() -> None:
    assert DEFAULT_ADAPTER.to_content(None) is None
    assert tool_result_block("toolu_1", None) == {"type": "tool_result", "tool_use_id": "toolu_1"}


def test_json_values() -> None:
    assert DEFAULT_ADAPTER.to_content({"a": "é"}) == '{"a": "é"}'
    assert DEFAULT_ADAPTER.to_content([1, 2]) == "[1, 2]"
    assert DEFAULT_ADAPTER.to_content(Point(x=1, y=2)) == '{"x": 1, "y": 2}'
    assert DEFAULT_ADAPTER.to_content(Pair("a", "b")) == '{"left": "a", "right": "b"}'


def test_blocks_pass_through_unchanged() -> None:
    block = {"type": "text", "text": "hi"}
    content = DEFAULT_ADAPTER.to_content(block)
    assert content == [block]
    assert isinstance(content, list)
    assert content[0] is block
    assert DEFAULT_ADAPTER.to_content([block, TextBlock(type="text", text="x")]) == [
        block,
        {"type": "text", "text": "x"},
    ]


def test_unserialisable_value_names_its_type() -> None:
    class Opaque:
        pass

    with pytest.raises(TypeError, match=r"'test_unserialisable_value_names_its_type.<locals>.Opaque'"):
        DEFAULT_ADAPTER.to_content(Opaque())


def test_error_content_uses_the_same_mapping() -> None:
    assert DEFAULT_ADAPTER.error_content(ToolError("bad")) == "bad"
    assert DEFAULT_ADAPTER.error_content(ToolError([{"type": "text", "text": "bad"}])) == [
        {"type": "text", "text": "bad"}
    ]


def test_tool_result_block_sets_is_error_only_when_true() -> None:
    assert tool_result_block("t", "x") == {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    assert tool_result_block("t", "x", is_error=True).get("is_error") is True

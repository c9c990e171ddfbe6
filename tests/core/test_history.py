"""Tests of history import and export, tool id sanitising, and the text helpers."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from anthropic.types import Message
from hypothesis import given, strategies as st

from toolrunner._core.errors import HistoryError
from toolrunner._core.history import TOOL_ID_PATTERN, sanitize_tool_id, text_of, thinking_text, to_openai
from toolrunner._core.history_import import NO_RESULT, from_openai

PNG64 = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
PDF64 = base64.b64encode(b"%PDF-1.7").decode()


def call(call_id: str, name: str = "weather", arguments: object = '{"city": "Paris"}') -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(*calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls)}


def tool(call_id: str, content: Any = "sunny") -> dict[str, Any]:
    return {"role": "tool", "tool_call_id": call_id, "content": content}


# -- sanitize_tool_id -------------------------------------------------------------------------


def test_valid_ids_are_unchanged() -> None:
    assert sanitize_tool_id("call_abc-123") == "call_abc-123"
    assert sanitize_tool_id("x" * 128) == "x" * 128


def test_invalid_ids_are_replaced_and_hashed() -> None:
    cleaned = sanitize_tool_id("call.1")
    assert cleaned.startswith("call_1_")
    assert cleaned != sanitize_tool_id("call:1")
    assert cleaned == sanitize_tool_id("call.1")
    assert TOOL_ID_PATTERN.fullmatch(sanitize_tool_id(""))
    assert len(sanitize_tool_id("y" * 500)) == 128


@given(st.text())
def test_sanitized_ids_are_valid_and_stable(tool_id: str) -> None:
    cleaned = sanitize_tool_id(tool_id)
    assert TOOL_ID_PATTERN.fullmatch(cleaned)
    assert sanitize_tool_id(cleaned) == cleaned


@given(st.text(), st.text())
def test_different_ids_stay_apart(first: str, second: str) -> None:
    if first != second:
        assert sanitize_tool_id(first) != sanitize_tool_id(second)


# -- from_openai ------------------------------------------------------------------------------


def test_system_and_developer_messages_become_the_system_text() -> None:
    system, messages = from_openai(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"},
            {"role": "developer", "content": [{"type": "text", "text": "Use metric units."}]},
        ]
    )
    assert system == "Be brief.\n\nUse metric units."
    assert messages == [{"role": "user", "content": "Hi"}]
    assert from_openai([{"role": "user", "content": "Hi"}]).system is None


def test_tool_calls_and_results() -> None:
    imported = from_openai(
        [
            {"role": "user", "content": "Weather in Paris and Rome?"},
            assistant(call("call_1"), call("call_2", arguments='{"city": "Rome"}'), content="Checking."),
            tool("call_2", "rain"),
            tool("call_1", "sunny"),
            {"role": "user", "content": "Thanks"},
        ]
    )
    assert imported.messages == [
        {"role": "user", "content": "Weather in Paris and Rome?"},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "call_1", "name": "weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "weather", "input": {"city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "sunny"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "rain"},
                {"type": "text", "text": "Thanks"},
            ],
        },
    ]


def test_ids_are_sanitised_the_same_way_on_both_sides() -> None:
    messages: Any = from_openai([assistant(call("call.1/x")), tool("call.1/x")]).messages
    tool_use = messages[0]["content"][0]
    result = messages[1]["content"][0]
    assert tool_use["id"] == result["tool_use_id"]
    assert TOOL_ID_PATTERN.fullmatch(tool_use["id"])


def test_a_call_without_a_result_gets_an_error_result() -> None:
    _, messages = from_openai(
        [assistant(call("a"), call("b")), tool("b"), {"role": "user", "content": "go on"}]
    )
    assert messages[1] == {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "a", "content": NO_RESULT, "is_error": True},
            {"type": "tool_result", "tool_use_id": "b", "content": "sunny"},
            {"type": "text", "text": "go on"},
        ],
    }


def test_trailing_calls_get_error_results_unless_kept() -> None:
    history = [{"role": "user", "content": "Hi"}, assistant(call("a"))]
    assert from_openai(history).messages[-1] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "a", "content": NO_RESULT, "is_error": True}],
    }
    kept = from_openai(history, keep_trailing_calls=True).messages
    assert kept[-1]["role"] == "assistant"
    # Once some result arrived, the calls are answered whatever the option says.
    partial = from_openai(
        [*history, assistant(call("b"), call("c")), tool("b")], keep_trailing_calls=True
    ).messages
    assert partial[-1]["role"] == "user"


def test_tool_result_content_forms() -> None:
    messages: Any = from_openai(
        [
            assistant(call("a"), call("b"), call("c", arguments="")),
            tool("a", ""),
            tool("b", [{"type": "text", "text": "part 1"}, {"type": "text", "text": "part 2"}]),
            tool("c", None),
        ]
    ).messages
    assert messages[0]["content"][2]["input"] == {}
    assert messages[1]["content"] == [
        {"type": "tool_result", "tool_use_id": "a"},
        {
            "type": "tool_result",
            "tool_use_id": "b",
            "content": [{"type": "text", "text": "part 1"}, {"type": "text", "text": "part 2"}],
        },
        {"type": "tool_result", "tool_use_id": "c"},
    ]


def test_user_parts() -> None:
    _, messages = from_openai(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look:"},
                    {
                        "type": "image_url",
                        "image_url": {"url": f"data:image/png;base64,{PNG64}", "detail": "high"},
                    },
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}},
                    {
                        "type": "file",
                        "file": {"file_data": f"data:application/pdf;base64,{PDF64}", "filename": "r.pdf"},
                    },
                    {"type": "text", "text": ""},
                ],
            }
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
                {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
                    "title": "r.pdf",
                },
            ],
        }
    ]


def test_assistant_refusal_and_text_parts() -> None:
    _, messages = from_openai(
        [
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "a"}, {"type": "refusal", "refusal": "no"}],
            }
        ]
    )
    assert messages == [
        {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "no"}]}
    ]


def test_empty_messages_are_dropped_and_same_roles_merge() -> None:
    _, messages = from_openai(
        [
            {"role": "user", "content": "a"},
            {"role": "user", "content": ""},
            {"role": "user", "content": "b"},
            {"role": "assistant", "content": None},
        ]
    )
    assert messages == [
        {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    ]


@pytest.mark.parametrize(
    ("history", "message"),
    [
        (
            [assistant(call("a", arguments="{oops"))],
            r"messages\[0\]\.tool_calls\[0\] \('weather'\) has arguments that are not valid JSON",
        ),
        (
            [{"role": "user", "content": "x"}, assistant(call("a", arguments="[1]"))],
            r"messages\[1\]\.tool_calls\[0\].*not an object",
        ),
        ([assistant(call("a", arguments={"x": 1}))], r"not a JSON string"),
        ([assistant({"id": 3, "function": {"name": "n"}})], r"string 'id'"),
        ([tool("nope")], r"messages\[0\] answers tool call 'nope', which no earlier assistant message made"),
        (
            [assistant(call("a")), {"role": "user", "content": "x"}, tool("a")],
            r"messages\[2\].*messages\[0\] made",
        ),
        ([assistant(call("a")), tool("a"), tool("a")], r"messages\[2\] answers tool call 'a' a second time"),
        (
            [assistant(call("a")), tool("a"), assistant(call("a"))],
            r"messages\[2\]\.tool_calls\[0\] uses the same id",
        ),
        ([{"role": "tool", "content": "x"}], r"without a string 'tool_call_id'"),
        (
            [{"role": "function", "name": "f", "content": "x"}],
            r"messages\[0\] has role 'function'.*not supported",
        ),
        ([{"role": "assistant", "function_call": {"name": "f", "arguments": "{}"}}], r"'function_call'"),
        ([{"role": "critic", "content": "x"}], r"messages\[0\] has role 'critic'"),
        (["hello"], r"messages\[0\] is a 'str'"),
        ([{"role": "user", "content": 5}], r"messages\[0\]\.content is a 'int'"),
        ([{"role": "user", "content": [{"type": "input_audio"}]}], r"content\[0\] is a 'input_audio' part"),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "ftp://x"}}]}],
            "neither an http",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "data:image/bmp;base64,AA=="}}],
                }
            ],
            "image/bmp",
        ),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "data:image/png;base64,@@"}}],
                }
            ],
            "base64",
        ),
        (
            [{"role": "user", "content": [{"type": "image_url", "image_url": {"detail": "low"}}]}],
            "without a URL",
        ),
        ([{"role": "user", "content": [{"type": "file", "file": {"file_id": "file-1"}}]}], "file_data"),
        (
            [
                {
                    "role": "user",
                    "content": [{"type": "file", "file": {"file_data": "data:text/csv;base64,AA=="}}],
                }
            ],
            "text/csv",
        ),
        ([{"role": "system", "content": [{"type": "image_url"}]}], "only hold text"),
        ([{"role": "user", "content": [{"type": "text"}]}], "without a string 'text'"),
        ([{"role": "assistant", "tool_calls": "x"}], r"tool_calls is not a list"),
    ],
)
def test_errors_name_the_message(history: list[Any], message: str) -> None:
    with pytest.raises(HistoryError, match=message):
        from_openai(history)


def test_ids_that_sanitise_alike_are_an_error() -> None:
    first = "a.b"
    second = sanitize_tool_id(first)  # a valid id equal to the first one's sanitised form
    with pytest.raises(HistoryError, match="sanitises like"):
        from_openai([assistant(call(first), call(second))])


# -- to_openai --------------------------------------------------------------------------------


def test_to_openai() -> None:
    messages: list[Any] = [
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "sig"},
                {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "toolu_1", "name": "weather", "input": {"city": "Paris"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "sunny"}],
                },
                {"type": "text", "text": "Thanks"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG64}},
            ],
        },
    ]
    assert to_openai(messages, system=[{"type": "text", "text": "Be brief."}]) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "toolu_1",
                    "type": "function",
                    "function": {"name": "weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "toolu_1", "content": "sunny"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Thanks"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG64}"}},
            ],
        },
    ]


def test_to_openai_parts_and_omissions() -> None:
    messages: list[Any] = [
        {
            "role": "user",
            "content": [
                {"type": "image", "source": {"type": "url", "url": "https://e.x/a.png"}},
                {
                    "type": "document",
                    "source": {"type": "base64", "media_type": "application/pdf", "data": PDF64},
                    "title": "r.pdf",
                },
                {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "notes"}},
            ],
        },
        {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "x"}]},
        {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]},
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "t",
                    "is_error": True,
                    "content": [
                        {"type": "text", "text": "see"},
                        {
                            "type": "image",
                            "source": {"type": "base64", "media_type": "image/png", "data": PNG64},
                        },
                        {
                            "type": "document",
                            "source": {"type": "text", "media_type": "text/plain", "data": "doc"},
                        },
                    ],
                }
            ],
        },
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "u"}]},
    ]
    out = to_openai(messages)
    assert out[0]["content"] == [
        {"type": "image_url", "image_url": {"url": "https://e.x/a.png"}},
        {"type": "file", "file": {"file_data": f"data:application/pdf;base64,{PDF64}", "filename": "r.pdf"}},
        {"type": "text", "text": "notes"},
    ]
    assert out[1] == {
        "role": "assistant",
        "content": None,
        "tool_calls": [{"id": "t", "type": "function", "function": {"name": "n", "arguments": "{}"}}],
    }
    assert out[2] == {
        "role": "tool",
        "tool_call_id": "t",
        "content": "see\n[image omitted: OpenAI tool messages hold text only]\ndoc",
    }
    assert out[3] == {"role": "tool", "tool_call_id": "u", "content": ""}


def test_to_openai_takes_sdk_messages() -> None:
    reply = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [{"type": "text", "text": "Hi"}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    assert to_openai([reply]) == [{"role": "assistant", "content": "Hi"}]


def test_to_openai_errors() -> None:
    with pytest.raises(HistoryError, match=r"messages\[0\] has role 'system'"):
        to_openai([{"role": "system", "content": "x"}])
    with pytest.raises(HistoryError, match=r"messages\[0\]\.content\[0\] is a search_result block"):
        to_openai([{"role": "user", "content": [{"type": "search_result", "title": "t"}]}])


# -- round trip -------------------------------------------------------------------------------

_ids = st.text(min_size=1, max_size=40)


@st.composite
def openai_histories(draw: st.DrawFn) -> list[dict[str, Any]]:
    """User turns and assistant turns with tool calls, each answered by some of its results."""
    history: list[dict[str, Any]] = []
    used: set[str] = set()
    for _ in range(draw(st.integers(0, 5))):
        history.append({"role": "user", "content": draw(st.text(min_size=1, max_size=20))})
        call_ids = draw(st.lists(_ids, max_size=4, unique_by=sanitize_tool_id))
        call_ids = [call_id for call_id in call_ids if sanitize_tool_id(call_id) not in used]
        used.update(sanitize_tool_id(call_id) for call_id in call_ids)
        if not call_ids:
            continue
        arguments = [json.dumps(draw(st.dictionaries(st.text(max_size=5), st.integers()))) for _ in call_ids]
        history.append(assistant(*(call(i, "t", a) for i, a in zip(call_ids, arguments, strict=True))))
        answered = draw(st.lists(st.sampled_from(call_ids), unique=True))
        history.extend(tool(call_id, draw(st.text(min_size=1, max_size=10))) for call_id in answered)
    return history


def _pairs(history: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(call id, result content) for every call, reading each call's results up to the next
    non-tool message; fails if a call has no result or a result has no call."""
    pairs: list[tuple[str, str]] = []
    index = 0
    while index < len(history):
        message = history[index]
        index += 1
        if message["role"] == "tool":
            raise AssertionError(f"unpaired tool result {message!r}")
        if message["role"] != "assistant" or not message.get("tool_calls"):
            continue
        results: dict[str, str] = {}
        while index < len(history) and history[index]["role"] == "tool":
            results[history[index]["tool_call_id"]] = history[index]["content"]
            index += 1
        call_ids = [tool_call["id"] for tool_call in message["tool_calls"]]
        assert sorted(results) == sorted(call_ids)
        pairs.extend((call_id, results[call_id]) for call_id in call_ids)
    return pairs


@given(openai_histories())
def test_round_trip_keeps_tool_pairing(history: list[dict[str, Any]]) -> None:
    system, messages = from_openai(history)
    back = to_openai(messages, system=system)
    expected: list[tuple[str, str]] = []
    for message in history:
        if message["role"] == "assistant":
            answers = {m["tool_call_id"]: m["content"] for m in history if m["role"] == "tool"}
            expected.extend(
                (sanitize_tool_id(c["id"]), answers.get(c["id"], NO_RESULT)) for c in message["tool_calls"]
            )
    assert _pairs(back) == expected
    # A second trip changes nothing: the ids are valid now and every call has its result.
    assert to_openai(from_openai(back).messages) == back


# -- text helpers -----------------------------------------------------------------------------


def test_text_and_thinking_of_a_message() -> None:
    reply = Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-5",
            "content": [
                {"type": "thinking", "thinking": "First, the units.", "signature": "sig1"},
                {"type": "redacted_thinking", "data": "opaque"},
                {"type": "text", "text": "It is "},
                {"type": "tool_use", "id": "toolu_1", "name": "n", "input": {}},
                {"type": "thinking", "thinking": "Then the answer.", "signature": "sig2"},
                {"type": "text", "text": "20 °C."},
            ],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )
    assert text_of(reply) == "It is 20 °C."
    assert thinking_text(reply) == "First, the units.\n\nThen the answer."
    param = reply.to_param()
    assert text_of(param) == "It is 20 °C."
    assert thinking_text(param) == "First, the units.\n\nThen the answer."
    assert text_of({"role": "user", "content": "plain"}) == "plain"
    assert thinking_text({"role": "user", "content": "plain"}) == ""

"""Tests of the tool result adapter: every mapping, fallback and error path."""

from __future__ import annotations

import base64
import dataclasses
import datetime
import json
import typing
from pathlib import Path

import pydantic
import pytest
from anthropic.types import TextBlock, TextBlockParam, tool_result_block_param
from anthropic.types.beta import beta_tool_result_block_param

from toolrunner._core.errors import ToolError, ToolRunnerError
from toolrunner._core.results import ToolResultContent, tool_result_block
from toolrunner._core.unicode import sendable as sendable_value
from toolrunner._tools.results import (
    CONTENT_BLOCK_TYPES,
    DEFAULT_ADAPTER,
    File,
    Image,
    Link,
    ResultTooLargeError,
    ToolResultAdapter,
)

PNG = b"\x89PNG\r\n\x1a\n" + b"\x00" * 24
JPEG = b"\xff\xd8\xff\xe0" + b"\x00" * 24
GIF = b"GIF89a" + b"\x00" * 24
WEBP = b"RIFF\x24\x00\x00\x00WEBPVP8 " + b"\x00" * 16
PDF = b"%PDF-1.7\n" + b"\x00" * 24
BMP = b"BM\x3a\x00\x00\x00\x00\x00\x00\x00\x36\x00" + b"\x00" * 24
TIFF = b"II*\x00" + b"\x00" * 24
HEIC = b"\x00\x00\x00\x18ftypheic" + b"\x00" * 24
BINARY = b"\x7fELF\x02\x01\x01\x00" + b"\x00" * 24


class Point(pydantic.BaseModel):
    x: int
    y: int


@dataclasses.dataclass
class Pair:
    left: str
    right: datetime.date


def blocks(content: ToolResultContent | None) -> list[dict[str, typing.Any]]:
    assert isinstance(content, list)
    return content


def image_block(data: bytes, media_type: str) -> dict[str, object]:
    return {
        "type": "image",
        "source": {"type": "base64", "media_type": media_type, "data": base64.b64encode(data).decode()},
    }


# -- plain values -----------------------------------------------------------------------------


def test_str_is_sent_as_is() -> None:
    assert DEFAULT_ADAPTER.to_content("héllo") == "héllo"


def test_none_is_an_empty_success() -> None:
    assert DEFAULT_ADAPTER.to_content(None) is None
    assert tool_result_block("toolu_1", None) == {"type": "tool_result", "tool_use_id": "toolu_1"}


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ({"a": "é"}, '{"a": "é"}'),
        ([1, 2], "[1, 2]"),
        ((1, "b"), '[1, "b"]'),
        (["a", "b"], '["a", "b"]'),
        ([], "[]"),
        (Point(x=1, y=2), '{"x": 1, "y": 2}'),
        (Pair("a", datetime.date(2026, 1, 2)), '{"left": "a", "right": "2026-01-02"}'),
        (
            {"nested": Point(x=1, y=2), "when": datetime.date(2026, 1, 2)},
            '{"nested": {"x": 1, "y": 2}, "when": "2026-01-02"}',
        ),
        ({"type": "user", "name": "Ada"}, '{"type": "user", "name": "Ada"}'),
        (Link("docs", "https://example.com"), '{"name": "docs", "url": "https://example.com"}'),
        ([Link("a", "u")], '[{"name": "a", "url": "u"}]'),
        (42, "42"),
        (True, "true"),
    ],
)
def test_json_values(value: object, text: str) -> None:
    assert DEFAULT_ADAPTER.to_content(value) == text


def test_unserialisable_value_names_its_type() -> None:
    class Opaque:
        pass

    with pytest.raises(
        TypeError, match=r"'test_unserialisable_value_names_its_type.<locals>.Opaque'.*subclass"
    ):
        DEFAULT_ADAPTER.to_content(Opaque())
    with pytest.raises(TypeError, match="Opaque"):
        DEFAULT_ADAPTER.to_content({"inside": Opaque()})


# -- content blocks ---------------------------------------------------------------------------


def test_block_types_match_the_sdk() -> None:
    sdk_types: set[str] = set()
    for union in (tool_result_block_param.Content, beta_tool_result_block_param.Content):
        for typed_dict in typing.get_args(union):
            sdk_types.update(typing.get_args(typing.get_type_hints(typed_dict)["type"]))
    assert sdk_types == CONTENT_BLOCK_TYPES


def test_blocks_pass_through_unchanged() -> None:
    block: TextBlockParam = {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}
    content = blocks(DEFAULT_ADAPTER.to_content(block))
    assert content == [block]
    assert content[0] is block
    listed = blocks(DEFAULT_ADAPTER.to_content([block, block]))
    assert listed == [block, block]
    assert all(item is block for item in listed)


def test_sdk_block_models_become_param_dicts() -> None:
    assert DEFAULT_ADAPTER.to_content(TextBlock(type="text", text="x")) == [{"type": "text", "text": "x"}]


def test_mixed_list_becomes_blocks_in_order() -> None:
    content = DEFAULT_ADAPTER.to_content(
        [
            "Here it is:",
            Image(PNG),
            None,
            "",
            {"rows": 2},
            Link("src", "https://e.x"),
            {"type": "text", "text": "end"},
        ]
    )
    assert content == [
        {"type": "text", "text": "Here it is:"},
        image_block(PNG, "image/png"),
        {"type": "text", "text": '{"rows": 2}'},
        {"type": "text", "text": '{"name": "src", "url": "https://e.x"}'},
        {"type": "text", "text": "end"},
    ]


def test_fallback_in_a_mixed_list_becomes_a_text_block() -> None:
    content = blocks(DEFAULT_ADAPTER.to_content(["x", Image(BMP, name="a.bmp")]))
    assert content[1]["type"] == "text"
    assert "'a.bmp'" in content[1]["text"]


# -- images and files -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "media_type"),
    [
        (PNG, "image/png"),
        (JPEG, "image/jpeg"),
        (GIF, "image/gif"),
        (b"GIF87a" + GIF[6:], "image/gif"),
        (WEBP, "image/webp"),
    ],
)
def test_images_are_detected_from_their_bytes(data: bytes, media_type: str) -> None:
    expected = [image_block(data, media_type)]
    assert DEFAULT_ADAPTER.to_content(data) == expected
    assert DEFAULT_ADAPTER.to_content(Image(data, name="photo.pdf")) == expected  # the name is not used
    assert DEFAULT_ADAPTER.to_content(File(data)) == expected
    assert DEFAULT_ADAPTER.to_content(bytearray(data)) == expected


@pytest.mark.parametrize(("data", "kind"), [(BMP, "image/bmp"), (TIFF, "image/tiff"), (HEIC, "image/heic")])
def test_images_the_service_does_not_take_become_a_note_naming_the_file(data: bytes, kind: str) -> None:
    note = DEFAULT_ADAPTER.to_content(Image(data, name="scan.png"))
    assert isinstance(note, str)
    assert f"image 'scan.png' ({len(data)} bytes) that was not sent: it is {kind}" in note
    assert note.endswith("only PNG, JPEG, GIF and WebP images can be sent.")
    assert DEFAULT_ADAPTER.to_content(File(data, name="scan.png")) == note


def test_an_image_that_is_not_an_image() -> None:
    note = DEFAULT_ADAPTER.to_content(Image(b"plain text", name="x.png"))
    assert isinstance(note, str)
    assert note == (
        "The tool returned image 'x.png' (10 bytes) that was not sent: its bytes are not a PNG, JPEG, GIF or WebP image."
    )
    assert "unnamed image" in str(DEFAULT_ADAPTER.to_content(Image(PDF)))


def pdf_source(data: bytes) -> dict[str, object]:
    return {"type": "base64", "media_type": "application/pdf", "data": base64.b64encode(data).decode()}


def test_pdf_becomes_a_document_block() -> None:
    pdf = pdf_source(PDF)
    assert DEFAULT_ADAPTER.to_content(PDF) == [{"type": "document", "source": pdf}]
    assert DEFAULT_ADAPTER.to_content(File(PDF, name="r.pdf")) == [
        {"type": "document", "source": pdf, "title": "r.pdf"}
    ]


def test_text_becomes_a_text_document() -> None:
    assert DEFAULT_ADAPTER.to_content(File("naïve, BM text".encode(), name="notes.txt")) == [
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "naïve, BM text"},
            "title": "notes.txt",
        }
    ]


@pytest.mark.parametrize("data", [BINARY, b"\xc3\x28 invalid utf-8", b"text with a NUL\x00"])
def test_other_files_become_a_note_with_name_and_size(data: bytes) -> None:
    note = DEFAULT_ADAPTER.to_content(File(data, name="blob.dat"))
    assert note == (
        f"The tool returned file 'blob.dat' ({len(data):,} bytes) that was not sent: "
        "it is neither an image, a PDF nor UTF-8 text."
    )


def test_empty_file() -> None:
    assert DEFAULT_ADAPTER.to_content(b"") == "The tool returned an unnamed file, which is empty."


def test_paths_are_read_in_a_worker_thread(tmp_path: Path) -> None:
    (tmp_path / "a.gif").write_bytes(GIF)
    (tmp_path / "r.pdf").write_bytes(PDF)
    (tmp_path / "n.txt").write_text("hello", encoding="utf-8")
    (tmp_path / "b.bin").write_bytes(BINARY)
    (tmp_path / "t.bmp").write_bytes(BMP)
    adapter = DEFAULT_ADAPTER
    assert adapter.needs_thread(tmp_path / "a.gif")
    assert adapter.needs_thread(Image(tmp_path / "a.gif"))
    assert adapter.needs_thread(["x", File(tmp_path / "a.gif")])
    assert not adapter.needs_thread("x")
    assert not adapter.needs_thread(None)
    assert not adapter.needs_thread(Image(GIF))
    assert not adapter.needs_thread([GIF, {"a": 1}])
    assert adapter.to_content(tmp_path / "a.gif") == [image_block(GIF, "image/gif")]
    assert blocks(adapter.to_content(tmp_path / "r.pdf"))[0]["title"] == "r.pdf"
    assert blocks(adapter.to_content(tmp_path / "n.txt"))[0]["source"]["data"] == "hello"
    assert "'b.bin'" in str(adapter.to_content(tmp_path / "b.bin"))
    assert "'t.bmp'" in str(adapter.to_content(Image(tmp_path / "t.bmp")))
    assert "'renamed'" in str(adapter.to_content(File(tmp_path / "b.bin", name="renamed")))
    assert "not a PNG" in str(adapter.to_content(Image(tmp_path / "n.txt")))


def test_missing_path_raises_os_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        DEFAULT_ADAPTER.to_content(tmp_path / "missing.png")


# -- size limits ------------------------------------------------------------------------------


def test_default_image_limit_is_the_service_limit_before_base64() -> None:
    assert DEFAULT_ADAPTER.max_image_bytes is not None
    assert len(base64.b64encode(b"\x00" * DEFAULT_ADAPTER.max_image_bytes)) == 5 * 1024 * 1024


def test_too_large_results_raise_with_a_message_for_the_model(tmp_path: Path) -> None:
    small = ToolResultAdapter(max_image_bytes=len(PNG) - 1, max_document_bytes=len(PDF) - 1, max_text_chars=5)
    with pytest.raises(
        ResultTooLargeError, match=r"image 'p.png' is 32 bytes, more than the limit of 31 bytes"
    ):
        small.to_content(Image(PNG, name="p.png"))
    with pytest.raises(ResultTooLargeError, match=r"PDF is 33 bytes"):
        small.to_content(PDF)
    with pytest.raises(ResultTooLargeError, match=r"6 characters of text, more than the limit of 5"):
        small.to_content("abcdef")
    with pytest.raises(ResultTooLargeError, match="characters"):
        small.to_content({"k": "v"})
    with pytest.raises(ResultTooLargeError, match="characters"):
        small.to_content(File(b"abcdef"))
    with pytest.raises(ResultTooLargeError):
        small.to_content(["ok", Image(PNG)])
    assert small.to_content("abcde") == "abcde"
    assert issubclass(ResultTooLargeError, ToolRunnerError)


def test_too_large_files_are_not_read_whole(tmp_path: Path) -> None:
    small = ToolResultAdapter(max_image_bytes=100, max_document_bytes=100, max_text_chars=10)
    (tmp_path / "big.png").write_bytes(PNG + b"\x00" * 200)
    (tmp_path / "big.pdf").write_bytes(PDF + b"\x00" * 200)
    (tmp_path / "long.txt").write_text("x" * 41, encoding="utf-8")
    (tmp_path / "eleven.txt").write_text("x" * 11, encoding="utf-8")
    (tmp_path / "big.bin").write_bytes(BINARY * 100)
    with pytest.raises(ResultTooLargeError, match=r"'big\.png' is 232 bytes"):
        small.to_content(tmp_path / "big.png")
    with pytest.raises(ResultTooLargeError, match=r"'big\.pdf'"):
        small.to_content(tmp_path / "big.pdf")
    with pytest.raises(ResultTooLargeError, match=r"'long\.txt' is 41 bytes of text"):
        small.to_content(tmp_path / "long.txt")
    with pytest.raises(ResultTooLargeError, match="11 characters"):
        small.to_content(tmp_path / "eleven.txt")
    # A binary file is never sent, so its size does not matter.
    assert "3,200 bytes" in str(small.to_content(tmp_path / "big.bin"))


def test_limits_can_be_turned_off() -> None:
    unlimited = ToolResultAdapter(max_image_bytes=None, max_document_bytes=None, max_text_chars=None)
    assert unlimited.to_content("x" * 200_000) == "x" * 200_000
    assert blocks(unlimited.to_content(PNG + b"\x00" * 4_000_000))[0]["type"] == "image"


def test_blocks_built_by_hand_are_not_checked() -> None:
    small = ToolResultAdapter(max_text_chars=1)
    assert small.to_content({"type": "text", "text": "long text"}) == [{"type": "text", "text": "long text"}]


# -- errors, plain text, tool_result_block ----------------------------------------------------


def test_error_content_uses_the_same_mapping() -> None:
    assert DEFAULT_ADAPTER.error_content(ToolError("bad")) == "bad"
    assert DEFAULT_ADAPTER.error_content(ToolError([{"type": "text", "text": "bad"}])) == [
        {"type": "text", "text": "bad"}
    ]
    assert DEFAULT_ADAPTER.error_content(ToolError([{"code": 3}])) == '[{"code": 3}]'


def test_plain_text() -> None:
    plain = DEFAULT_ADAPTER.to_plain_text
    assert plain("hi") == "hi"
    assert plain(None) == ""
    assert plain({"a": 1}) == '{"a": 1}'
    assert plain(Link("docs", "https://e.x")) == "docs <https://e.x>"
    assert plain(ToolError("nope")) == "Error: nope"
    assert plain(Image(PNG, name="c.png")) == "[image c.png]"
    assert plain(Image(PNG)) == "[image 32 bytes]"
    assert plain(File(Path("/tmp/r.pdf"))) == "[file /tmp/r.pdf]"
    assert plain(Path("/tmp/r.pdf")) == "[file /tmp/r.pdf]"
    assert plain(["see", Image(PNG, name="c.png"), None, {"a": 1}]) == 'see\n[image c.png]\n{"a": 1}'
    assert plain([{"type": "text", "text": "t"}, image_block(PNG, "image/png")]) == "t\n[image: image/png]"
    assert plain(
        {"type": "document", "title": "R", "source": {"type": "text", "media_type": "text/plain"}}
    ) == ("[document: R, text/plain]")
    assert plain({"type": "tool_reference", "tool_name": "x"}) == "[tool_reference]"
    assert plain(object()).startswith("<object object")


def test_plain_text_is_short() -> None:
    adapter = ToolResultAdapter(plain_text_chars=10)
    assert adapter.to_plain_text("x" * 25) == "xxxxxxxxxx… (15 more characters)"
    assert ToolResultAdapter(plain_text_chars=None).to_plain_text("x" * 5000) == "x" * 5000


def test_tool_result_block_sets_is_error_only_when_true() -> None:
    assert tool_result_block("t", "x") == {"type": "tool_result", "tool_use_id": "t", "content": "x"}
    assert tool_result_block("t", "x", is_error=True).get("is_error") is True
    assert tool_result_block("t", [{"type": "text", "text": "x"}]) == {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "x"}],
    }


def test_subclass_can_extend_the_mapping() -> None:
    class DecimalAdapter(ToolResultAdapter):
        def to_content(self, value: object) -> ToolResultContent | None:
            if isinstance(value, complex):
                return f"{value.real} + {value.imag}i"
            return super().to_content(value)

    assert DecimalAdapter().to_content(1 + 2j) == "1.0 + 2.0i"
    assert DecimalAdapter().to_content("x") == "x"


def test_only_sdk_models_count_as_blocks() -> None:
    class Note(pydantic.BaseModel):
        type: str = "text"
        body: str

    assert DEFAULT_ADAPTER.to_content(Note(body="x")) == '{"type": "text", "body": "x"}'


def test_wrappers_need_bytes_or_a_path() -> None:
    with pytest.raises(TypeError, match=r"'str' is not bytes or a pathlib\.Path"):
        DEFAULT_ADAPTER.to_content(Image("chart.png"))  # pyright: ignore[reportArgumentType]


def test_plain_text_survives_a_failing_repr() -> None:
    class Broken:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert DEFAULT_ADAPTER.to_plain_text(Broken()).startswith("<")


# -- text that cannot be sent: lone surrogates --------------------------------------------------

# What os.listdir returns for the file name b"caf\xe9.txt" (Latin-1) on a UTF-8 system.
LISTED = "caf\udce9.txt"
REPAIRED = "caf\ufffd.txt"


class Named(pydantic.BaseModel):
    name: str


@dataclasses.dataclass
class Entry:
    name: str


def sendable(content: object) -> bool:
    """Whether content can go into a request: the SDK encodes the body as UTF-8 JSON."""
    try:
        json.dumps(content, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (LISTED, REPAIRED),
        ([LISTED, "notes.txt"], f'["{REPAIRED}", "notes.txt"]'),
        ({LISTED: 12}, f'{{"{REPAIRED}": 12}}'),
        (Named(name=LISTED), f'{{"name": "{REPAIRED}"}}'),
        (Entry(LISTED), f'{{"name": "{REPAIRED}"}}'),
        ({"type": "text", "text": LISTED}, [{"type": "text", "text": REPAIRED}]),
        ([LISTED, Image(PNG)], [{"type": "text", "text": REPAIRED}, image_block(PNG, "image/png")]),
        (
            File(b"hello", name=LISTED),
            [
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "hello"},
                    "title": REPAIRED,
                }
            ],
        ),
        (File(PDF, name=LISTED), [{"type": "document", "source": pdf_source(PDF), "title": REPAIRED}]),
    ],
    ids=["str", "list", "dict-key", "model", "dataclass", "block", "mixed-list", "text-file", "pdf"],
)
def test_lone_surrogates_become_replacement_characters(value: object, expected: object) -> None:
    content = DEFAULT_ADAPTER.to_content(value)
    assert content == expected
    assert sendable(content)


def test_a_path_with_a_surrogate_in_its_name(tmp_path: Path) -> None:
    path = tmp_path / LISTED  # a name that is not UTF-8 on disk
    path.write_bytes(b"hello")
    assert blocks(DEFAULT_ADAPTER.to_content(path))[0]["title"] == REPAIRED
    path.write_bytes(BINARY)
    assert sendable(DEFAULT_ADAPTER.to_content(path))


def test_a_surrogate_pair_becomes_its_character() -> None:
    assert DEFAULT_ADAPTER.to_content("smile \ud83d\ude00") == "smile \U0001f600"
    assert DEFAULT_ADAPTER.to_content("\ude00\ud83d") == "\ufffd\ufffd"


def test_a_block_with_a_surrogate_is_repaired_in_a_copy() -> None:
    block = {"type": "text", "text": LISTED}
    assert DEFAULT_ADAPTER.to_content(block) == [{"type": "text", "text": REPAIRED}]
    assert block == {"type": "text", "text": LISTED}  # the tool's own dict is left alone


def test_error_content_and_plain_text_are_repaired() -> None:
    assert DEFAULT_ADAPTER.error_content(ToolError(f"No access to {LISTED}.")) == f"No access to {REPAIRED}."
    assert DEFAULT_ADAPTER.to_plain_text([LISTED, Image(PNG, name=LISTED)]) == (
        f"{REPAIRED}\n[image {REPAIRED}]"
    )


def test_tool_result_block_repairs_content_from_any_adapter() -> None:
    class RawAdapter(ToolResultAdapter):
        def to_content(self, value: object) -> ToolResultContent | None:
            return [{"type": "text", "text": str(value)}]

    content = RawAdapter().to_content(LISTED)
    assert not sendable(content)
    assert tool_result_block("t", content).get("content") == [{"type": "text", "text": REPAIRED}]
    assert tool_result_block("t", LISTED, is_error=True).get("content") == REPAIRED


# -- numbers JSON cannot hold: NaN and infinities ---------------------------------------------

NAN, INF = float("nan"), float("inf")


class Reading(pydantic.BaseModel):
    value: float


class ReadingAsNull(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(ser_json_inf_nan="null")

    value: float


@dataclasses.dataclass
class Sample:
    values: list[float]


def strict_json(text: object) -> object:
    """``text`` parsed as JSON, refusing the non-standard NaN and Infinity tokens."""

    def refuse(token: str) -> object:
        raise ValueError(f"{token} is not JSON")

    assert isinstance(text, str)
    return json.loads(text, parse_constant=refuse)


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (
            {"a": NAN, "b": INF, "c": -INF, "d": 1.5},
            '{"a": "NaN", "b": "Infinity", "c": "-Infinity", "d": 1.5}',
        ),
        ([NAN, 2], '["NaN", 2]'),
        ((INF,), '["Infinity"]'),
        (NAN, '"NaN"'),
        (Reading(value=NAN), '{"value": "NaN"}'),
        (ReadingAsNull(value=INF), '{"value": "Infinity"}'),
        (Sample([1.0, -INF]), '{"values": [1.0, "-Infinity"]}'),
        ({"reading": Reading(value=INF)}, '{"reading": {"value": "Infinity"}}'),
        ({"seen": frozenset({NAN})}, '{"seen": ["NaN"]}'),
        ([Sample([NAN])], '[{"values": ["NaN"]}]'),
    ],
    ids=[
        "dict",
        "list",
        "tuple",
        "float",
        "model",
        "model-null-config",
        "dataclass",
        "nested-model",
        "set",
        "list-of-dataclasses",
    ],
)
def test_non_finite_floats_become_strings(value: object, text: str) -> None:
    content = DEFAULT_ADAPTER.to_content(value)
    assert content == text
    strict_json(content)


def test_non_finite_floats_in_a_mixed_list() -> None:
    assert blocks(DEFAULT_ADAPTER.to_content([{"score": NAN}, Image(PNG)]))[0] == {
        "type": "text",
        "text": '{"score": "NaN"}',
    }


# -- dicts that look like blocks but are not ones the service takes -----------------------------------

NOTION_TEXT = {
    "type": "text",
    "text": {"content": "Meeting notes", "link": None},
}  # as the Notion API returns


@pytest.mark.parametrize(
    "shaped",
    [
        NOTION_TEXT,
        {"type": "text", "text": "hi", "colour": "red"},  # a field the service does not know
        {"type": "image", "source": "https://e.x/cat.png"},
        {"type": "document", "source": {"type": "base64", "media_type": "application/zip", "data": "UEsD"}},
        {"type": "tool_reference"},
    ],
)
def test_a_dict_shaped_like_a_block_that_the_service_refuses_is_data(shaped: dict[str, typing.Any]) -> None:
    assert DEFAULT_ADAPTER.to_content(shaped) == json.dumps(shaped, ensure_ascii=False)
    assert DEFAULT_ADAPTER.to_content([shaped, Image(PNG)]) == [
        {"type": "text", "text": json.dumps(shaped, ensure_ascii=False)},
        image_block(PNG, "image/png"),
    ]
    assert DEFAULT_ADAPTER.error_content(ToolError([shaped])) == json.dumps([shaped], ensure_ascii=False)


def test_valid_blocks_of_every_kind_are_still_blocks() -> None:
    valid: list[dict[str, typing.Any]] = [
        {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}},
        image_block(PNG, "image/png"),
        {"type": "image", "source": {"type": "url", "url": "https://e.x/cat.png"}},
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}, "title": "t"},
        {"type": "search_result", "source": "https://e.x", "title": "t", "content": [{"type": "text", "text": "x"}]},
        {"type": "tool_reference", "tool_name": "lookup"},
    ]  # fmt: skip
    for block in valid:
        assert DEFAULT_ADAPTER.to_content(block) == [block]


def test_an_empty_text_block_is_taken_as_an_empty_string() -> None:
    empty = {"type": "text", "text": ""}
    assert DEFAULT_ADAPTER.to_content(empty) == ""
    assert DEFAULT_ADAPTER.to_content([empty, Image(PNG)]) == [image_block(PNG, "image/png")]


def test_tool_result_block_makes_any_adapters_blocks_ones_the_service_takes() -> None:
    content: typing.Any = [NOTION_TEXT, {"type": "text", "text": ""}, {"type": "text", "text": "ok"}]
    assert tool_result_block("t", content) == {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [
            {"type": "text", "text": json.dumps(NOTION_TEXT, ensure_ascii=False)},
            {"type": "text", "text": "ok"},
        ],
    }


class Text(str):
    """A str subclass: it goes through the general mapping, not text's short way."""


@pytest.mark.parametrize(
    "value",
    ["plain", "", "café ☕", LISTED, "smile \ud83d\ude00", "\ude00\ud83d", Text("plain"), Text(LISTED)],
    ids=["ascii", "empty", "non-ascii", "lone", "pair", "reversed-pair", "subclass", "subclass-lone"],
)
def test_text_takes_the_short_way_to_the_same_content(value: str) -> None:
    """``to_content`` maps a str without the general mapping's frames; the content is the mapping's."""
    general = sendable_value(DEFAULT_ADAPTER._content(value))  # pyright: ignore[reportPrivateUsage]
    assert DEFAULT_ADAPTER.to_content(value) == general
    assert type(DEFAULT_ADAPTER.to_content(value)) is type(general)
    small = ToolResultAdapter(max_text_chars=3)
    if len(value) > 3:
        with pytest.raises(ResultTooLargeError):
            small.to_content(value)
    else:
        assert small.to_content(value) == general


class OwnMapping(ToolResultAdapter):
    """A subclass with its own (private) mapping of text: text goes through it, as before."""

    def _content(self, value: object) -> ToolResultContent | None:
        if isinstance(value, str):
            return [{"type": "text", "text": f"w:{value}"}]
        return super()._content(value)


class OwnText(ToolResultAdapter):
    """A subclass whose (private) ``_text`` gives no content for empty text."""

    def _text(self, text: str) -> str:
        return text if text else typing.cast("str", None)


def test_a_subclass_s_own_mapping_of_text_is_still_used() -> None:
    assert OwnMapping().to_content("x") == [{"type": "text", "text": "w:x"}]
    assert OwnText().to_content("") is None
    assert OwnText().to_content(LISTED) == REPAIRED

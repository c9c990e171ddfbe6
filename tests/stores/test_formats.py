"""An edited input's string formats (``date-time``, ``uuid``, ...) are checked by a store as the tool
checks them: for each format pydantic writes into a schema, a ``@tool`` function with a parameter
of that type (what ``runner.approve(input=...)`` checks) and the store's check of the saved schema
(``_stores.deciding.input_problems``, behind ``approve_call``, the command line and the inbox) accept and
refuse the same strings. Then the same through every way in, on every store.
"""

from __future__ import annotations

import datetime
import io
import ipaddress
import json
import re
import uuid
from typing import Annotated, Any

import anyio.to_thread
import pydantic
import pytest
from hypothesis import given, settings, strategies as st

from tests.support.helpers import MODEL
from tests.support.inbox_helpers import TOKEN, Person
from tests.support.stores import USER
from toolrunner import (
    AwaitingApprovalError,
    CallRecord,
    CallStatus,
    RunStore,
    Tool,
    ToolCall,
    ToolInputError,
    ToolRunner,
    tool,
)
from toolrunner._ops.cli import ExitCode, run
from toolrunner._stores.deciding import input_problems
from toolrunner._stores.formats import FORMATS
from toolrunner.inbox import create_app
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

U1, U4 = str(uuid.uuid1()), str(uuid.uuid4())


def versioned(version: int) -> uuid.UUID:
    """A UUID of that version (RFC 9562 variant), whichever versions this Python makes."""
    return uuid.UUID(int=uuid.uuid4().int, version=version) if version <= 5 else _v(version)


def _v(version: int) -> uuid.UUID:
    number = (uuid.uuid4().int & ~(0xF << 76)) | (version << 76)
    return uuid.UUID(int=number)


SAMPLES: dict[str, list[str]] = {
    "date-time": [
        "2025-06-15T14:08:40Z",
        "2025-06-15T14:08:40+02:00",
        "2025-06-15T14:08:40",
        "2025-06-15 14:08",
        "2025-06-15",
        "2025-06-15T14:08:40.123456789Z",
        "0001-01-01T00:00:00",
        "9999-12-31T23:59:59Z",
        "2025-06-15T25:00:00",
        "2025-13-01T00:00:00",
        "2025-02-30T00:00:00",
        "1750000000",
        "tomorrow",
        "",
    ],
    "date": [
        "2025-06-15",
        "2025-02-30",
        "2025-06-15T00:00:00",
        "2025-06-15T10:00:00",
        "15/06/2025",
        "1750000000",
        "",
    ],
    "time": ["14:08", "14:08:40", "14:08:40.5+02:00", "14:08:40Z", "25:00", "2pm", "1400", ""],
    "duration": ["P1D", "PT1H30M", "P1Y", "P1W", "-P1D", "01:30:00", "3600", "1 day", "P", "PT", ""],
    "uuid": [U4, U4.upper(), U4.replace("-", ""), f"urn:uuid:{U4}", f"{{{U4}}}", U4[:-1], "not-a-uuid", ""],
    "uri": [
        "https://example.com/a?b=c",
        "ftp://files.example.com",
        "mailto:ada@example.com",
        "urn:isbn:0451450523",
        "example.com",
        "http://",
        "http://exa mple.com",
        "//example.com",
        "",
    ],
    "multi-host-uri": ["postgres://a:b@h1:5432,h2:5433/db", "http://example.com", "h1,h2", ""],
    "ipv4": ["127.0.0.1", "0.0.0.0", "256.0.0.1", "1.2.3", "01.2.3.4", "::1", ""],
    "ipv6": ["::1", "fe80::1", "fe80::1%eth0", "::ffff:1.2.3.4", "1.2.3.4", "gggg::1", ""],
    "ipvanyaddress": ["127.0.0.1", "::1", "1.2.3", "localhost", ""],
    "ipv4network": ["10.0.0.0/8", "10.0.0.1/8", "10.0.0.0/33", "10.0.0.0", "::/0", ""],
    "ipv6network": ["2001:db8::/32", "2001:db8::1/32", "2001:db8::/129", "10.0.0.0/8", ""],
    "ipvanynetwork": ["10.0.0.0/8", "2001:db8::/32", "10.0.0.1/8", "x/8", ""],
    "ipv4interface": ["10.0.0.1/8", "10.0.0.1", "10.0.0.1/33", ""],
    "ipv6interface": ["2001:db8::1/32", "2001:db8::1", "2001:db8::1/200", ""],
    "ipvanyinterface": ["10.0.0.1/8", "2001:db8::1/32", "nope/1", ""],
    "regex": ["^a+$", r"\d{3}", "(", "[a-", "(?P<x>a)(?P=x)", "*", "[[a]", ""],
    "base64": ["aGVsbG8=", "aGVsbG8", "aGVs bG8=", "!!!!", "a", ""],
    "base64url": ["aGVsbG8_", "aGVsbG8-", "aGVsbG8=", "a+b/", "!!!!", "a", "abc", ""],
    **{
        f"uuid{version}": [str(versioned(version)), U1, U4, versioned(version).hex, "nope", ""]
        for version in range(1, 9)
        if hasattr(pydantic, f"UUID{version}")
    },
    "email": ["ada@example.com", "Ada <ada@example.com>", "ada", "ada@", "@example.com", ""],
    "name-email": ["Ada <ada@example.com>", "ada@example.com", "Ada <ada>", ""],
}
"""Strings to try for each format: some that the tool takes, some that it refuses."""

TYPES: dict[str, Any] = {
    "date-time": datetime.datetime,
    "date": datetime.date,
    "time": datetime.time,
    "duration": datetime.timedelta,
    "uuid": uuid.UUID,
    "uri": pydantic.HttpUrl,  # as a tool would say it: HttpUrl writes "uri" too (the store checks a URL)
    "multi-host-uri": pydantic.PostgresDsn,
    "ipv4": ipaddress.IPv4Address,
    "ipv6": ipaddress.IPv6Address,
    "ipvanyaddress": pydantic.IPvAnyAddress,
    "ipv4network": ipaddress.IPv4Network,
    "ipv6network": ipaddress.IPv6Network,
    "ipvanynetwork": pydantic.IPvAnyNetwork,
    "ipv4interface": ipaddress.IPv4Interface,
    "ipv6interface": ipaddress.IPv6Interface,
    "ipvanyinterface": pydantic.IPvAnyInterface,
    "regex": re.Pattern,
    "base64": pydantic.Base64Bytes,  # Base64Str writes "base64" too, and also wants UTF-8 inside
    "base64url": pydantic.Base64UrlBytes,
    **{f"uuid{version}": getattr(pydantic, f"UUID{version}", None) for version in range(1, 9)},
    "email": pydantic.EmailStr,
    "name-email": pydantic.NameEmail,
}
"""The type of a tool's parameter that writes each format (for ``uri`` and ``multi-host-uri``, one
that constrains more than its format says: the samples keep to what the format covers)."""
NARROWER = {
    "uri": {"ftp://files.example.com", "mailto:ada@example.com", "urn:isbn:0451450523"},
    "multi-host-uri": {"http://example.com"},
}
"""Samples that the narrower type refuses for more than the format (a scheme): the store takes them."""


# Python's re warns (FutureWarning) of a possible nested set in a pattern such as "[[a]", which a
# person may type: the tool and the store compile it alike, and the warning says nothing of either.
NESTED_SET = pytest.mark.filterwarnings("ignore:Possible nested set:FutureWarning")


def tool_with(kind: Any) -> Tool:
    async def book(value: Any) -> str:
        """Book it."""
        return "booked"

    book.__annotations__ = {"value": kind, "return": str}
    return tool(book)


def record_of(made: Tool) -> CallRecord:
    definition = {"name": made.name, "input_schema": made.input_schema}
    return CallRecord(ToolCall("toolu_1", made.name, {}), CallStatus.AWAITING, tool=definition)


def tool_takes(made: Tool, value: object) -> bool:
    try:
        made.parse_input({"value": value})
    except ToolInputError:
        return False
    return True


def store_takes(record: CallRecord, value: object) -> bool:
    return not input_problems(record, {"value": value})


def test_every_format_checked_is_one_pydantic_writes_and_has_samples() -> None:
    assert set(FORMATS) <= set(SAMPLES)
    for name in FORMATS:
        made = tool_with(TYPES[name])
        assert made.input_schema["properties"]["value"]["format"] == name


@NESTED_SET
@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_the_store_takes_and_refuses_the_strings_the_tool_does(name: str) -> None:
    assert name in FORMATS, f"{name!r} needs email-validator, which the [test] extra installs"
    made = tool_with(TYPES[name])
    record = record_of(made)
    verdicts = {value: (tool_takes(made, value), store_takes(record, value)) for value in SAMPLES[name]}
    for value, (tool_says, store_says) in verdicts.items():
        expected = tool_says or value in NARROWER.get(name, set())
        assert store_says == expected, f"{name} {value!r}: the tool says {tool_says}, the store {store_says}"
    assert any(tool_says for tool_says, _ in verdicts.values()), "no sample the tool takes"
    assert any(not store_says for _, store_says in verdicts.values()), "no sample the store refuses"


@NESTED_SET
@pytest.mark.parametrize("name", sorted(set(FORMATS) - set(NARROWER)))
@settings(max_examples=40, deadline=None)
@given(text=st.text(max_size=24) | st.sampled_from(["2025-06-15", "P1D", "10.0.0.1", "::1", "a@b.c", "aGk="]))
def test_any_string_is_taken_by_the_store_exactly_when_the_tool_takes_it(name: str, text: str) -> None:
    made = tool_with(TYPES[name])
    assert store_takes(record_of(made), text) == tool_takes(made, text), (name, text)


@given(moment=st.datetimes(timezones=st.none() | st.timezones()), separator=st.sampled_from(["T", " "]))
@settings(max_examples=60, deadline=None)
def test_a_date_time_pydantic_writes_is_taken_by_both(moment: datetime.datetime, separator: str) -> None:
    made = tool_with(datetime.datetime)
    text = moment.isoformat(sep=separator)
    assert store_takes(record_of(made), text) == tool_takes(made, text)


def test_a_string_that_breaks_pydantic_is_refused_by_the_store_not_raised() -> None:
    record = record_of(tool_with(re.Pattern))
    deep = "(" * 5000 + ")" * 5000  # nested too deeply for Python's regex parser: RecursionError
    [(path, message)] = input_problems(record, {"value": deep})
    assert path == "value"
    assert message.endswith("is not a 'regex'")


def test_a_format_says_nothing_of_other_types_the_schema_does() -> None:
    record = record_of(tool_with(datetime.datetime))
    assert input_problems(record, {"value": 1750000000}) == [("value", "1750000000 is not of type 'string'")]


# -- patterns -----------------------------------------------------------------------------------------

PATTERNS: dict[str, list[str]] = {
    "^abc$": ["abc", "abc\n", "abc\r\n", "\nabc", "xabc", "ABC", ""],
    "^[a-z]+$": ["order", "order\n", "order 7", "ordér", ""],
    r"^\d{4}-\d{2}$": ["2025-06", "2025-06\n", "2025-6", "٢٠٢٥-٠٦"],
    "b": ["abc", "b\n", "xyz"],
    "^a.c$": ["abc", "a\nc", "a\u00e9c"],
}


@pytest.mark.parametrize("pattern", sorted(PATTERNS))
def test_the_store_takes_and_refuses_the_strings_a_pattern_takes_and_refuses_in_the_tool(
    pattern: str,
) -> None:
    made = tool_with(Annotated[str, pydantic.Field(pattern=pattern)])
    assert made.input_schema["properties"]["value"]["pattern"] == pattern
    record = record_of(made)
    for text in PATTERNS[pattern]:
        assert store_takes(record, text) == tool_takes(made, text), (pattern, text)


def test_a_pattern_the_rust_engine_cannot_compile_is_checked_as_pythons_re_would() -> None:
    record = CallRecord(
        ToolCall("toolu_1", "t", {}),
        CallStatus.AWAITING,
        tool={
            "name": "t",
            "input_schema": {"type": "object", "properties": {"value": {"pattern": "^(?!x)a"}}},
        },
    )
    assert store_takes(record, "ab")
    assert input_problems(record, {"value": "xa"}) == [("value", "'xa' does not match '^(?!x)a'")]


@tool(requires_approval=True)
async def tag(label: Annotated[str, pydantic.Field(pattern="^abc$")]) -> str:
    """Tag it."""
    return f"tagged {label}"


@pytest.mark.anyio
async def test_an_input_a_pattern_refuses_in_the_tool_is_refused_by_the_store(store: RunStore) -> None:
    from tests.stores.test_store_edges import still_waits

    script = [tool_reply(tool_call("tag", {"label": "abc"}, id="toolu_tag")), text_reply("Tagged.")]
    runner = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[tag],
        checkpointer=store,
        run_id="tagging",
    )
    with pytest.raises(AwaitingApprovalError):
        await runner.until_done()
    loaded = await store.load("tagging")
    assert loaded is not None
    held = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Tagged.")]).async_client(),
        checkpointer=store,
        run_id="tagging",
        tools=[tag],
    )
    with pytest.raises(ToolInputError):
        held.approve("toolu_tag", input={"label": "abc\n"})
    with pytest.raises(ToolInputError, match=r"label: 'abc\\n' does not match '\^abc\$'"):
        await store.approve_call("tagging", "toolu_tag", input={"label": "abc\n"})
    await still_waits(store, "tagging", "toolu_tag", loaded.sequence)
    record = await store.approve_call("tagging", "toolu_tag", input={"label": "abc"})
    assert record.approved_input == {"label": "abc"}


# -- through every way in, on every store ------------------------------------------------------------


@tool(requires_approval=True)
async def book(when: datetime.datetime, ticket: uuid.UUID) -> str:
    """Book a slot."""
    return f"booked {when.isoformat()} for {ticket}"


GOOD = {"when": "2025-06-15T14:08:40Z", "ticket": U4}
BAD = [{"when": "next tuesday", "ticket": U4}, {"when": "2025-06-15T14:08:40Z", "ticket": "T-1"}]


async def booking(store: RunStore) -> str:
    script = [tool_reply(tool_call("book", GOOD, id="toolu_book")), text_reply("Booked.")]
    runner = ToolRunner(
        FakeMessagesAPI(script).async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[USER],
        tools=[book],
        checkpointer=store,
        run_id="booking",
    )
    with pytest.raises(AwaitingApprovalError):
        await runner.until_done()
    return "toolu_book"


@pytest.mark.anyio
async def test_an_input_the_tool_would_refuse_is_refused_at_every_way_in(store: RunStore) -> None:
    from tests.stores.test_store_edges import still_waits, url_of

    call = await booking(store)
    loaded = await store.load("booking")
    assert loaded is not None
    held = await ToolRunner.resume(
        FakeMessagesAPI([text_reply("Booked.")]).async_client(),
        checkpointer=store,
        run_id="booking",
        tools=[book],
    )
    for edited in BAD:
        with pytest.raises(ToolInputError):
            held.approve(call, input=edited)
        with pytest.raises(ToolInputError, match=r"is not a '(date-time|uuid)'"):
            await store.approve_call("booking", call, input=edited)
    await still_waits(store, "booking", call, loaded.sequence)
    async with Person(create_app(store, token=TOKEN)) as ada:
        await ada.log_in("ada")
        response = await ada.decide("approve", "booking", call, input=json.dumps({**BAD[0]}))
        assert response.status_code == 400
        assert "is not a &#39;date-time&#39;" in response.text
    if url_of(store) is not None:  # the command line reaches the SQL stores by their URLs
        out, err = io.StringIO(), io.StringIO()
        argv = ["runs", "approve", "booking", call, "--input", json.dumps({**GOOD, "when": "x"})]
        argv += ["--store", str(url_of(store))]
        code = await anyio.to_thread.run_sync(lambda: run(argv, out, err))
        assert code == ExitCode.USAGE, err.getvalue()
        assert "is not a 'date-time'" in err.getvalue()
    await still_waits(store, "booking", call, loaded.sequence)
    record = await store.approve_call("booking", call, input={**GOOD, "when": "2025-07-01T09:00:00+02:00"})
    assert record.approved_input == {**GOOD, "when": "2025-07-01T09:00:00+02:00"}

"""Tests of ``@tool``: schemas, docstrings, context injection, input validation, definition errors.

Types used in annotations live at module level: ``@tool`` evaluates annotations in the function's
globals, the way ``typing.get_type_hints`` does.
"""

import dataclasses
import enum
import functools
import inspect
import json
import keyword
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Annotated, Any, Literal, Optional, cast

import pydantic
import pytest
from anthropic.types import ToolParam
from anthropic.types.beta import BetaToolParam
from hypothesis import given, strategies as st
from pydantic import BaseModel, Field
from typing_extensions import TypedDict

from toolrunner._core.errors import ToolDefinitionError, ToolInputError
from toolrunner._core.types import ToolCall
from toolrunner._tools.definition import DEFINITION_FIELDS
from toolrunner._tools.tool import Tool, ToolContext, as_tool, tool


class Unit(enum.Enum):
    CELSIUS = "celsius"
    FAHRENHEIT = "fahrenheit"


class LineItem(BaseModel):
    title: str  # a property called "title" is data, not a schema title
    quantity: int = 1


class Order(BaseModel):
    """An order."""

    customer: str
    items: list[LineItem]


class Span(TypedDict):
    start: int
    end: int


@dataclasses.dataclass
class Point:
    x: int


class TreeNode(BaseModel):
    """A node of a tree."""

    name: str
    children: list["TreeNode"] = []


class Labelled(BaseModel):
    name: str = Field(title="Full name")


@tool
async def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
        unit: The temperature unit.
    """
    return f"20 degrees {unit} in {city}"


def context() -> ToolContext:
    return ToolContext(call=ToolCall(id="toolu_1", name="lookup", input={}), runner=None)  # type: ignore[arg-type]


def input_error(t: Tool, raw: object) -> str:
    with pytest.raises(ToolInputError) as info:
        t.parse_input(raw)
    return str(info.value)


# Schemas ---------------------------------------------------------------------------------------


def test_schema_from_signature_and_docstring() -> None:
    assert get_weather.to_param() == {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "input_schema": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "The city's name."},
                "unit": {
                    "type": "string",
                    "enum": ["celsius", "fahrenheit"],
                    "default": "celsius",
                    "description": "The temperature unit.",
                },
            },
            "required": ["city"],
            "additionalProperties": False,
        },
    }


def test_schema_keys_come_in_a_readable_order() -> None:
    assert list(get_weather.input_schema) == ["type", "properties", "required", "additionalProperties"]


def test_function_without_parameters() -> None:
    @tool
    def ping() -> str:
        """Check that the service is up."""
        return "pong"

    assert ping.input_schema == {"type": "object", "properties": {}, "additionalProperties": False}
    assert ping.parse_input({}) == {}


def test_optional_defaults_and_containers() -> None:
    @tool
    def search(
        query: str,
        limit: int = 10,
        tags: list[str] | None = None,
        since: Optional[str] = None,  # noqa: UP045 - both spellings must work
        weights: dict[str, float] | None = None,
    ) -> list[str]:
        """Search."""
        return []

    assert search.input_schema == {
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "limit": {"type": "integer", "default": 10},
            "tags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
            },
            "since": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
            "weights": {
                "anyOf": [{"type": "object", "additionalProperties": {"type": "number"}}, {"type": "null"}],
                "default": None,
            },
        },
        "required": ["query"],
        "additionalProperties": False,
    }


def test_enum_and_nested_models_use_defs_without_titles() -> None:
    @tool
    def place(order: Order, unit: Unit = Unit.CELSIUS, label: Labelled | None = None) -> None:
        """Place an order."""

    assert place.input_schema == {
        "type": "object",
        "properties": {
            "order": {"$ref": "#/$defs/Order"},
            "unit": {"$ref": "#/$defs/Unit", "default": "celsius"},
            "label": {"anyOf": [{"$ref": "#/$defs/Labelled"}, {"type": "null"}], "default": None},
        },
        "required": ["order"],
        "additionalProperties": False,
        "$defs": {
            "LineItem": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "quantity": {"type": "integer", "default": 1}},
                "required": ["title"],
            },
            "Order": {
                "type": "object",
                "description": "An order.",
                "properties": {
                    "customer": {"type": "string"},
                    "items": {"type": "array", "items": {"$ref": "#/$defs/LineItem"}},
                },
                "required": ["customer", "items"],
            },
            "Labelled": {
                "type": "object",
                # A title given on purpose stays.
                "properties": {"name": {"type": "string", "title": "Full name"}},
                "required": ["name"],
            },
            "Unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        },
    }


def test_annotated_field_description_wins_over_docstring() -> None:
    @tool
    def lookup(
        query: Annotated[str, Field(description="What to look up")],
        page: int = Field(1, ge=1, description="Result page"),
        size: Annotated[int, Field(le=50)] = 10,
    ) -> str:
        """Look a thing up.

        Args:
            query: Ignored: Field says it.
            page: Ignored too.
            size: Page size.
        """
        return query

    assert lookup.input_schema["properties"] == {
        "query": {"type": "string", "description": "What to look up"},
        "page": {"type": "integer", "minimum": 1, "default": 1, "description": "Result page"},
        "size": {"type": "integer", "maximum": 50, "default": 10, "description": "Page size."},
    }
    assert "Field(le=50)" not in str(lookup.input_schema)


def test_field_defaults_reach_the_function() -> None:
    @tool
    def estimate(
        *,
        hours: float = Field(1.5, gt=0),
        tags: list[str] = Field(default_factory=list),  # noqa: B008 - pydantic reads the Field
        rate: Annotated[float, Field(gt=0)] = 2.0,
        margin: Annotated[float, Field(default=0.1, ge=0)],
    ) -> tuple[float, list[str], float, float]:
        """Estimate a job."""
        return hours, tags, rate, margin

    assert estimate.input_schema["properties"] == {
        "hours": {"type": "number", "exclusiveMinimum": 0, "default": 1.5},
        "tags": {"type": "array", "items": {"type": "string"}},
        "rate": {"type": "number", "exclusiveMinimum": 0, "default": 2.0},
        "margin": {"type": "number", "minimum": 0, "default": 0.1},
    }
    assert "required" not in estimate.input_schema
    assert estimate.function(**estimate.parse_input({})) == (1.5, [], 2.0, 0.1)
    given = {"hours": 3, "tags": ["a"], "rate": 1, "margin": 0}
    assert estimate.function(**estimate.parse_input(given)) == (3.0, ["a"], 1.0, 0.0)
    assert "- hours: Input should be greater than 0" in input_error(estimate, {"hours": 0})
    # A plain default is still the function's own: left out, it is not passed.
    assert "rate" not in estimate.parse_input({})


def test_parameter_names_that_clash_with_pydantic_are_fine() -> None:
    @tool
    def store(json: str, schema: str, model_config: int, copy: bool, _id: int) -> None:
        """Store a document."""

    assert list(store.input_schema["properties"]) == ["json", "schema", "model_config", "copy", "_id"]
    arguments = {"json": "{}", "schema": "s", "model_config": 1, "copy": True, "_id": 7}
    assert store.parse_input(arguments) == arguments


def test_parameter_names_like_internal_field_names() -> None:
    @tool
    def swap(p1: int, p0: str) -> None:
        """Nothing."""

    assert swap.parse_input({"p1": 1, "p0": "a"}) == {"p1": 1, "p0": "a"}
    assert input_error(swap, {"p1": "x", "p0": "a"}).splitlines()[1].startswith("- p1: Input should be")


def test_callable_object_state_is_not_copied_onto_the_tool() -> None:
    fetcher = SyncFetcher()
    fetcher.cache = {}  # type: ignore[attr-defined]
    assert not hasattr(tool(fetcher), "cache")


def test_field_alias_names_the_property_and_the_parameter_gets_the_value() -> None:
    @tool
    def send(from_: Annotated[str, Field(alias="from")], to: str) -> None:
        """Send a message."""

    assert list(send.input_schema["properties"]) == ["from", "to"]
    assert send.input_schema["required"] == ["from", "to"]
    assert send.parse_input({"from": "a", "to": "b"}) == {"from_": "a", "to": "b"}


def test_schema_is_deterministic() -> None:
    def build() -> dict[str, Any]:
        def place(order: Order, unit: Unit = Unit.CELSIUS) -> None:
            """Place an order."""

        return tool(place).input_schema

    assert json.dumps(build()) == json.dumps(build())


# Docstrings ------------------------------------------------------------------------------------


def test_docstring_summary_paragraphs_and_multiline_args() -> None:
    @tool
    def book(room: str, nights: int, guest: str = "") -> str:
        """Book a hotel room.

        Rooms are held for 15 minutes
        before the booking lapses.

        Args:
            room (str): The room's number,
                as shown on the door.
            nights: How many nights.

                At most 14.
            guest: Who stays.
            unknown: Documented but not a parameter: ignored.

        Returns:
            The booking reference.

        Raises:
            ValueError: Never, in this test.
        """
        return ""

    assert (
        book.description == "Book a hotel room.\n\nRooms are held for 15 minutes\nbefore the booking lapses."
    )
    properties = book.input_schema["properties"]
    assert properties["room"]["description"] == "The room's number, as shown on the door."
    assert properties["nights"]["description"] == "How many nights.\n\nAt most 14."
    assert properties["guest"]["description"] == "Who stays."


def test_docstring_without_sections_is_all_description() -> None:
    @tool
    def now() -> str:
        """The current time,
        in UTC."""
        return ""

    assert now.description == "The current time,\nin UTC."


def test_description_argument_wins_over_docstring() -> None:
    @tool(description="  Look a thing up.  ")
    def lookup(query: str) -> str:
        """Internal notes: not for the model.

        Args:
            query: What to look up.
        """
        return query

    assert lookup.description == "Look a thing up."
    # Args entries still describe the parameters.
    assert lookup.input_schema["properties"]["query"]["description"] == "What to look up."


# Options and metadata --------------------------------------------------------------------------


def test_options_and_defaults() -> None:
    assert (get_weather.sequential, get_weather.timeout, get_weather.start_early) == (False, None, True)

    @tool(name="lookup", description="Look a thing up.", sequential=True, timeout=5, start_early=False)
    def lookup(query: str) -> str:
        return query

    assert lookup.name == "lookup"
    assert (lookup.sequential, lookup.timeout, lookup.start_early) == (True, 5.0, False)
    assert isinstance(lookup.timeout, float)


def _sdk_fields(typed_dict: Any) -> set[str]:
    return set(typed_dict.__required_keys__ | typed_dict.__optional_keys__)


def test_definition_fields_are_the_sdks() -> None:
    sdk = _sdk_fields(ToolParam) | _sdk_fields(BetaToolParam)
    assert sdk - {"name", "description", "input_schema"} == DEFINITION_FIELDS
    assert {
        "strict",
        "cache_control",
        "defer_loading",
        "input_examples",
        "allowed_callers",
    } <= DEFINITION_FIELDS


def test_definition_fields_are_sent_in_to_param() -> None:
    definition: dict[str, object] = {
        "strict": True,
        "cache_control": {"type": "ephemeral"},
        "defer_loading": True,
        "input_examples": [{"city": "Paris"}, {"city": "Berlin", "unit": "fahrenheit"}],
        "allowed_callers": ["direct"],
        "eager_input_streaming": True,
        "type": "custom",
    }

    @tool(definition=definition)
    async def weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
        """Get the weather."""
        return city

    assert weather.to_param() == {
        "name": "weather",
        "description": "Get the weather.",
        "input_schema": weather.input_schema,
        **definition,
    }
    assert weather.to_param() is weather.to_param()
    definition["strict"] = False  # the tool keeps what it was given
    assert weather.to_param().get("strict") is True


def test_input_examples_are_kept_as_a_list() -> None:
    examples = ({"url": f"https://example.com/{n}"} for n in range(2))
    made = Tool(_sync_fetch, definition={"input_examples": examples})
    assert made.to_param().get("input_examples") == [
        {"url": "https://example.com/0"},
        {"url": "https://example.com/1"},
    ]


def test_definition_of_an_input_model_tool() -> None:
    @tool(input_model=Order, definition={"input_examples": [{"customer": "Ada", "items": []}]})
    def place_order(order: Order) -> None:
        """Place an order."""

    assert place_order.to_param().get("input_examples") == [{"customer": "Ada", "items": []}]


def test_to_param_is_built_once() -> None:
    assert get_weather.to_param() is get_weather.to_param()
    assert get_weather.to_param()["input_schema"] is get_weather.input_schema


def test_decorated_function_is_still_callable_with_its_metadata() -> None:
    @tool
    def add(a: int, b: int = 2) -> int:
        """Add two numbers."""
        return a + b

    assert add(1) == 3
    assert add(a=1, b=5) == 6
    assert add.function(1, 1) == 2
    assert add.__name__ == "add"
    assert add.__doc__ == "Add two numbers."
    assert add.__module__ == __name__
    assert add.__wrapped__ is add.function
    assert inspect.signature(add) == inspect.signature(add.function)
    assert "add" in repr(add)


@pytest.mark.anyio
async def test_decorated_async_function_is_still_awaitable() -> None:
    assert await get_weather("Paris") == "20 degrees celsius in Paris"


def test_as_tool() -> None:
    assert as_tool(get_weather) is get_weather

    def ping() -> str:
        """Check that the service is up."""
        return "pong"

    made = as_tool(ping)
    assert isinstance(made, Tool)
    assert made.name == "ping"
    with pytest.raises(ToolDefinitionError, match="is not a tool"):
        as_tool(42)


def test_redecorating_a_tool_starts_from_its_function() -> None:
    renamed = tool(name="weather")(get_weather)
    assert renamed.function is get_weather.function
    assert renamed.name == "weather"
    assert renamed.input_schema == get_weather.input_schema


# Sync and async detection ----------------------------------------------------------------------


async def _async_fetch(url: str) -> str:
    """Fetch a URL."""
    return url


def _sync_fetch(url: str) -> str:
    """Fetch a URL."""
    return url


class AsyncFetcher:
    """Fetch a URL."""

    async def __call__(self, url: str) -> str:
        return url

    async def fetch(self, url: str) -> str:
        """Fetch a URL."""
        return url


class SyncFetcher:
    """Fetch a URL."""

    def __call__(self, url: str) -> str:
        return url


@pytest.mark.parametrize(
    ("function", "expected"),
    [
        (_async_fetch, True),
        (_sync_fetch, False),
        (functools.partial(_async_fetch), True),
        (functools.partial(functools.partial(_sync_fetch)), False),
        (AsyncFetcher(), True),
        (functools.partial(AsyncFetcher()), True),
        (AsyncFetcher().fetch, True),
        (SyncFetcher(), False),
    ],
)
def test_is_async(function: Any, expected: bool) -> None:
    made = Tool(function, name="fetch")
    assert made.is_async is expected
    assert made.description == "Fetch a URL."
    assert list(made.input_schema["properties"]) == ["url"]


def test_partial_keeps_the_function_name() -> None:
    made = tool(functools.partial(_search, api_key="sk-secret"))
    assert made.name == made.__name__ == "_search"
    assert made.description == "Search the index."


def _search(query: str, api_key: str, region: str = "eu") -> str:
    """Search the index.

    Args:
        query: What to look for.
        api_key: The key to the index.
        region: Where to search.
    """
    return f"{api_key}/{region}: {query}"


def _keyed_search(api_key: str, query: str, region: str = "eu") -> str:
    """Search the index."""
    return f"{api_key}/{region}: {query}"


class _Index:
    """A search index."""

    def search(self, query: str, api_key: str, region: str = "eu") -> str:
        """Search the index."""
        return f"{api_key}/{region}: {query}"

    def __call__(self, query: str, api_key: str, region: str = "eu") -> str:
        """Search the index."""
        return f"{api_key}/{region}: {query}"


class _Partial(functools.partial[str]):
    """A partial subclass: partial() does not flatten one that carries attributes."""


def _unflattened() -> functools.partial[str]:
    inner = _Partial(_search, api_key="sk-secret")
    inner.note = "kept apart"  # type: ignore[attr-defined]  # an instance dict stops the flattening
    outer = functools.partial(inner, region="us")
    assert outer.func is inner
    return outer


@pytest.mark.parametrize(
    ("function", "region"),
    [
        (functools.partial(_search, api_key="sk-secret"), None),
        (functools.partial(_keyed_search, "sk-secret"), None),
        (functools.partial(functools.partial(_search, api_key="sk-secret"), region="us"), "us"),
        (_unflattened(), "us"),
        (functools.partial(_Index().search, api_key="sk-secret"), None),
        (functools.partial(_Index(), api_key="sk-secret"), None),
    ],
    ids=["keyword", "positional", "nested", "nested-unflattened", "bound-method", "callable-object"],
)
def test_partial_bound_arguments_are_neither_shown_nor_accepted(
    function: Callable[..., str], region: str | None
) -> None:
    made = Tool(function, name="search")
    assert "sk-secret" not in json.dumps(made.to_param())
    assert list(made.input_schema["properties"]) == (["query"] if region else ["query", "region"])
    assert made.input_schema["required"] == ["query"]
    # A bound name is an unknown field like any other: the model cannot override it.
    message = input_error(made, {"query": "tea", "api_key": "sk-model"})
    assert "- api_key: Extra inputs are not permitted (received 'sk-model')" in message
    if region:
        message = input_error(made, {"query": "tea", "region": "eu"})
        assert "- region: Extra inputs are not permitted (received 'eu')" in message
    assert made.function(**made.parse_input({"query": "tea"})) == f"sk-secret/{region or 'eu'}: tea"


class _Converter:
    """Holds the exchange rates; built once at start-up."""

    def __call__(self, amount: float, currency: str) -> float:
        """Convert an amount to euros.

        Args:
            amount: How much money.
            currency: The ISO code of its currency.
        """
        return amount


class _Documented:
    """Convert an amount to euros.

    Args:
        amount: Not used: __call__ documents it.
        currency: The ISO code of its currency.
    """

    def __call__(self, amount: float, currency: str) -> float:
        """
        Args:
            amount: How much money.
        """
        return amount


def test_callable_object_is_described_by_its_call_method() -> None:
    made = tool(_Converter())
    assert made.description == "Convert an amount to euros."
    assert made.input_schema["properties"] == {
        "amount": {"type": "number", "description": "How much money."},
        "currency": {"type": "string", "description": "The ISO code of its currency."},
    }


def test_class_docstring_fills_in_what_call_does_not_say() -> None:
    made = tool(functools.partial(_Documented()))
    assert made.description == "Convert an amount to euros."
    assert made.input_schema["properties"] == {
        "amount": {"type": "number", "description": "How much money."},
        "currency": {"type": "string", "description": "The ISO code of its currency."},
    }


def test_callable_object_is_named_after_its_class() -> None:
    made = tool(SyncFetcher())
    assert made.name == made.__name__ == "SyncFetcher"


# Context injection -----------------------------------------------------------------------------


def test_context_parameter_is_injected_and_left_out_of_the_schema() -> None:
    @tool
    def lookup(query: str, ctx: ToolContext) -> str:
        """Look a thing up."""
        return f"{ctx.call.id}: {query}"

    assert lookup.input_schema["properties"] == {"query": {"type": "string"}}
    assert lookup.input_schema["required"] == ["query"]
    given_context = context()
    arguments = lookup.parse_input({"query": "x"})
    assert arguments == {"query": "x"}
    kwargs = lookup.call_kwargs(arguments, given_context)
    assert kwargs == {"query": "x", "ctx": given_context}
    assert lookup.function(**kwargs) == "toolu_1: x"
    # An input field named like the context parameter is not a way to pass one.
    assert "ctx: Extra inputs are not permitted" in input_error(lookup, {"query": "x", "ctx": {}})


def test_call_kwargs_without_context_parameter() -> None:
    arguments = get_weather.parse_input({"city": "Paris"})
    kwargs = get_weather.call_kwargs(arguments, context())
    assert kwargs == {"city": "Paris"}
    assert kwargs is not arguments


def test_context_only_tool() -> None:
    @tool
    def whoami(context: ToolContext) -> str:
        """Say which call this is."""
        return context.call.id

    assert whoami.input_schema["properties"] == {}
    kwargs = whoami.call_kwargs(whoami.parse_input({}), context())
    assert whoami.function(**kwargs) == "toolu_1"


# input_model -----------------------------------------------------------------------------------


def test_input_model_is_the_whole_schema_and_the_function_gets_an_instance() -> None:
    @tool(input_model=Order)
    def place_order(order: Order, ctx: ToolContext) -> str:
        """Place an order."""
        return f"{order.customer}: {len(order.items)}"

    assert place_order.input_schema == {
        "type": "object",
        "properties": {
            "customer": {"type": "string"},
            "items": {"type": "array", "items": {"$ref": "#/$defs/LineItem"}},
        },
        "required": ["customer", "items"],
        "description": "An order.",
        "$defs": {
            "LineItem": {
                "type": "object",
                "properties": {"title": {"type": "string"}, "quantity": {"type": "integer", "default": 1}},
                "required": ["title"],
            }
        },
    }
    arguments = place_order.parse_input('{"customer": "Ada", "items": [{"title": "tea"}]}')
    assert arguments == {"order": Order(customer="Ada", items=[LineItem(title="tea")])}
    given_context = context()
    kwargs = place_order.call_kwargs(arguments, given_context)
    assert kwargs["order"] is arguments["order"]  # validated once, not rebuilt
    assert kwargs["ctx"] is given_context
    assert place_order.function(**kwargs) == "Ada: 1"


def _refs(schema: object) -> Iterator[str]:
    if isinstance(schema, dict):
        for key, value in cast("dict[str, object]", schema).items():
            if key == "$ref":
                yield str(value)
            else:
                yield from _refs(value)
    elif isinstance(schema, list):
        for item in cast("list[object]", schema):
            yield from _refs(item)


def _count_nodes(tree: TreeNode) -> int:
    return 1 + sum(_count_nodes(child) for child in tree.children)


def test_recursive_input_model_has_an_object_at_the_root() -> None:
    @tool(input_model=TreeNode)
    def count(tree: TreeNode) -> int:
        """Count the nodes of a tree."""
        return _count_nodes(tree)

    node: dict[str, Any] = {
        "type": "object",
        "description": "A node of a tree.",
        "properties": {
            "name": {"type": "string"},
            "children": {"type": "array", "items": {"$ref": "#/$defs/TreeNode"}, "default": []},
        },
        "required": ["name"],
    }
    assert count.input_schema == {**node, "$defs": {"TreeNode": node}}
    assert list(count.input_schema)[:3] == ["type", "properties", "required"]
    assert all(
        ref.removeprefix("#/$defs/") in count.input_schema["$defs"] for ref in _refs(count.input_schema)
    )
    tree = {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]}
    assert count(**count.parse_input(tree)) == 3


def test_recursive_parameter_type_is_a_def_under_an_object_root() -> None:
    @tool
    def count(tree: TreeNode) -> int:
        """Count the nodes of a tree."""
        return _count_nodes(tree)

    assert count.input_schema["type"] == "object"
    assert count.input_schema["properties"] == {"tree": {"$ref": "#/$defs/TreeNode"}}
    assert all(
        ref.removeprefix("#/$defs/") in count.input_schema["$defs"] for ref in _refs(count.input_schema)
    )
    assert count(**count.parse_input({"tree": {"name": "a", "children": [{"name": "b"}]}})) == 2


def test_input_model_validation_errors_use_the_model_paths() -> None:
    @tool(input_model=Order)
    def place_order(order: Order) -> str:
        """Place an order."""
        return ""

    message = input_error(place_order, {"customer": "Ada", "items": [{"title": "tea", "quantity": "many"}]})
    assert "- items.0.quantity: Input should be a valid integer" in message
    assert "(received 'many')" in message


def test_input_model_parameter_needs_no_annotation() -> None:
    @tool(input_model=Order)
    def place_order(order) -> str:  # type: ignore[no-untyped-def]
        """Place an order."""
        return ""

    assert place_order.input_schema["required"] == ["customer", "items"]


# Input parsing and validation messages --------------------------------------------------------


def test_json_string_input_is_parsed() -> None:
    assert get_weather.parse_input('{"city": "Paris", "unit": "fahrenheit"}') == {
        "city": "Paris",
        "unit": "fahrenheit",
    }


def test_omitted_parameters_are_left_to_the_function_defaults() -> None:
    assert get_weather.parse_input({"city": "Paris"}) == {"city": "Paris"}


def test_arguments_come_in_signature_order() -> None:
    arguments = get_weather.parse_input({"unit": "fahrenheit", "city": "Paris"})
    assert list(arguments) == ["city", "unit"]


def test_dataclasses_and_typeddicts_are_closed_like_the_signature() -> None:
    @tool
    def draw(span: Span, point: Point) -> None:
        """Draw."""

    assert draw.input_schema["$defs"] == {
        "Point": {
            "type": "object",
            "properties": {"x": {"type": "integer"}},
            "required": ["x"],
            "additionalProperties": False,
        },
        "Span": {
            "type": "object",
            "properties": {"start": {"type": "integer"}, "end": {"type": "integer"}},
            "required": ["start", "end"],
            "additionalProperties": False,
        },
    }
    assert draw.parse_input({"span": {"start": 1, "end": 2}, "point": {"x": 3}}) == {
        "span": {"start": 1, "end": 2},
        "point": Point(x=3),
    }


def test_lax_coercion_of_json_values() -> None:
    @tool
    def repeat(text: str, times: int) -> str:
        """Repeat a text."""
        return text * times

    assert repeat.parse_input({"text": "a", "times": "3"}) == {"text": "a", "times": 3}


def test_nested_models_arrive_as_instances() -> None:
    @tool
    def place(order: Order) -> None:
        """Place an order."""

    arguments = place.parse_input({"order": {"customer": "Ada", "items": []}})
    assert isinstance(arguments["order"], Order)


@pytest.mark.parametrize(
    ("raw", "received"),
    [
        ([1, 2], "it was a list: [1, 2]"),
        (42, "it was a int: 42"),
        (None, "it was a NoneType: None"),
        ("not json", "it was a str that is not valid JSON: 'not json'"),
        ("[1, 2]", "it was a str holding a JSON array: '[1, 2]'"),
        ("null", "it was a str holding a JSON null: 'null'"),
    ],
)
def test_input_that_is_not_an_object(raw: object, received: str) -> None:
    message = input_error(get_weather, raw)
    assert message == (
        f"The input for tool 'get_weather' must be a JSON object matching its input_schema, but {received}. "
        "Call get_weather again with an object as its input."
    )


def test_validation_message_lists_each_error_for_the_model() -> None:
    message = input_error(get_weather, {"unit": "kelvin", "country": "FR"})
    assert message == (
        "The input for tool 'get_weather' is invalid (3 errors):\n"
        "- city: Field required\n"
        "- unit: Input should be 'celsius' or 'fahrenheit' (received 'kelvin')\n"
        "- country: Extra inputs are not permitted (received 'FR')\n"
        "Call get_weather again with corrected input."
    )


def test_validation_message_shows_nested_paths() -> None:
    @tool
    def place(order: Order) -> None:
        """Place an order."""

    message = input_error(place, {"order": {"customer": "Ada", "items": [{"title": "tea"}, {"quantity": 2}]}})
    assert message == (
        "The input for tool 'place' is invalid (1 error):\n"
        "- order.items.1.title: Field required\n"
        "Call place again with corrected input."
    )


def test_validation_message_truncates_long_values() -> None:
    message = input_error(get_weather, {"city": ["x" * 500]})
    line = message.splitlines()[1]
    assert line.startswith("- city: Input should be a valid string (received ['xxxx")
    assert line.endswith("...)")
    assert len(line) < 160


def test_validation_message_caps_the_number_of_errors() -> None:
    @tool
    def total(values: list[int]) -> int:
        """Add numbers."""
        return sum(values)

    message = input_error(total, {"values": ["x"] * 30})
    lines = message.splitlines()
    assert lines[0] == "The input for tool 'total' is invalid (30 errors):"
    assert lines[1].startswith("- values.0: Input should be a valid integer")
    assert lines[-2] == "- ... and 10 more"
    assert len(lines) == 1 + 20 + 2


# Definition errors -----------------------------------------------------------------------------


def _undocumented(x: int) -> int:
    return x


def _with_args(*values: int) -> int:
    """Add numbers."""
    return sum(values)


def _with_kwargs(**values: int) -> int:
    """Add numbers."""
    return sum(values.values())


def _positional_only(x: int, /) -> int:
    """Echo."""
    return x


def _unannotated(x, y: int) -> int:  # type: ignore[no-untyped-def]
    """Echo."""
    return y


def _two_contexts(a: ToolContext, b: ToolContext) -> None:
    """Nothing."""


def _optional_context(query: str, ctx: ToolContext | None = None) -> None:
    """Nothing."""


def _two_inputs(order: Order, extra: int) -> None:
    """Nothing."""


def _no_inputs(ctx: ToolContext) -> None:
    """Nothing."""


def _unresolvable(x: "NoSuchType") -> None:  # type: ignore[name-defined]  # noqa: F821
    """Nothing."""


async def _async_lines(path: str) -> AsyncIterator[str]:
    """Read a file."""
    yield path


def _lines(path: str) -> Iterator[str]:
    """Read a file."""
    yield path


class _LineReader:
    """Read a file."""

    async def __call__(self, path: str) -> AsyncIterator[str]:
        yield path

    def lines(self, path: str) -> Iterator[str]:
        """Read a file."""
        yield path


class _Opaque:
    pass


def _opaque(x: _Opaque) -> None:
    """Nothing."""


_DEFINITION_ERRORS: list[tuple[Any, dict[str, Any], str]] = [
    (42, {}, "42 is not callable; @tool needs a function"),
    (_with_args, {}, r"The parameter \*values of tool '_with_args' is not supported"),
    (_with_kwargs, {}, r"The parameter \*\*values of tool '_with_kwargs' is not supported"),
    (_positional_only, {}, "'x' of tool '_positional_only' is positional-only; .* remove the '/'"),
    (_unannotated, {}, "'x' of tool '_unannotated' has no type annotation; add one"),
    (lambda: None, {"description": "d"}, "The tool name '<lambda>' is invalid: .* pass name=..."),
    (_sync_fetch, {"name": "get weather"}, "The tool name 'get weather' is invalid"),
    (_sync_fetch, {"name": "x" * 129}, "is invalid: the API accepts 1 to 128 letters"),
    (_sync_fetch, {"name": ""}, "The tool name '' is invalid"),
    (_undocumented, {}, "The tool '_undocumented' has no description; write a docstring"),
    (_sync_fetch, {"description": "  "}, "The tool '_sync_fetch' has no description"),
    (_sync_fetch, {"timeout": 0}, "The timeout 0 of tool '_sync_fetch' is invalid; pass a positive number"),
    (_sync_fetch, {"timeout": "5"}, "The timeout '5' of tool '_sync_fetch' is invalid"),
    (_two_contexts, {}, "The tool '_two_contexts' has 2 ToolContext parameters \\(a, b\\); declare one"),
    (
        _sync_fetch,
        {"input_model": dict},
        "The input_model <class 'dict'> of tool '_sync_fetch' is not a pydantic",
    ),
    (
        _optional_context,
        {},
        "'ctx' of tool '_optional_context' is annotated .*; annotate the context parameter exactly",
    ),
    (
        _sync_fetch,
        {"input_model": pydantic.RootModel[list[int]]},
        "is a RootModel; a tool's input is a JSON object",
    ),
    (_sync_fetch, {"timeout": True}, "The timeout True of tool '_sync_fetch' is invalid"),
    (_two_inputs, {"input_model": Order}, "must take exactly one parameter .*; it takes: order, extra"),
    (_no_inputs, {"input_model": Order}, "must take exactly one parameter .*; it takes: none"),
    (_unresolvable, {}, "The annotations of tool '_unresolvable' cannot be evaluated .*NoSuchType"),
    (_opaque, {}, "The signature of tool '_opaque' cannot be made into a schema"),
    (
        _async_lines,
        {},
        "The tool '_async_lines' is an async generator function; a tool returns its result once: collect "
        "what it yields into a list and return the list",
    ),
    (_lines, {}, "The tool '_lines' is a generator function; a tool returns its result once"),
    (functools.partial(_async_lines), {}, "The tool '_async_lines' is an async generator function"),
    (_LineReader(), {}, "The tool '_LineReader' is an async generator function"),
    (_LineReader().lines, {}, "The tool 'lines' is a generator function"),
    (
        _sync_fetch,
        {"definition": {"strcit": True}},
        r"The definition field 'strcit' of tool '_sync_fetch' is not a field of a custom tool in the installed "
        r"anthropic SDK; the fields are: allowed_callers, cache_control, .*, strict, type\.",
    ),
    (
        _sync_fetch,
        {"definition": {"name": "x"}},
        "The definition field 'name' .* is set by @tool; pass name=... to @tool",
    ),
    (
        _sync_fetch,
        {"definition": {"description": "x"}},
        "The definition field 'description' .* is set by @tool; pass description=... to @tool",
    ),
    (
        _sync_fetch,
        {"definition": {"input_schema": {}}},
        "The definition field 'input_schema' .* is set by @tool; it comes from the signature, or from input_model=...",
    ),
    (
        _sync_fetch,
        {"definition": [("strict", True)]},
        r"The definition \[\('strict', True\)\] of tool '_sync_fetch' is not a dict",
    ),
    (
        _sync_fetch,
        {"definition": {"strict": "yes"}},
        r"The definition field 'strict' of tool '_sync_fetch' is invalid: Input should be a valid boolean "
        r"\(received 'yes'\); give it a value of the type the SDK's ToolParam declares for it\.",
    ),
    (
        _sync_fetch,
        {"definition": {"cache_control": {"type": "forever"}}},
        "The definition field 'cache_control.type' of tool '_sync_fetch' is invalid: Input should be 'ephemeral'",
    ),
    (
        _sync_fetch,
        {"definition": {"input_examples": [{"url": "u"}, {"link": "u"}]}},
        r"The input example 1 of tool '_sync_fetch' does not match its input_schema \(url: Field required; "
        r"link: Extra inputs are not permitted\); correct it or leave it out\.",
    ),
]


@pytest.mark.parametrize(("function", "options", "message"), _DEFINITION_ERRORS)
def test_definition_errors(function: Any, options: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolDefinitionError, match=message):
        Tool(function, **options)


def test_method_decorated_in_a_class_body_points_to_the_bound_method() -> None:
    def status(self) -> str:  # type: ignore[no-untyped-def]  # what @tool sees in a class body
        """Report the status."""
        return "ok"

    with pytest.raises(
        ToolDefinitionError, match=r"'self' .* decorate the bound method: tool\(instance.method\)"
    ):
        tool(status)  # pyright: ignore[reportUnknownArgumentType]

    class Good:
        def status(self, verbose: bool = False) -> str:
            """Report the status."""
            return "ok"

    assert tool(Good().status).input_schema["properties"] == {
        "verbose": {"type": "boolean", "default": False}
    }


def test_definition_error_is_a_type_error() -> None:
    with pytest.raises(TypeError):
        tool(42)  # type: ignore[call-overload]


# Property: valid inputs round-trip ------------------------------------------------------------

_KINDS: list[tuple[Any, st.SearchStrategy[Any]]] = [
    (str, st.text(max_size=20)),
    (int, st.integers()),
    (float, st.floats(allow_nan=False, allow_infinity=False)),
    (bool, st.booleans()),
    (list[int], st.lists(st.integers(), max_size=5)),
    (dict[str, str], st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=3)),
    (Literal["a", "b"], st.sampled_from(["a", "b"])),
    (str | None, st.none() | st.text(max_size=5)),
]
_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,12}", fullmatch=True).filter(
    lambda n: not keyword.iskeyword(n)
)


@st.composite
def signatures_and_inputs(draw: st.DrawFn) -> tuple[Tool, dict[str, Any], list[str]]:
    """A tool over a generated signature, a valid input for it, and its required parameters."""
    names = draw(st.lists(_NAMES, unique=True, max_size=6))
    parameters: list[inspect.Parameter] = []
    arguments: dict[str, Any] = {}
    required: list[str] = []
    for name in names:
        annotation, values = draw(st.sampled_from(_KINDS))
        has_default = draw(st.booleans())
        default = draw(values) if has_default else inspect.Parameter.empty
        parameters.append(
            inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default)
        )
        if not has_default:
            required.append(name)
        if not has_default or draw(st.booleans()):
            arguments[name] = draw(values)

    def generated(**kwargs: Any) -> None:
        """A generated tool."""

    generated.__signature__ = inspect.Signature(parameters)  # type: ignore[attr-defined]
    return tool(generated), arguments, required


@given(signatures_and_inputs())
def test_valid_inputs_round_trip(case: tuple[Tool, dict[str, Any], list[str]]) -> None:
    made, arguments, required = case
    assert made.parse_input(arguments) == arguments
    assert made.parse_input(json.dumps(arguments)) == arguments
    assert made.input_schema.get("required", []) == required
    assert all("title" not in schema for schema in made.input_schema["properties"].values())


@given(signatures_and_inputs(), st.text(min_size=1).filter(str.isidentifier))
def test_unknown_fields_are_rejected(case: tuple[Tool, dict[str, Any], list[str]], extra: str) -> None:
    made, arguments, _ = case
    if extra in made.input_schema["properties"]:
        return
    message = input_error(made, {**arguments, extra: 1})
    assert f"- {extra}: Extra inputs are not permitted (received 1)" in message


def test_pydantic_is_not_rebuilt_per_call(monkeypatch: pytest.MonkeyPatch) -> None:
    made = tool(_sync_fetch)

    def fail(*args: object, **kwargs: object) -> None:
        raise AssertionError("create_model called per call")

    monkeypatch.setattr(pydantic, "create_model", fail)
    assert made.parse_input({"url": "u"}) == {"url": "u"}

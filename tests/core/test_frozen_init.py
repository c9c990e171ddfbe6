"""``frozen_init``: the faster ``__init__`` of the frozen dataclasses a turn makes is the dataclass's
own, in signature, defaults, values and errors."""

from __future__ import annotations

import dataclasses
import inspect
from typing import Any

import pytest

from toolrunner._core import effects, types, usage
from toolrunner._core.frozen import frozen_init


def _plain_twin(cls: type[Any]) -> type[Any]:
    """A frozen, slotted dataclass with ``cls``'s fields, made by ``dataclasses`` alone."""
    specs: list[tuple[str, Any, Any]] = []
    for item in dataclasses.fields(cls):
        options: dict[str, Any] = {"kw_only": item.kw_only}
        if item.default is not dataclasses.MISSING:
            options["default"] = item.default
        if item.default_factory is not dataclasses.MISSING:
            options["default_factory"] = item.default_factory
        specs.append((item.name, Any, dataclasses.field(**options)))
    return dataclasses.make_dataclass(f"Plain{cls.__name__}", specs, frozen=True, slots=True)


def _decorated() -> list[type[Any]]:
    modules = (effects, types, usage)
    found = {
        value
        for module in modules
        for value in vars(module).values()
        if isinstance(value, type) and value.__module__ == module.__name__ and dataclasses.is_dataclass(value)
    }
    return sorted(
        (
            cls
            for cls in found
            if cls.__init__.__code__.co_filename == "<string>"
            and "_set_" in str(cls.__init__.__code__.co_names)
        ),
        key=lambda cls: cls.__name__,
    )


DECORATED = _decorated()


def test_the_turns_records_are_decorated() -> None:
    names = {cls.__name__ for cls in DECORATED}
    assert {"ToolCall", "Usage", "RequestUsage", "Send", "Execute", "RunCalls", "Request", "Save"} <= names


@pytest.mark.parametrize("cls", DECORATED, ids=lambda cls: cls.__name__)
def test_signature_defaults_and_values_are_the_dataclasses(cls: type[Any]) -> None:
    twin = _plain_twin(cls)
    mine, theirs = inspect.signature(cls.__init__), inspect.signature(twin.__init__)
    assert [(p.name, p.kind, p.default is inspect.Parameter.empty) for p in mine.parameters.values()] == [
        (p.name, p.kind, p.default is inspect.Parameter.empty) for p in theirs.parameters.values()
    ]
    required = {
        name: object()
        for name, parameter in mine.parameters.items()
        if name != "self" and parameter.default is inspect.Parameter.empty
    }
    made, plain = cls(**required), twin(**required)
    for item in dataclasses.fields(cls):
        assert getattr(made, item.name) == getattr(plain, item.name), item.name
    if dataclasses.fields(cls):  # still frozen
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(made, dataclasses.fields(cls)[0].name, 1)


@pytest.mark.parametrize("cls", DECORATED, ids=lambda cls: cls.__name__)
def test_the_init_keeps_the_dataclass_annotations(cls: type[Any]) -> None:
    annotations = cls.__init__.__annotations__  # as the dataclass wrote them (names only under TYPE_CHECKING)
    assert annotations == {item.name: item.type for item in dataclasses.fields(cls)} | {"return": None}


@dataclasses.dataclass(frozen=True, slots=True)
class _Sample:
    a: int
    b: list[int] = dataclasses.field(default_factory=list[int])
    c: str = "c"
    d: int = dataclasses.field(default=4, kw_only=True)


_PLAIN_SIGNATURE = inspect.signature(_Sample.__init__)
Sample = frozen_init(_Sample)


def test_factories_give_each_instance_its_own_default_and_errors_match() -> None:
    assert inspect.signature(Sample.__init__) == _PLAIN_SIGNATURE

    first, second = Sample(1), Sample(2, [3], "x", d=5)
    assert (first.a, first.b, first.c, first.d) == (1, [], "c", 4)
    assert (second.a, second.b, second.c, second.d) == (2, [3], "x", 5)
    assert Sample(1).b is not first.b
    assert first == Sample(1)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'a'"):
        Sample()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes from 2 to 4 positional arguments"):
        Sample(1, [], "c", 4)  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'e'"):
        Sample(1, e=2)  # type: ignore[call-arg]


def test_it_refuses_what_it_cannot_make() -> None:
    @dataclasses.dataclass(frozen=True)
    class NoSlots:
        a: int

    @dataclasses.dataclass(slots=True)
    class NotFrozen:
        a: int

    @dataclasses.dataclass(frozen=True, slots=True)
    class PostInit:
        a: int

        def __post_init__(self) -> None:
            pass

    for cls in (NoSlots, NotFrozen, PostInit):
        with pytest.raises(TypeError, match="frozen_init"):
            frozen_init(cls)

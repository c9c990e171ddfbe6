"""The typed keywords of a runner are the SDK's: ``RequestParams`` declares every param of
``client.messages.create`` and ``client.beta.messages.create`` (as the runner takes them at run time,
from the same signatures), each with a type that takes what the SDK's own annotation takes. A new
SDK release that adds or retypes a param fails here, naming it, before a type checker refuses it
in a user's code.
"""

from __future__ import annotations

import collections.abc
import types
import typing
from typing import Any, get_args, get_origin, get_type_hints

import pytest
from anthropic import NotGiven, Omit
from anthropic.resources.beta.messages import AsyncMessages as BetaMessages
from anthropic.resources.messages import AsyncMessages as Messages
from anthropic.types import MessageParam
from typing_extensions import is_typeddict

from toolrunner import RequestParams, RunnerOptions
from toolrunner._runner.options import ResumeArguments, RunnerArguments, TransportParams
from toolrunner._runner.params import REQUIRED, TRANSPORT

# The params of the SDK's create methods that are not request params of a runner, and why.
NOT_REQUEST_PARAMS = {
    "self": "the method's own",
    "stream": "the runner's own keyword (ToolRunner(stream=True))",
    "tools": "an option: RunnerOptions' tools, which also takes tools that run",
    "thread": "an option: RunnerOptions' thread (only thread=False)",
    "compaction": "refused: every request would compact; compact_before_next_turn() asks for one",
}


def sdk_params() -> dict[str, list[Any]]:
    """Each param of the two create methods, with its annotation on each that takes it."""
    params: dict[str, list[Any]] = {}
    for create in (Messages.create, BetaMessages.create):
        for name, annotation in get_type_hints(create).items():
            if name not in NOT_REQUEST_PARAMS and name != "return":
                params.setdefault(name, []).append(annotation)
    return params


def members(annotation: Any) -> list[Any]:
    """The alternatives of a union (and of unions in it), Omit and NotGiven left out: they stand
    for a param not given, which a runner's keyword says by being left out."""
    if get_origin(annotation) in (typing.Union, types.UnionType):
        return [member for arg in get_args(annotation) for member in members(arg)]
    if annotation in (Omit, NotGiven):
        return []
    return [annotation]


_COLLECTIONS = {collections.abc.Iterable, collections.abc.Sequence, list}


def covers(ours: Any, theirs: Any) -> bool:
    """Whether every value of ``theirs`` is a value of ``ours``: each of its alternatives is one of
    ours, or the same generic of what one of ours holds (a ``list`` of the SDK counts as a
    ``Sequence`` or ``Iterable`` of ours, which also take tuples)."""
    mine = members(ours)
    return object in mine or all(any(_wider(one, wanted) for one in mine) for wanted in members(theirs))


def _wider(one: Any, wanted: Any) -> bool:
    if one == wanted:
        return True
    if is_typeddict(wanted) and get_origin(one) is collections.abc.Mapping and get_args(one) == (str, Any):
        return True  # any mapping takes a TypedDict
    origin, wanted_origin = get_origin(one), get_origin(wanted)
    if origin is None or wanted_origin is None:
        return False
    if origin is not wanted_origin and not (
        origin in _COLLECTIONS and wanted_origin in _COLLECTIONS and origin is not list
    ):
        return False
    ours, theirs = get_args(one), get_args(wanted)
    return len(ours) == len(theirs) and all(covers(a, b) for a, b in zip(ours, theirs, strict=True))


def test_request_params_declares_every_param_the_sdk_takes_and_no_other() -> None:
    declared, sdk = set(RequestParams.__annotations__), set(sdk_params())
    assert not sdk - declared, (
        f"the SDK's create methods take {sorted(sdk - declared)!r}, which RequestParams (toolrunner/_options.py) "
        "does not declare; add them with the SDK's types, and to docs/api.md."
    )
    assert not declared - sdk, (
        f"RequestParams declares {sorted(declared - sdk)!r}, which neither create method of the installed SDK "
        "takes; remove them (the runner refuses them at run time)."
    )


@pytest.mark.parametrize("name", sorted(sdk_params()))
def test_each_request_param_takes_what_the_sdk_takes(name: str) -> None:
    ours = get_type_hints(RequestParams)[name]
    for theirs in sdk_params()[name]:
        assert covers(ours, theirs), (
            f"RequestParams[{name!r}] is {ours!r}, which does not take all of the SDK's {theirs!r}; "
            "type it with the SDK's param types (of both endpoints)."
        )


def test_the_covering_check_tells_a_narrower_type() -> None:
    assert covers(int | str, str)
    assert covers(collections.abc.Sequence[str], list[str])
    assert covers(collections.abc.Iterable[int | str], collections.abc.Iterable[int])
    assert not covers(collections.abc.Iterable[int], collections.abc.Iterable[int | str])
    assert not covers(str, int | str)
    assert not covers(list[str], collections.abc.Sequence[str])
    assert covers(object, int | None)
    assert covers(collections.abc.Mapping[str, int | str], typing.Mapping[str, int])
    assert covers(
        collections.abc.Iterable[collections.abc.Mapping[str, Any]], collections.abc.Iterable[MessageParam]
    )
    assert not covers(
        collections.abc.Iterable[collections.abc.Mapping[str, int]], collections.abc.Iterable[MessageParam]
    )


def test_the_required_params_and_the_transport_params_are_the_runners() -> None:
    assert set(RequestParams.__required_keys__) == set(REQUIRED)  # a new run needs them
    assert set(TransportParams.__annotations__) == set(TRANSPORT)  # all that resume takes besides options
    assert not set(RequestParams.__annotations__) & set(RunnerOptions.__annotations__)


def test_the_signatures_keywords_are_the_params_and_the_options() -> None:
    # output_format is a keyword of its own in the signatures: its type is the type of the items.
    options = set(RunnerOptions.__annotations__) - {"output_format"}
    assert "output_format" in RunnerOptions.__annotations__
    assert set(RunnerArguments.__annotations__) == set(RequestParams.__annotations__) | options
    assert set(ResumeArguments.__annotations__) == set(TRANSPORT) | options
    assert set(ResumeArguments.__required_keys__) == set()

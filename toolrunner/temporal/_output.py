"""Typed final answers on Temporal (``start_run(output_format=...)``): output types by name, as tools.

The type is code, so it lives on the workers, registered by name (``create_worker(output_types=...)``);
a run names it (``start_run(output_format="Weather")``, or the type itself, which the client then
checks too). Each part does what ``ToolRunner`` does with ``_core.output``'s ``OutputFormat``:

- the request activity merges the type's schema into ``output_config``
  with ``OutputFormat.request`` and parses the reply with ``OutputFormat.parse``, on the worker;
  what it found (the errors, the answer as JSON data, a large one by reference) goes back to the
  workflow with the reply;
- the workflow's core judges the final answer with ``_core.output.answer_judged`` (the retries,
  the message that sends the errors back, ``OutputValidationError``) through ``RemoteOutput``: an
  ``OutputFormat`` whose parse is the activity's, recorded in history, so a replay decides the same
  even if a worker's type changed since. A run that gives up fails with ``rejected``'s error,
  which ``RunHandle.result()`` raises as ``OutputValidationError`` (``output_error``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pydantic
from anthropic import NotGiven
from anthropic.lib._parse._response import (  # pyright: ignore[reportMissingTypeStubs]  # a namespace package
    parse_beta_response,
    parse_response,
)
from anthropic.types import Message
from anthropic.types.beta import BetaMessage
from temporalio.client import WorkflowFailureError
from temporalio.exceptions import ApplicationError

from .._core.errors import OutputValidationError, ParamsError
from .._core.output import DEFAULT_OUTPUT_RETRIES, OutputFormat, output_format_of
from .._core.types import Reply
from ._names import OUTPUT_NOT_REGISTERED, OUTPUT_REJECTED

__all__ = [
    "AgentOutput",
    "Answers",
    "RemoteOutput",
    "WorkerOutputs",
    "agent_output",
    "answer_data",
    "output_error",
    "rejected",
    "run_output",
]


def run_output(output_format: object, retries: object, params: Mapping[str, Any]) -> dict[str, Any] | None:
    """``start_run``'s ``output_format=`` and ``output_retries=``, checked, as the run's input holds
    them: ``{"name", "retries", "schema"}`` (``schema``: the fingerprint of the type's schema when
    the client gave the type itself, which the workers' type must have; ``None`` for a name).

    Raises:
        ParamsError: As ``ToolRunner(output_format=..., output_retries=...)`` raises it, or the name
            is not a non-empty str.
    """
    if output_format is None:
        if retries is not None:
            raise ParamsError(
                "output_retries says how often an answer that does not fit output_format (or that a check_output "
                "hook refuses) is sent back to the model: pass output_format=... with it (or hooks=..., which "
                "names hooks with a check_output hook)."
            )
        return None
    retries = DEFAULT_OUTPUT_RETRIES if retries is None else retries
    if isinstance(output_format, str):
        if not output_format:
            raise ParamsError("output_format must name an output type registered on the workers, not ''.")
        # The checks of the retries and of output_config.format are the core's: made with a stand-in
        # type, whose schema is never sent (the workers' type is).
        output_format_of(_Named, retries, params)
        return {"name": output_format, "retries": retries, "schema": None}
    checked = output_format_of(output_format, retries, params)
    return {"name": checked.name, "retries": checked.retries, "schema": checked.fingerprint}


class _Named(pydantic.BaseModel):
    """The stand-in type of ``run_output``'s checks, for a run that names its output type."""


class WorkerOutputs:
    """A worker's output types, by name (``create_worker(output_types=...)``): a mapping of names to
    types, or types, each named by its ``__name__``.

    Raises:
        ParamsError: A name is not a non-empty str, two types have one name, or a type has no
            JSON schema pydantic can make.
    """

    def __init__(self, output_types: Mapping[str, object] | Iterable[object]) -> None:
        if isinstance(output_types, str):
            raise ParamsError("output_types takes types (or a mapping of names to types), not a str.")
        if isinstance(output_types, Mapping):
            pairs = list(cast("Mapping[object, object]", output_types).items())
        else:
            pairs = [(getattr(kind, "__name__", None), kind) for kind in output_types]
        self.formats: dict[str, OutputFormat] = {}
        for name, kind in pairs:
            if not isinstance(name, str) or not name:
                raise ParamsError(
                    f"output_types: {kind!r} needs a name (a non-empty str); pass a mapping, {{'weather': Weather}}."
                )
            if name in self.formats:
                raise ParamsError(
                    f"output_types: two types are named {name!r}; pass a mapping of names to types."
                )
            self.formats[name] = output_format_of(kind, DEFAULT_OUTPUT_RETRIES, {})

    def find(self, output: Mapping[str, Any]) -> OutputFormat:
        """The type a run names (``run_output``'s data), with its schema checked against the run's.

        Raises:
            ApplicationError: (non-retryable, of type ``OutputNotRegistered``) No output type has
                that name on this worker, or it has another schema than the run's.
        """
        name = output["name"]
        found = self.formats.get(name)
        if found is None:
            raise ApplicationError(
                f"the output type {name!r} is not registered on this worker (it has {sorted(self.formats)!r}); "
                "every worker of the task queue must be created with every output type of the runs it serves: "
                "create_worker(output_types=[...]).",
                type=OUTPUT_NOT_REGISTERED,
                non_retryable=True,
            )
        schema = output.get("schema")
        if schema is not None and schema != found.fingerprint:
            raise ApplicationError(
                f"the output type {name!r} of this worker has another JSON schema than the run's (the type given to "
                "start_run, or the one the run started with): deploy the same type to the workers and the "
                "clients, or start a new run for the new schema.",
                type=OUTPUT_NOT_REGISTERED,
                non_retryable=True,
            )
        return found


def answer_data(output: OutputFormat, reply: Reply, *, sub_run: bool = False) -> tuple[Reply, dict[str, Any]]:
    """``reply`` parsed with ``output`` (``OutputFormat.parse``, as ``ToolRunner`` parses it), and
    what the workflow needs of it: the schema's fingerprint, the answer's errors, and its
    ``parsed_output`` as JSON data (``None`` when there is none); for a sub-run's reply, the
    answer as the type's JSON text instead (``OutputFormat.answer_text``: its call's result)."""
    parsed = output.parse(reply)
    data: dict[str, Any] = {"schema": output.fingerprint, "errors": list(output.errors(parsed))}
    if sub_run:  # its call's result: the type's JSON text, which only the type can make
        return parsed, data | {"value": None, "text": output.answer_text(parsed)}
    return parsed, data | {"value": output.value(parsed)}


@dataclass(eq=False, slots=True)
class RemoteOutput(OutputFormat):
    """The workflow's ``OutputFormat``: the type is on the workers, so a reply's errors are those
    the request activity found (``took``), and the reply stays as the activity gave it."""

    registered: str = ""
    """The name the run gave (``start_run(output_format=...)``)."""
    _answer: tuple[Reply, tuple[str, ...], Any] | None = field(default=None, repr=False)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> RemoteOutput:
        """The run input's ``output`` (``run_output``'s data)."""
        return cls(None, {}, data.get("schema") or "", data["retries"], registered=data["name"])

    @property
    def name(self) -> str:
        return self.registered

    def took(self, reply: Reply, data: Mapping[str, Any]) -> None:
        """What the request activity found of ``reply`` (``answer_data``): the last one only."""
        if not self.fingerprint:
            self.fingerprint = data["schema"]
        self._answer = (reply, tuple(data["errors"]), data["value"])

    def value(self, reply: Reply | None) -> Any:
        """The answer of ``reply`` as JSON data, if the activity that gave it found one."""
        found = self._answer
        return None if found is None or found[0] is not reply else found[2]

    def parse(self, reply: Reply) -> Reply:
        return reply

    def annotate(self, message: Reply) -> None:
        raise AssertionError("no stream reaches the workflow")

    def errors(self, reply: Reply) -> tuple[str, ...]:
        found = self._answer
        if found is None or found[0] is not reply:
            raise ApplicationError(
                "the errors of an answer no activity judged; this is a bug.", non_retryable=True
            )
        return found[1]

    def data(self) -> dict[str, Any]:
        """The run input's ``output``, for the next segment (with the schema, once known)."""
        return {"name": self.registered, "retries": self.retries, "schema": self.fingerprint or None}


_KEPT = 256
"""How many replies' answers ``Answers`` keeps: a reply is judged soon after it arrives, while at
most a reply's sub-runs' requests arrive in between."""


@dataclass(eq=False, slots=True)
class Answers:
    """What the request activities found of the replies of a workflow's sub-runs with a typed
    answer (``answer_data``'s errors and value), by reply: the last ones, shared by the sub-agents'
    ``AgentOutput``s, as several sub-runs of one sub-agent may be under way at once."""

    found: dict[int, tuple[Reply, tuple[str, ...], str | None]] = field(
        default_factory=dict[int, tuple[Reply, tuple[str, ...], str | None]]
    )

    def took(self, reply: Reply, data: Mapping[str, Any]) -> None:
        self.found[id(reply)] = (reply, tuple(data["errors"]), data.get("text"))
        while len(self.found) > _KEPT:
            del self.found[next(iter(self.found))]

    def errors(self, reply: Reply) -> tuple[str, ...]:
        return self._of(reply)[1]

    def answer_text(self, reply: Reply) -> str | None:
        """The answer as the type's JSON text, as the activity found it (``None``: it does not fit)."""
        return self._of(reply)[2]

    def _of(self, reply: Reply) -> tuple[Reply, tuple[str, ...], str | None]:
        found = self.found.get(id(reply))
        if found is None or found[0] is not reply:
            raise ApplicationError(
                "the answer of a sub-run's reply no activity judged; this is a bug.", non_retryable=True
            )
        return found


@dataclass(eq=False, slots=True)
class AgentOutput(OutputFormat):
    """The workflow's ``OutputFormat`` of a sub-agent's typed answer (``SubAgent(output_format=...)``,
    its ``definition()``'s ``output``): the type is on the workers, whose request activity parses
    each reply of the sub-run (``answer_data``) and whose errors ``answers`` keeps."""

    registered: str = ""
    answers: Answers = field(default_factory=Answers)

    @property
    def name(self) -> str:
        return self.registered

    def parse(self, reply: Reply) -> Reply:
        return reply

    def annotate(self, message: Reply) -> None:
        raise AssertionError("no stream reaches the workflow")

    def errors(self, reply: Reply) -> tuple[str, ...]:
        return self.answers.errors(reply)

    def answer_text(self, reply: Reply) -> str | None:
        return self.answers.answer_text(reply)


def agent_output(definition: Mapping[str, Any], answers: Answers) -> AgentOutput | None:
    """The typed answer of the sub-agent ``definition`` (``SubAgent.definition()``), if it has one."""
    data = definition.get("output")  # a definition of a toolrunner before typed sub-agents has none
    if data is None:
        return None
    return AgentOutput(None, {}, data["schema"], data["retries"], registered=data["name"], answers=answers)


def rejected(error: OutputValidationError) -> ApplicationError:
    """The workflow's failure for ``error``: its message, and the answer's errors and the answer
    (as JSON, large blocks as stubs) as details, which ``output_error`` reads back on a client."""
    answer = cast(Reply, error.answer)
    return ApplicationError(
        str(error),
        list(error.errors),
        answer.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False),
        isinstance(answer, BetaMessage),
        type=OUTPUT_REJECTED,
        non_retryable=True,
    )


def output_error(failure: WorkflowFailureError) -> OutputValidationError | None:
    """The ``OutputValidationError`` a run failed with (``rejected``), if it failed with one."""
    cause = failure.cause
    if not isinstance(cause, ApplicationError) or cause.type != OUTPUT_REJECTED or len(cause.details) != 3:
        return None
    errors, answer, beta = cause.details
    message = (BetaMessage if beta else Message).model_validate(answer)
    # As ToolRunner's error has it: the reply as the SDK's runner yields it, parsed_output None.
    parse = parse_beta_response if beta else parse_response
    parsed = parse(output_format=NotGiven(), response=cast(Any, message))
    return OutputValidationError(cause.message, parsed, cast("list[str]", errors))

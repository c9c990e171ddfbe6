"""Typed final answers (``output_format=``), pure: the schema a request sends, a reply's answer
parsed and checked, and what happens to an answer that does not fit.

The schema and the ``output_config`` param are the SDK's own (``to_json_output_format``,
``merge_output_config``: what ``client.beta.messages.tool_runner(..., output_format=...)`` sends),
and a reply is parsed as the SDK's runner parses it (``parse_response``, ``parse_beta_response``:
each text block's ``parsed_output``). Beyond the SDK: a final answer that does not fit is sent back
to the model as a user message with the validation errors, at most ``OutputFormat.retries`` times
(the count is ``RunState.output``, so a resumed run goes on from it); then the run ends and
``OutputValidationError`` is raised with the last answer and its errors.

Nothing here runs unless a runner has an ``output_format``: the core checks ``output is None``
first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import pydantic
from anthropic import AnthropicError, NotGiven, Omit, omit
from anthropic._models import add_response_ids
from anthropic.lib._parse._response import (  # pyright: ignore[reportMissingTypeStubs]  # a namespace package
    parse_beta_response,
    parse_response,
)
from anthropic.lib._parse._transform import (  # pyright: ignore[reportMissingTypeStubs]
    merge_output_config,
    to_json_output_format,
    validate_output_config_conflict,
)
from anthropic.types.beta import BetaMessage

from .errors import OutputValidationError, ParamsError
from .messages import client_tool_calls
from .reasons import NOT_RUN_SENT_BACK
from .results import tool_result_block
from .state import OutputRecord, Phase, RunState
from .types import Reply

__all__ = [
    "DEFAULT_OUTPUT_RETRIES",
    "OutputFormat",
    "answer_judged",
    "output_format_of",
    "output_resumed",
    "retry_message",
    "sent_back",
]

DEFAULT_OUTPUT_RETRIES = 1
"""How many times an answer that does not fit is sent back to the model, unless ``output_retries=``
says otherwise."""

RETRY_INTRO = "Your answer does not match the required JSON schema:"
RETRY_OUTRO = "Answer again, with JSON that matches the schema."


@dataclass(eq=False, slots=True)
class OutputFormat:
    """A runner's ``output_format``: the type, the ``output_config.format`` param the SDK makes of
    it, its schema's fingerprint (kept in the state), and the retries an answer gets."""

    output_type: Any
    format_param: Mapping[str, Any]
    fingerprint: str
    retries: int = DEFAULT_OUTPUT_RETRIES
    _last: tuple[object, tuple[str, ...]] | None = field(default=None, repr=False)
    """The last reply parsed, and its errors: the answer is judged without parsing it again."""

    @property
    def name(self) -> str:
        return getattr(self.output_type, "__name__", None) or repr(self.output_type)

    def record(self) -> OutputRecord:
        """The state's record of a new run with this output format."""
        return OutputRecord(schema=self.fingerprint)

    def request(self, kwargs: dict[str, Any]) -> dict[str, Any]:
        """A request's keyword arguments with the schema in ``output_config.format``, as the SDK's
        runner merges it (``merge_output_config``: an empty ``output_config`` counts as none)."""
        output_config = kwargs.get("output_config") or omit
        kwargs["output_config"] = merge_output_config(output_config, cast(Any, self.format_param))
        return kwargs

    def parse(self, reply: Reply) -> Reply:
        """``reply`` as the SDK's runner yields it with an ``output_format`` (a ``ParsedMessage`` or
        ``ParsedBetaMessage``: each text block's ``parsed_output``, the message's ``parsed_output``).
        A text block that does not fit leaves every ``parsed_output`` None, where the SDK would
        raise: its errors are kept for ``errors()``, which decides whether the answer is sent back."""
        parse = parse_beta_response if isinstance(reply, BetaMessage) else parse_response
        try:
            parsed = parse(output_format=self.output_type, response=cast(Any, reply))
            errors: tuple[str, ...] = ()
            if not any(block.type == "text" for block in reply.content):
                errors = ("The answer has no text: answer with a JSON value, as the schema asks.",)
        except pydantic.ValidationError as error:
            parsed = parse(output_format=NotGiven(), response=cast(Any, reply))
            errors = error_lines(error)
        # As the SDK's thread keeps them; a reply read back from a store or a stream may have none.
        add_response_ids(
            parsed,
            request_id=getattr(reply, "_request_id", None),
            workspace_id=getattr(reply, "_workspace_id", None),
        )
        self._last = (parsed, errors)
        return cast(Reply, parsed)

    def annotate(self, message: Reply) -> None:
        """Set ``parsed_output`` on the text blocks of a streamed reply's final message (the SDK's
        stream's own), in place, as the SDK's stream sets it with an ``output_format``; a block that
        does not fit leaves every one None, as ``parse`` does."""
        parsed = self.parse(message)
        for block, parsed_block in zip(message.content, parsed.content, strict=True):
            if block.type == "text" and parsed_block.type == "text":
                cast(Any, block).parsed_output = cast(Any, parsed_block).parsed_output

    def value(self, reply: Reply) -> Any:
        """The answer of ``reply`` as JSON data (``parsed_output``, dumped by the type); ``None``
        when it does not fit."""
        found = self._found(reply)
        return (
            None
            if found is None
            else pydantic.TypeAdapter[Any](self.output_type).dump_python(found, mode="json")
        )

    def answer_text(self, reply: Reply) -> str | None:
        """The answer of ``reply`` as the type's JSON text: its ``parsed_output`` (the first text
        block's, as the SDK's runner gives it), validated and dumped by the type (its validators'
        output, its defaults, no key the type does not have, its fields in order); ``None`` when it
        does not fit."""
        found = self._found(reply)
        return (
            None if found is None else pydantic.TypeAdapter[Any](self.output_type).dump_json(found).decode()
        )

    def _found(self, reply: Reply) -> Any:
        self.errors(reply)
        last = self._last
        assert last is not None
        return getattr(last[0], "parsed_output", None)

    def errors(self, reply: Reply) -> tuple[str, ...]:
        """What is wrong with the answer ``reply`` (empty: it fits)."""
        last = self._last
        if last is None or last[0] is not reply:
            self.parse(reply)
            last = self._last
            assert last is not None
        return last[1]


def output_format_of(
    output_type: object, retries: object, params: Mapping[str, Any], *, retries_only: bool = False
) -> OutputFormat:
    """The runner's ``output_format=`` and ``output_retries=``, checked.

    Raises:
        ParamsError: The type has no JSON schema pydantic can make, ``params`` ask for a format of
            their own (``output_config.format``), or ``retries`` is not an int of 0 or more.
    """
    if isinstance(retries, bool) or not isinstance(retries, int) or retries < 0:
        raise ParamsError(
            f"output_retries must be an int of 0 or more (how often an answer that does not fit the "
            f"output_format is sent back to the model), not {retries!r}."
        )
    if retries_only:  # checked for a check_output hook, without an output_format
        return OutputFormat(None, {}, "", retries)
    if isinstance(output_type, Mapping):
        raise ParamsError(
            "output_format must be a type (a pydantic model, a TypedDict or a dataclass), not a schema dict; "
            "to send a schema of your own, pass output_config={'format': {'type': 'json_schema', 'schema': ...}}."
        )
    output_config = params.get("output_config", omit)
    if not isinstance(output_config, Mapping | NotGiven | Omit):
        raise ParamsError(
            f"output_config must be a dict (such as {{'effort': 'high'}}), not {output_config!r}; with "
            "output_format=..., its 'format' is the type's schema."
        )
    try:
        validate_output_config_conflict(cast(Any, output_config), output_type)
    except AnthropicError as error:
        raise ParamsError(
            f"{error} Pass either output_format=... (the runner then parses and checks the answer) or "
            "output_config={'format': ...}, not both."
        ) from None
    try:
        format_param = to_json_output_format(cast("type[Any]", output_type))
    except (TypeError, ValueError, pydantic.PydanticUserError) as error:  # `object`: the SDK's ValueError
        raise ParamsError(
            f"output_format={output_type!r} has no JSON schema pydantic can make ({error}); pass a pydantic "
            "model, a TypedDict or a dataclass whose fields pydantic knows."
        ) from None
    schema = json.dumps(format_param["schema"], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    fingerprint = "sha256:" + hashlib.sha256(schema.encode()).hexdigest()
    return OutputFormat(output_type, cast("Mapping[str, Any]", format_param), fingerprint, retries)


def output_resumed(state: RunState, output: OutputFormat | None) -> RunState:
    """A saved state, resumed with ``output`` (the ``output_format`` given again): its schema must be
    the one the run was started with; its reply is parsed again, as it was yielded.

    Raises:
        ParamsError: The run was started with another schema, or with none, or with one and none
            is given.
    """
    saved = state.output
    run = repr(state.run_id)
    if saved is not None and not saved.schema:  # retries of a check_output hook only (_core.hooks)
        saved = None
    if output is None:
        if saved is None:
            return state
        raise ParamsError(
            f"the saved run {run} has a typed answer (it was started with output_format=...); resume it with "
            "the same output_format=..., so that its answer is parsed and checked as before."
        )
    if saved is None:
        raise ParamsError(
            f"the saved run {run} was started without output_format, so it cannot be resumed with "
            f"output_format={output.name}; resume it without one, or start a new run with it."
        )
    if saved.schema != output.fingerprint:
        raise ParamsError(
            f"the saved run {run} was started with another output_format: the JSON schema of {output.name} is not "
            "the one it sent. Resume it with the output_format it was started with, or start a new run for the "
            "new schema."
        )
    if state.reply is None:
        return state
    return state.replace(reply=output.parse(state.reply))


def answer_judged(state: RunState, output: OutputFormat) -> tuple[RunState, OutputValidationError | None]:
    """The state ``turn_finished`` made, once the model's final answer is judged: an answer that
    fits (or a refusal, or a loop that ended otherwise) leaves it as it is; one that does not is
    sent back with its errors (``retry_message``: the loop goes on) while retries are left, and
    otherwise ends the run with the error to raise."""
    reply = state.reply
    record = state.output or output.record()
    if (
        state.phase is not Phase.DONE
        or state.end_reason != "model"
        or reply is None
        or reply.stop_reason == "refusal"
    ):
        return state, None
    errors = output.errors(reply)
    if not errors:
        return (state if record.retries == 0 else state.replace(output=OutputRecord(record.schema))), None
    if record.retries < output.retries:
        retried = OutputRecord(record.schema, record.retries + 1)
        return state.replace(
            messages=sent_back(state.messages, retry_message(errors), reply.stop_reason),
            phase=Phase.READY,
            end_reason=None,
            output=retried,
        ), None
    tries = record.retries + 1
    error = OutputValidationError(
        f"the model's answer does not fit output_format={output.name} after {tries} tr{'y' if tries == 1 else 'ies'} "
        f"(output_retries={output.retries}): "
        + "; ".join(errors)[:1000]
        + ". The run ended with that answer (error.answer); "
        "raise output_retries=..., or make the schema or the prompt easier to follow.",
        reply,
        errors,
    )
    return state.replace(output=OutputRecord(record.schema)), error


def retry_message(errors: tuple[str, ...]) -> dict[str, Any]:
    """The user message that sends an answer's errors back to the model."""
    lines = "\n".join(f"- {line}" for line in errors)
    return {"role": "user", "content": f"{RETRY_INTRO}\n{lines}\n{RETRY_OUTRO}"}


def sent_back(messages: tuple[Any, ...], message: dict[str, Any], stop_reason: str | None) -> tuple[Any, ...]:
    """The history with ``message`` (a user message of text: why the final answer is asked for
    again) appended. An answer whose reply holds tool calls that never ran (it stopped for another
    reason than ``tool_use``: a ``max_tokens`` cut, say) has each answered first, in the same
    message, as the service requires of the message after a ``tool_use``."""
    calls = client_tool_calls(messages[-1]) if messages else ()
    if not calls:
        return (*messages, message)
    reason = stop_reason or "no stop reason"
    results: list[Any] = [
        tool_result_block(
            call.id, NOT_RUN_SENT_BACK.format(name=call.name, stop_reason=reason), is_error=True
        )
        for call in calls
    ]
    return (*messages, {"role": "user", "content": [*results, {"type": "text", "text": message["content"]}]})


def error_lines(error: pydantic.ValidationError) -> tuple[str, ...]:
    """A validation error as lines a model can act on: where, what, and the value it gave."""
    lines: list[str] = []
    for item in error.errors(include_url=False):
        where = ".".join(str(part) for part in item["loc"])
        message = item["msg"]
        if item["type"] != "json_invalid" and where:
            given = json.dumps(item.get("input"), ensure_ascii=False, default=repr)
            if len(given) > 80:
                given = given[:77] + "..."
            message = f"{message} (got {given})"
        lines.append(f"{where}: {message}" if where else message)
    return tuple(lines)

"""``_core.output``, pure: the schema's identity, a reply's answer parsed and judged, the retry."""

from __future__ import annotations

from typing import Any, cast

import pydantic
import pytest
from anthropic.types import Message

from toolrunner import OutputValidationError, ParamsError, Phase, Reply, RunState
from toolrunner._core.output import (
    RETRY_INTRO,
    answer_judged,
    output_format_of,
    output_resumed,
    retry_message,
)
from toolrunner._core.state import OutputRecord


class Point(pydantic.BaseModel):
    x: int
    y: int


def reply(text: str | None, stop_reason: str = "end_turn") -> Message:
    content: list[dict[str, Any]] = [] if text is None else [{"type": "text", "text": text}]
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "m",
            "content": content,
            "stop_reason": stop_reason,
            "usage": {"input_tokens": 1, "output_tokens": 1},
        }
    )


def parsed(message: object) -> Any:
    return cast(Any, message).parsed_output


def ended(answer: Reply, retries: int = 0, *, end_reason: str = "model") -> RunState:
    """A state as ``turn_finished`` leaves it once the model answered."""
    return RunState(
        params={},
        messages=({"role": "user", "content": "Where?"}, {"role": "assistant", "content": answer.content}),
        phase=Phase.DONE,
        reply=answer,
        end_reason=end_reason,  # pyright: ignore[reportArgumentType]
        output=OutputRecord(schema=output_format_of(Point, 1, {}).fingerprint, retries=retries),
    )


def test_the_fingerprint_is_the_schemas_identity() -> None:
    class Same(pydantic.BaseModel):
        x: int
        y: int

    class Other(pydantic.BaseModel):
        x: int
        z: int

    assert output_format_of(Point, 1, {}).fingerprint == output_format_of(Point, 3, {}).fingerprint
    assert output_format_of(Point, 1, {}).fingerprint != output_format_of(Other, 1, {}).fingerprint
    # The title is part of the schema sent, so a model of another name is another schema.
    assert output_format_of(Same, 1, {}).fingerprint != output_format_of(Point, 1, {}).fingerprint


def test_the_request_gets_the_sdks_format_merged_into_output_config() -> None:
    output = output_format_of(Point, 1, {})
    assert output.request({"output_config": {"effort": "low"}})["output_config"] == {
        "effort": "low",
        "format": output.format_param,
    }
    assert output.request({"output_config": {}})["output_config"] == {"format": output.format_param}
    assert output.format_param["type"] == "json_schema"


def test_an_answer_that_fits_ends_the_run_and_is_parsed() -> None:
    output = output_format_of(Point, 1, {})
    answer = output.parse(reply('{"x": 1, "y": 2}'))
    state, error = answer_judged(ended(answer), output)
    assert error is None
    assert state.phase is Phase.DONE
    assert parsed(answer) == Point(x=1, y=2)


def test_an_answer_that_does_not_fit_is_sent_back_while_retries_are_left() -> None:
    output = output_format_of(Point, 2, {})
    answer = output.parse(reply('{"x": 1, "y": "two"}'))
    assert parsed(answer) is None
    state, error = answer_judged(ended(answer, retries=1), output)
    assert error is None
    assert state.phase is Phase.READY
    assert state.end_reason is None
    assert state.output == OutputRecord(state.output.schema if state.output else "", 2)
    assert state.messages[-1]["role"] == "user"
    assert state.messages[-1]["content"].startswith(RETRY_INTRO)
    assert (
        'y: Input should be a valid integer, unable to parse string as an integer (got "two")'
        in (state.messages[-1]["content"])
    )


def test_the_last_retry_used_up_gives_the_error_and_resets_the_count() -> None:
    output = output_format_of(Point, 1, {})
    answer = output.parse(reply("no"))
    state, error = answer_judged(ended(answer, retries=1), output)
    assert isinstance(error, OutputValidationError)
    assert error.answer is answer
    assert error.errors[0].startswith("Invalid JSON")
    assert state.phase is Phase.DONE
    assert state.output is not None
    assert state.output.retries == 0


@pytest.mark.parametrize(
    "state",
    [
        pytest.param(ended(reply("no", stop_reason="refusal")), id="refusal"),
        pytest.param(ended(reply("no"), end_reason="max_iterations"), id="a-limit"),
        pytest.param(ended(reply("no")).replace(phase=Phase.READY, end_reason=None), id="the-loop-goes-on"),
    ],
)
def test_only_the_models_final_answer_is_judged(state: RunState) -> None:
    assert answer_judged(state, output_format_of(Point, 1, {})) == (state, None)


def test_an_answer_without_text_does_not_fit() -> None:
    output = output_format_of(Point, 1, {})
    state, _ = answer_judged(ended(output.parse(reply(None))), output)
    assert "has no text" in state.messages[-1]["content"]


def test_a_resumed_state_is_parsed_again_and_its_schema_checked() -> None:
    output = output_format_of(Point, 1, {})
    saved = ended(reply('{"x": 1, "y": 2}')).replace(run_id="r")
    assert parsed(output_resumed(saved, output).reply) == Point(x=1, y=2)
    with pytest.raises(ParamsError, match="started with another output_format"):
        output_resumed(saved.replace(output=OutputRecord("sha256:other")), output)


def test_the_retry_message_is_one_line_per_error() -> None:
    assert retry_message(("a: wrong", "b: missing")) == {
        "role": "user",
        "content": f"{RETRY_INTRO}\n- a: wrong\n- b: missing\nAnswer again, with JSON that matches the schema.",
    }


def test_a_state_with_an_output_record_is_saved_and_read_back() -> None:
    state = ended(reply('{"x": 1, "y": 2}'), retries=1)
    data = state.to_dict()
    assert data["output"] == {"schema": state.output.schema if state.output else None, "retries": 1}
    assert RunState.from_dict(data).output == state.output
    without = {key: value for key, value in data.items() if key != "output"}  # as older states are
    assert RunState.from_dict(without).output is None

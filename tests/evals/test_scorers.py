"""Scorers: ``run_scorer`` turns whatever a scorer does (a Score, a bool, a number, an awaitable, a
bad value, an exception) into a Score; ``scorer_name``; the built-ins ``same_calls``,
``final_answer_equal``, ``output_fields`` and ``model_graded`` (against the fake Messages API), on
trajectories built directly and on trajectories of real runs; and the property that ``same_calls``
agrees with ``compare``'s first divergent turn."""

from __future__ import annotations

import functools
import math
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pydantic
import pytest
from hypothesis import given, strategies as st

from tests.support.helpers import MODEL, USER, make_runner
from toolrunner import tool
from toolrunner.evals import (
    Call,
    Score,
    Trajectory,
    Turn,
    compare,
    final_answer_equal,
    model_graded,
    output_fields,
    run_scorer,
    same_calls,
    scorer_name,
    trajectory_of,
)
from toolrunner.testing import FakeMessagesAPI, fault, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio


Calls = list[tuple[str, dict[str, Any]]]


def run(*turns: Calls, answer: str | None = "done", output: object = None) -> Trajectory:
    """A trajectory whose turns make these calls (tool, input), then ends with ``answer``."""
    built = [
        Turn(
            index,
            f"turn {index}",
            tuple(Call(f"t{index}.{n}", name, value, "ok") for n, (name, value) in enumerate(calls)),
        )
        for index, calls in enumerate(turns)
    ]
    if answer is not None:
        built.append(Turn(len(built), answer))
    return Trajectory("run", tuple(built), answer, output=output, task="What is the weather in Paris?")


RECORD = run([("search", {"q": "paris"})], [("weather", {"city": "Paris"})], answer="Sunny, 21 °C.")


# -- run_scorer and scorer_name -------------------------------------------------------------------


async def test_a_score_is_kept_as_it_is() -> None:
    score = Score(0.25, passed=None, detail="a quarter")
    assert await run_scorer(lambda recorded, replayed: score, RECORD, RECORD) is score


@pytest.mark.parametrize(
    ("value", "expected"), [(True, Score(1.0, passed=True)), (False, Score(0.0, passed=False))]
)
async def test_a_bool_is_a_passed_or_failed_score(value: bool, expected: Score) -> None:
    assert await run_scorer(lambda recorded, replayed: value, RECORD, RECORD) == expected


@pytest.mark.parametrize("value", [0, 1, 0.5, Fraction(1, 3), Decimal("0.75")])
async def test_a_number_from_0_to_1_is_a_score_without_a_verdict(value: float) -> None:
    score = await run_scorer(lambda recorded, replayed: value, RECORD, RECORD)
    assert score == Score(float(value))
    assert score.passed is None


@pytest.mark.parametrize(
    "value", [1.5, -0.1, math.nan, math.inf, 10**400, None, "0.5", [1.0], Decimal("sNaN")]
)
async def test_a_bad_value_is_a_failed_score_that_says_what_a_scorer_must_return(value: object) -> None:
    def sloppy(recorded: Trajectory, replayed: Trajectory) -> Any:
        return value

    score = await run_scorer(sloppy, RECORD, RECORD)
    assert (score.value, score.passed) == (0.0, False)
    assert "'sloppy' returned" in score.detail
    assert "must return a Score, a bool, or a number from 0 to 1" in score.detail
    assert type(value).__name__ in score.detail


async def test_a_scorer_that_raises_gets_a_failed_score_naming_the_exception() -> None:
    def broken(recorded: Trajectory, replayed: Trajectory) -> bool:
        raise KeyError("answer")

    score = await run_scorer(broken, RECORD, RECORD)
    assert (score.value, score.passed) == (0.0, False)
    assert score.detail == "the scorer 'broken' raised KeyError: 'answer'"


async def test_an_async_scorer_is_awaited_and_its_errors_are_caught_too() -> None:
    async def graded(recorded: Trajectory, replayed: Trajectory) -> float:
        return 0.5

    async def failing(recorded: Trajectory, replayed: Trajectory) -> float:
        raise RuntimeError("the grader is down")

    assert await run_scorer(graded, RECORD, RECORD) == Score(0.5)
    score = await run_scorer(failing, RECORD, RECORD)
    assert (score.passed, score.detail) == (
        False,
        "the scorer 'failing' raised RuntimeError: the grader is down",
    )


async def test_the_scorer_gets_the_recorded_then_the_replayed_trajectory() -> None:
    other = run(answer="Rain.")
    seen: list[tuple[Trajectory, Trajectory]] = []

    def spy(recorded: Trajectory, replayed: Trajectory) -> bool:
        seen.append((recorded, replayed))
        return True

    await run_scorer(spy, RECORD, other)
    assert seen == [(RECORD, other)]


def test_a_scorer_is_named_by_its_name_attribute_then_its_function_then_its_class() -> None:
    class Judge:
        def __call__(self, recorded: Trajectory, replayed: Trajectory) -> bool:
            return True

    named = Judge()
    named.name = "strict judge"  # type: ignore[attr-defined]
    assert scorer_name(same_calls) == "same_calls"
    assert scorer_name(named) == "strict judge"
    assert scorer_name(Judge()) == "Judge"
    assert scorer_name(functools.partial(final_answer_equal)) == "partial"
    assert scorer_name(output_fields("city", "celsius")) == "output_fields(city, celsius)"
    assert scorer_name(model_graded(FakeMessagesAPI().async_client(), model=MODEL)) == "model_graded"
    assert scorer_name(model_graded(FakeMessagesAPI().async_client(), model=MODEL, name="judge")) == "judge"


# -- same_calls ----------------------------------------------------------------------------------------


def test_same_calls_passes_for_the_same_calls_written_differently() -> None:
    replay = run([("search", {"q": " paris "})], [("weather", {"city": "Paris"})], answer="Other words.")
    assert same_calls(RECORD, replay) == Score(1.0, passed=True, detail="the same 2 calls")


@pytest.mark.parametrize(
    ("replay", "detail"),
    [
        (
            run([("search", {"q": "paris"})], [("weather", {"city": "Rome"})]),
            'call 1 of turn 1: the record calls weather({"city": "Paris"}), the replay weather({"city": "Rome"})',
        ),
        (
            run([("search", {"q": "paris"})]),
            'call 1 of turn 1: the record calls weather({"city": "Paris"}); the replay makes no such call',
        ),
        (
            run([("search", {"q": "paris"})], [("weather", {"city": "Paris"}), ("clock", {})]),
            "call 2 of turn 1: the replay calls clock({}); the record makes no such call",
        ),
        (  # the same calls in fewer turns: not the same
            run([("search", {"q": "paris"}), ("weather", {"city": "Paris"})]),
            'call 2 of turn 0: the replay calls weather({"city": "Paris"}); the record makes no such call',
        ),
    ],
)
def test_same_calls_fails_and_names_the_first_difference(replay: Trajectory, detail: str) -> None:
    assert same_calls(RECORD, replay) == Score(0.0, passed=False, detail=detail)


def test_same_calls_does_not_count_turns_without_calls_at_the_end() -> None:
    longer = Trajectory("run", (*RECORD.turns, Turn(3, "and more")), "and more")
    assert same_calls(RECORD, longer).passed is True
    assert compare(RECORD, longer).first_divergent_turn == 3  # the comparison counts every turn


_CALLS = st.lists(
    st.lists(
        st.tuples(st.sampled_from(["a", "b"]), st.fixed_dictionaries({"x": st.integers(0, 2)})), max_size=2
    ),
    min_size=0,
    max_size=4,
)


@given(_CALLS, _CALLS)
def test_same_calls_passes_exactly_when_no_turn_diverges(ours: list[Calls], theirs: list[Calls]) -> None:
    # Runs with as many turns as each other (padded with turns that make no call).
    size = max(len(ours), len(theirs))
    nothing: list[Calls] = [[]]
    recorded = run(*ours, *nothing * (size - len(ours)), answer=None)
    replayed = run(*theirs, *nothing * (size - len(theirs)), answer=None)
    assert len(recorded.turns) == len(replayed.turns)
    assert same_calls(recorded, replayed).passed is (compare(recorded, replayed).first_divergent_turn is None)


# -- final_answer_equal ------------------------------------------------------------------------------


def test_final_answer_equal_strips_white_space_around_the_answers() -> None:
    assert final_answer_equal(RECORD, run(answer="\n  Sunny, 21 °C.  ")) == Score(
        1.0, passed=True, detail="the same final answer"
    )


def test_final_answer_equal_fails_on_another_answer_and_quotes_both() -> None:
    score = final_answer_equal(RECORD, run(answer="Rain, 12 °C."))
    assert (score.value, score.passed) == (0.0, False)
    assert (
        score.detail == "the final answers differ: the record's 'Sunny, 21 °C.', the replay's 'Rain, 12 °C.'"
    )
    long = final_answer_equal(RECORD, run(answer="x" * 500)).detail
    assert len(long) < 250
    assert "…" in long


def test_final_answer_equal_without_answers() -> None:
    none = run(answer=None)
    assert final_answer_equal(none, none) == Score(1.0, passed=True, detail="neither run gave a final answer")
    assert final_answer_equal(RECORD, none) == Score(
        0.0, passed=False, detail="the replay gave no final answer"
    )
    assert final_answer_equal(none, RECORD) == Score(
        0.0, passed=False, detail="the record gave no final answer"
    )


def test_final_answer_equal_compares_typed_answers_as_data() -> None:
    recorded = run(answer='{"city": "Paris", "celsius": 21}', output={"city": "Paris", "celsius": 21})
    same = run(answer='{"celsius":21.0,"city":"Paris"}', output={"celsius": 21.0, "city": "Paris"})
    other = run(answer='{"city": "Paris", "celsius": 22}', output={"city": "Paris", "celsius": 22})
    untyped = run(answer='{"city": "Paris", "celsius": 21}')
    assert final_answer_equal(recorded, same).passed is True
    score = final_answer_equal(recorded, other)
    assert score.passed is False
    assert '"celsius": 22' in score.detail
    assert final_answer_equal(recorded, untyped) == Score(
        0.0, passed=False, detail="the replay has no typed answer"
    )


# -- output_fields ---------------------------------------------------------------------------------


def test_output_fields_scores_the_fraction_of_equal_fields_and_lists_the_others() -> None:
    recorded = run(output={"city": "Paris", "celsius": 21, "sky": "clear", "note": "x", "rain": None})
    replayed = run(output={"city": "Paris", "celsius": 23, "sky": "cloudy", "note": "y", "rain": 0})
    score = output_fields("city", "celsius", "sky", "wind")(recorded, replayed)
    assert score == Score(0.5, passed=False, detail="these fields differ: celsius, sky")
    assert output_fields("city", "wind")(recorded, replayed) == Score(
        1.0, passed=True, detail="2 of 2 fields equal"
    )
    assert output_fields("rain")(recorded, replayed).passed is False  # null is not 0


def test_output_fields_reads_a_field_an_answer_lacks_as_null() -> None:
    recorded = run(output={"city": "Paris", "wind": None})
    replayed = run(output={"city": "Paris"})
    assert output_fields("city", "wind")(recorded, replayed).passed is True
    assert output_fields("wind")(recorded, run(output={"wind": "calm"})).passed is False


def test_output_fields_without_typed_answers_fails() -> None:
    typed = run(output={"city": "Paris"})
    assert output_fields("city")(RECORD, typed) == Score(
        0.0, passed=False, detail="the record has no typed answer with fields"
    )
    assert (
        output_fields("city")(typed, run(output=[1, 2])).detail
        == "the replay has no typed answer with fields"
    )


@pytest.mark.parametrize("names", [(), ("",), ("city", 3)])
def test_output_fields_needs_names(names: tuple[Any, ...]) -> None:
    with pytest.raises(ValueError, match="output_fields"):
        output_fields(*names)


# -- on real runs -------------------------------------------------------------------------------------


class Weather(pydantic.BaseModel):
    city: str
    celsius: int


@tool
def weather(city: str) -> str:
    """The weather in a city.

    Args:
        city: The city.
    """
    return f"{city}: sunny"


async def _run(*replies: Any, **options: Any) -> Trajectory:
    fake = FakeMessagesAPI(list(replies))
    runner = make_runner(fake, weather, **options)
    await runner.until_done()
    return trajectory_of(runner.state)


async def test_the_scorers_on_trajectories_of_real_runs() -> None:
    recorded = await _run(tool_reply(tool_call("weather", {"city": "Paris"})), text_reply("Sunny in Paris."))
    same = await _run(tool_reply(tool_call("weather", {"city": "Paris"})), text_reply(" Sunny in Paris.\n"))
    other = await _run(tool_reply(tool_call("weather", {"city": "Berlin"})), text_reply("Sunny in Berlin."))
    assert recorded.task == USER["content"]
    assert same_calls(recorded, same).passed is True
    assert final_answer_equal(recorded, same).passed is True
    assert same_calls(recorded, other).passed is False
    assert final_answer_equal(recorded, other).passed is False


async def test_the_scorers_on_typed_answers_of_real_runs() -> None:
    recorded = await _run(text_reply('{"city": "Paris", "celsius": 21}'), output_format=Weather)
    warmer = await _run(text_reply('{"celsius": 23, "city": "Paris"}'), output_format=Weather)
    assert recorded.output == {"city": "Paris", "celsius": 21}
    assert final_answer_equal(recorded, warmer).passed is False
    assert output_fields("city", "celsius")(recorded, warmer) == Score(
        0.5, passed=False, detail="these fields differ: celsius"
    )


# -- model_graded ----------------------------------------------------------------------------------


async def test_model_graded_forces_the_grade_tool_and_shows_the_task_and_both_answers() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("grade", {"score": 0.75, "reason": "Less precise."}))])
    scorer = model_graded(fake.async_client(), model=MODEL, rubric="Temperatures must match.", max_tokens=300)
    replay = run(answer="Warm and <b>sunny</b>.")
    assert await run_scorer(scorer, RECORD, replay) == Score(0.75, detail="Less precise.")
    [request] = fake.requests
    assert request.body["model"] == MODEL
    assert request.body["max_tokens"] == 300
    assert request.body["tool_choice"] == {"type": "tool", "name": "grade"}
    [grade] = request.tools
    assert grade["name"] == "grade"
    assert grade["input_schema"]["required"] == ["score", "reason"]
    prompt = request.messages[0]["content"]
    for part in (
        "What is the weather in Paris?",
        "Sunny, 21 °C.",
        "Warm and <b>sunny</b>.",
        "Temperatures must match.",
    ):
        assert part in prompt
    assert prompt.index("Sunny, 21 °C.") < prompt.index(
        "Warm and <b>sunny</b>."
    )  # the record, then the replay


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (text_reply("I'd say 0.8."), "it did not call the grade tool"),
        (tool_reply(tool_call("weather", {"score": 1, "reason": "ok"})), "it did not call the grade tool"),
        (
            tool_reply(tool_call("grade", {"score": 1.5, "reason": "great"})),
            "its score is 1.5, not a number from 0 to 1",
        ),
        (tool_reply(tool_call("grade", {"score": True, "reason": "great"})), "its score is True"),
        (tool_reply(tool_call("grade", {"score": "0.5", "reason": "great"})), "its score is '0.5'"),
        (tool_reply(tool_call("grade", {"score": 0.5})), "its reason is None, not a string"),
    ],
)
async def test_a_malformed_grade_is_a_failed_score_saying_so(reply: Any, why: str) -> None:
    fake = FakeMessagesAPI([reply])
    score = await run_scorer(model_graded(fake.async_client(), model=MODEL), RECORD, run(answer="Rain."))
    assert (score.value, score.passed) == (0.0, False)
    assert score.detail.startswith("the grader's answer was malformed: ")
    assert why in score.detail


async def test_model_graded_sends_nothing_for_a_replay_without_an_answer() -> None:
    fake = FakeMessagesAPI()
    score = await model_graded(fake.async_client(), model=MODEL)(RECORD, run(answer=None))
    assert score == Score(0.0, passed=False, detail="the replay gave no final answer to grade")
    assert fake.requests == []


async def test_an_error_of_the_grader_s_request_becomes_the_score_s_detail() -> None:
    fake = FakeMessagesAPI([fault(529)])
    score = await run_scorer(model_graded(fake.async_client(), model=MODEL, name="judge"), RECORD, RECORD)
    assert score.passed is False
    assert score.detail.startswith("the scorer 'judge' raised OverloadedError")


@pytest.mark.parametrize(
    "arguments", [{"model": ""}, {"model": MODEL, "max_tokens": 0}, {"model": MODEL, "name": ""}]
)
def test_model_graded_checks_its_arguments(arguments: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="model_graded"):
        model_graded(FakeMessagesAPI().async_client(), **arguments)


async def test_a_scorer_whose_value_or_error_cannot_be_shown_still_gives_a_failed_score() -> None:
    class Unshowable:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no str")

    def bad_value(recorded: Trajectory, replayed: Trajectory) -> object:
        return Unshowable()

    def bad_error(recorded: Trajectory, replayed: Trajectory) -> object:
        raise Unprintable

    def bad_detail(recorded: Trajectory, replayed: Trajectory) -> object:
        return Score(0.5, detail=None)  # type: ignore[arg-type]

    empty = Trajectory("r", (), None)
    for scorer, said in (
        (bad_value, "__repr__ raised"),
        (bad_error, "__str__ raised"),
        (bad_detail, "Score(detail)"),
    ):
        score = await run_scorer(scorer, empty, empty)  # type: ignore[arg-type]
        assert score.passed is False
        assert said in score.detail

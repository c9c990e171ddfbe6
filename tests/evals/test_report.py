"""A ``ReplayReport`` for people: ``render_table`` (its columns, totals, shortened ids, the budget's
stop, no colour codes) and ``render_html`` (one page that loads nothing, escapes what the runs hold,
shows the two trajectories turn by turn with the first divergent turn marked); and a report from
``replay_runs`` with scorers, sync, async and raising, rendered both ways."""

from __future__ import annotations

import re
from decimal import Decimal
from html.parser import HTMLParser

import anyio.lowlevel
import pytest

from tests.support.helpers import USER, make_runner
from toolrunner import MemoryCheckpointer, Usage, tool
from toolrunner.evals import (
    Call,
    Replay,
    ReplayReport,
    RunReplay,
    Score,
    Trajectory,
    Turn,
    compare,
    final_answer_equal,
    render_html,
    render_table,
    replay_runs,
    same_calls,
)
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

SCRIPT = "<script>alert('x')</script>"


def trajectory(
    *turns: Turn, answer: str | None, cost: str | None = "0.0100", tokens: int = 0, output: object = None
) -> Trajectory:
    return Trajectory(
        "run",
        turns,
        answer,
        output=output,
        usage=Usage(input_tokens=tokens),
        cost=None if cost is None else Decimal(cost),
        end_reason="model" if answer is not None else "max_iterations",
    )


RECORDED = trajectory(
    Turn(0, "Let me look.", (Call("a", "search", {"q": "paris"}, "found it"),)),
    Turn(1, "It is sunny."),
    answer="It is sunny.",
    tokens=1000,
)
REPLAYED = trajectory(
    Turn(0, "Let me look.", (Call("a", "search", {"q": "paris"}, "found it", answered="journal"),)),
    Turn(
        1,
        "One more.",
        (
            Call(
                "b", "send_email", {"to": "boss", "body": SCRIPT}, "not run", is_error=True, answered="marked"
            ),
        ),
    ),
    Turn(2, f"Done {SCRIPT}"),
    answer=f"Done {SCRIPT}",
    cost="0.0110",
    tokens=1100,
)
SAME = trajectory(*REPLAYED.turns[:1], Turn(1, "It is sunny."), answer="It is sunny.", tokens=1000)
LONG_ID = "support-conversation-2024-06-01-0123456789abcdef-fedcba9876543210-final"


def report(*, stopped_by_budget: bool = False, estimate: str | None = "0.0500") -> ReplayReport:
    return ReplayReport(
        name="prompt-v2",
        runs=(
            RunReplay(
                LONG_ID,
                "prompt-v2.1",
                "replayed",
                RECORDED,
                REPLAYED,
                compare(RECORDED, REPLAYED),
                {
                    "same_calls": Score(0.0, passed=False, detail=f"differs at {SCRIPT}"),
                    "graded": Score(0.5, detail="half as good"),
                },
            ),
            RunReplay(
                "run-2",
                "prompt-v2.2",
                "replayed",
                RECORDED,
                SAME,
                compare(RECORDED, SAME),
                {"same_calls": Score(1.0, passed=True), "graded": Score(1.0)},
            ),
            RunReplay("run-3", "prompt-v2.3", "failed", RECORDED, error="RuntimeError: the model\nfell over"),
            RunReplay("run-4", "prompt-v2.4", "stopped", RECORDED, error="the budget was spent"),
        ),
        estimate=None if estimate is None else Decimal(estimate),
        stopped_by_budget=stopped_by_budget,
    )


# -- the table ---------------------------------------------------------------------------------------


def rows(table: str) -> list[list[str]]:
    """The table's header and run rows, split on runs of two spaces or more."""
    lines = table.split("\n\n")[0].splitlines()
    return [re.split(r"\s{2,}", line.strip()) for index, line in enumerate(lines) if index != 1]


def test_the_table_has_a_row_per_run_with_its_comparison_and_scores() -> None:
    header, first, second, failed, stopped = rows(render_table(report(), width=200))
    assert header == [
        "run",
        "status",
        "1st diff",
        "calls",
        "diverged",
        "answer",
        "tokens",
        "cost",
        "same_calls",
        "graded",
    ]
    assert first == [
        LONG_ID,
        "replayed",
        "turn 1",
        "+1/-0",
        "1",
        "changed",
        "+100",
        "+$0.0010",
        "0.00 fail",
        "0.50",
    ]
    assert second == [
        "run-2",
        "replayed",
        "none",
        "+0/-0",
        "0",
        "same",
        "+0",
        "+$0.0000",
        "1.00 pass",
        "1.00",
    ]
    assert failed == ["run-3", "failed", "-", "-", "-", "-", "-", "-", "-", "-"]
    assert stopped[:2] == ["run-4", "stopped"]


def test_the_table_ends_with_the_totals_and_the_errors() -> None:
    table = render_table(report(), width=300)
    totals = table.split("\n\n")[1]
    assert totals.startswith("totals: 4 runs: 2 replayed, 1 failed, 1 stopped; ")
    assert "cost $0.0400 recorded, $0.0210 replayed" in totals
    assert "estimate $0.0500" in totals
    assert "mean same_calls 0.50" in totals
    assert "mean graded 0.75" in totals
    assert "stopped by budget" not in totals
    assert "run-3 (failed): RuntimeError: the model fell over" in totals
    assert "run-4 (stopped): the budget was spent" in totals
    assert "\x1b" not in table  # no colour codes


def test_the_totals_say_when_the_budget_stopped_it_and_leave_out_a_missing_estimate() -> None:
    totals = render_table(report(stopped_by_budget=True, estimate=None), width=300).split("\n\n")[1]
    assert "stopped by budget" in totals
    assert "estimate" not in totals


def test_an_unpriced_cost_is_not_applicable() -> None:
    free = trajectory(answer="x", cost=None)
    table = render_table(
        ReplayReport("e", (RunReplay("r", "e.r", "replayed", free, free, compare(free, free)),))
    )
    assert rows(table)[1][7] == "n/a"
    assert "cost n/a recorded, n/a replayed" in table


def test_a_narrow_table_shortens_long_ids_in_the_middle_and_fits() -> None:
    table = render_table(report(), width=100)
    runs = table.split("\n\n")[0].splitlines()
    assert all(len(line) <= 100 for line in runs), runs
    shown = rows(table)[1][0]
    assert "…" in shown
    assert shown.startswith("support-")
    assert shown.endswith("-final")
    assert len(shown) < len(LONG_ID)
    assert all(len(line) <= 100 for line in table.split("\n\n")[1].splitlines())  # the totals wrap too


def test_a_table_too_narrow_for_its_columns_keeps_them_whole() -> None:
    table = render_table(report(), width=20)
    assert rows(table)[1][2:6] == ["turn 1", "+1/-0", "1", "changed"]


def test_a_scorer_s_long_name_is_shortened_in_the_header() -> None:
    name = "output_fields(city, celsius, sky, wind, humidity)"
    run = RunReplay(
        "r", "e.r", "replayed", RECORDED, SAME, compare(RECORDED, SAME), {name: Score(1.0, passed=True)}
    )
    header = rows(render_table(ReplayReport("e", (run,)), width=90))[0]
    assert header[-1].startswith("output_f")
    assert header[-1].endswith("…")


@pytest.mark.parametrize("width", [0, 19, -5, 1.5, True, "80"])
def test_a_width_the_table_cannot_fit_is_refused(width: object) -> None:
    with pytest.raises(ValueError, match="at least 20"):
        render_table(report(), width=width)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


def test_control_characters_in_names_and_errors_are_shown_as_escapes() -> None:
    name = "graded\x1b[2J\nby model"
    run = RunReplay(
        "r", "e.r", "replayed", RECORDED, SAME, compare(RECORDED, SAME), {name: Score(0.5, passed=True)}
    )
    failed = RunReplay("f", "e.f", "failed", RECORDED, error="ToolError: \x1b]0;owned\x07 \x9b31m")
    table = render_table(ReplayReport("e", (run, failed)), width=300)
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f]", table)  # only the table's own line breaks
    assert len(table.splitlines()) == 7  # header, rule, two rows, blank, totals, the one error
    assert "graded\\x1b[2J\\nby model" in table
    assert "ToolError: \\x1b]0;owned\\x07 \\x9b31m" in table


def test_the_report_s_methods_render_it() -> None:
    assert report().table(width=120) == render_table(report(), width=120)
    assert report().html() == render_html(report())


# -- the page ----------------------------------------------------------------------------------------


class Tags(HTMLParser):
    """Every start tag with its attributes, and whether the tags close in order."""

    VOID = frozenset({"meta", "br", "hr", "img", "link", "input"})

    def __init__(self) -> None:
        super().__init__()
        self.started: list[tuple[str, dict[str, str | None]]] = []
        self.open: list[str] = []
        self.mismatched: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.started.append((tag, dict(attrs)))
        if tag not in self.VOID:
            self.open.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.open or self.open.pop() != tag:
            self.mismatched.append(tag)


def parse(page: str) -> Tags:
    tags = Tags()
    tags.feed(page)
    tags.close()
    return tags


def test_the_page_escapes_what_the_runs_hold() -> None:
    page = render_html(report())
    assert "<script" not in page.lower()
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page  # the answer, the input, a detail
    tags = parse(page)
    assert not tags.mismatched
    assert not tags.open
    assert {tag for tag, _ in tags.started} <= {
        "html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "p", "table", "thead",
        "tbody", "tr", "th", "td", "a", "section", "details", "summary", "code", "strong", "div",
        "span", "pre",
    }  # fmt: skip


def test_the_page_loads_nothing_from_anywhere() -> None:
    page = render_html(report())
    for tag, attributes in parse(page).started:
        for name in ("src", "href", "action", "srcset"):
            value = attributes.get(name)
            assert value is None or value.startswith("#"), (tag, name, value)
    assert "url(" not in page
    assert "@import" not in page
    assert "//" not in page.split("<body>")[0].replace("<!DOCTYPE html>", "")  # no address in the head
    assert "default-src &#x27;none&#x27;" in page or "default-src 'none'" in page  # the CSP forbids the rest


def test_the_page_shows_each_run_side_by_side_with_the_first_divergent_turn_marked() -> None:
    page = render_html(report())
    first = page[page.index('id="run-0"') : page.index('id="run-1"')]
    assert re.search(r'<tr id="run-0-turn-1" class="divergent"><th class="turn">1<span class="mark">', first)
    assert first.count("first divergent turn") == 2  # the fact, and the mark on its row
    assert '<tr id="run-0-turn-0">' in first
    assert (
        '<span class="answered">marked (divergence)</span> <span class="error">error result</span>' in first
    )
    assert '<span class="answered">journal</span>' in first
    assert first.count('class="call divergence"') == 1
    assert "&quot;to&quot;: &quot;boss&quot;" in first  # the input, as JSON
    assert "no such turn" in first  # the record has no turn 2
    assert "half as good" in first
    assert "&lt;details open&gt;" not in first
    assert "<details open>" in first  # a run that changed is open
    second = page[page.index('id="run-1"') : page.index('id="run-2"')]
    assert "<details>" in second  # a run that did not change is folded
    assert 'class="divergent"' not in second
    failed = page[page.index('id="run-2"') :]
    assert "RuntimeError: the model\nfell over" in failed
    assert "(no replay)" in failed


def test_the_page_cuts_long_results_and_shows_typed_answers_as_json() -> None:
    turn = Turn(0, "", (Call("a", "fetch", {"url": "x"}, "y" * 10_000),))
    typed = trajectory(turn, Turn(1, '{"b": 1, "a": 2}'), answer='{"b": 1, "a": 2}', output={"b": 1, "a": 2})
    page = render_html(
        ReplayReport("e", (RunReplay("r", "e.r", "replayed", typed, typed, compare(typed, typed)),))
    )
    assert "y" * 2_000 + "… (8,000 more characters)" in page
    assert "y" * 2_001 not in page
    assert "{\n  &quot;a&quot;: 2,\n  &quot;b&quot;: 1\n}" in page


def test_the_page_has_the_summary_and_the_totals() -> None:
    page = render_html(report(stopped_by_budget=True))
    assert "<title>Replay report: prompt-v2</title>" in page
    assert f'<a href="#run-0">{LONG_ID}</a>' in page  # whole in the page
    assert "Stopped by budget" in page
    assert "4 runs: 2 replayed, 1 failed, 1 stopped" in page
    assert '<td class="num fail">0.00 fail</td>' in page
    assert '<td class="num pass">1.00 pass</td>' in page


@pytest.mark.parametrize("render", [render_table, render_html])
def test_an_empty_report_renders(render: object) -> None:
    empty = ReplayReport("nothing", ())
    text = render_table(empty) if render is render_table else render_html(empty)
    assert "0 runs" in text


# -- from replay_runs --------------------------------------------------------------------------------


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(name="get_weather")
def get_weather_must_not_run(city: str) -> str:
    """The weather in a city."""
    raise AssertionError("a replay ran a recorded tool")


async def slow_judge(recorded: Trajectory, replayed: Trajectory) -> float:
    await anyio.lowlevel.checkpoint()
    return 0.5


def broken(recorded: Trajectory, replayed: Trajectory) -> bool:
    raise RuntimeError("no judgement")


@pytest.mark.anyio
async def test_replay_runs_scores_each_run_and_the_report_renders_it() -> None:
    store = MemoryCheckpointer()
    record = FakeMessagesAPI([tool_reply(tool_call("get_weather", {"city": "Paris"})), text_reply("Sunny.")])
    runner = make_runner(record, get_weather, checkpointer=store, run_id="weather-1")
    await runner.until_done()

    replay = Replay(
        name="v2",
        tools=[get_weather_must_not_run],
        scorers=[same_calls, final_answer_equal, slow_judge, broken],
    )
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"city": "Rome"})), text_reply(f"Rainy {SCRIPT}")]
    )
    result = await replay_runs(fake.async_client(), replay, store=store, runs=["weather-1"])
    (run,) = result.runs
    assert run.status == "replayed"
    assert list(run.scores) == ["same_calls", "final_answer_equal", "slow_judge", "broken"]
    assert run.scores["same_calls"].passed is False
    assert run.scores["slow_judge"] == Score(0.5)
    assert run.scores["broken"].detail == "the scorer 'broken' raised RuntimeError: no judgement"
    assert run.recorded.task == USER["content"]

    header, row = rows(result.table(width=200))[:2]
    assert header[-4:] == ["same_calls", "final_answer_equal", "slow_judge", "broken"]
    assert row[:6] == ["weather-1", "replayed", "turn 0", "+1/-1", "1", "changed"]
    assert row[-4:] == ["0.00 fail", "0.00 fail", "0.50", "0.00 fail"]
    page = result.html()
    assert "<script" not in page
    assert '<tr id="run-0-turn-0" class="divergent">' in page
    assert "marked (divergence)" in page

"""A ``ReplayReport`` for people: a plain-text table for a terminal (``render_table``) and one
self-contained HTML page with the two trajectories of each run side by side (``render_html``).
Pure: both return text; writing it out is the caller's.

The table has no colour codes and fits the width it is given (long run ids and scorer names are
shortened with an ellipsis). The page loads nothing (no CDN, no font, no script: its inline CSS
only, under a Content-Security-Policy that forbids the rest), and escapes everything a run holds.
"""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Sequence
from decimal import Decimal
from html import escape

from ._results import ReplayReport, RunReplay, Score
from ._trajectory import Call, Trajectory, Turn

__all__ = ["render_html", "render_table"]

_DIVERGENT = frozenset({"marked", "safe", "stub"})
_RESULT_CHARS = 2_000  # of a tool result the page shows
_INPUT_CHARS = 4_000  # of a call's input the page shows
_TEXT_CHARS = 20_000  # of a turn's text the page shows
_HEADERS = ("run", "status", "1st diff", "calls", "diverged", "answer", "tokens", "cost")
"""The table's columns before the scorers': the run's id and status, its first divergent turn,
its calls added and dropped, how many of its calls diverged (``Comparison.divergences``), whether
its final answer changed, and its tokens and cost against the record's."""
_RIGHT = frozenset({2, 3, 4, 6, 7})  # the columns of numbers, aligned right
_SHRINK_TO = {0: 12}  # a column that may be shortened, and how far (scorers' columns: to 9)


# -- what both show --------------------------------------------------------------------------------


def _scorer_names(report: ReplayReport) -> list[str]:
    names: dict[str, None] = {}
    for run in report.runs:
        names.update(dict.fromkeys(run.scores))
    return list(names)


def _cells(run: RunReplay, scorers: Sequence[str]) -> list[str]:
    """A run's row: its id, status, comparison and scores, as text ("-": not applicable)."""
    comparison = run.comparison
    if comparison is None:
        facts = ["-"] * 6
    else:
        first = comparison.first_divergent_turn
        facts = [
            "none" if first is None else f"turn {first}",
            f"+{len(comparison.calls_added)}/-{len(comparison.calls_dropped)}",
            str(len(comparison.divergences)),
            "changed" if comparison.final_answer_changed else "same",
            f"{comparison.tokens:+,}",
            _money(comparison.cost, sign=True),
        ]
    scores = [_score(run.scores[name]) if name in run.scores else "-" for name in scorers]
    return [run.source_id, run.status, *facts, *scores]


def _score(score: Score) -> str:
    verdict = "" if score.passed is None else " pass" if score.passed else " fail"
    return f"{score.value:.2f}{verdict}"


def _money(value: Decimal | None, *, sign: bool = False) -> str:
    if value is None:
        return "n/a"
    text = f"{abs(value):,.4f}" if value == 0 or abs(value) >= Decimal("0.0001") else f"{abs(value):.6f}"
    prefix = ("-" if value < 0 else "+") if sign else "-" if value < 0 else ""
    return f"{prefix}${text}"


def _totals(report: ReplayReport) -> list[str]:
    """The totals, as separate phrases."""
    counts = {status: 0 for status in ("replayed", "failed", "stopped", "skipped")}
    for run in report.runs:
        counts[run.status] += 1
    shown = ", ".join(f"{count} {status}" for status, count in counts.items() if count or status != "skipped")
    phrases = [
        f"{len(report.runs)} run{'' if len(report.runs) == 1 else 's'}: {shown}",
        f"cost {_money(report.recorded_cost)} recorded, {_money(report.cost)} replayed",
    ]
    if report.estimate is not None:
        phrases.append(f"estimate {_money(report.estimate)}")
    for name, mean in report.mean_scores().items():
        phrases.append(f"mean {name} {mean:.2f}")
    if report.stopped_by_budget:
        phrases.append("stopped by budget")
    return phrases


# -- the table -----------------------------------------------------------------------------------------


def render_table(report: ReplayReport, *, width: int | None = None) -> str:
    """``report`` as a plain-text table: a row per run (its id, status, first divergent turn, calls
    added and dropped, divergences, whether the final answer changed, tokens and cost against the
    record, and each scorer's value with pass or fail), then the totals (runs by status, the
    recorded and the replays' cost, the estimate, each scorer's mean, and "stopped by budget" when
    the budget stopped it), then the error of each run that has one. ``width``: the columns it
    fits in (default: the terminal's, else 100; at least ``MIN_WIDTH``); past that it shortens ids
    and scorers' names. Control characters in a cell (a scorer's name, an error) are shown as
    escapes."""
    if width is None:
        width = max(MIN_WIDTH, shutil.get_terminal_size((100, 24)).columns)
    if isinstance(width, bool) or not isinstance(width, int) or width < MIN_WIDTH:
        raise ValueError(
            f"width= is the columns the table fits in: an int of at least {MIN_WIDTH}, not {width!r}."
        )
    scorers = _scorer_names(report)
    headers = [*_HEADERS, *map(_visible, scorers)]
    rows = [[_visible(cell) for cell in _cells(run, scorers)] for run in report.runs]
    widths = [
        max([len(header), *(len(row[column]) for row in rows)]) for column, header in enumerate(headers)
    ]
    least = [
        _SHRINK_TO.get(column, 9 if column >= len(_HEADERS) else widths[column])
        for column in range(len(headers))
    ]
    while sum(widths) + 2 * (len(widths) - 1) > width:
        column = max(range(len(widths)), key=lambda index: widths[index] - least[index])
        if widths[column] <= least[column]:
            break  # as narrow as it goes: the terminal wraps the rest
        widths[column] -= 1

    def line(cells: Sequence[str]) -> str:
        parts: list[str] = []
        for column, cell in enumerate(cells):
            text = _shorten(cell, widths[column], middle=column == 0)
            parts.append(
                text.rjust(widths[column])
                if column in _RIGHT or column >= len(_HEADERS)
                else text.ljust(widths[column])
            )
        return "  ".join(parts).rstrip()

    lines = [line(headers), "  ".join("-" * size for size in widths), *(line(row) for row in rows)]
    lines.append("")
    lines.extend(_wrap([_visible(phrase) for phrase in _totals(report)], width, first="totals: "))
    for run in report.runs:
        if run.error is not None:
            error = _visible(" ".join(run.error.split()))
            lines.append(_shorten(f"{_visible(run.source_id)} ({run.status}): {error}", width))
    return "\n".join(lines) + "\n"


MIN_WIDTH = 20
"""The fewest columns a table fits in: a run id, its status and the ellipses."""

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _visible(text: str) -> str:
    """``text`` with its control characters (an escape sequence of a terminal, a line break) shown
    as Python escapes, so that a cell is one line and cannot drive the terminal: scorers' names and
    errors are anyone's text."""
    return _CONTROL.sub(lambda found: found.group().encode("unicode_escape").decode("ascii"), text)


def _shorten(text: str, size: int, *, middle: bool = False) -> str:
    """``text`` in ``size`` characters: cut with an ellipsis at its end, or in its ``middle``."""
    if len(text) <= size:
        return text
    if size <= 1:
        return "…"[:size]
    if not middle:
        return text[: size - 1] + "…"
    tail = (size - 1) // 2
    return text[: size - 1 - tail] + "…" + text[len(text) - tail :]


def _wrap(phrases: Sequence[str], width: int, *, first: str) -> list[str]:
    """The phrases joined by "; " in lines of ``width`` at most (a longer phrase has its own)."""
    lines: list[str] = []
    current = first
    for phrase in phrases:
        candidate = phrase if current in (first, "  ") else f"; {phrase}"
        if current not in (first, "  ") and len(current) + len(candidate) > width:
            lines.append(current)
            current, candidate = "  ", phrase
        current += candidate
    lines.append(current)
    return lines


# -- the page ------------------------------------------------------------------------------------------

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:1.5rem;color:#1b1b1b;background:#fff}
h1{font-size:1.4rem}h2{font-size:1.1rem;display:inline}h3{font-size:1rem;margin:1rem 0 .4rem}
table{border-collapse:collapse;margin:.5rem 0}th,td{border:1px solid #ccc;padding:.3rem .5rem;vertical-align:top;text-align:left}
td.num{text-align:right;font-variant-numeric:tabular-nums}
pre{white-space:pre-wrap;word-break:break-word;margin:.2rem 0;font:12px/1.35 ui-monospace,monospace;background:#f6f6f6;padding:.3rem}
.totals{margin:.5rem 0}.budget{color:#8a1c1c;font-weight:bold}
.pass{color:#0b6b2b}.fail{color:#8a1c1c;font-weight:bold}
.run{border-top:2px solid #999;margin-top:1.5rem;padding-top:.5rem}
.turns{width:100%;table-layout:fixed}.turns th.turn{width:5rem}
tr.divergent>*{background:#fff4d6}.mark{display:block;color:#8a4b00;font-size:.8rem;font-weight:bold}
.call{border:1px solid #ddd;margin:.3rem 0;padding:.3rem}.call pre.result{max-height:18rem;overflow:auto}.call.divergence{border:2px solid #c77700;background:#fff8e8}
.answered{font-size:.8rem;border-radius:3px;padding:0 .3rem;background:#e6e6e6}.divergence .answered{background:#ffd58a}
.error{color:#8a1c1c}.absent{color:#777;font-style:italic}
.pair{display:grid;grid-template-columns:1fr 1fr;gap:.8rem}
"""


def render_html(report: ReplayReport) -> str:
    """``report`` as one self-contained HTML page: the summary table and totals, then, per run, its
    comparison, its scores with their details, the two final answers, and the two trajectories side
    by side, turn by turn (each turn's text and calls: tool, input as JSON, result (long ones cut),
    and how the call was answered, divergences highlighted), the first divergent turn marked. It
    loads nothing from anywhere and needs no script; every text of the runs is HTML-escaped."""
    scorers = _scorer_names(report)
    headers = [*_HEADERS, *scorers]
    head = "".join(f"<th>{escape(header)}</th>" for header in headers)
    rows: list[str] = []
    for number, run in enumerate(report.runs):
        cells = _cells(run, scorers)
        tds = [f'<td><a href="#run-{number}">{escape(cells[0])}</a></td>']
        for column, cell in enumerate(cells[1:], start=1):
            kind = "num" if column in _RIGHT or column >= len(_HEADERS) else ""
            kind += " fail" if cell.endswith(" fail") else " pass" if cell.endswith(" pass") else ""
            tds.append(f'<td class="{kind.strip()}">{escape(cell)}</td>')
        rows.append(f"<tr>{''.join(tds)}</tr>")
    totals = "; ".join(escape(phrase) for phrase in _totals(report))
    budget = (
        '<p class="budget">Stopped by budget: the runs not replayed go on at the next replay with the same store.</p>'
        if report.stopped_by_budget
        else ""
    )
    sections = "".join(_run_section(number, run) for number, run in enumerate(report.runs))
    title = escape(f"Replay report: {report.name}")
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">"
        '<meta name="viewport" content="width=device-width,initial-scale=1">'
        f"<title>{title}</title><style>{_CSS}</style></head><body>\n"
        f'<h1>{title}</h1>\n{budget}<p class="totals">{totals}</p>\n'
        f'<table class="summary"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>\n'
        f"{sections}</body></html>\n"
    )


def _run_section(number: int, run: RunReplay) -> str:
    comparison = run.comparison
    same = comparison is not None and comparison.same and not run.error
    parts = [
        f'<section class="run" id="run-{number}"><details{"" if same else " open"}><summary>',
        f"<h2>{escape(run.source_id)}</h2> replayed as <code>{escape(run.replay_id)}</code>: ",
        f"<strong>{escape(run.status)}</strong></summary>",
    ]
    if run.error is not None:
        parts.append(f'<p class="error">{escape(run.error)}</p>')
    if comparison is not None:
        first = comparison.first_divergent_turn
        facts = [
            ("first divergent turn", "none" if first is None else f"turn {first}"),
            ("calls added", _call_list(comparison.calls_added)),
            ("calls dropped", _call_list(comparison.calls_dropped)),
            ("divergences", _call_list(comparison.divergences, answered=True)),
            ("final answer changed", "yes" if comparison.final_answer_changed else "no"),
            ("tokens", f"{comparison.tokens:+,}"),
            ("cost", _money(comparison.cost, sign=True)),
            ("time", "n/a" if comparison.seconds is None else f"{comparison.seconds:+.1f} s"),
        ]
        parts.append('<table class="facts">')
        parts.extend(f"<tr><th>{name}</th><td>{escape(value)}</td></tr>" for name, value in facts)
        parts.append("</table>")
    if run.scores:
        parts.append(
            '<h3>Scores</h3><table class="scores"><tr><th>scorer</th><th>value</th><th>verdict</th><th>detail</th></tr>'
        )
        for name, score in run.scores.items():
            verdict = "" if score.passed is None else "pass" if score.passed else "fail"
            parts.append(
                f'<tr><td>{escape(name)}</td><td class="num">{score.value:.2f}</td>'
                f'<td class="{verdict}">{verdict}</td><td>{escape(score.detail)}</td></tr>'
            )
        parts.append("</table>")
    parts.append('<h3>Final answers</h3><div class="pair">')
    parts.append(f"<div><strong>Record</strong>{_answer(run.recorded)}</div>")
    parts.append(
        f"<div><strong>Replay</strong>{_answer(run.replayed) if run.replayed is not None else _absent('no replay')}</div></div>"
    )
    parts.append(_turns(number, run))
    parts.append("</details></section>\n")
    return "".join(parts)


def _turns(number: int, run: RunReplay) -> str:
    recorded = run.recorded.turns
    replayed = run.replayed.turns if run.replayed is not None else ()
    first = run.comparison.first_divergent_turn if run.comparison is not None else None
    rows = [
        '<h3>Turns</h3><table class="turns"><thead><tr><th class="turn">turn</th>'
        "<th>Record</th><th>Replay</th></tr></thead><tbody>"
    ]
    for index in range(max(len(recorded), len(replayed))):
        marked = index == first
        label = f"{index}" + ('<span class="mark">first divergent turn</span>' if marked else "")
        kind = ' class="divergent"' if marked else ""
        rows.append(
            f'<tr id="run-{number}-turn-{index}"{kind}><th class="turn">{label}</th>'
            f"{_turn(recorded, index)}{_turn(replayed, index)}</tr>"
        )
    rows.append("</tbody></table>")
    return "".join(rows)


def _turn(turns: Sequence[Turn], index: int) -> str:
    if index >= len(turns):
        return f"<td>{_absent('no such turn')}</td>"
    turn = turns[index]
    parts = ["<td>"]
    if turn.text:
        parts.append(f"<pre>{escape(_clip(turn.text, _TEXT_CHARS))}</pre>")
    parts.extend(_call(call) for call in turn.calls)
    if not turn.text and not turn.calls:
        parts.append(_absent("no text, no call"))
    parts.append("</td>")
    return "".join(parts)


def _call(call: Call) -> str:
    divergent = call.answered in _DIVERGENT
    result = (
        _absent("no result")
        if call.result is None
        else f'<pre class="result">{escape(_clip(call.result_text, _RESULT_CHARS))}</pre>'
    )
    error = ' <span class="error">error result</span>' if call.is_error else ""
    return (
        f'<div class="call{" divergence" if divergent else ""}">'
        f"<code>{escape(call.name)}</code> "
        f'<span class="answered">{escape(call.answered)}{" (divergence)" if divergent else ""}</span>'
        f"{error}<pre>{escape(_clip(_json(call.input), _INPUT_CHARS))}</pre>{result}</div>"
    )


def _call_list(calls: Sequence[Call], *, answered: bool = False) -> str:
    if not calls:
        return "none"
    shown = [f"{call.name}({call.answered})" if answered else call.name for call in calls[:20]]
    more = f" and {len(calls) - 20} more" if len(calls) > 20 else ""
    return f"{len(calls)}: {', '.join(shown)}{more}"


def _answer(trajectory: Trajectory) -> str:
    if trajectory.output is not None:
        return f"<pre>{escape(_json(trajectory.output))}</pre>"
    if trajectory.final_answer is not None:
        return f"<pre>{escape(trajectory.final_answer)}</pre>"
    why = f"no final answer (ended: {trajectory.end_reason or 'not ended'})"
    return _absent(why)


def _absent(why: str) -> str:
    return f'<div class="absent">({escape(why)})</div>'


def _json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=True, default=str)


def _clip(text: str, size: int) -> str:
    return text if len(text) <= size else f"{text[:size]}… ({len(text) - size:,} more characters)"

"""What a replay evaluation gives back, as data: a scorer's ``Score``, the ``Comparison`` of a
replayed run with its record, each run's ``RunReplay``, and the whole ``ReplayReport``, with their
JSON form (``to_dict``). Rendering them as a table or an HTML page is ``_report``'s.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Literal, TypeAlias

from .._core.usage import Usage
from ._trajectory import Call, Trajectory

__all__ = ["Comparison", "ReplayReport", "ReplayStatus", "RunReplay", "Score"]

ReplayStatus: TypeAlias = Literal["replayed", "failed", "stopped", "skipped"]
"""How a run's replay went: it ran to its end (``"replayed"``, whatever the end), it raised
(``"failed"``: the error is kept), the budget stopped it (``"stopped"``: it goes on at the next
``replay_runs`` with the same store), or it was not replayed (``"skipped"``: the record cannot be
replayed, the reason is kept)."""


@dataclass(frozen=True, slots=True)
class Score:
    """A scorer's verdict on one run.

    Attributes:
        value: From 0 (worst) to 1 (best).
        passed: Whether the run passes, for a scorer that says so (``None``: it gives only a value).
        detail: Why, in a sentence a person reads in the report.
    """

    value: float
    passed: bool | None = None
    detail: str = ""

    def __post_init__(self) -> None:
        if (
            isinstance(self.value, bool)
            or not isinstance(self.value, int | float)
            or not 0 <= self.value <= 1
        ):
            raise ValueError(f"Score(value) must be a number from 0 to 1, not {self.value!r}.")
        if self.passed is not None and not isinstance(self.passed, bool):
            raise TypeError(f"Score(passed) must be True, False or None, not {type(self.passed).__name__!r}.")
        if not isinstance(self.detail, str):
            raise TypeError(f"Score(detail) must be a str, not {type(self.detail).__name__!r}.")


@dataclass(frozen=True, slots=True)
class Comparison:
    """Where a replayed run differs from its record (``compare``).

    Attributes:
        first_divergent_turn: The index of the first turn whose calls (tool and normalised input,
            in order) differ, or that one run has and the other lacks; ``None``: every turn's calls
            are the same.
        calls_added: The replay's calls the record did not make (a divergence each).
        calls_dropped: The record's calls the replay did not make.
        final_answer_changed: Whether the final answers differ (as text; for a typed answer, as
            data).
        divergences: The replay's calls that no recorded call answered, and how each was answered
            (``Call.answered``: ``"marked"``, ``"safe"`` or ``"stub"``).
        tokens: The replay's tokens minus the record's (all four counts added up).
        cost: The replay's cost minus the record's (``None`` when either has no cost).
        seconds: The replay's time minus the record's (``None`` when either is not known).
    """

    first_divergent_turn: int | None
    calls_added: tuple[Call, ...] = ()
    calls_dropped: tuple[Call, ...] = ()
    final_answer_changed: bool = False
    divergences: tuple[Call, ...] = ()
    tokens: int = 0
    cost: Decimal | None = None
    seconds: float | None = None

    @property
    def same(self) -> bool:
        """Whether the replay made the same calls and gave the same final answer."""
        return self.first_divergent_turn is None and not self.final_answer_changed


@dataclass(frozen=True, slots=True)
class RunReplay:
    """One saved run, replayed.

    Attributes:
        source_id: The recorded run's id.
        replay_id: The replay's run id in the replays' store.
        status: How the replay went (``ReplayStatus``).
        recorded: The recorded run's trajectory.
        replayed: The replay's trajectory (``None`` when it did not start).
        comparison: How the two differ (``None`` without a replay that ended).
        scores: Each scorer's verdict, by the scorer's name.
        error: Why the replay failed, was stopped or skipped.
    """

    source_id: str
    replay_id: str
    status: ReplayStatus
    recorded: Trajectory
    replayed: Trajectory | None = None
    comparison: Comparison | None = None
    scores: Mapping[str, Score] = field(default_factory=dict[str, Score])
    error: str | None = None


@dataclass(frozen=True, slots=True)
class ReplayReport:
    """The result of ``replay_runs``: each run's replay, in the order the runs were given.

    Attributes:
        name: The evaluation's name (its replays' ids start with it).
        runs: Each run's replay.
        estimate: The cost estimated before it started (``None``: no price for the model).
        stopped_by_budget: Whether ``max_cost`` stopped it before every run was replayed.
    """

    name: str
    runs: tuple[RunReplay, ...]
    estimate: Decimal | None = None
    stopped_by_budget: bool = False

    @property
    def cost(self) -> Decimal | None:
        """What the replays cost (``None``: a model had no price)."""
        total = Decimal(0)
        for run in self.runs:
            if run.replayed is not None:
                if run.replayed.cost is None:
                    return None
                total += run.replayed.cost
        return total

    @property
    def recorded_cost(self) -> Decimal | None:
        """What the recorded runs cost (``None``: a model had no price)."""
        total = Decimal(0)
        for run in self.runs:
            if run.recorded.cost is None:
                return None
            total += run.recorded.cost
        return total

    def mean_scores(self) -> dict[str, float]:
        """Each scorer's mean value over the runs it scored."""
        values: dict[str, list[float]] = {}
        for run in self.runs:
            for name, score in run.scores.items():
                values.setdefault(name, []).append(score.value)
        return {name: sum(found) / len(found) for name, found in values.items()}

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON data (amounts of money as strings, to keep them exact)."""
        data = _data(self)
        data["cost"] = _data(self.cost)
        data["recorded_cost"] = _data(self.recorded_cost)
        data["mean_scores"] = self.mean_scores()
        return data  # type: ignore[no-any-return]

    def to_json(self, *, indent: int | None = 2) -> str:
        """``to_dict()`` as a JSON text."""
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False)

    def table(self, *, width: int | None = None) -> str:
        """The report as a plain-text table for a terminal (``render_table``)."""
        from ._report import render_table  # _report renders this module's values

        return render_table(self, width=width)

    def html(self) -> str:
        """The report as one self-contained HTML page (``render_html``)."""
        from ._report import render_html

        return render_html(self)


def _data(value: object) -> Any:
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, Usage):
        return dataclasses.asdict(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {item.name: _data(getattr(value, item.name)) for item in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(key): _data(item) for key, item in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, list | tuple):
        return [_data(item) for item in value]  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    return value

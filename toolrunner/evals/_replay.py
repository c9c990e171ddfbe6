"""``replay_runs``: run saved runs again with a change (``Replay``), each from its first user message
(or a chosen turn), answering their tool calls from the recorded runs' journals
(``_replay_tools``), and compare and score what the replays did against the record.

The replays are runs of their own, saved in a store (``into=``) under ``{name}.{source run id}``:
a replay that ended is read back, not run again, and one that a crash or the budget stopped goes on
where it was saved. So ``replay_runs`` with the same name and store, after a crash, goes on with
the evaluation, and costs nothing for what was done.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from datetime import datetime
from decimal import Decimal
from typing import Any, cast

import anthropic
import anyio

from .._core.errors import ParamsError, message_of
from .._core.ids import RUN_ID_LIMIT, check_run_id
from .._core.messages import field as read
from .._core.state import Phase, RunState
from .._core.tree_usage import spent
from .._core.usage import DEFAULT_PRICES, Price, find_price
from .._runner.hooks import Hooks
from .._runner.runner import ToolRunner
from .._stores.memory import MemoryCheckpointer
from .._stores.protocol import Checkpointer, RunStore
from .._stores.runs import RunStatus
from ._compare import compare
from ._estimate import estimate_cost
from ._journal import Journal, Normalize
from ._replay_tools import Stub, answered_by, replay_tools
from ._results import ReplayReport, RunReplay, Score
from ._scorers import Scorer, run_scorer, scorer_name
from ._trajectory import Trajectory, trajectory_of

__all__ = ["Replay", "replay_runs", "select_runs"]

Progress = Callable[[int, int, RunReplay], None]
"""Told after each run: how many are done, how many in all, and the run's replay."""


@dataclass(frozen=True, kw_only=True)
class Replay:
    """What a replay changes, and how it answers the calls the record does not hold.

    Attributes:
        name: The evaluation's name; each replay is saved as ``{name}.{source run id}``.
        params: Request params to change, over the recorded run's (``model``, ``system``,
            ``max_tokens``, ``temperature``, ...); a value of ``None`` removes the param.
        tools: The tools the model is offered (``@tool`` tools, functions, ``RunnableTool``s or raw
            definitions): their definitions are sent, and their functions never run but for those
            in ``safe_tools``. ``None``: the record's own definitions (a record of ``@tool`` tools
            keeps only their names, so these must be given).
        safe_tools: The names of tools whose divergent calls run for real (read-only tools).
        stubs: By tool name, a function (sync or async) of the input that answers its divergent
            calls instead.
        output_format: A type for a typed final answer (as ``ToolRunner(output_format=...)``).
        hooks: The ``Hooks`` the replays run with.
        max_iterations: The most requests a replay may send (``None``: the runner's default).
        from_turn: Replay from this turn of the record (0: from its first user message): the
            record's history before its ``from_turn``-th assistant message is kept as it is.
        normalize: How inputs compare (see ``normalize_input``); by default the built-in one.
        scorers: Functions of the recorded and the replayed trajectory (see docs/evals.md).
        prices: The price table (``DEFAULT_PRICES`` by default).
    """

    name: str
    params: Mapping[str, Any] = field(default_factory=dict[str, Any])
    tools: Sequence[object] | None = None
    safe_tools: Collection[str] = ()
    stubs: Mapping[str, Stub] = field(default_factory=dict[str, Stub])
    output_format: type[Any] | None = None
    hooks: Hooks | None = None
    max_iterations: int | None = None
    from_turn: int = 0
    normalize: Normalize | None = None
    scorers: Sequence[Scorer] = ()
    prices: Mapping[str, Price] | None = None

    def __post_init__(self) -> None:
        check_run_id(self.name, "Replay(name)")
        if isinstance(self.from_turn, bool) or not isinstance(self.from_turn, int) or self.from_turn < 0:
            raise ParamsError(
                f"Replay(from_turn) must be a turn's index (0 or more), not {self.from_turn!r}."
            )
        names = [scorer_name(scorer) for scorer in self.scorers]
        twice = sorted({name for name in names if names.count(name) > 1})
        if twice:
            raise ParamsError(
                f"Replay(scorers) has two scorers named {twice}: the report keeps a score by its scorer's name; "
                "give each its own (a def of its own, or a `name` attribute)."
            )
        if isinstance(self.safe_tools, str):
            raise ParamsError(
                f"Replay(safe_tools) takes tool names, as a list: safe_tools=[{self.safe_tools!r}]."
            )
        if not isinstance(self.params, Mapping):
            raise ParamsError(
                f"Replay(params) must be a dict of request params, not {type(self.params).__name__!r}."
            )
        for key in ("messages", "tools"):
            if key in self.params:
                raise ParamsError(
                    f"Replay(params) may not set {key!r}: the replay takes them from the record "
                    f"({'use from_turn' if key == 'messages' else 'use Replay(tools=...)'})."
                )

    def replay_id(self, source_id: str) -> str:
        """The replay's run id for the recorded run ``source_id``."""
        replay_id = f"{self.name}.{source_id}"
        if len(replay_id) > RUN_ID_LIMIT:
            digest = hashlib.sha256(source_id.encode()).hexdigest()[:24]
            replay_id = f"{self.name[: RUN_ID_LIMIT - 26]}.{digest}"
        return replay_id

    def request_params(self, recorded: Mapping[str, Any]) -> dict[str, Any]:
        """The replay's request params: the record's, with ``params`` over them."""
        merged = {**recorded, **self.params}
        return {key: value for key, value in merged.items() if value is not None}


@dataclass(frozen=True, slots=True)
class _Source:
    run_id: str
    state: RunState
    seconds: float | None


async def replay_runs(
    client: anthropic.AsyncAnthropic,
    replay: Replay,
    *,
    store: RunStore | None = None,
    runs: Iterable[str | RunState] | None = None,
    status: RunStatus | str | Iterable[RunStatus | str] | None = RunStatus.FINISHED,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
    limit: int = 50,
    into: Checkpointer | None = None,
    max_concurrency: int = 8,
    max_cost: Decimal | float | str | None = None,
    batch: bool = False,
    poll_interval: float = 30.0,
    on_progress: Progress | None = None,
) -> ReplayReport:
    """Replay saved runs with ``replay``'s change, and compare and score each against its record.

    The runs are ``runs`` (run ids in ``store``, or ``RunState``s read from an export), or, with
    none given, the newest ``limit`` runs of ``store`` that ``status``, ``updated_after`` and
    ``updated_before`` select, as ``runs list`` filters them, but this evaluation's own replays
    (``select_runs``). See docs/evals.md.

    Args:
        into: Where the replays are saved (``None``: in memory, so a crash loses them); with a store,
            calling again goes on with the evaluation (see the module docstring).
        max_concurrency: How many replays run at once.
        max_cost: Stop once the replays (those in ``into`` from earlier calls too) cost this many US
            dollars: the replays under way stop after their reply, and the rest do not start
            (``"stopped"``); each may overshoot by a request.
        batch: Send the requests through the Message Batches API, many replays' in one batch, at its
            discount (priced so: ``batch_prices``); ``poll_interval`` is how often a batch is looked at.
        on_progress: Told after each run.

    Raises:
        ParamsError: The arguments are wrong (the message says which); nothing was replayed.
    """
    if isinstance(max_concurrency, bool) or not isinstance(max_concurrency, int) or max_concurrency < 1:
        raise ParamsError(f"max_concurrency must be a whole number, 1 or more, not {max_concurrency!r}.")
    if (
        isinstance(poll_interval, bool)
        or not isinstance(poll_interval, int | float)
        or not 0 < poll_interval < math.inf
    ):
        raise ParamsError(f"poll_interval must be a number of seconds above 0, not {poll_interval!r}.")
    budget = None if max_cost is None else _dollars(max_cost)
    if replay.tools is not None:  # its mistakes, before anything is replayed rather than once a run
        replay_tools(Journal(()), replay.tools, (), safe=replay.safe_tools, stubs=replay.stubs)
    sources = await _sources(store, replay.name, runs, status, updated_after, updated_before, limit)
    prices = replay.prices
    if batch:
        from ._batch import batch_prices

        prices = batch_prices(prices)
    _check_sources(sources, replay, prices, budget)
    into = into if into is not None else MemoryCheckpointer()
    plan = _Plan(client, replay, into, prices, budget, len(sources), on_progress)
    estimate = estimate_cost([source.state for source in sources], replay, prices=prices)
    results: list[RunReplay | None] = [None] * len(sources)
    queue = iter(list(enumerate(sources)))  # the workers take the runs in the order given
    async with AsyncExitStack() as stack:
        if batch:
            from ._batch import BatchSender

            plan.sender = await stack.enter_async_context(BatchSender(client, poll_interval=poll_interval))
        async with anyio.create_task_group() as group:
            for _ in range(min(max_concurrency, len(sources))):
                group.start_soon(plan.work, queue, results)
    return ReplayReport(
        name=replay.name,
        runs=tuple(result for result in results if result is not None),
        estimate=estimate,
        stopped_by_budget=plan.stopped,
    )


class _Plan:
    """One ``replay_runs`` call: what every replay shares (the client, the budget, the progress)."""

    def __init__(
        self,
        client: anthropic.AsyncAnthropic,
        replay: Replay,
        into: Checkpointer,
        prices: Mapping[str, Price] | None,
        budget: Decimal | None,
        total: int,
        on_progress: Progress | None,
    ) -> None:
        self.client, self.replay, self.into, self.prices = client, replay, into, prices
        self.budget, self.total, self.on_progress = budget, total, on_progress
        self.spent: dict[str, Decimal] = {}
        self.stopped = False
        self.done = 0
        self.sender: Any = None

    def over_budget(self) -> bool:
        if self.budget is not None and sum(self.spent.values(), Decimal(0)) >= self.budget:
            self.stopped = True
        return self.stopped

    async def work(self, queue: Iterator[tuple[int, _Source]], results: list[RunReplay | None]) -> None:
        """One worker: replay the next run of ``queue`` until there is none."""
        for index, source in queue:
            result = await self._replay(source)
            results[index] = result
            self.done += 1
            if self.on_progress is not None:
                self.on_progress(self.done, self.total, result)

    async def _replay(self, source: _Source) -> RunReplay:
        replay_id = self.replay.replay_id(source.run_id)
        recorded = trajectory_of(source.state, seconds=source.seconds)
        try:
            return await self._replayed(source, replay_id, recorded)
        except Exception as error:  # a failed replay is a result; the others go on
            try:
                loaded = await self.into.load(replay_id)
                replayed = None if loaded is None else self._trajectory(loaded.state, source)
            except Exception:  # what failed may fail again (a store, a normalize): the error says it
                replayed = None
            return RunReplay(source.run_id, replay_id, "failed", recorded, replayed, error=message_of(error))

    async def _replayed(self, source: _Source, replay_id: str, recorded: Trajectory) -> RunReplay:
        replay = self.replay
        skipped = _unreplayable(source.state, replay.from_turn)
        if skipped is not None:
            return RunReplay(source.run_id, replay_id, "skipped", recorded, error=skipped)
        saved = await self.into.load(replay_id)
        if saved is not None and (cost := spent(saved.state).cost) is not None:
            self.spent[replay_id] = cost
        if saved is not None and saved.state.finished:
            state, stopped = saved.state, False
        elif self.over_budget():
            replayed = None if saved is None else self._trajectory(saved.state, source)
            return RunReplay(source.run_id, replay_id, "stopped", recorded, replayed, error=_STOPPED)
        else:
            journal = Journal(recorded, normalize=replay.normalize)
            tools = replay_tools(
                journal, replay.tools, source.state.tools, safe=replay.safe_tools, stubs=replay.stubs
            )
            state, stopped = await self._drive(source, replay_id, saved is not None, tools)
        replayed = self._trajectory(state, source, await _seconds(self.into, replay_id))
        if stopped:
            return RunReplay(source.run_id, replay_id, "stopped", recorded, replayed, error=_STOPPED)
        comparison = compare(recorded, replayed, normalize=replay.normalize)
        scores = await _scores(replay.scorers, recorded, replayed)
        return RunReplay(source.run_id, replay_id, "replayed", recorded, replayed, comparison, scores)

    async def _drive(
        self, source: _Source, replay_id: str, saved: bool, tools: list[Any]
    ) -> tuple[RunState, bool]:
        replay = self.replay
        client = self.client if self.sender is None else self.sender.client
        options: dict[str, Any] = {"tools": tools, "checkpointer": self.into, "run_id": replay_id}
        if replay.output_format is not None:
            options["output_format"] = replay.output_format
        if replay.hooks is not None:
            options["hooks"] = replay.hooks
        if replay.max_iterations is not None:
            options["max_iterations"] = replay.max_iterations
        if self.prices is not None:
            options["prices"] = self.prices
        async with AsyncExitStack() as stack:
            if self.sender is not None:
                await stack.enter_async_context(self.sender.member())
            if saved:
                runner = cast("ToolRunner[Any]", await ToolRunner.resume(client, **options))
            else:
                params = replay.request_params(source.state.params)
                messages = _prefix(source.state.messages, replay.from_turn)
                runner = cast("ToolRunner[Any]", ToolRunner(client, **params, messages=messages, **options))
            async for _ in runner:
                self.spent[replay_id] = spent(runner.state).cost or Decimal(0)
                if self.over_budget():
                    return runner.state, True
            self.spent[replay_id] = spent(runner.state).cost or Decimal(0)
            return runner.state, False

    def _trajectory(self, state: RunState, source: _Source, seconds: float | None = None) -> Trajectory:
        replay = self.replay
        journal = Journal(trajectory_of(source.state), normalize=replay.normalize)
        prefix = len(_prefix(source.state.messages, replay.from_turn))
        answered = answered_by(
            journal,
            state.messages,
            prefix=prefix,
            safe=replay.safe_tools,
            stubs=replay.stubs,
            offered=_offered(state),
            hooked=replay.hooks is not None,
        )
        return trajectory_of(state, answered=answered, seconds=seconds)


def _offered(state: RunState) -> set[str]:
    """The names of the tools a replay offered (runnable by name, raw definitions by their name)."""
    return {entry if isinstance(entry, str) else str(entry.get("name")) for entry in state.tools}


_STOPPED = "the budget (max_cost) stopped the evaluation first; run it again with a larger budget to go on"


async def _seconds(store: Checkpointer, run_id: str) -> float | None:
    """How long a run took, between its first and its last save, if the store says."""
    if not isinstance(store, RunStore):
        return None
    summary = await store.get_run(run_id)
    return None if summary is None else (summary.updated - summary.created).total_seconds()


async def _scores(scorers: Sequence[Scorer], recorded: Trajectory, replayed: Trajectory) -> dict[str, Score]:
    return {scorer_name(scorer): await run_scorer(scorer, recorded, replayed) for scorer in scorers}


def _prefix(messages: Sequence[Any], from_turn: int) -> list[Any]:
    """The record's history before its ``from_turn``-th assistant message."""
    seen = 0
    for index, message in enumerate(messages):
        if read(message, "role") == "assistant":
            if seen == from_turn:
                return list(messages[:index])
            seen += 1
    return list(messages)


def _unreplayable(state: RunState, from_turn: int) -> str | None:
    """Why a recorded run cannot be replayed, if it cannot."""
    if state.phase is not Phase.DONE:
        if state.failure is not None:
            why = f"it failed ({state.failure.get('type')}: {state.failure.get('message')})"
        elif state.phase is Phase.AWAITING:
            why = "it waits for a person's decision"
        else:
            why = "it stopped before its end"
        return f"the recorded run has not ended ({why}); an evaluation replays runs that ended: select them with status='finished'"
    turns = trajectory_of(state).turns
    if from_turn >= len(turns):
        return f"the recorded run has {len(turns)} turn(s), so it cannot be replayed from turn {from_turn}"
    if not _prefix(state.messages, from_turn):
        return "the recorded run has no user message before its first reply"
    return None


def _check_sources(
    sources: Sequence[_Source], replay: Replay, prices: Mapping[str, Price] | None, budget: Decimal | None
) -> None:
    """Refuse, before anything is replayed, what would go wrong in every replay of a run.

    Raises:
        ParamsError: A record had a typed final answer and the replay has no ``output_format``;
            or there is a budget and the price table has no price for a replay's model.
    """
    typed = [source.run_id for source in sources if source.state.output is not None]
    if typed and replay.output_format is None:
        raise ParamsError(
            f"the recorded runs {typed[:5]} had a typed final answer (output_format=...), which is code and not "
            "saved: pass it to the replay (Replay(output_format=...)), so that the replays are asked for the same."
        )
    if budget is None:
        return
    table = prices if prices is not None else DEFAULT_PRICES
    for source in sources:
        model = str(replay.request_params(source.state.params).get("model", ""))
        if find_price(table, model) is None:
            raise ParamsError(
                f"max_cost needs a price for model {model!r}, and the price table has none, so the budget could "
                "not stop the evaluation; pass Replay(prices={model: Price(...)})."
            )


async def select_runs(
    store: RunStore,
    *,
    name: str,
    status: RunStatus | str | Iterable[RunStatus | str] | None = RunStatus.FINISHED,
    updated_after: datetime | None = None,
    updated_before: datetime | None = None,
    limit: int = 50,
) -> list[str]:
    """The ids of the newest ``limit`` runs of ``store`` that the query selects, as ``runs list``
    filters them, but the replays of the evaluation ``name`` (``{name}.*``), saved in that store
    when it is the replays' ``into`` too."""
    ids: list[str] = []
    cursor: str | None = None
    while len(ids) < limit:
        page = await store.list_runs(
            status=status,
            updated_after=updated_after,
            updated_before=updated_before,
            limit=min(max(limit, 1), 500),
            cursor=cursor,
        )
        ids += [run.run_id for run in page.runs if not run.run_id.startswith(f"{name}.")]
        cursor = page.cursor
        if cursor is None:
            break
    return ids[:limit]


async def _sources(
    store: RunStore | None,
    name: str,
    runs: Iterable[str | RunState] | None,
    status: RunStatus | str | Iterable[RunStatus | str] | None,
    updated_after: datetime | None,
    updated_before: datetime | None,
    limit: int,
) -> list[_Source]:
    """The recorded runs to replay, as ``replay_runs`` says."""
    if runs is None:
        if store is None:
            raise ParamsError(
                "replay_runs needs the runs to replay: pass store=... (and a query), or runs=[...]."
            )
        runs = await select_runs(
            store,
            name=name,
            status=status,
            updated_after=updated_after,
            updated_before=updated_before,
            limit=limit,
        )
    sources: list[_Source] = []
    for entry in runs:
        if isinstance(entry, RunState):
            if not entry.run_id:
                raise ParamsError("a RunState to replay must have its run_id (as an exported run has).")
            sources.append(_Source(entry.run_id, entry, None))
            continue
        if store is None:
            raise ParamsError(f"runs names {entry!r}, a run id: pass the store it is saved in (store=...).")
        checkpoint = await store.load(entry)
        if checkpoint is None:
            raise ParamsError(f"the store has no run {entry!r}; list its runs with `toolrunner runs list`.")
        sources.append(_Source(entry, checkpoint.state, await _seconds(store, entry)))
    ids = [source.run_id for source in sources]
    duplicates = sorted({run_id for run_id in ids if ids.count(run_id) > 1})
    if duplicates:
        raise ParamsError(f"runs names {duplicates} more than once; replay each run once.")
    return sources


def _dollars(value: object) -> Decimal:
    from .._runner.options import dollars

    return dollars(value)

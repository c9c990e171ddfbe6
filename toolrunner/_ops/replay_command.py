"""``toolrunner replay --store URL --replay module:name``: replay saved runs with a change, as an
evaluation (``toolrunner.evals.replay_runs``), from a shell.

The runs are named (``--run``), selected by a query over the store as ``runs list`` filters them
(``--status``, ``--updated-after``, ``--updated-before``, ``--limit``), or read from an export
(``--from-file``: what ``runs show --json`` prints, a list of those, JSON Lines of them, or bare
states). Before it starts, the command says how many runs it replays and what that may cost, and
asks (on a terminal, without ``--yes``); while it runs, a progress bar on standard error; after,
the report: a table, or ``--json``, and an HTML page with ``--html``. The replays are saved in
``--into`` (by default the store itself), so the same command run again goes on with the evaluation.
"""

from __future__ import annotations

import argparse
import inspect
from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import TextIO

import anthropic
import anyio

from .._core.errors import ParamsError, message_of
from .._core.ids import check_run_id
from .._core.state import RunState
from .._runner.options import dollars
from .._stores.open import open_store, store_path
from .._stores.protocol import RunStore
from ..evals import (
    Replay,
    ReplayReport,
    RunReplay,
    batch_prices,
    estimate_cost,
    read_runs,
    replay_runs,
    select_runs,
)
from .app_loader import Wanted, load_object
from .command_context import not_found, parse_time
from .exits import Exit, ExitCode
from .render import plural, printable

__all__ = ["Progress", "load_replay", "read_export", "replay"]

_REPLAY = Wanted(
    option="--replay",
    form="module:name",
    command="replay",
    example="myapp.evals:new_prompt",
    what="its Replay",
    described="a Replay, or a function without arguments that returns one",
)


def replay(
    arguments: argparse.Namespace, url: str | None, out: TextIO, err: TextIO, now: datetime, stdin: TextIO
) -> None:
    """``toolrunner replay``: see the module docstring.

    Raises:
        Exit: The command ends with that exit status (after the report, when the evaluation ran:
            ``INCOMPLETE`` or ``STOPPED``).
        ParamsError, StateError, CheckpointError: As ``_ops.cli.run`` maps them.
    """
    _check_numbers(arguments)
    selection = _Selection.of(arguments, now)
    runs = read_export(arguments.from_file) if arguments.from_file is not None else None
    path = None if url is None else store_path(url)
    if path is not None and not path.is_file():
        raise Exit(
            ExitCode.NOT_FOUND,
            f"there is no store at {str(path)!r}; check the path (runs are saved by "
            "ToolRunner(checkpointer=SQLiteCheckpointer(path), ...)).",
        )
    into_url = arguments.into or url
    assert into_url is not None  # _ops.cli.run asks for a store otherwise
    source = None if url is None or runs is not None else open_store(url)
    into = source if source is not None and into_url == url else open_store(into_url)
    try:
        anyio.run(_evaluate, _Command(arguments, selection, runs, source, into, into_url, out, err, stdin))
    finally:
        for store in {id(store): store for store in (source, into) if store is not None}.values():
            close = getattr(store, "close", None)
            if callable(close):
                close()


def _check_numbers(arguments: argparse.Namespace) -> None:
    if arguments.concurrency < 1:
        raise Exit(ExitCode.USAGE, f"--concurrency must be 1 or more, not {arguments.concurrency!r}.")
    if arguments.limit is not None and arguments.limit < 1:
        raise Exit(ExitCode.USAGE, f"--limit must be 1 or more, not {arguments.limit!r}.")
    if not arguments.poll_interval > 0:
        raise Exit(
            ExitCode.USAGE, f"--poll-interval must be more than 0 seconds, not {arguments.poll_interval!r}."
        )
    if arguments.max_cost is not None:
        try:
            dollars(arguments.max_cost)
        except ParamsError:
            raise Exit(
                ExitCode.USAGE,
                f"--max-cost must be a positive amount of US dollars (5, 0.50), not {arguments.max_cost!r}.",
            ) from None


@dataclass(frozen=True, slots=True)
class _Selection:
    """Which runs of the store: ``ids`` by name, or a query."""

    ids: tuple[str, ...]
    statuses: tuple[str, ...]
    after: datetime | None
    before: datetime | None
    limit: int

    @classmethod
    def of(cls, arguments: argparse.Namespace, now: datetime) -> _Selection:
        query = [
            option
            for option, value in (
                ("--status", arguments.status),
                ("--updated-after", arguments.updated_after),
                ("--updated-before", arguments.updated_before),
                ("--limit", arguments.limit),
            )
            if value is not None
        ]
        given = [
            option
            for option, value in (("--run", arguments.run), ("--from-file", arguments.from_file))
            if value
        ]
        if len(given) > 1 or (given and query):
            raise Exit(
                ExitCode.USAGE,
                f"{' and '.join(given + query[:1])} select runs two ways; give runs by id (--run), from a file "
                "(--from-file), or by a query (--status, --updated-after, --updated-before, --limit).",
            )
        for run_id in arguments.run or ():
            check_run_id(run_id, "--run")
        return cls(
            ids=tuple(arguments.run or ()),
            statuses=tuple(arguments.status or ("finished",)),
            after=parse_time(arguments.updated_after, now, "--updated-after"),
            before=parse_time(arguments.updated_before, now, "--updated-before"),
            limit=50 if arguments.limit is None else arguments.limit,
        )


@dataclass(frozen=True, slots=True)
class _Command:
    arguments: argparse.Namespace
    selection: _Selection
    exported: list[RunState] | None
    source: RunStore | None
    into: RunStore
    into_url: str
    out: TextIO
    err: TextIO
    stdin: TextIO


async def _evaluate(command: _Command) -> None:
    arguments, err = command.arguments, command.err
    change = await load_replay(arguments.replay)
    states = command.exported if command.exported is not None else await _recorded(command, change)
    done = {
        state.run_id
        for state in states
        if (saved := await command.into.load(change.replay_id(str(state.run_id)))) is not None
        and saved.state.finished
    }
    left = [state for state in states if state.run_id not in done]
    prices = batch_prices(change.prices) if arguments.batch else None  # None: the replay's own
    _say(err, _plan(command, change, len(states), len(done), estimate_cost(left, change, prices=prices)))
    if not states:
        _say(err, "No runs match: nothing to replay.")
    async with anthropic.AsyncAnthropic() as client:
        if client.api_key is None and client.auth_token is None and left:
            raise Exit(
                ExitCode.USAGE,
                "the replays send requests to the Messages API: set ANTHROPIC_API_KEY (and ANTHROPIC_BASE_URL "
                "for another endpoint).",
            )
        if left and not arguments.yes and command.stdin.isatty():
            err.write("Go on? [y/N] ")
            err.flush()
            if command.stdin.readline().strip().lower() not in ("y", "yes"):
                raise Exit(ExitCode.DECLINED, "nothing was replayed.")
        report = await replay_runs(
            client,
            change,
            store=command.source,
            runs=[str(state.run_id) for state in states] if command.exported is None else states,
            into=command.into,
            max_concurrency=arguments.concurrency,
            max_cost=arguments.max_cost,
            batch=arguments.batch,
            poll_interval=arguments.poll_interval,
            on_progress=Progress(err, tty=err.isatty()),
        )
    _report(command, report)


async def load_replay(spec: str) -> Replay:
    """The ``Replay`` that ``--replay module:name`` names: the object, or what the function (sync
    or async, without arguments) returns.

    Raises:
        ParamsError: It cannot be imported, is not a ``Replay`` nor a function, or the function
            fails or returns something else (the message says which).
    """
    found = load_object(spec, _REPLAY)
    if isinstance(found, Replay):
        return found
    module_name, _, name = spec.partition(":")
    if not callable(found) or isinstance(found, type):
        raise ParamsError(
            f"--replay {spec!r}: {name!r} of the module {module_name!r} is {type(found).__name__!r}; give the name "
            f"of {_REPLAY.described}."
        )
    try:
        made: object = found()
        if inspect.isawaitable(made):
            made = await made
    except Exception as error:
        raise ParamsError(
            f"--replay {spec!r}: calling {name!r} failed: {type(error).__name__}: {message_of(error)}."
        ) from None
    if not isinstance(made, Replay):
        raise ParamsError(
            f"--replay {spec!r}: {name!r} returned {type(made).__name__!r}, not a Replay; return "
            "Replay(name=..., ...) from it."
        )
    return made


async def _recorded(command: _Command, change: Replay) -> list[RunState]:
    """The recorded runs the store's ``--run``s or query select, loaded."""
    store, selection = command.source, command.selection
    assert store is not None
    ids = list(selection.ids) or await select_runs(
        store,
        name=change.name,
        status=list(selection.statuses),
        updated_after=selection.after,
        updated_before=selection.before,
        limit=selection.limit,
    )
    states: list[RunState] = []
    for run_id in ids:
        loaded = await store.load(run_id)
        if loaded is None:
            raise not_found(run_id)
        states.append(loaded.state)
    return states


def _plan(command: _Command, change: Replay, total: int, done: int, estimate: Decimal | None) -> list[str]:
    """What the command says before it starts: the runs, the cost, the budget, where it saves."""
    arguments = command.arguments
    again = f" ({done} replayed already: read back, at no cost)" if done else ""
    lines = [f"Evaluation {change.name!r}: {plural(total, 'run')} to replay{again}."]
    if total > done:
        model = change.params.get("model")
        if estimate is None:
            lines.append(
                "Estimated cost: unknown (the price table has no price for a model of the replays; give "
                "Replay(prices=...))."
            )
        else:
            lines.append(
                f"Estimated cost: ${estimate:.4f}, if each replay uses the tokens its record used"
                + (f", at the prices of {model}" if model else ", at the prices of its model")
                + (" at Message Batches rates (--batch)" if arguments.batch else "")
                + "."
            )
    if arguments.max_cost is not None:
        lines.append(
            f"Budget: ${dollars(arguments.max_cost)} (--max-cost): the evaluation stops once its replays cost that "
            "much; the same command with a larger budget goes on."
        )
    lines.append(f"Replays are saved as {change.name}.RUN in {_shown(command.into_url)}.")
    return lines


def _shown(url: str) -> str:
    from .._stores.urls import holds_secret

    return "the --into store (its URL holds a password)" if holds_secret(url) else url


def _say(err: TextIO, *lines: str | list[str]) -> None:
    for line in lines:
        for text in [line] if isinstance(line, str) else line:
            print(printable(text), file=err, flush=True)


class Progress:
    """The progress bar, an ``on_progress``: redrawn in place on a terminal, a line per run otherwise."""

    WIDTH = 30

    def __init__(self, err: TextIO, *, tty: bool) -> None:
        self.err, self.tty = err, tty
        self.statuses: Counter[str] = Counter()
        self.cost = Decimal(0)

    def __call__(self, done: int, total: int, run: RunReplay) -> None:
        self.statuses[run.status] += 1
        if run.replayed is not None and run.replayed.cost is not None:
            self.cost += run.replayed.cost
        counts = ", ".join(f"{count} {status}" for status, count in sorted(self.statuses.items()))
        if self.tty:
            filled = self.WIDTH * done // max(total, 1)
            bar = "#" * filled + "-" * (self.WIDTH - filled)
            self.err.write(f"\r[{bar}] {done}/{total} ({counts}) ${self.cost:.4f}")
            if done == total:
                self.err.write("\n")
        else:
            why = "" if run.error is None else f": {printable(run.error)}"
            self.err.write(f"[{done}/{total}] {printable(run.source_id)} {run.status}{why}\n")
        self.err.flush()


def _report(command: _Command, report: ReplayReport) -> None:
    """The report, and the exit status it gives."""
    arguments, out = command.arguments, command.out
    if arguments.json:
        print(report.to_json(), file=out)
    else:
        print(report.table(), file=out)
    if arguments.html is not None:
        try:
            Path(arguments.html).write_text(report.html(), encoding="utf-8")
        except OSError as error:
            raise Exit(
                ExitCode.USAGE, f"cannot write --html {arguments.html!r} ({error.strerror})."
            ) from None
    statuses = Counter(run.status for run in report.runs)
    same = sum(1 for run in report.runs if run.comparison is not None and run.comparison.same)
    cost = "unknown" if report.cost is None else f"${report.cost:.4f}"
    _say(
        command.err,
        f"{plural(statuses['replayed'], 'run')} replayed ({same} the same as the record), cost {cost}.",
    )
    if report.stopped_by_budget or statuses["stopped"]:
        raise Exit(
            ExitCode.STOPPED,
            f"the budget (--max-cost) stopped the evaluation: {plural(statuses['stopped'], 'run')} not replayed; "
            "run the same command with a larger budget to go on.",
        )
    missed = [run for run in report.runs if run.status in ("failed", "skipped")]
    if missed:
        first = missed[0]
        raise Exit(
            ExitCode.INCOMPLETE,
            f"{plural(len(missed), 'run')} of {len(report.runs)} not replayed; the first, {first.source_id!r}, "
            f"{first.status}: {first.error}",
        )


# -- the export file -----------------------------------------------------------------------------------


def read_export(path: str) -> list[RunState]:
    """``read_runs(path)``, its mistakes ``Exit(USAGE)`` naming the option.

    Raises:
        Exit: ``USAGE``: the file cannot be read, or it holds something else (the message says
            which line or entry, and what was expected).
    """
    try:
        return read_runs(path)
    except ParamsError as error:
        raise Exit(ExitCode.USAGE, f"--from-file {path!r}: {error}") from None

"""The command line: ``toolrunner runs list|show|approve|deny|answer|delete|prune --store URL``,
``toolrunner inbox --store URL`` (the web app of ``toolrunner.inbox``, imported only then) and
``toolrunner resume --store URL --app module:function`` (``_ops.resume_command``) and
``toolrunner replay --store URL --replay module:name`` (``_ops.replay_command``: saved runs replayed as
an evaluation); also ``python -m toolrunner``.

This module reads the command line and maps what went wrong to an exit status (``ExitCode``); the
commands themselves are ``_ops.commands``, imported only once one runs, so that ``--help`` (and a
mistyped option) imports no store and not the SDK. Every command reads the store as a
``RunStore``; only ``resume`` and ``replay`` need the app's code (``--app``, ``--replay``). Tables
for people, ``--json`` for scripts.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import TextIO, TypeAlias

from .._core.errors import CheckpointConflictError, CheckpointError, ParamsError, StateError, ToolInputError
from .exits import STORE_VARIABLE, Exit, ExitCode

__all__ = ["STORE_VARIABLE", "ExitCode", "main", "run"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; its exit status."""
    return run(list(sys.argv[1:] if argv is None else argv), sys.stdout, sys.stderr, stdin=sys.stdin)


def run(
    argv: list[str],
    out: TextIO,
    err: TextIO,
    *,
    now: Callable[[], float] = time.time,
    stdin: TextIO | None = None,
) -> int:
    """The command line, writing to ``out`` and ``err``, with the time from ``now`` and the answers to
    its questions from ``stdin`` (for tests; ``None``: no terminal, so it asks nothing)."""
    parser = _parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            arguments = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed the usage and the error (or the help)
        return int(exit_.code or 0)
    group = getattr(arguments, "group", None)
    if group not in ("inbox", "resume", "replay") and getattr(arguments, "command", None) is None:
        parser.print_help(err)
        return ExitCode.USAGE
    url = arguments.store or os.environ.get(STORE_VARIABLE)
    if not url and group == "replay" and arguments.from_file is not None and arguments.into is not None:
        url = None  # the runs come from the file, and the replays go --into a store
    elif not url:
        print(
            f"toolrunner: say which store with --store URL or the {STORE_VARIABLE} variable: "
            "sqlite:///path/to/runs.db, a path, or postgresql://user:password@host/dbname.",
            file=err,
        )
        return ExitCode.USAGE
    try:
        from .commands import execute  # the stores and the SDK: imported once a command runs

        execute(arguments, url, out, err, datetime.fromtimestamp(now(), UTC), stdin=stdin)
    except Exit as exit_:
        return _failed(err, str(exit_), exit_.code)
    except (ParamsError, ToolInputError) as error:
        return _failed(err, str(error), ExitCode.USAGE)
    except CheckpointConflictError as error:
        return _failed(err, str(error), ExitCode.CONFLICT)
    except (CheckpointError, StateError) as error:
        return _failed(err, str(error), ExitCode.FAILED)
    return ExitCode.OK


def _failed(err: TextIO, message: str, code: ExitCode) -> int:
    from .render import printable  # loaded by then: only a command that ran fails this way

    print(f"toolrunner: {printable(message)}", file=err)
    return code


class _Statuses:
    """The names of the run statuses, as argparse's ``choices``, read from ``RunStatus`` when first
    asked: the help of ``toolrunner`` and ``toolrunner runs`` does not ask, and so imports neither
    the stores nor the SDK."""

    def _names(self) -> list[str]:
        from .._stores.runs import RunStatus

        return [status.value for status in RunStatus]

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __contains__(self, name: object) -> bool:
        return name in self._names()


# -- the parser -----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolrunner",
        description="Operate the runs a toolrunner store holds: list them, read one, decide its waiting calls, "
        "clean up.",
        epilog="Exit status: 0 done, 1 the store failed, 2 wrong usage or input (or an --app or --replay that "
        "cannot be imported), 3 no such run or call, 4 decided already (or the run moved on); toolrunner replay: "
        "5 a run was not replayed, 6 the budget stopped it, 7 answered no.",
    )
    groups = parser.add_subparsers(dest="group", metavar="{runs,inbox,resume,replay}")
    _runs_group(groups)
    _inbox_group(groups)
    _resume_group(groups)
    _replay_group(groups)
    return parser


_Groups: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"  # pyright: ignore[reportPrivateUsage]
"""What ``add_subparsers`` returns: argparse names its type only privately."""


def _add_store(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--store",
        metavar="URL",
        help=f"sqlite:///path/to/runs.db, a path, or postgresql://user:password@host/dbname "
        f"(default: ${STORE_VARIABLE})",
    )


def _runs_group(groups: _Groups) -> None:
    """``toolrunner runs ...``."""
    runs = groups.add_parser("runs", help="list, show, decide and clean up saved runs")
    commands = runs.add_subparsers(dest="command", metavar="COMMAND")
    common = argparse.ArgumentParser(add_help=False)
    _add_store(common)
    common.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")
    statuses = _Statuses()
    _reading_commands(commands, common, statuses)
    _deciding_commands(commands, common)
    _cleaning_commands(commands, common, statuses)


def _reading_commands(commands: _Groups, common: argparse.ArgumentParser, statuses: _Statuses) -> None:
    """``list`` and ``show``."""
    listing = commands.add_parser("list", parents=[common], help="list runs, newest first")
    listing.add_argument(
        "--status",
        action="append",
        choices=statuses,
        metavar="STATUS",
        help="only runs with this status, one of %(choices)s (repeat for several)",
    )
    listing.add_argument(
        "--updated-before", metavar="WHEN", help="last saved before: a duration ago (7d) or a time"
    )
    listing.add_argument(
        "--updated-after", metavar="WHEN", help="last saved at or after: a duration ago (1h) or a time"
    )
    listing.add_argument("--limit", type=int, default=50, help="runs per page (default 50)")
    listing.add_argument("--cursor", help="the next page's cursor, as the previous page printed it")

    show = commands.add_parser("show", parents=[common], help="a run's conversation and the calls that wait")
    show.add_argument("run_id", metavar="RUN")
    show.add_argument("--full", action="store_true", help="do not cut long texts and inputs")


def _deciding_commands(commands: _Groups, common: argparse.ArgumentParser) -> None:
    """``approve``, ``deny`` and ``answer``."""
    decider = argparse.ArgumentParser(add_help=False, parents=[common])
    decider.add_argument("run_id", metavar="RUN")
    decider.add_argument("call_id", metavar="CALL", help="the tool_use id of a waiting call (see `show`)")
    decider.add_argument("--by", help="who decides (default: your user name)")

    approve = commands.add_parser("approve", parents=[decider], help="approve a waiting call")
    approve.add_argument(
        "--input",
        metavar="JSON",
        help="run the call with this input instead (checked against the tool's schema)",
    )

    deny = commands.add_parser("deny", parents=[decider], help="deny a waiting call")
    deny.add_argument("--reason", help="what the model reads (default: that a person denied the call)")

    answer = commands.add_parser("answer", parents=[decider], help="answer a waiting call with a result")
    answer.add_argument("result", metavar="RESULT", help="the result the model reads, as text")
    answer.add_argument("--json-result", action="store_true", help="RESULT is JSON (an object, a list, ...)")
    answer.add_argument("--error", action="store_true", help="the result is an error")


def _cleaning_commands(commands: _Groups, common: argparse.ArgumentParser, statuses: _Statuses) -> None:
    """``delete`` and ``prune``."""
    delete = commands.add_parser("delete", parents=[common], help="delete runs")
    delete.add_argument("run_ids", metavar="RUN", nargs="+")

    prune = commands.add_parser(
        "prune",
        parents=[common],
        help="delete runs last saved before a time (those that wait for a decision only if --status says so)",
    )
    prune.add_argument("--older-than", required=True, metavar="WHEN", help="a duration ago (30d) or a time")
    prune.add_argument(
        "--status",
        action="append",
        choices=statuses,
        metavar="STATUS",
        help="only runs with this status, one of %(choices)s (repeat for several; default: every status but "
        "those of runs that wait for a person)",
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list the runs it would delete, and delete none"
    )


def _inbox_group(groups: _Groups) -> None:
    """``toolrunner inbox``."""
    inbox = groups.add_parser(
        "inbox",
        help="serve the inbox: a web app to read and decide the runs that wait (the [inbox] extra)",
        description="Serve the inbox, a web app where a person reads the runs that wait for a decision and "
        "approves, edits, denies or answers their calls. Every request needs the token: made at start and "
        "printed once, or given in $TOOLRUNNER_INBOX_TOKEN or --token-file.",
    )
    _add_store(inbox)
    inbox.add_argument("--host", default="127.0.0.1", help="the address to listen on (default: 127.0.0.1)")
    inbox.add_argument("--port", type=int, default=8765, help="the port to listen on (default: 8765; 0: any)")
    inbox.add_argument(
        "--token-file",
        metavar="PATH",
        help="read the token from this file (default: $TOOLRUNNER_INBOX_TOKEN, else made)",
    )
    inbox.add_argument(
        "--origin",
        action="append",
        metavar="URL",
        help="a URL the inbox is reached at, behind a reverse proxy (https://inbox.example.com; repeat for several)",
    )
    inbox.add_argument(
        "--root-path",
        default="",
        metavar="PATH",
        help="the path a reverse proxy serves the inbox under (/inbox; default: none)",
    )
    inbox.add_argument(
        "--poll-interval",
        type=float,
        default=2.0,
        metavar="SECONDS",
        help="how often the live list looks at the store (default: 2)",
    )


def _resume_group(groups: _Groups) -> None:
    """``toolrunner resume``."""
    resume = groups.add_parser(
        "resume",
        help="take up the runs that are ready (every waiting call decided) and go on with them, with the "
        "app's tools",
        description="Serve a resumer: it takes up each run of the store that is ready (every call that waited "
        "is decided) under a lease, has the app's factory resume it, and drives it until it ends or pauses "
        "again. Run as many as you like, on as many machines: each run goes to one, and a run whose resumer "
        "died goes to another once the lease runs out. SIGTERM or Ctrl-C stops it (twice: at once).",
    )
    _add_store(resume)
    resume.add_argument(
        "--app",
        required=True,
        metavar="MODULE:FUNCTION",
        help="the app's factory, async def (run_id, store) -> ToolRunner (imported from the working directory "
        "or the Python path)",
    )
    resume.add_argument("--concurrency", type=int, default=8, help="runs driven at once (default: 8)")
    resume.add_argument(
        "--lease",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="how long a run is held without news of this resumer (default: 30); it renews every third",
    )
    resume.add_argument(
        "--poll-interval",
        type=float,
        default=1.0,
        metavar="SECONDS",
        help="how often to look for ready runs on SQLite (default: 1; PostgreSQL tells at once)",
    )
    resume.add_argument(
        "--grace",
        type=float,
        default=10.0,
        metavar="SECONDS",
        help="on SIGTERM, how long the runs in hand have to end or pause before they stop (default: 10)",
    )


def _replay_group(groups: _Groups) -> None:
    """``toolrunner replay``."""
    replay = groups.add_parser(
        "replay",
        help="replay saved runs with a change (model, prompt, tools, ...) and compare them with the record",
        description="Replay saved runs with the change a Replay of the app's code defines (another model, system "
        "prompt, params, tools, output type or hooks), answering their tool calls from the recorded runs' "
        "journals (nothing a recorded run did is done again), and report how each replay differs from its "
        "record. It says how many runs and what they may cost first, and asks on a terminal (not with --yes).",
        epilog="Exit status: 0 every run replayed (divergences are results), 1 the store failed, 2 wrong usage "
        "(a --replay that cannot be imported, a malformed --from-file, no API key), 3 no such run or store, "
        "5 a replay failed or a run cannot be replayed (the others were), 6 the budget stopped it (run it again "
        "with a larger --max-cost to go on), 7 answered no at the question.",
    )
    _add_store(replay)
    replay.add_argument(
        "--replay",
        required=True,
        metavar="MODULE:NAME",
        help="the change: a Replay, or a function without arguments that returns one (imported from the working "
        "directory or the Python path)",
    )
    replay.add_argument(
        "--run", action="append", metavar="RUN", help="replay this run of the store (repeat for several)"
    )
    replay.add_argument(
        "--status",
        action="append",
        choices=_Statuses(),
        metavar="STATUS",
        help="replay the newest runs with this status, one of %(choices)s (repeat for several; default: finished)",
    )
    replay.add_argument(
        "--updated-after", metavar="WHEN", help="runs last saved at or after: a duration ago (1h) or a time"
    )
    replay.add_argument(
        "--updated-before", metavar="WHEN", help="runs last saved before: a duration ago (7d) or a time"
    )
    replay.add_argument("--limit", type=int, help="the most runs a query replays (default 50)")
    replay.add_argument(
        "--from-file",
        metavar="PATH",
        help="replay the runs of this file: `toolrunner runs show --json RUN`'s output, a JSON list of those, or "
        "JSON Lines of them",
    )
    replay.add_argument(
        "--into",
        metavar="URL",
        help="save the replays in this store (default: the --store one), so that the same command run again "
        "goes on with the evaluation: the runs replayed already are read back, not run again",
    )
    replay.add_argument("--concurrency", type=int, default=8, help="replays run at once (default: 8)")
    replay.add_argument(
        "--max-cost",
        metavar="DOLLARS",
        help="stop once the replays cost this many US dollars (each may overshoot by a request)",
    )
    replay.add_argument(
        "--batch",
        action="store_true",
        help="send the requests through the Message Batches API, at its discount (slower)",
    )
    replay.add_argument(
        "--poll-interval",
        type=float,
        default=30.0,
        metavar="SECONDS",
        help="with --batch, how often a batch is looked at (default: 30)",
    )
    replay.add_argument("--yes", action="store_true", help="start without asking")
    replay.add_argument("--json", action="store_true", help="print the report as JSON for scripts")
    replay.add_argument("--html", metavar="PATH", help="also write the report as an HTML page")

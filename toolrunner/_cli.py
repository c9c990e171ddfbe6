"""The command line: ``toolrunner runs list|show|approve|deny|answer|delete|prune --store URL``,
and ``toolrunner inbox --store URL`` (the web app of ``toolrunner.inbox``, imported only then);
also ``python -m toolrunner``.

Every command reads the store as a ``RunStore``; none needs the app's code or its tools. Tables for
people, ``--json`` for scripts, and an exit status that says what happened (``ExitCode``).
"""

from __future__ import annotations

import argparse
import contextlib
import enum
import getpass
import json
import os
import re
import shlex
import sys
import time
import urllib.parse
from collections.abc import Awaitable, Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import TextIO, cast

import anyio

from ._checkpoint import RunStore
from ._errors import (
    ApprovalError,
    CheckpointConflictError,
    CheckpointError,
    ParamsError,
    StateError,
    ToolInputError,
)
from ._runs import RunStatus, RunSummary, parse_json, waiting_calls
from ._show import (
    age,
    conversation,
    moment,
    plural,
    printable,
    record_data,
    runs_table,
    summary_data,
    waiting_lines,
)
from ._state import CallRecord
from ._stores import open_store, store_path
from ._text import sendable_text

__all__ = ["ExitCode", "main"]

STORE_VARIABLE = "TOOLRUNNER_STORE"


class ExitCode(enum.IntEnum):
    """What a command's exit status says."""

    OK = 0
    """Done (a listing that matches nothing is done too)."""
    FAILED = 1
    """The store failed: it cannot be reached or read, or a run in it is damaged."""
    USAGE = 2
    """The command was given wrong: an unknown option, a bad time, an input that does not fit."""
    NOT_FOUND = 3
    """No run, or no waiting call, of that name."""
    CONFLICT = 4
    """Someone decided the call first (the message says who and when), or the run moved on."""


class _Exit(Exception):
    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; its exit status."""
    return run(list(sys.argv[1:] if argv is None else argv), sys.stdout, sys.stderr)


def run(argv: list[str], out: TextIO, err: TextIO, *, now: Callable[[], float] = time.time) -> int:
    """The command line, writing to ``out`` and ``err``, with the time from ``now`` (for tests)."""
    parser = _parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            arguments = parser.parse_args(argv)
    except SystemExit as exit_:  # argparse printed the usage and the error (or the help)
        return int(exit_.code or 0)
    inbox = getattr(arguments, "group", None) == "inbox"
    if not inbox and getattr(arguments, "command", None) is None:
        parser.print_help(err)
        return ExitCode.USAGE
    url = arguments.store or os.environ.get(STORE_VARIABLE)
    if not url:
        print(
            f"toolrunner: say which store with --store URL or the {STORE_VARIABLE} variable: "
            "sqlite:///path/to/runs.db, a path, or postgresql://user:password@host/dbname.",
            file=err,
        )
        return ExitCode.USAGE
    try:
        path = store_path(url)
        if path is not None and not path.is_file():
            raise _Exit(
                ExitCode.NOT_FOUND,
                f"there is no store at {str(path)!r}; check the path (runs are saved by "
                "ToolRunner(checkpointer=SQLiteCheckpointer(path), ...)).",
            )
        if inbox:
            _inbox(arguments, url, err)
            return ExitCode.OK
        store = open_store(url)
        try:
            anyio.run(
                _COMMANDS[arguments.command],
                _Context(store, arguments, out, url, datetime.fromtimestamp(now(), UTC)),
            )
        finally:
            close = getattr(store, "close", None)
            if callable(close):
                close()
    except _Exit as exit_:
        print(f"toolrunner: {printable(str(exit_))}", file=err)
        return exit_.code
    except (ParamsError, ToolInputError) as error:
        print(f"toolrunner: {printable(str(error))}", file=err)
        return ExitCode.USAGE
    except CheckpointConflictError as error:
        print(f"toolrunner: {printable(str(error))}", file=err)
        return ExitCode.CONFLICT
    except (CheckpointError, StateError) as error:
        print(f"toolrunner: {printable(str(error))}", file=err)
        return ExitCode.FAILED
    return ExitCode.OK


class _Context:
    def __init__(
        self, store: RunStore, arguments: argparse.Namespace, out: TextIO, url: str, now: datetime
    ) -> None:
        self.store = store
        self.arguments = arguments
        self.out = out
        self.url = url
        self.now = now

    def print(self, *lines: str) -> None:
        for line in lines:
            print(printable(line), file=self.out)

    def json(self, data: object) -> None:
        text = json.dumps(data, ensure_ascii=False, indent=2)
        if sendable_text(text) is not text:  # a lone surrogate: written as a \udcXX escape instead
            text = json.dumps(data, indent=2)
        print(text, file=self.out)


# -- the commands ------------------------------------------------------------------------------------


async def _list(context: _Context) -> None:
    arguments = context.arguments
    page = await context.store.list_runs(
        status=arguments.status or None,
        updated_before=_time(arguments.updated_before, context.now, "--updated-before"),
        updated_after=_time(arguments.updated_after, context.now, "--updated-after"),
        limit=arguments.limit,
        cursor=arguments.cursor,
    )
    if arguments.json:
        context.json({"runs": [summary_data(summary) for summary in page.runs], "cursor": page.cursor})
        return
    if not page.runs:
        context.print("No runs match.")
        return
    context.print(runs_table(page.runs, context.now))
    if page.cursor is not None:
        context.print("", f"More runs: add --cursor {page.cursor}")


async def _show(context: _Context) -> None:
    arguments, store = context.arguments, context.store
    summary = await store.get_run(arguments.run_id)
    loaded = await store.load(arguments.run_id)
    if summary is None or loaded is None:
        raise _not_found(arguments.run_id)
    state = loaded.state
    if arguments.json:
        context.json({"summary": summary_data(summary), "state": state.to_dict()})
        return
    context.print(*_heading(summary, context.now))
    total = state.total
    context.print(
        f"{plural(summary.turns, 'turn')}, {total.input_tokens:,} input and {total.output_tokens:,} output tokens"
        + ("" if summary.cost is None else f", ${summary.cost:.4f}")
    )
    context.print(*conversation(state, full=arguments.full))
    waiting = waiting_lines(state, full=arguments.full)
    if waiting:
        secret = bool(arguments.store) and _holds_password(arguments.store)
        given = [] if not arguments.store or secret else _option("--store", arguments.store)
        call = [summary.run_id, waiting_calls(state)[0].id]
        context.print(
            "",
            "Waiting for a decision:",
            *waiting,
            "",
            "Decide with: " + _command("approve", call, given),
            "         or: " + _command("deny", call, [*_option("--reason", "the reason"), *given]),
            "         or: " + _command("answer", [*call, "the result"], given),
        )
        if secret:
            context.print(
                f"(with --store as you gave it, or {STORE_VARIABLE} set: its URL holds a password, which is not printed)"
            )


def _holds_password(url: str) -> bool:
    """Whether a store URL carries a password (``postgresql://user:secret@host/db``)."""
    try:
        return urllib.parse.urlsplit(url).password is not None
    except ValueError:
        return True  # a URL that cannot be read is not printed either


def _command(command: str, arguments: list[str], options: list[str]) -> str:
    """A ``toolrunner runs`` command line to paste into a shell: each argument quoted, and ``--``
    before the positional arguments when one starts with ``-`` (a run id may)."""
    if any(argument.startswith("-") for argument in arguments):
        argv = [*options, "--", *arguments]
    else:
        argv = [*arguments, *options]
    return shlex.join(["toolrunner", "runs", command, *argv])


def _option(name: str, value: str) -> list[str]:
    return [f"{name}={value}"] if value.startswith("-") else [name, value]


def _heading(summary: RunSummary, now: datetime) -> list[str]:
    status = summary.status.value
    if summary.end_reason is not None and summary.status is not RunStatus.AWAITING:
        status += f" ({summary.end_reason})"
    lines = [
        f"Run {summary.run_id}: {status}",
        f"created {moment(summary.created)} UTC, last saved {moment(summary.updated)} UTC "
        f"({_ago(now - summary.updated)})",
    ]
    if summary.failure is not None:
        lines.append(f"failed: {summary.failure.get('type')}: {summary.failure.get('message')}")
    return lines


def _ago(delta: timedelta) -> str:
    return f"{age(delta)} ago"


async def _approve(context: _Context) -> None:
    arguments = context.arguments
    edited: object = None
    if arguments.input is not None:
        try:
            edited = parse_json(arguments.input)
        except ValueError as error:
            raise _Exit(
                ExitCode.USAGE,
                f"--input is not JSON ({error}); give the tool's input as a JSON object, "
                "for example --input '{\"amount\": 100}'.",
            ) from None
        if not isinstance(edited, dict):  # null too, which would approve the call unedited
            raise _Exit(
                ExitCode.USAGE,
                f"--input is {_JSON_KINDS.get(type(edited), 'a number')}, not a JSON object: give the tool's "
                "whole input as an object (--input '{\"amount\": 100}'), or leave --input out to approve the "
                "call as it is.",
            )
        edited = cast("dict[str, object]", edited)
    await _decide(
        context,
        "approved",
        lambda: context.store.approve_call(
            arguments.run_id, arguments.call_id, input=edited, by=_by(arguments)
        ),
    )


_JSON_KINDS: dict[type, str] = {type(None): "null", bool: "true or false", str: "a string", list: "a list"}


async def _deny(context: _Context) -> None:
    arguments = context.arguments
    await _decide(
        context,
        "denied",
        lambda: context.store.deny_call(
            arguments.run_id, arguments.call_id, arguments.reason, by=_by(arguments)
        ),
    )


async def _answer(context: _Context) -> None:
    arguments = context.arguments
    result: object = arguments.result
    if arguments.json_result:
        try:
            result = parse_json(arguments.result)
        except ValueError as error:
            raise _Exit(
                ExitCode.USAGE, f"the result is not JSON ({error}); drop --json-result to send it as text."
            ) from None
    await _decide(
        context,
        "answered",
        lambda: context.store.answer_call(
            arguments.run_id, arguments.call_id, result, is_error=arguments.error, by=_by(arguments)
        ),
    )


async def _decide(context: _Context, what: str, decide: Callable[[], Awaitable[CallRecord]]) -> None:
    arguments, store = context.arguments, context.store
    loaded = await store.load(arguments.run_id)
    if loaded is None:
        raise _not_found(arguments.run_id)
    record = loaded.state.calls.get(arguments.call_id)
    if record is None or (record.decision is None and record.call not in waiting_calls(loaded.state)):
        waiting = [call.id for call in waiting_calls(loaded.state)]
        raise _Exit(
            ExitCode.NOT_FOUND,
            f"the run {arguments.run_id!r} has no call {arguments.call_id!r} that waits for a decision; "
            + (f"the calls that wait are {waiting!r}." if waiting else "none of its calls waits for one."),
        )
    try:
        record = await decide()
    except ApprovalError as error:
        raise _Exit(await _refused(context), str(error)) from None
    if arguments.json:
        context.json(record_data(record))
        return
    context.print(
        f"{what.capitalize()} {record.call.id} ({record.call.name}) of run {arguments.run_id}"
        + (f" by {record.decided_by}" if record.decided_by else "")
        + f" at {record.decided_at}.",
        "The run goes on when it is resumed (ToolRunner.resume), or when a runner that holds it is iterated again.",
    )


async def _refused(context: _Context) -> ExitCode:
    """The exit status of a decision the store refused, by its cause, as the run now stands: the call
    was decided (or the run moved on) since it was read, or else the decision itself cannot be taken
    (a reason or a result that cannot be sent), and the call still waits."""
    arguments = context.arguments
    loaded = await context.store.load(arguments.run_id)
    if loaded is None:
        return ExitCode.NOT_FOUND
    record = loaded.state.calls.get(arguments.call_id)
    still_waits = any(call.id == arguments.call_id for call in waiting_calls(loaded.state))
    if record is None or record.decision is not None or not still_waits:
        return ExitCode.CONFLICT
    return ExitCode.USAGE


async def _delete(context: _Context) -> None:
    missing: list[str] = []
    deleted: list[str] = []
    for run_id in context.arguments.run_ids:
        (deleted if await context.store.delete_run(run_id) else missing).append(run_id)
    if context.arguments.json:
        context.json({"deleted": deleted, "missing": missing})
    else:
        for run_id in deleted:
            context.print(f"Deleted {run_id}.")
    if missing:
        raise _Exit(
            ExitCode.NOT_FOUND, f"no run named {', '.join(repr(run_id) for run_id in missing)} in the store."
        )


async def _prune(context: _Context) -> None:
    arguments, store = context.arguments, context.store
    before = _time(arguments.older_than, context.now, "--older-than")
    assert before is not None
    statuses = arguments.status or None
    if arguments.dry_run:
        doomed: list[RunSummary] = []
        cursor: str | None = None
        while True:
            page = await store.list_runs(status=statuses, updated_before=before, limit=1000, cursor=cursor)
            doomed += page.runs
            if page.cursor is None:
                break
            cursor = page.cursor
        if arguments.json:
            context.json(
                {"would_delete": [summary.run_id for summary in doomed], "updated_before": before.isoformat()}
            )
            return
        context.print(f"Would delete {plural(len(doomed), 'run')} last saved before {moment(before)} UTC.")
        if doomed:
            context.print(runs_table(doomed, context.now))
        return
    count = await store.prune_runs(updated_before=before, status=statuses)
    if arguments.json:
        context.json({"deleted": count, "updated_before": before.isoformat()})
        return
    kinds = "" if statuses is None else f" ({', '.join(statuses)})"
    context.print(f"Deleted {plural(count, 'run')}{kinds} last saved before {moment(before)} UTC.")


_COMMANDS: dict[str, Callable[[_Context], Awaitable[None]]] = {
    "list": _list,
    "show": _show,
    "approve": _approve,
    "deny": _deny,
    "answer": _answer,
    "delete": _delete,
    "prune": _prune,
}


def _inbox(arguments: argparse.Namespace, url: str, err: TextIO) -> None:
    """``toolrunner inbox``: serve the inbox until interrupted."""
    try:
        from .inbox._serve import TOKEN_VARIABLE, serve
    except ImportError as error:  # the [inbox] extra is not installed
        raise _Exit(
            ExitCode.USAGE,
            f"the inbox needs the [inbox] extra ({error}); install it with pip install 'claude-toolrunner[inbox]'.",
        ) from None
    token = os.environ.get(TOKEN_VARIABLE) or None
    if arguments.token_file is not None:
        try:
            with open(arguments.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError as error:
            raise _Exit(
                ExitCode.USAGE, f"cannot read the token from {arguments.token_file!r} ({error.strerror})."
            ) from None
    try:
        serve(
            url,
            host=arguments.host,
            port=arguments.port,
            token=token,
            origins=arguments.origin or (),
            poll_interval=arguments.poll_interval,
            root_path=arguments.root_path,
            err=err,
        )
    except (ValueError, OSError) as error:
        raise _Exit(ExitCode.USAGE, str(error)) from None


def _not_found(run_id: str) -> _Exit:
    return _Exit(
        ExitCode.NOT_FOUND, f"no run named {run_id!r} in the store; list them with `toolrunner runs list`."
    )


def _by(arguments: argparse.Namespace) -> str | None:
    if arguments.by is not None:
        return str(arguments.by)
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # no user name to be had (a container without a passwd entry)
        return None


_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def _time(text: str | None, now: datetime, option: str) -> datetime | None:
    """A time given as a duration before now (``30d``, ``12h``, ``1w2d``) or ISO 8601 (UTC if no zone)."""
    if text is None:
        return None
    text = text.strip()
    if text and _DURATION.sub("", text).strip() == "":
        try:
            return now - timedelta(seconds=sum(int(n) * _UNITS[unit] for n, unit in _DURATION.findall(text)))
        except (OverflowError, ValueError):  # more days than a timedelta holds, before the year 1, or
            # a number of more digits than int() reads
            raise _Exit(
                ExitCode.USAGE,
                f"{option} {text!r} reaches back before the year 1; give a shorter duration (30d, 52w) or a "
                "time (2025-06-01).",
            ) from None
    try:
        moment_ = datetime.fromisoformat(text)
    except ValueError:
        raise _Exit(
            ExitCode.USAGE,
            f"{option} {text!r} is neither a duration (30d, 12h, 45m) nor a time "
            "(2025-06-01 or 2025-06-01T12:00:00+02:00).",
        ) from None
    return moment_ if moment_.tzinfo is not None else moment_.replace(tzinfo=UTC)


# -- the parser -----------------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="toolrunner",
        description="Operate the runs a toolrunner store holds: list them, read one, decide its waiting calls, "
        "clean up.",
        epilog="Exit status: 0 done, 1 the store failed, 2 wrong usage or input, 3 no such run or call, "
        "4 decided already (or the run moved on).",
    )
    groups = parser.add_subparsers(dest="group", metavar="{runs,inbox}")
    runs = groups.add_parser("runs", help="list, show, decide and clean up saved runs")
    commands = runs.add_subparsers(dest="command", metavar="COMMAND")

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--store",
        metavar="URL",
        help=f"sqlite:///path/to/runs.db, a path, or postgresql://user:password@host/dbname "
        f"(default: ${STORE_VARIABLE})",
    )
    common.add_argument("--json", action="store_true", help="print JSON for scripts instead of text")
    statuses = [status.value for status in RunStatus]

    listing = commands.add_parser("list", parents=[common], help="list runs, newest first")
    listing.add_argument(
        "--status", action="append", choices=statuses, help="only runs with this status (repeat for several)"
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

    delete = commands.add_parser("delete", parents=[common], help="delete runs")
    delete.add_argument("run_ids", metavar="RUN", nargs="+")

    prune = commands.add_parser("prune", parents=[common], help="delete runs last saved before a time")
    prune.add_argument("--older-than", required=True, metavar="WHEN", help="a duration ago (30d) or a time")
    prune.add_argument(
        "--status", action="append", choices=statuses, help="only runs with this status (repeat for several)"
    )
    prune.add_argument(
        "--dry-run", action="store_true", help="list the runs it would delete, and delete none"
    )

    inbox = groups.add_parser(
        "inbox",
        help="serve the inbox: a web app to read and decide the runs that wait (the [inbox] extra)",
        description="Serve the inbox, a web app where a person reads the runs that wait for a decision and "
        "approves, edits, denies or answers their calls. Every request needs the token: made at start and "
        "printed once, or given in $TOOLRUNNER_INBOX_TOKEN or --token-file.",
    )
    inbox.add_argument(
        "--store",
        metavar="URL",
        help=f"sqlite:///path/to/runs.db, a path, or postgresql://user:password@host/dbname "
        f"(default: ${STORE_VARIABLE})",
    )
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
    return parser

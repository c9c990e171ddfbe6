"""The commands of the command line (``_ops.cli`` reads it and calls ``execute``): each opens the store
its URL names, as a ``RunStore``, and needs none of the app's code or tools. Tables and text for
people, ``--json`` for scripts; what goes wrong ends the command with an exit status (``Exit``).
"""

from __future__ import annotations

import argparse
import getpass
import json
import os
import re
import shlex
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime, timedelta
from typing import TextIO, cast

import anyio

from .._core.errors import ApprovalError
from .._core.ids import check_by, check_reason, check_run_id
from .._core.state import CallRecord
from .._core.unicode import sendable_text
from .._stores.deciding import parse_json
from .._stores.listing import PRUNE_KEEPS, check_time, pruned_statuses
from .._stores.open import open_store, store_path
from .._stores.protocol import RunStore
from .._stores.runs import RunStatus, RunSummary, waiting_calls
from .._stores.urls import holds_secret
from .exits import STORE_VARIABLE, Exit, ExitCode
from .render import (
    age,
    audit_lines,
    conversation,
    going_on,
    moment,
    plural,
    printable,
    record_data,
    runs_table,
    summary_data,
    waiting_lines,
)

__all__ = ["execute"]


def execute(arguments: argparse.Namespace, url: str, out: TextIO, err: TextIO, now: datetime) -> None:
    """Run the command ``arguments`` name on the store at ``url`` (or serve the inbox over it).

    Raises:
        Exit: The command ends with that exit status.
        ParamsError, ToolInputError, CheckpointError, StateError: As ``_ops.cli.run`` maps them.
    """
    path = store_path(url)
    if path is not None and not path.is_file():
        raise Exit(
            ExitCode.NOT_FOUND,
            f"there is no store at {str(path)!r}; check the path (runs are saved by "
            "ToolRunner(checkpointer=SQLiteCheckpointer(path), ...)).",
        )
    if getattr(arguments, "group", None) == "inbox":
        _inbox(arguments, url, err)
        return
    if getattr(arguments, "group", None) == "resume":
        _resume(arguments, url, err)
        return
    store = open_store(url)
    try:
        anyio.run(_COMMANDS[arguments.command], _Context(store, arguments, out, url, now))
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


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
    context.print(*audit_lines(state, full=arguments.full))
    waiting = waiting_lines(state, full=arguments.full)
    if waiting:
        secret = bool(arguments.store) and holds_secret(arguments.store)
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
    if summary.end_reason is not None and summary.status in (RunStatus.FINISHED, RunStatus.FAILED):
        status += f" ({summary.end_reason})"
    lines = [
        f"Run {summary.run_id}: {status}",
        f"created {moment(summary.created)} UTC, last saved {moment(summary.updated)} UTC "
        f"({_ago(now - summary.updated)})",
    ]
    if summary.failure is not None:
        lines.append(f"failed: {summary.failure.get('type')}: {summary.failure.get('message')}")
    note = going_on(summary, now)
    if note:
        lease = "" if summary.lease is None else f" (lease until {moment(summary.lease.expires)} UTC)"
        lines.append(note + lease)
    return lines


def _ago(delta: timedelta) -> str:
    return f"{age(delta)} ago"


async def _approve(context: _Context) -> None:
    arguments = context.arguments
    by = _by(arguments)
    edited: object = None
    if arguments.input is not None:
        try:
            edited = parse_json(arguments.input)
        except ValueError as error:
            raise Exit(
                ExitCode.USAGE,
                f"--input is not JSON ({error}); give the tool's input as a JSON object, "
                "for example --input '{\"amount\": 100}'.",
            ) from None
        if not isinstance(edited, dict):  # null too, which would approve the call unedited
            raise Exit(
                ExitCode.USAGE,
                f"--input is {_JSON_KINDS.get(type(edited), 'a number')}, not a JSON object: give the tool's "
                "whole input as an object (--input '{\"amount\": 100}'), or leave --input out to approve the "
                "call as it is.",
            )
        edited = cast("dict[str, object]", edited)
    await _decide(
        context,
        "approved",
        lambda: context.store.approve_call(arguments.run_id, arguments.call_id, input=edited, by=by),
    )


_JSON_KINDS: dict[type, str] = {type(None): "null", bool: "true or false", str: "a string", list: "a list"}


async def _deny(context: _Context) -> None:
    arguments = context.arguments
    by = _by(arguments)
    if arguments.reason is not None:  # the rule every denial keeps, before the run is read
        try:
            check_reason(arguments.call_id, arguments.reason)
        except ApprovalError as error:
            raise Exit(ExitCode.USAGE, str(error)) from None
    await _decide(
        context,
        "denied",
        lambda: context.store.deny_call(arguments.run_id, arguments.call_id, arguments.reason, by=by),
    )


async def _answer(context: _Context) -> None:
    arguments = context.arguments
    by = _by(arguments)
    result: object = arguments.result
    if arguments.json_result:
        try:
            result = parse_json(arguments.result)
        except ValueError as error:
            raise Exit(
                ExitCode.USAGE, f"the result is not JSON ({error}); drop --json-result to send it as text."
            ) from None
    await _decide(
        context,
        "answered",
        lambda: context.store.answer_call(
            arguments.run_id, arguments.call_id, result, is_error=arguments.error, by=by
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
        raise Exit(
            ExitCode.NOT_FOUND,
            f"the run {arguments.run_id!r} has no call {arguments.call_id!r} that waits for a decision; "
            + (f"the calls that wait are {waiting!r}." if waiting else "none of its calls waits for one."),
        )
    try:
        record = await decide()
    except ApprovalError as error:
        raise Exit(await _refused(context), str(error)) from None
    if arguments.json:
        context.json(record_data(record))
        return
    context.print(
        f"{what.capitalize()} {record.call.id} ({record.call.name}) of run {arguments.run_id}"
        + (f" by {record.decided_by}" if record.decided_by else "")
        + f" at {record.decided_at}.",
        _after_decision(await context.store.get_run(arguments.run_id)),
    )


def _after_decision(summary: RunSummary | None) -> str:
    if summary is not None and summary.status is RunStatus.AWAITING:
        return f"The run still waits for {plural(len(summary.waiting), 'call')} to be decided."
    return (
        "The run is ready: it goes on when a resumer takes it up (toolrunner resume), when the app resumes it "
        "(ToolRunner.resume), or when a runner that holds it is iterated again."
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
    for run_id in context.arguments.run_ids:  # every one checked before the first is deleted
        check_run_id(run_id, "RUN")
    for run_id in context.arguments.run_ids:
        (deleted if await context.store.delete_run(run_id) else missing).append(run_id)
    if context.arguments.json:
        context.json({"deleted": deleted, "missing": missing})
    else:
        for run_id in deleted:
            context.print(f"Deleted {run_id}.")
    if missing:
        raise Exit(
            ExitCode.NOT_FOUND, f"no run named {', '.join(repr(run_id) for run_id in missing)} in the store."
        )


async def _prune(context: _Context) -> None:
    arguments, store = context.arguments, context.store
    before = _time(arguments.older_than, context.now, "--older-than")
    assert before is not None
    statuses = arguments.status or None
    # Without --status, the runs that wait for a person are kept (PRUNE_KEEPS); say which.
    pruned, kept = (
        pruned_statuses(statuses),
        [] if statuses else sorted(status.value for status in PRUNE_KEEPS),
    )
    if arguments.dry_run:
        doomed = await _all_runs(store, pruned, before)
        spared = await _all_runs(store, kept, before) if kept else []
        if arguments.json:
            context.json(
                {
                    "would_delete": [summary.run_id for summary in doomed],
                    "kept": [summary.run_id for summary in spared],
                    "updated_before": before.isoformat(),
                }
            )
            return
        context.print(f"Would delete {plural(len(doomed), 'run')} last saved before {moment(before)} UTC.")
        if doomed:
            context.print(runs_table(doomed, context.now))
        if spared:
            context.print("", _kept_line(len(spared), kept, "Would keep"))
            context.print(runs_table(spared, context.now))
        return
    count = await store.prune_runs(updated_before=before, status=statuses)
    left = len(await _all_runs(store, kept, before)) if kept else 0
    if arguments.json:
        context.json({"deleted": count, "kept": left, "updated_before": before.isoformat()})
        return
    kinds = "" if statuses is None else f" ({', '.join(statuses)})"
    context.print(f"Deleted {plural(count, 'run')}{kinds} last saved before {moment(before)} UTC.")
    if left:
        context.print(_kept_line(left, kept, "Kept"))


def _kept_line(count: int, kept: list[str], verb: str) -> str:
    """What a prune without --status says of the runs it keeps because they wait for a person."""
    names = ", ".join(kept)
    options = " ".join(f"--status {name}" for name in kept)
    return (
        f"{verb} {plural(count, 'run')} that {'waits' if count == 1 else 'wait'} for a decision or to go on after one "
        f"({names}), however old: a prune deletes such runs only when --status names their status ({options})."
    )


async def _all_runs(
    store: RunStore, statuses: Iterable[RunStatus | str], before: datetime
) -> list[RunSummary]:
    """Every run of those statuses last saved before ``before``, page after page."""
    found: list[RunSummary] = []
    cursor: str | None = None
    while True:
        page = await store.list_runs(status=list(statuses), updated_before=before, limit=1000, cursor=cursor)
        found += page.runs
        if page.cursor is None:
            return found
        cursor = page.cursor


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
        from ..inbox._serve import TOKEN_VARIABLE, serve
    except ImportError as error:  # the [inbox] extra is not installed
        raise Exit(
            ExitCode.USAGE,
            f"the inbox needs the [inbox] extra ({error}); install it with pip install 'claude-toolrunner[inbox]'.",
        ) from None
    token = os.environ.get(TOKEN_VARIABLE) or None
    if arguments.token_file is not None:
        try:
            with open(arguments.token_file, encoding="utf-8") as file:
                token = file.read().strip()
        except OSError as error:
            raise Exit(
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
        raise Exit(ExitCode.USAGE, str(error)) from None


def _resume(arguments: argparse.Namespace, url: str, err: TextIO) -> None:
    """``toolrunner resume``: serve a ``Resumer`` with the app's factory until SIGTERM or SIGINT."""
    from .resume_command import load_factory, serve
    from .resumer import Resumer

    if not arguments.grace >= 0:
        raise Exit(ExitCode.USAGE, f"--grace must be 0 or more seconds, not {arguments.grace!r}.")
    factory = load_factory(arguments.app)
    store = open_store(url)
    try:
        resumer = Resumer(
            store,
            factory,
            concurrency=arguments.concurrency,
            lease=arguments.lease,
            poll_interval=arguments.poll_interval,
        )
        anyio.run(lambda: serve(resumer, grace=arguments.grace, err=err))
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


def _not_found(run_id: str) -> Exit:
    return Exit(
        ExitCode.NOT_FOUND, f"no run named {run_id!r} in the store; list them with `toolrunner runs list`."
    )


def _by(arguments: argparse.Namespace) -> str | None:
    """Who decides: ``--by``, else the user's name; checked by the rule every decision shares
    (``_core.ids.check_by``) before anything is read or decided."""
    if arguments.by is not None:
        try:
            return check_by(arguments.by, "--by ")
        except ApprovalError as error:
            raise Exit(ExitCode.USAGE, str(error)) from None
    try:
        user = getpass.getuser()
    except (KeyError, OSError):  # no user name to be had (a container without a passwd entry)
        return None
    try:
        return check_by(user)
    except ApprovalError:
        raise Exit(
            ExitCode.USAGE,
            f"your user name {user!r} cannot be recorded as who decided (see `--help`); give one with --by NAME.",
        ) from None


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
            raise Exit(
                ExitCode.USAGE,
                f"{option} {text!r} reaches back before the year 1; give a shorter duration (30d, 52w) or a "
                "time (2025-06-01).",
            ) from None
    try:
        moment_ = datetime.fromisoformat(text)
    except ValueError:
        raise Exit(
            ExitCode.USAGE,
            f"{option} {text!r} is neither a duration (30d, 12h, 45m) nor a time "
            "(2025-06-01 or 2025-06-01T12:00:00+02:00).",
        ) from None
    # Checked here as the store checks it, before anything is read or deleted.
    return check_time(moment_ if moment_.tzinfo is not None else moment_.replace(tzinfo=UTC), option)

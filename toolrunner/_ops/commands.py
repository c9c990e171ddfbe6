"""The commands of the command line (``_ops.cli`` reads it and calls ``execute``): each opens the store
its URL names, as a ``RunStore``, and needs none of the app's code or tools. Tables and text for
people, ``--json`` for scripts; what goes wrong ends the command with an exit status (``Exit``).
Those that decide a call are ``_ops.decide_commands``.
"""

from __future__ import annotations

import argparse
import io
import os
import shlex
from collections.abc import Awaitable, Callable, Iterable
from datetime import datetime, timedelta
from typing import TextIO

import anyio

from .._core.ids import check_run_id
from .._core.tree_usage import spent
from .._stores.listing import PRUNE_KEEPS, pruned_statuses
from .._stores.open import open_store, store_path
from .._stores.protocol import RunStore
from .._stores.runs import RunStatus, RunSummary, waiting_calls
from .._stores.urls import holds_secret
from .command_context import CommandContext, not_found, parse_time
from .decide_commands import answer, approve, deny
from .exits import STORE_VARIABLE, Exit, ExitCode
from .figures import agent_usage_data, agent_usage_lines, usage_text
from .render import (
    age,
    audit_lines,
    conversation,
    going_on,
    moment,
    plural,
    runs_table,
    summary_data,
    waiting_lines,
)

__all__ = ["execute"]


def execute(
    arguments: argparse.Namespace,
    url: str | None,
    out: TextIO,
    err: TextIO,
    now: datetime,
    *,
    stdin: TextIO | None = None,
) -> None:
    """Run the command ``arguments`` name on the store at ``url`` (or serve the inbox over it);
    ``stdin`` answers its questions (``None``: no terminal). Only ``replay`` goes without a store
    (``url=None``), replaying the runs of a file into its ``--into`` store.

    Raises:
        Exit: The command ends with that exit status.
        ParamsError, ToolInputError, CheckpointError, StateError: As ``_ops.cli.run`` maps them.
    """
    if getattr(arguments, "group", None) == "replay":
        from .replay_command import replay

        replay(arguments, url, out, err, now, stdin if stdin is not None else _NoTerminal())
        return
    assert url is not None
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
        anyio.run(_COMMANDS[arguments.command], CommandContext(store, arguments, out, url, now))
    finally:
        close = getattr(store, "close", None)
        if callable(close):
            close()


# -- the commands ------------------------------------------------------------------------------------


async def _list(context: CommandContext) -> None:
    arguments = context.arguments
    page = await context.store.list_runs(
        status=arguments.status or None,
        updated_before=parse_time(arguments.updated_before, context.now, "--updated-before"),
        updated_after=parse_time(arguments.updated_after, context.now, "--updated-after"),
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


async def _show(context: CommandContext) -> None:
    arguments, store = context.arguments, context.store
    summary = await store.get_run(arguments.run_id)
    loaded = await store.load(arguments.run_id)
    if summary is None or loaded is None:
        raise not_found(arguments.run_id)
    state = loaded.state
    if arguments.json:
        context.json(
            {
                "summary": summary_data(summary),
                "usage_by_agent": agent_usage_data(state),
                "state": state.to_dict(),
            }
        )
        return
    context.print(*_heading(summary, context.now))
    context.print(usage_text(spent(state)))  # the tree's: the run's requests and its sub-agents'
    context.print(*agent_usage_lines(state))
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


async def _delete(context: CommandContext) -> None:
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


async def _prune(context: CommandContext) -> None:
    arguments, store = context.arguments, context.store
    before = parse_time(arguments.older_than, context.now, "--older-than")
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


class _NoTerminal(io.StringIO):
    """Standard input when there is none: not a terminal, so a command asks nothing."""


_COMMANDS: dict[str, Callable[[CommandContext], Awaitable[None]]] = {
    "list": _list,
    "show": _show,
    "approve": approve,
    "deny": deny,
    "answer": answer,
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

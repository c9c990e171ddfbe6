"""``toolrunner runs approve|deny|answer``: a waiting call decided through the store, as the person
at the terminal (``--by``, else the user's name), and the exit status of a decision refused."""

from __future__ import annotations

import argparse
import getpass
from collections.abc import Awaitable, Callable
from typing import cast

from .._core.errors import ApprovalError
from .._core.ids import check_by, check_reason
from .._core.nested import record_in_tree
from .._core.state import CallRecord
from .._stores.deciding import parse_json
from .._stores.runs import RunStatus, RunSummary, waiting_calls
from .command_context import CommandContext, not_found
from .exits import Exit, ExitCode
from .render import plural, record_data

__all__ = ["answer", "approve", "deny"]


async def approve(context: CommandContext) -> None:
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


async def deny(context: CommandContext) -> None:
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


async def answer(context: CommandContext) -> None:
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


async def _decide(context: CommandContext, what: str, decide: Callable[[], Awaitable[CallRecord]]) -> None:
    arguments, store = context.arguments, context.store
    loaded = await store.load(arguments.run_id)
    if loaded is None:
        raise not_found(arguments.run_id)
    record = record_in_tree(loaded.state, arguments.call_id)
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


async def _refused(context: CommandContext) -> ExitCode:
    """The exit status of a decision the store refused, by its cause, as the run now stands: the call
    was decided (or the run moved on) since it was read, or else the decision itself cannot be taken
    (a reason or a result that cannot be sent), and the call still waits."""
    arguments = context.arguments
    loaded = await context.store.load(arguments.run_id)
    if loaded is None:
        return ExitCode.NOT_FOUND
    record = record_in_tree(loaded.state, arguments.call_id)
    still_waits = any(call.id == arguments.call_id for call in waiting_calls(loaded.state))
    if record is None or record.decision is not None or not still_waits:
        return ExitCode.CONFLICT
    return ExitCode.USAGE


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

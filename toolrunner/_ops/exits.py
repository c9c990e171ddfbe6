"""What the command line's entry point (``_ops.cli``) and its commands (``_ops.commands``) share: what an
exit status says (``ExitCode``), the exception a command raises to end with one (``Exit``), and the
variable that names the store."""

from __future__ import annotations

import enum

__all__ = ["STORE_VARIABLE", "Exit", "ExitCode"]

STORE_VARIABLE = "TOOLRUNNER_STORE"
"""The environment variable that names the store when ``--store`` does not."""


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
    INCOMPLETE = 5
    """``toolrunner replay``: a replay failed, or a recorded run cannot be replayed (the report says
    which and why); the others were replayed."""
    STOPPED = 6
    """``toolrunner replay``: the budget (``--max-cost``) stopped the evaluation before every run was
    replayed; the same command with a larger budget goes on."""
    DECLINED = 7
    """``toolrunner replay``: the answer to its question was no; nothing was replayed."""


class Exit(Exception):
    """Ends a command with ``code``, the message printed on standard error."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code

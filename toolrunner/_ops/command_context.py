"""What the commands of ``toolrunner runs`` share (``_ops.commands``, ``_ops.decide_commands``): the
context a command runs in (its store, its arguments, where it writes), a missing run's exit, and
the times the options take (``--updated-before 7d``, ``--older-than 2025-06-01``)."""

from __future__ import annotations

import argparse
import json
import re
from datetime import UTC, datetime, timedelta
from typing import TextIO

from .._core.unicode import sendable_text
from .._stores.listing import check_time
from .._stores.protocol import RunStore
from .exits import Exit, ExitCode
from .render import printable

__all__ = ["CommandContext", "not_found", "parse_time"]


class CommandContext:
    """A command's store, its arguments, where it writes, and the time it runs at."""

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


def not_found(run_id: str) -> Exit:
    return Exit(
        ExitCode.NOT_FOUND, f"no run named {run_id!r} in the store; list them with `toolrunner runs list`."
    )


_DURATION = re.compile(r"(\d+)\s*([smhdw])")
_UNITS = {"s": 1, "m": 60, "h": 3_600, "d": 86_400, "w": 604_800}


def parse_time(text: str | None, now: datetime, option: str) -> datetime | None:
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

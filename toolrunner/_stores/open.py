"""A store from its URL: ``open_store("sqlite:///runs.db")``, ``open_store("postgresql://...")``."""

from __future__ import annotations

from pathlib import Path

from .._core.errors import ParamsError
from .postgres import PostgresCheckpointer
from .protocol import RunStore
from .sqlite import SQLiteCheckpointer
from .urls import is_conninfo, shown_url

__all__ = ["open_store", "store_path"]

_FORMS = (
    "sqlite:///relative/runs.db, sqlite:////absolute/runs.db, a path to an SQLite file, or "
    "postgresql://user:password@host/dbname"
)


def store_path(url: str | Path) -> Path | None:
    """The SQLite file a store URL names, or ``None`` for another kind of store.

    Raises:
        ParamsError: A URL that names no file (``""``, ``"sqlite:///"``: ``Path("")`` is the
            working directory), an ``sqlite:`` URL without its three slashes, or libpq's
            keyword/value settings where a URL is expected (never repeated: they may hold a password).
    """
    if isinstance(url, Path):
        return url
    if is_conninfo(url):
        raise ParamsError(
            "the store is given as keyword/value connection settings (host=... dbname=...), which toolrunner does "
            "not read where a URL is expected (they are not repeated here: they may hold a password); give "
            "postgresql://user:password@host/dbname, each special character of the user name and password "
            "percent-encoded, or, for a file whose name holds '=', sqlite:///its-name."
        )
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
    elif url.startswith("sqlite:"):
        raise ParamsError(
            f"{shown_url(url)!r} is not an SQLite URL toolrunner reads (sqlite://runs.db would name a host, not a "
            "file): use three slashes before a relative path (sqlite:///runs.db) and four before an absolute one "
            "(sqlite:////var/lib/app/runs.db)."
        )
    elif "://" in url or url.startswith(("postgresql:", "postgres:")):
        return None
    else:
        path = url
    if not path:
        raise ParamsError(f"the store URL {shown_url(url)!r} names no file; use {_FORMS}.")
    return Path(path)


def open_store(url: str | Path) -> RunStore:
    """The store a URL names: ``sqlite:///relative/runs.db`` or ``sqlite:////absolute/runs.db`` (as
    SQLAlchemy writes them) or a bare path for ``SQLiteCheckpointer``; ``postgresql://...`` (or
    ``postgres://...``) for ``PostgresCheckpointer``.

    Raises:
        ParamsError: A URL of another kind, or one that cannot be read.
    """
    path = store_path(url)
    if path is not None:
        return SQLiteCheckpointer(path)
    assert isinstance(url, str)
    if url.startswith(("postgresql://", "postgres://")):
        return PostgresCheckpointer(url)
    if "://" not in url:  # postgresql:... without its slashes: not repeated, it may hold a password
        raise ParamsError(f"a PostgreSQL URL begins with postgresql:// (two slashes); use {_FORMS}.")
    scheme = url.split("://", 1)[0]
    raise ParamsError(f"toolrunner has no store for URLs of the kind {scheme + '://'!r}; use {_FORMS}.")

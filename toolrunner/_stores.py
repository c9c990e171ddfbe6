"""A store from its URL: ``open_store("sqlite:///runs.db")``, ``open_store("postgresql://...")``."""

from __future__ import annotations

from pathlib import Path

from ._checkpoint import RunStore
from ._errors import ParamsError
from ._postgres import PostgresCheckpointer
from ._sqlite import SQLiteCheckpointer

__all__ = ["open_store", "store_path"]

_FORMS = (
    "sqlite:///relative/runs.db, sqlite:////absolute/runs.db, a path to an SQLite file, or "
    "postgresql://user:password@host/dbname"
)


def store_path(url: str | Path) -> Path | None:
    """The SQLite file a store URL names, or ``None`` for another kind of store.

    Raises:
        ParamsError: A URL that names no file (``""``, ``"sqlite:///"``: ``Path("")`` is the
            working directory).
    """
    if isinstance(url, Path):
        return url
    if url.startswith("sqlite:///"):
        path = url.removeprefix("sqlite:///")
    elif "://" in url or url.startswith(("postgresql:", "postgres:")):
        return None
    else:
        path = url
    if not path:
        raise ParamsError(f"the store URL {url!r} names no file; use {_FORMS}.")
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
    scheme = url.split("://", 1)[0]
    raise ParamsError(f"toolrunner has no store for URLs of the kind {scheme + '://'!r}; use {_FORMS}.")

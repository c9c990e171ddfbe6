"""Shared fixtures: every async test runs on asyncio and on trio; ``store`` is each store in turn
(``tests/support/stores.py``), on a real PostgreSQL server for ``PostgresCheckpointer``."""

from __future__ import annotations

import pytest

from tests.support.counted_tools import fresh_runs as fresh_runs
from tests.support.postgres_server import postgres_server as postgres_server, postgres_url as postgres_url
from tests.support.stores import store_fixture as store_fixture


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)

"""Shared fixtures: every async test runs on asyncio and on trio; ``store`` is each store in turn
(``tests/support/stores.py``), on a real PostgreSQL server for ``PostgresCheckpointer``."""

from __future__ import annotations

import pytest
from hypothesis import settings

from tests.support.counted_tools import fresh_runs as fresh_runs
from tests.support.postgres_server import postgres_server as postgres_server, postgres_url as postgres_url
from tests.support.stores import store_fixture as store_fixture

# Every property of the suite runs without Hypothesis's 200 ms deadline: on a shared CI machine one
# example's time varies tenfold (a property of evals failed as Flaky on the floors' run, 461 ms
# once, 0.2 ms again), and a test's timing is not what it checks. The reliability properties
# have their own profiles (tests/support/_hypothesis_profiles.py), without a deadline too.
settings.register_profile("suite", deadline=None)
settings.load_profile("suite")


@pytest.fixture(params=["asyncio", "trio"])
def anyio_backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)

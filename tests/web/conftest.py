"""Fixtures of the web tests (tests/web/backends.py has what they serve): ``temporal_env``, the
time-skipping test server in the loop of a module's async tests (a module that uses it runs on
asyncio only: it overrides ``anyio_backend`` with a module-scoped ``"asyncio"``); ``backend``, each
agent in turn (``Agent``, then ``TemporalAgent``) for the synchronous tests that take the same
steps on both, the Temporal one in a loop of its own in a thread (``on_temporal``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.web.backends import Backend, OnAgent, OnTemporal, on_temporal, time_skipping


@pytest.fixture(scope="module")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """The test server, module-scoped: the loop it runs on stays open while it lives."""
    async with time_skipping() as env:
        yield env


@pytest.fixture(scope="module", name="on_temporal")
def on_temporal_fixture() -> Iterator[OnTemporal]:
    """The test server in a loop in a thread of its own, for a module's synchronous tests."""
    with on_temporal() as backend:
        yield backend


@pytest.fixture(params=["agent", "temporal"])
def backend(request: pytest.FixtureRequest) -> Backend:
    """``OnAgent``, then ``OnTemporal`` (its server started once for the module)."""
    if request.param == "agent":
        return OnAgent()
    found: OnTemporal = request.getfixturevalue("on_temporal")
    return found

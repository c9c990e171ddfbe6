"""Fixtures of the web tests (tests/web/backends.py has what they serve): ``temporal_env``, the
time-skipping test server in the loop of a module's async tests (a module that uses it runs on
asyncio only: it overrides ``anyio_backend`` with a module-scoped ``"asyncio"``); ``backend``, each
agent in turn (``Agent``, then ``TemporalAgent``) for the synchronous tests that take the same
steps on both, the Temporal one in a loop of its own in a thread (``OnTemporal``)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from temporalio.testing import WorkflowEnvironment

from tests.web.backends import Backend, OnAgent, on_temporal, time_skipping


@pytest.fixture(scope="module")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """The test server, module-scoped: the loop it runs on stays open while it lives."""
    async with time_skipping() as env:
        yield env


@pytest.fixture(params=["agent", "temporal"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    """``OnAgent``, then ``OnTemporal``: each test on an agent of its own (a new store, a new test
    server: the scripts name their conversations, and a workflow id stays taken on a server)."""
    if request.param == "agent":
        yield OnAgent()
        return
    with on_temporal() as served:
        yield served

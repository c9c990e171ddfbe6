"""The pytest plugin: the fake_messages_api fixture and the network guard."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest

from toolrunner.testing import FakeMessagesAPI, serve, text_reply

USER: list[Any] = [{"role": "user", "content": "Hi."}]


@pytest.mark.anyio
async def test_the_fixture_gives_a_fresh_fake(fake_messages_api: FakeMessagesAPI) -> None:
    assert fake_messages_api.script == []
    fake_messages_api.add(text_reply("Hello."))
    async with fake_messages_api.async_client() as client:
        await client.messages.create(model="m", max_tokens=10, messages=USER)
    fake_messages_api.assert_complete()


def test_the_guard_fails_a_test_that_reaches_the_real_service() -> None:
    with (
        anthropic.Anthropic(api_key="k", max_retries=0) as client,
        pytest.raises(
            pytest.fail.Exception,
            match=r"tried to reach 'https://api\.anthropic\.com/v1/messages'.*FakeMessagesAPI",
        ),
    ):
        client.messages.create(model="m", max_tokens=10, messages=USER)


@pytest.mark.anyio
async def test_the_guard_covers_async_clients() -> None:
    async with httpx2.AsyncClient() as http:
        with pytest.raises(pytest.fail.Exception, match=r"allow_network"):
            await http.get("https://example.com/")


def test_the_guard_lets_loopback_through() -> None:
    fake = FakeMessagesAPI([text_reply("local")])
    with serve(fake) as served, served.client() as client:
        message = client.messages.create(model="m", max_tokens=10, messages=USER)
    assert message.content[0].type == "text"


@pytest.mark.allow_network
def test_the_marker_switches_the_guard_off() -> None:
    assert httpx2.HTTPTransport.handle_request.__module__.startswith("httpx2")
    assert httpx2.AsyncHTTPTransport.handle_async_request.__module__.startswith("httpx2")


def test_the_plugin_loads_through_pytest_plugins_too(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["toolrunner.testing._pytest_plugin"]\n')
    (tmp_path / "pytest.ini").write_text("[pytest]\ntoolrunner_network_guard = true\n")
    (tmp_path / "test_it.py").write_text(
        "import anthropic, pytest\n"
        "def test_fixture(fake_messages_api):\n"
        "    assert fake_messages_api.requests == []\n"
        "def test_guard():\n"
        "    with anthropic.Anthropic(api_key='k', max_retries=0) as client:\n"
        "        client.messages.create(model='m', max_tokens=1, messages=[{'role': 'user', 'content': 'x'}])\n"
        "@pytest.mark.allow_network\n"
        "def test_marker():\n"
        "    pass\n"
    )
    # -p no:toolrunner stands for an environment where toolrunner is not pip-installed.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:toolrunner",
            "-p",
            "no:cacheprovider",
            "--strict-markers",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert "1 failed, 2 passed" in result.stdout, result.stdout + result.stderr
    assert "tests must not call real services" in result.stdout


def test_the_guard_is_off_unless_a_project_asks_for_it(tmp_path: Path) -> None:
    """Installing toolrunner must not change other projects' test suites."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["toolrunner.testing._pytest_plugin"]\n')
    (tmp_path / "test_it.py").write_text(
        "import httpx2\n"
        "def test_unguarded():\n"
        "    assert httpx2.HTTPTransport.handle_request.__qualname__ == 'HTTPTransport.handle_request'\n"
        "def test_guarded(toolrunner_network_guard):\n"
        "    assert httpx2.HTTPTransport.handle_request.__qualname__ != 'HTTPTransport.handle_request'\n"
    )
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:toolrunner",
            "-p",
            "no:cacheprovider",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert "2 passed" in result.stdout, result.stdout + result.stderr

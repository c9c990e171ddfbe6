"""The fake over real HTTP: serve(), the command line, JSON scripts."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anthropic
import httpx2
import pytest
from anthropic.types import TextBlock, ToolUseBlock

from toolrunner.testing import (
    FakeMessagesAPI,
    ScriptedReply,
    disconnect,
    fault,
    serve,
    stream_cut,
    text_reply,
    tool_call,
    tool_reply,
)
from toolrunner.testing._script_file import load_script

USER: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]


@pytest.mark.anyio
async def test_serve_answers_the_async_sdk_over_http() -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"city": "Paris"}), text="Checking."), text_reply("Sunny.")]
    )
    with serve(fake) as served:
        assert served.base_url.startswith("http://127.0.0.1:")
        async with served.async_client() as client:
            first = await client.messages.create(model="m", max_tokens=10, messages=USER)
            async with client.messages.stream(model="m", max_tokens=10, messages=USER) as stream:
                second = await stream.get_final_message()
    assert isinstance(first.content[1], ToolUseBlock)
    assert [block.model_dump(exclude_none=True) for block in second.content] == [
        {"type": "text", "text": "Sunny."}
    ]
    assert fake.requests[0].url == f"{served.base_url}/v1/messages"
    assert fake.requests[1].stream
    fake.assert_complete()


def test_serve_records_and_validates_like_the_in_process_fake() -> None:
    fake = FakeMessagesAPI([text_reply("unused")])
    bad: list[Any] = [{"role": "assistant", "content": "Hi."}]
    with (
        serve(fake) as served,
        served.client() as client,
        pytest.raises(anthropic.BadRequestError, match="first message"),
    ):
        client.messages.create(model="m", max_tokens=10, messages=bad)
    assert fake.requests[0].messages == bad
    assert fake.requests[0].headers["content-type"] == "application/json"


def test_faults_over_http() -> None:
    fake = FakeMessagesAPI(
        [fault(429, retry_after=2), disconnect(), stream_cut(text_reply("Never whole."), after_events=3)]
    )
    with serve(fake) as served, served.client() as client:
        with pytest.raises(anthropic.RateLimitError) as caught:
            client.messages.create(model="m", max_tokens=10, messages=USER)
        assert caught.value.response.headers["retry-after"] == "2"
        with pytest.raises(anthropic.APIConnectionError):
            client.messages.create(model="m", max_tokens=10, messages=USER)
        with (
            pytest.raises(httpx2.RemoteProtocolError),
            client.messages.stream(model="m", max_tokens=10, messages=USER) as stream,
        ):
            stream.get_final_message()
    assert len(fake.requests) == 3


def test_serve_stops_when_the_block_ends() -> None:
    with serve(FakeMessagesAPI()) as served:
        base_url = served.base_url
    with pytest.raises(httpx2.ConnectError):
        httpx2.post(f"{base_url}/v1/messages", json={})


def run_cli(script: Any, tmp_path: Path) -> tuple[subprocess.Popen[str], str]:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    process = subprocess.Popen(
        [sys.executable, "-m", "toolrunner.testing", "serve", "--script", str(path), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    return process, process.stdout.readline().strip()


def stop(process: subprocess.Popen[str]) -> None:
    process.send_signal(signal.SIGINT)
    try:
        process.wait(timeout=10)
    finally:
        process.kill()
        process.communicate()


def test_the_command_line_serves_a_json_script(tmp_path: Path) -> None:
    script = [
        {
            "tool_calls": [{"name": "get_weather", "input": {"city": "Paris"}, "id": "toolu_1"}],
            "text": "Checking.",
        },
        {"fault": {"status": 529}},
        {"automatic": True},
    ]
    process, base_url = run_cli(script, tmp_path)
    try:
        assert base_url.startswith("http://127.0.0.1:")
        with anthropic.Anthropic(api_key="k", base_url=base_url, max_retries=0) as client:
            first = client.messages.create(model="m", max_tokens=10, messages=USER)
            with pytest.raises(anthropic.OverloadedError):
                client.messages.create(model="m", max_tokens=10, messages=USER)
            history: list[Any] = [
                *USER,
                {
                    "role": "assistant",
                    "content": [block.model_dump(exclude_none=True) for block in first.content],
                },
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}],
                },
            ]
            last = client.messages.create(model="m", max_tokens=10, messages=history)
    finally:
        stop(process)
    assert [block.type for block in first.content] == ["text", "tool_use"]
    assert last.content == [TextBlock(type="text", text="get_weather: sunny")]


def test_the_command_line_rejects_a_bad_script(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text('[{"text": "fine"}, {"bogus": 1}]')
    result = subprocess.run(
        [sys.executable, "-m", "toolrunner.testing", "serve", "--script", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2
    assert "Script entry #2 {'bogus': 1} is not a valid entry" in result.stderr


def test_json_scripts_cover_every_entry_kind() -> None:
    entries, automatic = load_script(
        [
            {"text": "Hi.", "usage": {"output_tokens": 9}, "delay": 0.1},
            {"tool_calls": [{"name": "t", "input": {"a": 1}}], "text": "Calling."},
            {"tool_calls": [{"name": "t", "input": {"a": 1, "b": 2}}], "truncated": True},
            {"content": [{"type": "text", "text": "x"}], "stop_reason": "refusal"},
            {"fault": {"status": 429, "retry_after": 1}},
            {"disconnect": True},
            {"stream_cut": {"after_events": 2, "reply": {"text": "cut"}}},
        ]
    )
    assert not automatic
    assert [type(entry).__name__ for entry in entries] == [
        "ScriptedReply",
        "ScriptedReply",
        "ScriptedReply",
        "ScriptedReply",
        "Fault",
        "Disconnect",
        "StreamCut",
    ]
    first, calling, truncated, refusal = (entry for entry in entries[:4] if isinstance(entry, ScriptedReply))
    assert first.usage == {"output_tokens": 9}
    assert first.delay == 0.1
    assert calling.content[0] == {"type": "text", "text": "Calling."}
    assert truncated.stop_reason == "max_tokens"
    assert refusal.stop_reason == "refusal"
    assert load_script({"automatic": True}) == ([], True)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ({"text": "x"}, "must be a JSON list"),
        ([1], "Script entry #1 must be a JSON object"),
        ([{"automatic": True}, {"text": "x"}], "Script entry #1 {'automatic': true} must be the last entry"),
        ([{"tool_calls": [{"input": "x"}]}], "Script entry #1"),
    ],
)
def test_bad_json_scripts_name_the_entry(script: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        load_script(script)


def test_serve_waits_for_the_server_by_polling_not_by_a_fixed_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    # How long it takes is a benchmark's question; what is tested is that serve() polls in short
    # steps until uvicorn says it started (no fixed pause), and that the server answers at once.
    real_sleep = time.sleep
    pauses: list[float] = []

    def sleep(seconds: float) -> None:
        pauses.append(seconds)
        real_sleep(seconds)

    monkeypatch.setattr(time, "sleep", sleep)
    with serve(FakeMessagesAPI([text_reply("up")])) as served, served.client() as client:
        assert all(pause <= 0.005 for pause in pauses)
        reply = client.messages.create(model="m", max_tokens=10, messages=USER)
    assert isinstance(reply.content[0], TextBlock)
    assert reply.content[0].text == "up"

"""A worker killed with SIGKILL in the middle of a run: another worker finishes the run, no call
that finished runs again, the call to a tool that is not idempotent is answered "interrupted" (it
may have charged the card), and the idempotent one runs again; so does the idempotent call a
sub-agent's sub-run was running (the sub-run, in the workflow, goes on where it was)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from datetime import timedelta
from pathlib import Path

import anyio
import pytest
from temporalio.common import RetryPolicy
from temporalio.testing import WorkflowEnvironment

from tests.temporal.temporal_helpers import start, task_queue
from toolrunner import SubAgent, tool
from toolrunner._core.transitions import INTERRUPTED
from toolrunner.temporal import ActivityOptions
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    serve,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]


# The run's tools as the client sees them: names and flags (the workers have the code).
@tool
def step(number: int) -> str:
    """Do one step."""
    raise NotImplementedError


@tool
def charge(order: str) -> str:
    """Charge the card for an order (charging twice would charge twice)."""
    raise NotImplementedError


@tool(idempotent=True)
def lookup(order: str) -> str:
    """Look an order up (harmless to repeat)."""
    raise NotImplementedError


auditor = SubAgent(
    name="auditor", description="Checks an order.", model="claude-haiku-4-5", max_tokens=100, tools=[lookup]
)


def respond(request: RecordedRequest) -> ScriptEntry:
    """The run's model, then the auditor's (whose requests come while the run's calls run)."""
    turn = len(request.messages) // 2
    if request.body["model"] == "claude-haiku-4-5":
        if turn == 0:
            return tool_reply(tool_call("lookup", {"order": "43"}, id="a1"))
        return text_reply("Order 43 is fine.")
    if turn == 0:
        return tool_reply(
            tool_call("step", {"number": 1}, id="s1"), tool_call("step", {"number": 2}, id="s2")
        )
    if turn == 1:
        return tool_reply(
            tool_call("charge", {"order": "42"}, id="c1"),
            tool_call("lookup", {"order": "42"}, id="l1"),
            tool_call("auditor", {"task": "Check order 43."}, id="u1"),
        )
    return text_reply("Order 42 is paid.")


@contextmanager
def worker_process(*args: str, output: Path) -> Generator[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    with output.open("ab") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.temporal.worker_process", *args],
            cwd=ROOT,
            env=env,
            stdout=sink,
            stderr=sink,
        )
    try:
        yield process
    finally:
        if process.poll() is None:
            process.kill()
        process.wait()


async def wait_for(log: Path, *lines: str) -> None:
    """Until the worker process has logged ``lines`` (another process: no event to wait on)."""
    path = anyio.Path(log)
    with anyio.fail_after(60):  # a guard against a hang, not a timing
        while True:
            logged = (await path.read_text()).splitlines() if await path.exists() else []
            if all(line in logged for line in lines):
                return
            await anyio.sleep(0.05)


async def test_a_run_survives_its_worker_being_killed(
    temporal_env: WorkflowEnvironment, tmp_path: Path
) -> None:
    fake = FakeMessagesAPI(responder=respond)
    log, output, queue = tmp_path / "calls.log", tmp_path / "workers.out", task_queue()
    with serve(fake) as served:
        common = [
            *("--target", temporal_env.client.service_client.config.target_host),
            *("--task-queue", queue, "--base-url", served.base_url),
            *("--store", str(tmp_path / "store"), "--log", str(log)),
        ]
        options = ActivityOptions(
            heartbeat_timeout=timedelta(seconds=3),  # how soon the lost worker is noticed
            tool_retry=RetryPolicy(initial_interval=timedelta(milliseconds=10), maximum_attempts=3),
        )
        with worker_process(*common, "--block", output=output) as first:
            handle = await start(
                temporal_env.client,
                queue,
                run_id="killed",
                tools=[step, charge, lookup, auditor],
                activity_options=options,
            )
            await wait_for(
                log, "end step 1", "end step 2", "start charge 42", "start lookup 42", "start lookup 43"
            )
            first.send_signal(signal.SIGKILL)
            first.wait()
        with worker_process(*common, output=output):
            with anyio.fail_after(120):
                result = await handle.result()

    calls = [line for line in log.read_text().splitlines() if line.startswith("start ")]
    assert sorted(calls) == [
        "start charge 42",
        "start lookup 42",
        "start lookup 42",
        "start lookup 43",
        "start lookup 43",
        "start step 1",
        "start step 2",
    ]
    assert result.end_reason == "model"
    assert [request.body["model"] for request in fake.requests].count("claude-haiku-4-5") == 2
    assert len(fake.requests) == 5
    results = {block["tool_use_id"]: block for block in fake.requests[-1].body["messages"][-1]["content"]}
    assert results["c1"] == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": INTERRUPTED.format(name="charge"),
        "is_error": True,
    }
    assert results["l1"]["content"] == "order 42: paid"
    assert "is_error" not in results["l1"]
    assert results["u1"] == {"type": "tool_result", "tool_use_id": "u1", "content": "Order 43 is fine."}
    audit = [request for request in fake.requests if request.body["model"] == "claude-haiku-4-5"]
    assert audit[1].body["messages"][-1]["content"][0]["content"] == "order 43: paid"

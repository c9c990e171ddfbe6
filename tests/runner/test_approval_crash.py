"""A process killed (SIGKILL) between the ungated calls finishing and the decision; the decision and
the rest of the run happen in a new process. Each tool runs exactly once, and the model gets every
result in order.

The worker (this file, run as a script) answers requests with a pure function of the request, so a
new process continues the same conversation; its tools append to a ledger file.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

ROOT = Path(__file__).resolve().parents[2]
MODEL = "claude-sonnet-4-6"


def _script() -> list[Any]:
    from toolrunner.testing import text_reply, tool_call, tool_reply

    return [
        tool_reply(
            tool_call("look", {"q": "a"}, id="look_a"),
            tool_call("pay", {"amount": 5}, id="pay_5"),
            tool_call("note", {"text": "b"}, id="note_b"),
        ),
        text_reply("done"),
    ]


async def _worker(step: str, db: str, ledger: str, backend_note: str) -> None:
    from toolrunner import SQLiteCheckpointer, ToolRunner, tool
    from toolrunner.testing import FakeMessagesAPI, RecordedRequest

    def record(line: str) -> None:
        with open(ledger, "a", encoding="utf-8") as file:
            file.write(line + "\n")

    @tool
    async def look(q: str) -> str:
        """Look something up."""
        record(f"look {q}")
        return f"found {q}"

    @tool
    def note(text: str) -> str:
        """Write a note."""
        record(f"note {text}")
        return f"noted {text}"

    @tool(requires_approval=True)
    async def pay(amount: int) -> str:
        """Pay an amount."""
        record(f"pay {amount}")
        return f"paid {amount}"

    def respond(request: RecordedRequest) -> Any:
        turns = sum(1 for message in request.messages if message["role"] == "assistant")
        return _script()[turns]

    fake = FakeMessagesAPI(responder=respond)
    store = SQLiteCheckpointer(db)
    tools = [look, note, pay]
    if step == "start":
        runner = ToolRunner(
            fake.async_client(),
            model=MODEL,
            max_tokens=64,
            messages=[{"role": "user", "content": "Pay and note."}],
            tools=tools,
            checkpointer=store,
            run_id="r",
        )
        async for _ in runner:
            pass
        assert runner.end_reason == "awaiting_approval", runner.end_reason
        record(f"paused {backend_note}")
        os.kill(os.getpid(), signal.SIGKILL)  # the process dies before anyone decides
    runner = await ToolRunner.resume(fake.async_client(), checkpointer=store, run_id="r", tools=tools)
    waiting = [call.id for call in runner.pending_approvals]
    record(f"waiting {json.dumps(waiting)}")
    runner.approve("pay_5")
    await runner.until_done()
    record(f"end {runner.end_reason}")
    record(f"results {json.dumps(runner.messages[2]['content'])}")


def _run(step: str, db: Path, ledger: Path, backend: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, __file__, step, str(db), str(ledger), backend],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_a_crash_before_the_decision_loses_nothing_and_reruns_nothing(tmp_path: Path, backend: str) -> None:
    db, ledger = tmp_path / "runs.db", tmp_path / "ledger.txt"
    started = _run("start", db, ledger, backend)
    assert started.returncode == -signal.SIGKILL, started.stderr
    resumed = _run("resume", db, ledger, backend)
    assert resumed.returncode == 0, resumed.stderr
    lines = ledger.read_text(encoding="utf-8").splitlines()
    assert sorted(line for line in lines if line.split()[0] in ("look", "note", "pay")) == [
        "look a",
        "note b",
        "pay 5",
    ]
    assert lines.index("paused " + backend) < lines.index("pay 5")  # the gated call ran after the crash
    assert 'waiting ["pay_5"]' in lines
    assert "end model" in lines
    results = json.loads(next(line for line in lines if line.startswith("results "))[len("results ") :])
    assert [(block["tool_use_id"], block["content"]) for block in results] == [
        ("look_a", "found a"),
        ("pay_5", "paid 5"),
        ("note_b", "noted b"),
    ]


if __name__ == "__main__":
    step, db, ledger, backend = sys.argv[1:5]
    anyio.run(_worker, step, db, ledger, backend, backend=backend)

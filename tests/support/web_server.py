"""What the tests of ``toolrunner.web`` share: the scripted agent (a tool, a tool that waits for
approval, on the fake Messages API) and an ASGI app served by uvicorn on a free port of 127.0.0.1,
in a thread of the test's process (``served``)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import threading
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import uvicorn

from toolrunner import MemoryCheckpointer, RunStore, tool
from toolrunner.testing import FakeMessagesAPI, ScriptedReply, text_reply, tool_call, tool_reply
from toolrunner.web import Agent

__all__ = [
    "MODEL",
    "ROOT",
    "chunk_types",
    "conversation",
    "hold",
    "holding",
    "look",
    "make_agent",
    "pay",
    "released",
    "replies",
    "run_node",
    "served",
    "twice",
]

MODEL = "claude-sonnet-4-6"
ROOT = Path(__file__).resolve().parents[2]
"""The checkout: its node_modules/ holds the official clients (npm ci)."""
NODE = shutil.which("node")


def node_modules() -> Path:
    """The checkout's node_modules/, installed from package-lock.json (``npm ci``) the first time a
    test needs it when it is missing: README's test command works on a new machine, and CI's own
    ``npm ci`` makes this a no-op."""
    modules = ROOT / "node_modules"
    if not (modules / ".package-lock.json").is_file():
        npm = shutil.which("npm")
        assert npm is not None, "npm is not installed: the official JS clients' tests need node 20 and npm"
        done = subprocess.run(
            [npm, "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--silent"],
            cwd=ROOT, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, f"npm ci failed:\n{done.stdout}\n{done.stderr}"
    return modules


def run_node(script: Path, *arguments: str) -> str:
    assert NODE is not None, "node is not installed: the official JS clients' tests need node 20 (CI has it)"
    node_modules()
    done = subprocess.run(
        [NODE, str(script), *arguments], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, f"{script.name} failed:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def chunk_types() -> set[str]:
    """The ``type`` of each member of the installed ``ai``'s ``UIMessageChunk``."""
    types = (node_modules() / "ai" / "dist" / "index.d.ts").read_text(encoding="utf-8")
    start = types.index("type UIMessageChunk<")
    block = types[start : types.index("\n};", start)]
    return set(re.findall(r"type: '([a-z-]+)';", block))


paid: list[int] = []


@tool
async def look(name: str) -> str:
    """Look up a customer."""
    return f"{name}: account 7"


@tool(requires_approval=True)
async def pay(amount: int) -> str:
    """Pay an amount."""
    paid.append(amount)
    return f"paid {amount}"


def replies(*, delay: float = 0.0, name: str = "Ada") -> list[ScriptedReply]:
    """Look Ada up (text, then a call), pay her (a call that waits), then say so."""
    return [
        tool_reply(tool_call("look", {"name": name}, id="look-1"), text="Let me look.", delay=delay),
        tool_reply(tool_call("pay", {"amount": 3}, id="pay-1"), delay=delay),
        text_reply("Ada is paid.", delay=delay),
    ]


def conversation(*, delay: float = 0.0) -> FakeMessagesAPI:
    """The conversation of ``replies``."""
    return FakeMessagesAPI(replies(delay=delay))


released = threading.Event()


@tool
async def hold() -> str:
    """Wait until the test releases it (``released``): a tool that runs long."""
    await anyio.to_thread.run_sync(lambda: released.wait(30))
    return "held"


def holding() -> FakeMessagesAPI:
    """A call of ``hold``, then the end."""
    released.clear()
    return FakeMessagesAPI([tool_reply(tool_call("hold", {}, id="hold-1")), text_reply("Done.")])


def twice() -> FakeMessagesAPI:
    """The conversation of ``replies`` twice over, for two clients one after the other."""
    return FakeMessagesAPI([*replies(), *replies()])


def make_agent(
    fake: FakeMessagesAPI, store: RunStore | None = None, *, tools: list[Any] | None = None
) -> Agent:
    return Agent(
        fake.async_client(),
        store=store or MemoryCheckpointer(),
        tools=tools or [look, pay],
        model=MODEL,
        max_tokens=256,
    )


@contextmanager
def served(app: Any) -> Generator[str]:
    """``app`` on uvicorn, on a free port of 127.0.0.1 (its lifespan run); its URL."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    port = listening.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        started = threading.Event()
        for _ in range(500):  # a bound, not a measurement: the server says when it listens
            if server.started:
                started.set()
                break
            threading.Event().wait(0.01)
        assert started.is_set(), "uvicorn did not start"
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
        listening.close()

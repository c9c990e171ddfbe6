"""A person approves or denies tool calls at a terminal prompt.

Claude tidies a folder: listing files needs no approval, deleting one does. The loop pauses when
deletions wait for a decision (``end_reason == "awaiting_approval"``); each is asked at the prompt,
and the loop goes on with the answers. Without a terminal (as the tests run it) the answers are
read from standard input, one per line: ``y`` approves, anything else denies.

Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set, in which case
it talks to the real service:

    python examples/approval.py
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import anthropic
import anyio
import anyio.to_thread

from toolrunner import Tool, ToolRunner, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

FILES = {"build.log": "old output\n", "notes.txt": "keep me\n", "cache.tmp": "scratch\n"}
DEFAULT_ANSWERS = ["y", "n"]  # used when standard input has no more lines


def make_tools(root: Path) -> list[Tool]:
    @tool
    def list_files() -> list[str]:
        """List the files in the folder."""
        return sorted(path.name for path in root.iterdir())

    @tool(requires_approval=True)
    def delete_file(name: str) -> str:
        """Delete a file from the folder.

        Args:
            name: The file's name, as list_files gives it.
        """
        (root / name).unlink()
        return f"Deleted {name}."

    return [list_files, delete_file]


def ask(question: str) -> str:
    """One answer: from the terminal, else a line of standard input, else the next default."""
    print(question, end=" ", flush=True)
    line = sys.stdin.readline() if not sys.stdin.closed else ""
    answer = line.strip() or DEFAULT_ANSWERS.pop(0)
    if not sys.stdin.isatty():
        print(answer)
    return answer


def report(request: RecordedRequest) -> ScriptEntry:
    """Claude's last reply, written from the results it got: what the person approved was deleted,
    what they denied stays."""
    names = {
        block["id"]: block["input"]["name"]
        for block in request.messages[-2]["content"]
        if block["type"] == "tool_use"
    }
    results = [block for block in request.messages[-1]["content"] if block["type"] == "tool_result"]
    deleted = [names[block["tool_use_id"]] for block in results if not block.get("is_error")]
    kept = [names[block["tool_use_id"]] for block in results if block.get("is_error")]
    parts = [f"I deleted {' and '.join(deleted)}"] if deleted else ["I deleted nothing"]
    if kept:
        parts.append(f"{' and '.join(kept)} {'stays' if len(kept) == 1 else 'stay'}, as you asked")
    return text_reply("; ".join(parts) + ".")


def client() -> anthropic.AsyncAnthropic:
    if os.environ.get("ANTHROPIC_API_KEY"):
        return anthropic.AsyncAnthropic()
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("list_files", {})),
            tool_reply(
                tool_call("delete_file", {"name": "build.log"}),
                tool_call("delete_file", {"name": "notes.txt"}),
                text="The log and the notes look stale; I will delete both.",
            ),
        ],
        responder=report,  # once the script is used up
    )
    return fake.async_client()


async def tidy(root: Path) -> None:
    runner = ToolRunner(
        client(),
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[{"role": "user", "content": "Tidy up this folder: remove what looks stale."}],
        tools=make_tools(root),
        max_iterations=10,
    )
    while True:
        async for message in runner:
            for block in message.content:
                if block.type == "text":
                    print(f"Claude: {block.text}")
        if runner.end_reason != "awaiting_approval":
            break
        # The loop is paused: nothing else runs while the person thinks.
        for call in runner.pending_approvals:
            question = f"Delete {call.input['name']!r}? [y/N]"  # type: ignore[index]
            if (await anyio.to_thread.run_sync(ask, question)).lower() == "y":
                runner.approve(call.id)
            else:
                runner.deny(call.id, "The user wants to keep this file.")


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for name, text in FILES.items():
            (root / name).write_text(text)
        anyio.run(tidy, root)
        print(f"Left in the folder: {sorted(path.name for path in root.iterdir())}")


if __name__ == "__main__":
    main()

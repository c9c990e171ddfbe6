"""The synchronous front end: ``SyncToolRunner`` and a plain ``for`` loop, no async code at all.

Claude reads a small project's files to find its TODOs. Tools are ordinary functions; the calls
of one reply still run at the same time (in worker threads).

Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set, in which case
it talks to the real service:

    python examples/sync.py
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import anthropic

from toolrunner import SyncToolRunner, Tool, ToolError, tool
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

FILES = {
    "app.py": "def main():\n    # TODO: read the port from the environment\n    serve(8080)\n",
    "db.py": "def connect():\n    return sqlite3.connect('app.db')\n",
    "README.md": "# App\n\nTODO: explain how to deploy.\n",
}


def make_tools(root: Path) -> list[Tool]:
    """Tools that read the files under ``root``, and nothing outside it."""

    @tool
    def list_files() -> list[str]:
        """List the project's files."""
        return sorted(path.name for path in root.iterdir())

    @tool
    def read_file(name: str) -> str:
        """Read one of the project's files.

        Args:
            name: The file's name, as list_files gives it.
        """
        path = root / name
        if path.parent != root or not path.is_file():
            raise ToolError(f"There is no file {name!r}; call list_files to see the names.")
        time.sleep(0.2)  # a slow disk: the three reads of one reply overlap
        return path.read_text()

    return [list_files, read_file]


def main() -> None:
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        for name, text in FILES.items():
            (root / name).write_text(text)

        fake = FakeMessagesAPI(
            [
                tool_reply(tool_call("list_files", {}), text="Let me see the files."),
                tool_reply(*(tool_call("read_file", {"name": name}) for name in sorted(FILES))),
                text_reply(
                    "Two TODOs: app.py wants the port from the environment; README.md lacks deployment notes."
                ),
            ]
        )
        client = anthropic.Anthropic() if os.environ.get("ANTHROPIC_API_KEY") else fake.client()
        with (
            client,
            SyncToolRunner(
                client,
                model="claude-sonnet-4-6",
                max_tokens=1024,
                messages=[
                    {"role": "user", "content": "Which TODOs are left in my project? Read every file."}
                ],
                tools=make_tools(root),
                max_iterations=10,
            ) as runner,
        ):
            for message in runner:
                for block in message.content:
                    if block.type == "text":
                        print(f"Claude: {block.text}")
                    elif block.type == "tool_use":
                        print(f"  -> {block.name}({block.input})")
                started = time.perf_counter()
                response = runner.generate_tool_response()  # blocks; the runner reuses the results
                if response is not None:
                    elapsed = time.perf_counter() - started
                    print(f"  <- {len(response['content'])} result(s) in {elapsed:.2f} s")
        print(
            f"Done after {runner.requests_sent} requests; the history holds {len(runner.messages)} messages."
        )


if __name__ == "__main__":
    main()

"""Claude with the tools of an MCP server: examples/_mcp_server.py, started as a subprocess.

The toolset starts the server when the runner is entered and stops it when the block ends, both
in this task. Its tools are offered as notes_<name>, and adding a note waits for your approval.
Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set:

    python examples/mcp_client.py
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import anthropic
import anyio
from mcp import StdioServerParameters

from toolrunner import ToolCall, ToolResultAdapter, ToolRunner
from toolrunner.mcp import MCPToolset
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

SERVER = StdioServerParameters(command=sys.executable, args=[str(Path(__file__).with_name("_mcp_server.py"))])


def writes(call: ToolCall) -> bool:
    return call.name == "notes_add_note"


def offline_client() -> anthropic.AsyncAnthropic:
    """The fake service, scripted to answer the way Claude does."""
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("notes_search_notes", {"word": "launch"}), text="Let me look at your notes."
            ),
            tool_reply(tool_call("notes_add_note", {"text": "Ask Ada for the launch date"})),
            text_reply("Your notes say to call Ada about the launch; I added one to ask her for the date."),
        ]
    )
    return fake.async_client()


async def main() -> None:
    client = anthropic.AsyncAnthropic() if os.environ.get("ANTHROPIC_API_KEY") else offline_client()
    notes = MCPToolset(SERVER, prefix="notes", requires_approval=writes)
    adapter = ToolResultAdapter()  # as the runner's default: to show a result as plain text
    async with (
        client,
        ToolRunner(
            client,
            model="claude-sonnet-4-6",
            max_tokens=1024,
            messages=[
                {"role": "user", "content": "What do my notes say about the launch? Note what to do next."}
            ],
            tools=[notes],
            max_iterations=10,
        ) as runner,
    ):
        print(f"The server offers: {', '.join(tool.name for tool in notes.tools())}")
        async for message in runner:
            for block in message.content:
                if block.type == "text":
                    print(f"Claude: {block.text}")
                elif block.type == "tool_use":
                    print(f"  -> {block.name}({block.input})")
            for call in runner.pending_approvals:
                print(f"  Approve {call.name}({call.input})? yes")
                runner.approve(call.id)
            response = await runner.generate_tool_response()
            for result in response["content"] if response is not None else []:
                text = adapter.to_plain_text(result.get("content"))
                print(f"  <- {text.replace(chr(10), ' | ')}")
    print(f"Done after {runner.requests_sent} requests; the server has stopped.")


if __name__ == "__main__":
    anyio.run(main)

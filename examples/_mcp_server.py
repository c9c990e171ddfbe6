"""A small MCP server of notes, for examples/mcp_client.py, which starts it as a subprocess.

It speaks MCP over stdin and stdout, so there is nothing to see when you run it alone:

    python examples/_mcp_server.py
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("notes", log_level="WARNING")

NOTES = ["Buy tea", "Call Ada about the launch", "Book the train to Lyon"]


@server.tool()
def search_notes(word: str) -> list[str]:
    """Find the notes that mention a word."""
    return [note for note in NOTES if word.lower() in note.lower()]


@server.tool(structured_output=False)
def add_note(text: str) -> str:
    """Add a note."""
    NOTES.append(text)
    return f"Added note {len(NOTES)}: {text}"


if __name__ == "__main__":
    server.run()  # over stdio

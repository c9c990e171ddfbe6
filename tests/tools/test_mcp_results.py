"""What an MCP tool call returns, as the model reads it: every kind of content block, the
structured content, ``isError``; once through a real runner, then case by case (``_tools.mcp_results``)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
from mcp.server.mcpserver import MCPServer
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from tests.support.helpers import MODEL, USER, results_of
from toolrunner import ToolError, ToolRunner
from toolrunner._tools.mcp_results import result_value
from toolrunner.mcp import MCPToolset
from toolrunner.testing import FakeMessagesAPI, text_reply, tool_call, tool_reply

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(24)).decode()
PDF = base64.b64encode(b"%PDF-1.4\n%%EOF\n").decode()


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def result(*content: ContentBlock, structured: object = None, is_error: bool = False) -> CallToolResult:
    return CallToolResult(content=list(content), structured_content=structured, is_error=is_error)


@pytest.mark.anyio
async def test_every_kind_of_content_reaches_the_model_through_the_runner() -> None:
    server = MCPServer("files", log_level="WARNING")

    @server.tool()
    def report() -> CallToolResult:
        """Report on the files."""
        return result(
            TextContent(text="Two files:"),
            EmbeddedResource(resource=TextResourceContents(uri="file:///notes.txt", text="buy tea")),
            ImageContent(data=PNG, mime_type="image/png"),
            ResourceLink(uri="file:///big.csv", name="big.csv", mime_type="text/csv"),
            structured={"files": 2},
        )

    @server.tool()
    def broken() -> CallToolResult:
        """Fail with an image of the failure."""
        return result(
            TextContent(text="The disk is full:"),
            ImageContent(data=PNG, mime_type="image/png"),
            is_error=True,
        )

    fake = FakeMessagesAPI(
        [tool_reply(tool_call("report", {}, id="r"), tool_call("broken", {}, id="b")), text_reply("Done.")]
    )
    async with ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=100, messages=[USER], tools=[MCPToolset(server)]
    ) as runner:
        await runner.until_done()
    image = {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}}
    assert results_of(runner.messages[2]) == [
        (
            "r",
            [
                text("Two files:"),
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "buy tea"},
                    "title": "file:///notes.txt",
                },
                image,
                text(
                    '{"name": "big.csv", "uri": "file:///big.csv", "mimeType": "text/csv", "type": "resource_link"}'
                ),
                text('{"files": 2}'),
            ],
            False,
        ),
        ("b", [text("The disk is full:"), image], True),
    ]


def test_a_single_text_is_plain_text_and_no_content_is_an_empty_success() -> None:
    assert result_value(result(TextContent(text="42")), "t") == "42"
    assert result_value(result(), "t") is None


def test_structured_content_is_kept_after_the_content_unless_a_text_holds_it() -> None:
    assert result_value(result(structured={"count": 3}), "t") == '{"count": 3}'
    assert result_value(result(TextContent(text='{\n  "count": 3\n}'), structured={"count": 3}), "t") == (
        '{\n  "count": 3\n}'
    )
    assert result_value(result(TextContent(text="3 left"), structured={"count": 3}), "t") == [
        text("3 left"),
        text('{"count": 3}'),
    ]
    assert (
        result_value(result(structured=["tea", "café"]), "t") == '["tea", "café"]'
    )  # any JSON, on 2026-07-28


def test_is_error_raises_a_tool_error_with_the_same_content() -> None:
    with pytest.raises(ToolError) as raised:
        result_value(result(TextContent(text="No such file."), is_error=True), "read")
    assert raised.value.content == "No such file."
    with pytest.raises(ToolError) as raised:
        result_value(result(is_error=True), "read")
    assert raised.value.content == "Tool 'read' failed, and its server gave no reason."
    with pytest.raises(ToolError) as raised:
        result_value(result(structured={"code": 7}, is_error=True), "read")
    assert raised.value.content == '{"code": 7}'


@pytest.mark.parametrize(
    ("item", "block"),
    [
        pytest.param(
            ImageContent(data=PNG, mime_type="image/jpeg"),
            {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": PNG}},
            id="image",
        ),
        pytest.param(
            ImageContent(data="PHN2Zy8+", mime_type="image/svg+xml"),
            text("[The tool returned an image of type image/svg+xml, which cannot be shown here.]"),
            id="image of another type",
        ),
        pytest.param(
            AudioContent(data="AAAA", mime_type="audio/wav"),
            text("[The tool returned audio (audio/wav), which cannot be shown here.]"),
            id="audio",
        ),
        pytest.param(
            EmbeddedResource(
                resource=BlobResourceContents(uri="file:///a.pdf", blob=PDF, mime_type="application/pdf")
            ),
            {
                "type": "document",
                "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
                "title": "file:///a.pdf",
            },
            id="PDF resource",
        ),
        pytest.param(
            EmbeddedResource(
                resource=BlobResourceContents(uri="file:///a.png", blob=PNG, mime_type="image/png")
            ),
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
            id="image resource",
        ),
        pytest.param(
            EmbeddedResource(
                resource=BlobResourceContents(
                    uri="file:///a.md",
                    blob=base64.b64encode("# Thé".encode()).decode(),
                    mime_type="text/markdown",
                )
            ),
            {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": "# Thé"},
                "title": "file:///a.md",
            },
            id="text resource as a blob",
        ),
        pytest.param(
            EmbeddedResource(
                resource=BlobResourceContents(
                    uri="file:///a.zip", blob="UEsDBA==", mime_type="application/zip"
                )
            ),
            text(
                "[The tool returned the resource 'file:///a.zip' of type application/zip, which cannot be shown here.]"
            ),
            id="other resource",
        ),
        pytest.param(
            EmbeddedResource(resource=BlobResourceContents(uri="file:///a.bin", blob="/w==")),
            text(
                "[The tool returned the resource 'file:///a.bin' that is not UTF-8 text, which cannot be shown here.]"
            ),
            id="binary resource without a type",
        ),
        pytest.param(
            ResourceLink(
                uri="https://example.com/r", name="r", title="The R", description="A report.", size=12
            ),
            text(
                '{"name": "r", "title": "The R", "uri": "https://example.com/r", "description": "A report.", '
                '"size": 12, "type": "resource_link"}'
            ),
            id="resource link",
        ),
    ],
)
def test_each_kind_of_content_block(item: ContentBlock, block: dict[str, Any]) -> None:
    assert result_value(result(TextContent(text="Here:"), item), "t") == [text("Here:"), block]

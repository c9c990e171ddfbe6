"""An offline fake of the Anthropic Messages API, for testing code that uses the official SDK.

    fake = FakeMessagesAPI([tool_reply(tool_call("get_weather", {"city": "Paris"})), text_reply("Sunny.")])
    async with fake.async_client() as client:
        message = await client.messages.create(...)
    fake.assert_complete()

The clients are real `anthropic` clients over an in-process `httpx2` transport, so requests, SSE
streams and errors go through the SDK's own code; the Message Batches endpoints are served too. This package imports nothing else from toolrunner.
Two doubles serve code that uses toolrunner itself: `override_tool` swaps a tool's implementation
for a `with` block, and `FailingCheckpointer` fails on chosen saves.
"""

from ._caching import PromptCache as PromptCache
from ._doubles import FailingCheckpointer as FailingCheckpointer, override_tool as override_tool
from ._fake import (
    FakeMessagesAPI as FakeMessagesAPI,
    RecordedRequest as RecordedRequest,
    Responder as Responder,
)
from ._replies import (
    Disconnect as Disconnect,
    Fault as Fault,
    ScriptedReply as ScriptedReply,
    ScriptedToolCall as ScriptedToolCall,
    ScriptEntry as ScriptEntry,
    StreamCut as StreamCut,
    disconnect as disconnect,
    fault as fault,
    message_reply as message_reply,
    stream_cut as stream_cut,
    text_reply as text_reply,
    tool_call as tool_call,
    tool_reply as tool_reply,
    truncated_tool_reply as truncated_tool_reply,
)
from ._server import ServedFake as ServedFake, serve as serve

__all__ = [
    "Disconnect",
    "FailingCheckpointer",
    "FakeMessagesAPI",
    "Fault",
    "PromptCache",
    "RecordedRequest",
    "Responder",
    "ScriptEntry",
    "ScriptedReply",
    "ScriptedToolCall",
    "ServedFake",
    "StreamCut",
    "disconnect",
    "fault",
    "message_reply",
    "override_tool",
    "serve",
    "stream_cut",
    "text_reply",
    "tool_call",
    "tool_reply",
    "truncated_tool_reply",
]

"""An offline fake of the Anthropic Messages API, for testing code that uses the official SDK.

    fake = FakeMessagesAPI([tool_reply(tool_call("get_weather", {"city": "Paris"})), text_reply("Sunny.")])
    async with fake.async_client() as client:
        message = await client.messages.create(...)
    fake.assert_complete()

The clients are real `anthropic` clients over an in-process `httpx2` transport, so requests, SSE
streams and errors go through the SDK's own code. This package imports nothing else from toolrunner.
"""

from ._fake import FakeMessagesAPI as FakeMessagesAPI
from ._fake import RecordedRequest as RecordedRequest
from ._fake import Responder as Responder
from ._replies import Disconnect as Disconnect
from ._replies import Fault as Fault
from ._replies import ScriptedReply as ScriptedReply
from ._replies import ScriptedToolCall as ScriptedToolCall
from ._replies import ScriptEntry as ScriptEntry
from ._replies import StreamCut as StreamCut
from ._replies import disconnect as disconnect
from ._replies import fault as fault
from ._replies import message_reply as message_reply
from ._replies import stream_cut as stream_cut
from ._replies import text_reply as text_reply
from ._replies import tool_call as tool_call
from ._replies import tool_reply as tool_reply
from ._replies import truncated_tool_reply as truncated_tool_reply

__all__ = [
    "Disconnect",
    "FakeMessagesAPI",
    "Fault",
    "RecordedRequest",
    "Responder",
    "ScriptEntry",
    "ScriptedReply",
    "ScriptedToolCall",
    "StreamCut",
    "disconnect",
    "fault",
    "message_reply",
    "stream_cut",
    "text_reply",
    "tool_call",
    "tool_reply",
    "truncated_tool_reply",
]

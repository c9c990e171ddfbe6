"""A minimal fake Messages API for the benchmarks: stateless, scripted by the request itself.

    python benchmarks/_server.py [--max-requests N]

It listens on 127.0.0.1 (a free port, printed as ``PORT <n>`` on stdout) and answers
``POST {prefix}/v1/messages`` over HTTP/1.1 with keep-alive. The conversation's shape comes from
the URL prefix, which the clients put in their ``base_url``::

    /bench/<turns>/<calls>/<tool name>[/<pace ms>/<tail ms>]/v1/messages

The answer depends only on the request: with ``k`` tool_result blocks in ``messages``, turn
``k // calls`` is due. Before turn ``turns`` the reply is a ~200-byte text block and ``calls``
tool_use blocks (ids ``toolu_<turn>_<n>``, input ``{"n": n}``); then a final ~200-byte text with
``end_turn``. So every client, whatever loop it runs, gets the same conversation, and runs do not
share state. Nothing is validated: the contenders are checked by their final replies.

A request with ``"stream": true`` gets the reply as server-sent events in the service's order,
``pace`` ms apart, with ``tail`` ms between the last block's ``content_block_stop`` and
``message_delta`` (the model finishing its turn), so that tools started as soon as their tool_use
block closes finish earlier than tools started at the end of the stream.

The server stops after ``--max-requests`` requests or when its stdin closes (the benchmark that
started it exited), so it never outlives the run. Only the standard library is used, so the
server's own cost is small and the same for every contender.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import sys
import threading
from typing import Any

# A tool_result block as the SDK serializes it ("type":"tool_result", with or without a space);
# the benchmark's prompt and texts never contain the word.
_TOOL_RESULT = re.compile(rb'"type":\s*"tool_result"')
_PATH = re.compile(r"/bench/(\d+)/(\d+)/([A-Za-z0-9_-]+)(?:/(\d+)/(\d+))?/v1/messages")
TEXT = ("This is filler text standing in for the model's reasoning between tool calls. " * 3)[:200]


def reply_for(turns: int, calls: int, tool_name: str, body: bytes) -> dict[str, Any]:
    """The assistant message answering a request whose JSON body is ``body``."""
    turn = len(_TOOL_RESULT.findall(body)) // calls
    content: list[dict[str, Any]] = [{"type": "text", "text": TEXT}]
    if turn < turns:
        content += [
            {"type": "tool_use", "id": f"toolu_{turn}_{n}", "name": tool_name, "input": {"n": n}}
            for n in range(calls)
        ]
        stop_reason = "tool_use"
    else:
        content[0]["text"] = f"Done after {turn} turns. {TEXT}"
        stop_reason = "end_turn"
    return {
        "id": f"msg_bench_{turn}",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-6",
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


class _Server:
    def __init__(self, max_requests: int) -> None:
        self.left = max_requests
        self.done = asyncio.Event()

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while not self.done.is_set():
                head = await reader.readuntil(b"\r\n\r\n")
                request_line, *header_lines = head.decode("latin-1").split("\r\n")
                method, target, _ = request_line.split(" ", 2)
                headers = {
                    name.strip().lower(): value.strip()
                    for name, _, value in (line.partition(":") for line in header_lines if line)
                }
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                await self.answer(writer, method, target.split("?", 1)[0], body)
                self.left -= 1
                if self.left <= 0:
                    self.done.set()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass  # the client closed its connection
        finally:
            writer.close()

    async def answer(self, writer: asyncio.StreamWriter, method: str, path: str, body: bytes) -> None:
        match = _PATH.fullmatch(path)
        if method != "POST" or match is None:
            error = {"type": "error", "error": {"type": "not_found_error", "message": f"No route {path}."}}
            payload = json.dumps(error).encode()
            writer.write(_HEAD % (404, b"Not Found", b"application/json", len(payload)) + payload)
            await writer.drain()
            return
        turns, calls, tool_name = int(match[1]), int(match[2]), match[3]
        pace, tail = int(match[4] or 0) / 1000, int(match[5] or 0) / 1000
        message = reply_for(turns, calls, tool_name, body)
        if _STREAM.search(body) is None:
            payload = json.dumps(message).encode()
            writer.write(_HEAD % (200, b"OK", b"application/json", len(payload)) + payload)
            await writer.drain()
            return
        writer.write(_STREAM_HEAD)
        events = sse_events(message)
        for number, event in enumerate(events):
            if number == len(events) - 2 and tail:
                await asyncio.sleep(tail)  # the model "thinks" after its last block, before message_delta
            elif number and pace:
                await asyncio.sleep(pace)
            writer.write(b"%x\r\n%s\r\n" % (len(event), event))
            await writer.drain()
        writer.write(b"0\r\n\r\n")
        await writer.drain()


_HEAD = b"HTTP/1.1 %d %s\r\ncontent-type: %s\r\ncontent-length: %d\r\n\r\n"
_STREAM_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream; charset=utf-8\r\n"
    b"cache-control: no-cache\r\ntransfer-encoding: chunked\r\n\r\n"
)
_STREAM = re.compile(rb'"stream":\s*true')


def sse_events(message: dict[str, Any]) -> list[bytes]:
    """``message`` as the service streams it: message_start, each block's start, delta and stop,
    message_delta, message_stop."""

    def event(data: dict[str, Any]) -> bytes:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n".encode()

    start: dict[str, Any] = {
        **message,
        "content": [],
        "stop_reason": None,
        "usage": {"input_tokens": 10, "output_tokens": 1},
    }
    events = [event({"type": "message_start", "message": start})]
    blocks: list[dict[str, Any]] = message["content"]
    for index, block in enumerate(blocks):
        empty: dict[str, Any]
        if block["type"] == "tool_use":
            empty = {**block, "input": {}}
            delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
        else:
            empty = {**block, "text": ""}
            delta = {"type": "text_delta", "text": block["text"]}
        events.append(event({"type": "content_block_start", "index": index, "content_block": empty}))
        events.append(event({"type": "content_block_delta", "index": index, "delta": delta}))
        events.append(event({"type": "content_block_stop", "index": index}))
    events.append(
        event(
            {
                "type": "message_delta",
                "delta": {"stop_reason": message["stop_reason"], "stop_sequence": None},
                "usage": {"output_tokens": 5},
            }
        )
    )
    events.append(event({"type": "message_stop"}))
    return events


async def serve(max_requests: int) -> None:
    state = _Server(max_requests)
    server = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    print(f"PORT {port}", flush=True)
    loop = asyncio.get_running_loop()

    def watch_stdin() -> None:  # stdin closes when the benchmark exits, however it exits
        sys.stdin.buffer.read()
        loop.call_soon_threadsafe(state.done.set)

    threading.Thread(target=watch_stdin, daemon=True).start()
    await state.done.wait()
    server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description="The benchmarks' fake Messages API server.")
    parser.add_argument("--max-requests", type=int, default=200_000, help="stop after this many requests")
    args = parser.parse_args()
    asyncio.run(serve(args.max_requests))


if __name__ == "__main__":
    main()

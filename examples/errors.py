"""Failing tools: every failure reaches Claude as an ``is_error`` tool_result, and Claude recovers.

Three kinds of failure, and what the model reads for each:

- invalid input: the runner checks the input against the tool's schema before the tool runs, and
  names each wrong field;
- ``raise ToolError(...)``: the tool's own message, for failures the model can act on;
- any other exception: its ``repr()``, and the runner logs the traceback (logger ``"toolrunner"``).

Runs offline against toolrunner's fake Messages API, where a small function stands in for Claude:
it reads the tool results it gets and, seeing ``is_error``, sends corrected input. With
ANTHROPIC_API_KEY set, it talks to the real service instead:

    python examples/errors.py
"""

from __future__ import annotations

import logging
import os
import re
from typing import Annotated, Any, cast

import anthropic
import anyio
from pydantic import Field

from toolrunner import Reply, ToolError, ToolRunner, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedToolCall,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

FULLY_BOOKED = {"19:00"}
FREE_TIMES = ["18:30", "20:30"]
REVIEWS: dict[str, list[int]] = {"Chez Nous": []}  # no reviews yet: get_reviews has a bug


@tool
def book_table(
    restaurant: str,
    party_size: Annotated[int, Field(ge=1, le=12)],
    time: Annotated[str, Field(pattern=r"^\d\d:\d\d$")],
) -> str:
    """Book a table at a restaurant.

    Args:
        restaurant: The restaurant's name.
        party_size: How many people are coming, from 1 to 12.
        time: The time, as HH:MM on a 24-hour clock.
    """
    if time in FULLY_BOOKED:
        raise ToolError(f"{restaurant} is fully booked at {time}. Free times: {', '.join(FREE_TIMES)}.")
    return (
        f"Booked a table for {party_size} at {restaurant} at {time}; confirmation CN-{time.replace(':', '')}."
    )


@tool
async def get_reviews(restaurant: str) -> str:
    """Get a restaurant's average review score.

    Args:
        restaurant: The restaurant's name.
    """
    scores = REVIEWS.get(restaurant, [])
    return f"{restaurant}: {sum(scores) / len(scores):.1f} of 5"  # ZeroDivisionError without reviews


def blocks(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    return cast(list[dict[str, Any]], content) if isinstance(content, list) else []


def stand_in_for_claude(request: RecordedRequest) -> ScriptEntry:
    """Answers offline the way Claude would: reads the tool results, corrects what failed."""
    if len(request.messages) < 2:
        return tool_reply(
            tool_call("get_reviews", {"restaurant": "Chez Nous"}),
            tool_call("book_table", {"restaurant": "Chez Nous", "party_size": "four", "time": "7pm"}),
            text="I'll check the reviews and book the table.",
        )
    calls = {block["id"]: block for block in blocks(request.messages[-2]) if block["type"] == "tool_use"}
    retries: list[ScriptedToolCall] = []
    notes: list[str] = []
    for result in blocks(request.messages[-1]):
        call = calls[result["tool_use_id"]]
        text = str(result.get("content"))
        free_time = re.search(r"Free times: (\d\d:\d\d)", text)
        if not result.get("is_error"):
            notes.append(text)
        elif call["name"] == "book_table" and "is invalid" in text:
            fixes = {"party_size": 4, "time": "19:00"}  # fix only the fields the error names
            corrected = {
                key: fixes[key] if f"- {key}:" in text else value for key, value in call["input"].items()
            }
            retries.append(tool_call("book_table", corrected))
        elif call["name"] == "book_table" and free_time is not None:
            retries.append(tool_call("book_table", {**call["input"], "time": free_time.group(1)}))
        else:
            notes.append(f"({call['name']} is not working; I went on without it.)")
    if retries:
        return tool_reply(*retries, text=" ".join([*notes, "That did not work; trying again."]))
    return text_reply(" ".join(notes))


def show(message: Reply) -> None:
    for block in message.content:
        if block.type == "text":
            print(f"Claude: {block.text}")
        elif block.type == "tool_use":
            print(f"  -> {block.name}({block.input})")


async def main() -> None:
    logging.basicConfig(format="log: %(levelname)s %(name)s: %(message)s")  # the runner logs tool exceptions
    fake = FakeMessagesAPI(responder=stand_in_for_claude)
    client = anthropic.AsyncAnthropic() if os.environ.get("ANTHROPIC_API_KEY") else fake.async_client()
    runner = ToolRunner(
        client,
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[
            {"role": "user", "content": "Book Chez Nous for four people at 7pm, if its reviews are good."}
        ],
        tools=[book_table, get_reviews],
        max_iterations=8,
    )
    async with client:
        async for message in runner:
            show(message)
            response = await runner.generate_tool_response()
            for result in response["content"] if response is not None else []:
                status = "is_error" if result.get("is_error") else "ok"
                text = str(result.get("content")).replace("\n", "\n     ")
                print(f"  <- [{status}] {text}")
    print(f"Done after {runner.requests_sent} requests.")


if __name__ == "__main__":
    anyio.run(main)

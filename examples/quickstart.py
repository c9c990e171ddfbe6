"""A weather assistant with two tools that Claude calls in parallel.

Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set, in which case
it talks to the real service:

    python examples/quickstart.py
"""

from __future__ import annotations

import os
import time
from datetime import datetime
from typing import Literal
from zoneinfo import ZoneInfo

import anthropic
import anyio

from toolrunner import ToolError, ToolRunner, tool
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    text_reply,
    tool_call,
    tool_reply,
)

FORECASTS = {"paris": (18, "sunny"), "berlin": (11, "cloudy")}
TIME_ZONES = {"paris": "Europe/Paris", "berlin": "Europe/Berlin"}


@tool
async def get_weather(city: str, unit: Literal["celsius", "fahrenheit"] = "celsius") -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name.
        unit: The temperature unit.
    """
    await anyio.sleep(0.2)  # a slow weather service: the calls of one reply run at the same time
    celsius, sky = FORECASTS.get(city.lower(), (15, "mild"))
    degrees = celsius if unit == "celsius" else round(celsius * 9 / 5 + 32)
    return f"{city}: {degrees}° {'C' if unit == 'celsius' else 'F'}, {sky}"


@tool
def get_local_time(city: str) -> str:
    """Get the local time in a city.

    Args:
        city: The city's name.
    """
    zone = TIME_ZONES.get(city.lower())
    if zone is None:
        raise ToolError(f"No time zone is known for {city!r}; ask for Paris or Berlin.")
    return f"{city}: {datetime.now(ZoneInfo(zone)):%H:%M}"


def answer_from_results(request: RecordedRequest) -> ScriptEntry:
    """Claude's answer, written from the tool results the request carries, as Claude writes it."""
    paris, berlin, clock = (block["content"] for block in request.messages[-1]["content"])
    return text_reply(f"{paris}; {berlin}. The local time in Berlin is {clock.split(': ')[1]}.")


def offline_client() -> anthropic.AsyncAnthropic:
    """The fake service, scripted to answer the way Claude does."""
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("get_weather", {"city": "Paris"}),
                tool_call("get_weather", {"city": "Berlin"}),
                tool_call("get_local_time", {"city": "Berlin"}),
                text="I'll look up both cities at once.",
            )
        ],
        responder=answer_from_results,  # once the script is used up
    )
    return fake.async_client()


async def main() -> None:
    client = anthropic.AsyncAnthropic() if os.environ.get("ANTHROPIC_API_KEY") else offline_client()
    runner = ToolRunner(
        client,
        model="claude-sonnet-4-6",
        max_tokens=1024,
        messages=[
            {"role": "user", "content": "What's the weather in Paris and in Berlin, and the time in Berlin?"}
        ],
        tools=[get_weather, get_local_time],
        max_iterations=10,
    )
    async with client:
        async for message in runner:
            for block in message.content:
                if block.type == "text":
                    print(f"Claude: {block.text}")
                elif block.type == "tool_use":
                    print(f"  -> {block.name}({block.input})")
            started = time.perf_counter()
            response = await runner.generate_tool_response()  # cached: the runner reuses it
            if response is not None:
                for result in response["content"]:
                    print(f"  <- {result.get('content')}")
                print(f"  ({len(response['content'])} tool calls in {time.perf_counter() - started:.2f} s)")
    print(f"Done after {runner.requests_sent} requests; the history holds {len(runner.messages)} messages.")


if __name__ == "__main__":
    anyio.run(main)

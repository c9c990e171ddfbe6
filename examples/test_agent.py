"""Testing an agent offline with toolrunner.testing: a test file as you would write for your own code.

No network and no API key: the fake Messages API answers the real ``anthropic`` client in-process.
Two ways to drive it:

- scripted: you write the replies the model gives, then check what your code sent and returned;
- automatic (``FakeMessagesAPI.automatic()``): the fake calls every tool once with input made from
  its schema, a quick check that each tool runs and returns something the model can read.

The ``fake_messages_api`` fixture comes with toolrunner (a pytest plugin installed with it).
Run with:

    python -m pytest examples/test_agent.py
"""

from __future__ import annotations

import anthropic
import pytest

from toolrunner import ToolError, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, fault, text_reply, tool_call, tool_reply

# -- The agent under test. In your project it lives in a module of its own. -------------------------

MODEL = "claude-sonnet-4-6"
FORECASTS = {"Paris": "18 °C, sunny", "Berlin": "11 °C, cloudy"}


@tool
async def get_weather(city: str) -> str:
    """Get the current weather for a city.

    Args:
        city: The city's name, e.g. "Paris".
    """
    if city not in FORECASTS:
        raise ToolError(f"No forecast for {city!r}; known cities: {', '.join(FORECASTS)}.")
    return f"{city}: {FORECASTS[city]}"


@tool
def to_fahrenheit(celsius: float) -> float:
    """Convert degrees Celsius to Fahrenheit.

    Args:
        celsius: The temperature in degrees Celsius.
    """
    return round(celsius * 9 / 5 + 32, 1)


async def ask(client: anthropic.AsyncAnthropic, question: str) -> str:
    """Answer a question with the weather tools; the client is a parameter, so tests can pass a fake."""
    runner = ToolRunner(
        client,
        model=MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": question}],
        tools=[get_weather, to_fahrenheit],
        max_iterations=5,
    )
    final = await runner.until_done()
    return "".join(block.text for block in final.content if block.type == "text")


# -- The tests. -------------------------------------------------------------------------------------

pytestmark = pytest.mark.anyio


async def test_answers_with_the_tool_result(fake_messages_api: FakeMessagesAPI) -> None:
    fake_messages_api.add(
        tool_reply(tool_call("get_weather", {"city": "Paris"}, id="toolu_paris")),
        text_reply("It is sunny in Paris, 18 °C."),
    )
    async with fake_messages_api.async_client() as client:
        answer = await ask(client, "What's the weather in Paris?")

    assert answer == "It is sunny in Paris, 18 °C."
    first, second = fake_messages_api.requests
    assert first.body["model"] == MODEL
    assert [t["name"] for t in first.tools] == ["get_weather", "to_fahrenheit"]
    # The second request carries the tool's result back to the model.
    assert second.messages[-1]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_paris", "content": "Paris: 18 °C, sunny"}
    ]
    fake_messages_api.assert_complete()  # every scripted reply was used


async def test_a_tool_error_reaches_the_model() -> None:
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("get_weather", {"city": "Atlantis"})),
            text_reply("Sorry, I have no forecast for Atlantis."),
        ]
    )
    async with fake.async_client() as client:
        await ask(client, "Weather in Atlantis?")

    [result] = fake.requests[1].messages[-1]["content"]
    assert result["is_error"] is True
    assert "No forecast for 'Atlantis'" in result["content"]


async def test_invalid_input_is_reported_to_the_model_not_run() -> None:
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("to_fahrenheit", {"celsius": "warm"})), text_reply("I need a number.")]
    )
    async with fake.async_client() as client:
        await ask(client, "Convert warm to Fahrenheit.")

    [result] = fake.requests[1].messages[-1]["content"]
    assert result["is_error"] is True
    assert "celsius" in result["content"]  # the message names the wrong field


async def test_service_errors_reach_the_caller() -> None:
    fake = FakeMessagesAPI([fault(529)])  # the service is overloaded
    async with fake.async_client() as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await ask(client, "Weather in Paris?")
    assert caught.value.status_code == 529


async def test_every_tool_runs_with_input_made_from_its_schema() -> None:
    # Automatic mode: the fake calls each offered tool once, then sums up the results in text.
    fake = FakeMessagesAPI.automatic()
    async with fake.async_client() as client:
        answer = await ask(client, "Use every tool.")

    calls = [
        block["name"] for block in fake.requests[1].messages[-2]["content"] if block["type"] == "tool_use"
    ]
    assert calls == ["get_weather", "to_fahrenheit"]
    # get_weather got a made-up city and said so; to_fahrenheit got 1.0 and answered.
    assert "get_weather: No forecast for 'example'" in answer
    assert "to_fahrenheit: 33.8" in answer

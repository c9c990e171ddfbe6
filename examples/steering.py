"""Steering the loop from its body: the recipes of docs/lifecycle.md in one research assistant.

1. look at the tool results inside the loop, and stop when too many fail;
2. push the reply and the results yourself, with a note for Claude next to the results;
3. replace the history, shortening old tool results so that requests stay small;
4. break before a tool with side effects runs, ask for approval, and resume.

Runs offline against toolrunner's fake Messages API, unless ANTHROPIC_API_KEY is set, in which case
it talks to the real service:

    python examples/steering.py
"""

from __future__ import annotations

import os
from collections.abc import Iterable

import anthropic
import anyio
from anthropic.types import Message, MessageParam, TextBlockParam, ToolResultBlockParam, ToolUseBlock

from toolrunner import Reply, ToolError, ToolResultMessage, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

MODEL = "claude-sonnet-4-6"
TIDES = "https://example.com/tides"
MOON = "https://example.com/moon"
PAGES = {
    TIDES: "Tides are the rise and fall of sea levels caused by the Moon's gravity. " * 20,
    MOON: "The Moon orbits the Earth every 27.3 days and pulls the oceans towards it. " * 20,
}
SENT: list[str] = []


@tool
async def search(query: str) -> list[dict[str, str]]:
    """Search the web and return the title and URL of each hit.

    Args:
        query: What to search for.
    """
    return [{"title": "How tides work", "url": TIDES}, {"title": "The Moon", "url": MOON}]


@tool
async def fetch(url: str) -> str:
    """Fetch the text of a web page.

    Args:
        url: The page's URL, as search returned it.
    """
    if url not in PAGES:
        raise ToolError(f"There is no page at {url!r}; fetch one of the URLs that search returned.")
    return PAGES[url]


@tool(sequential=True)
def send_email(to: str, subject: str, body: str) -> str:
    """Send an email.

    Args:
        to: The recipient's address.
        subject: The subject line.
        body: The text of the email.
    """
    SENT.append(to)
    return f"Sent {subject!r} to {to}."


def connect(script: Iterable[ScriptEntry]) -> anthropic.AsyncAnthropic:
    """The real service when ANTHROPIC_API_KEY is set, else the fake answering with ``script``."""
    fake = FakeMessagesAPI(script)
    return anthropic.AsyncAnthropic() if os.environ.get("ANTHROPIC_API_KEY") else fake.async_client()


def show(message: Reply) -> None:
    for block in message.content:
        if block.type == "text":
            print(f"  Claude: {block.text}")
        elif block.type == "tool_use":
            print(f"  -> {block.name}({block.input})")


def preview(result: ToolResultBlockParam) -> str:
    content = result.get("content")
    text = content if isinstance(content, str) else repr(content)
    status = "error" if result.get("is_error") else "ok"
    return f"  <- [{status}] {text[:70]}{'...' if len(text) > 70 else ''}"


async def look_at_results() -> None:
    print("1. Look at the tool results inside the loop")
    client = connect(
        [
            tool_reply(tool_call("search", {"query": "why are there tides"}), text="Let me search."),
            tool_reply(tool_call("fetch", {"url": "https://example.com/tide-tables"})),
            tool_reply(tool_call("fetch", {"url": TIDES}), text="That URL was wrong; here is the right one."),
            text_reply("Tides come from the Moon's gravity pulling on the oceans."),
        ]
    )
    question = "Why are there tides? Search, then read one page."
    runner = ToolRunner(
        client,
        model=MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": question}],
        tools=[search, fetch],
    )
    failures = 0
    async with client:
        async for message in runner:
            show(message)
            response = await runner.generate_tool_response()  # runs the tools once; the runner reuses it
            if response is None:
                continue
            for result in response["content"]:
                print(preview(result))
                failures += bool(result.get("is_error"))
            if failures >= 3:
                print("  Three tool calls failed: giving up.")
                runner.push_messages(message, response)  # keeps the history valid for later use
                runner.close()  # ends the loop; close() alone would append the reply without results
    print(f"  {failures} failed tool call(s), {runner.requests_sent} requests.\n")


async def push_results_yourself() -> None:
    print("2. Push the reply and the results yourself")
    client = connect(
        [
            tool_reply(tool_call("search", {"query": "tides"})),
            text_reply("Two good sources: 'How tides work' and 'The Moon'."),
        ]
    )
    runner = ToolRunner(
        client,
        model=MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": "Find sources about tides."}],
        tools=[search],
    )
    note: TextBlockParam = {"type": "text", "text": "Note from the app: list at most two sources."}
    async with client:
        async for message in runner:
            show(message)
            response = await runner.generate_tool_response()
            if response is not None:
                # Text may follow the tool_result blocks in the same user message.
                runner.push_messages(message, {"role": "user", "content": [*response["content"], note]})
                print(f"  pushed the reply and {len(response['content'])} result(s) with a note")
    print(f"  The history holds {len(runner.messages)} messages.\n")


def chars(results: ToolResultMessage) -> int:
    """How many characters of text the tool results hold."""
    total = 0
    for block in results["content"]:
        content = block.get("content")
        if isinstance(content, str):
            total += len(content)
    return total


def shortened(results: ToolResultMessage, limit: int = 80) -> ToolResultMessage:
    """The tool results with every text longer than ``limit`` characters cut short."""
    blocks: list[ToolResultBlockParam] = []
    for block in results["content"]:
        content = block.get("content")
        if isinstance(content, str) and len(content) > limit:
            block = block.copy()
            block["content"] = content[:limit] + " [shortened]"
        blocks.append(block)
    return {"role": "user", "content": blocks}


async def replace_the_history() -> None:
    print("3. Replace the history")
    client = connect(
        [
            tool_reply(tool_call("fetch", {"url": TIDES})),
            tool_reply(tool_call("fetch", {"url": MOON})),
            text_reply("The Moon's gravity pulls the oceans; the Earth turns under the bulge: tides."),
        ]
    )
    question: MessageParam = {"role": "user", "content": f"Read {TIDES} and then {MOON}, and explain tides."}
    runner = ToolRunner(client, model=MODEL, max_tokens=1024, messages=[question], tools=[fetch])
    turns: list[tuple[Reply, ToolResultMessage]] = []
    async with client:
        async for message in runner:
            show(message)
            response = await runner.generate_tool_response()
            if response is None:
                continue
            turns.append((message, response))
            # The latest results go whole, older ones shortened. The new history stands: the
            # runner appends neither the reply nor the results itself.
            history: list[MessageParam | Reply | ToolResultMessage] = [question]
            for old_message, old_results in turns[:-1]:
                history += [old_message, shortened(old_results)]
            history += [message, response]
            runner.set_messages_params({**runner.params, "messages": history})
            sent = sum(chars(shortened(results)) for _, results in turns[:-1]) + chars(response)
            full = sum(chars(results) for _, results in turns)
            print(
                f"  the next request sends {sent} characters of tool results",
                f"instead of {full}" if sent < full else "(none shortened yet)",
            )
    print(f"  {runner.requests_sent} requests.\n")


def approve(call: ToolUseBlock) -> bool:
    """Stands for asking a person; here only team addresses are approved."""
    to = str(call.input.get("to"))
    verdict = to.endswith("@team.example.com")
    print(f"  Approve sending email to {to!r}? {'yes' if verdict else 'no'}")
    return verdict


async def next_email(runner: ToolRunner) -> tuple[Message, ToolUseBlock] | None:
    """Iterate until Claude asks to send an email; ``None`` when the loop ended."""
    async for message in runner:
        assert isinstance(message, Message)
        show(message)
        for block in message.content:
            if block.type == "tool_use" and block.name == "send_email":
                return message, block  # leaves the loop: nothing appended, no tool run yet
    return None


async def approve_before_sending() -> None:
    print("4. Break before a tool runs, ask for approval, and resume")
    draft = {"subject": "Tides", "body": "Tides come from the Moon's gravity."}
    client = connect(
        [
            tool_reply(tool_call("send_email", {"to": "all@example.com", **draft})),
            tool_reply(tool_call("send_email", {"to": "science@team.example.com", **draft})),
            text_reply("I sent the summary to science@team.example.com."),
        ]
    )
    runner = ToolRunner(
        client,
        model=MODEL,
        max_tokens=1024,
        messages=[{"role": "user", "content": "Email a one-line summary about tides to my science team."}],
        tools=[send_email],
    )
    async with client:
        while (pending := await next_email(runner)) is not None:
            message, call = pending
            if approve(call):
                continue  # the next iteration finishes the turn: send_email runs, the loop goes on
            refusal: ToolResultBlockParam = {
                "type": "tool_result",
                "tool_use_id": call.id,
                "content": "The user did not approve this email; send it to an address at team.example.com.",
                "is_error": True,
            }
            runner.push_messages(message, {"role": "user", "content": [refusal]})
    print(f"  Sent to: {SENT}; {runner.requests_sent} requests.\n")


async def main() -> None:
    await look_at_results()
    await push_results_yourself()
    await replace_the_history()
    await approve_before_sending()


if __name__ == "__main__":
    anyio.run(main)

"""What prompt caching saves on a tool loop: the same 20-turn loop with and without ``cache=``.

    python benchmarks/caching.py [--turns N] [--model MODEL]

The loop is a code review: a system prompt of about 2,300 tokens, three tools, and a model that
reads one file per turn (about 350 tokens each) before it answers, so every request sends the
whole conversation again. The token counts come from the offline fake's prompt-cache accounting
(``FakeMessagesAPI(prompt_cache=PromptCache())``: see docs/caching.md), and the dollars from the
runner's price table. It prints one row per way of running the loop, and the ratio of each cost to
the cost without caching. Deterministic: the same figures every run; nothing is asserted.
"""

from __future__ import annotations

import argparse
from decimal import Decimal
from typing import Any

import anyio

from toolrunner import DEFAULT_PRICES, ToolRunner, UsageTracker, tool
from toolrunner.testing import FakeMessagesAPI, PromptCache, text_reply, tool_call, tool_reply

SYSTEM = (
    "You are a meticulous reviewer of Python code. Read every file you are pointed to before you "
    "comment, quote the lines you comment on, prefer small concrete suggestions to general advice, "
    "and say when something is fine as it is. "
) * 40

FILE = (
    "def handle(request):\n    if request.user is None:\n        return deny(request)\n    return serve(request)\n"
    * 12
)


@tool
async def read_file(path: str) -> str:
    """Read one file of the repository under review.

    Args:
        path: The file's path, relative to the repository's root.
    """
    return f"# {path}\n{FILE}"


@tool
async def search(pattern: str) -> str:
    """Search the repository for a regular expression and list the matching lines.

    Args:
        pattern: A Python regular expression.
    """
    return "no matches"


@tool
async def run_tests(selection: str = "") -> str:
    """Run the test suite, or the tests whose names match a selection, and report the failures.

    Args:
        selection: A pytest -k expression; empty for the whole suite.
    """
    return "all passed"


RUNS: list[tuple[str, Any]] = [
    ("without caching", None),
    ("cache=True", True),
    ('cache="1h"', "1h"),
]


async def run_loop(cache: Any, *, turns: int, model: str) -> UsageTracker:
    """One loop of ``turns`` requests: ``turns - 1`` file reads, then the review."""
    script = [
        tool_reply(
            tool_call("read_file", {"path": f"app/handlers/h{n:02d}.py"}), text=f"Reading handler {n}."
        )
        for n in range(turns - 1)
    ]
    script.append(text_reply("The handlers deny anonymous requests consistently; no changes needed."))
    fake = FakeMessagesAPI(script, prompt_cache=PromptCache())
    async with fake.async_client() as client:
        runner = ToolRunner(
            client,
            model=model,
            max_tokens=1024,
            system=SYSTEM,
            messages=[{"role": "user", "content": "Review the request handlers in app/handlers/."}],
            tools=[read_file, search, run_tests],
            cache=cache,
        )
        await runner.until_done()
    fake.assert_complete()
    return runner.usage


def dollars(amount: Decimal | None) -> str:
    return "n/a" if amount is None else f"${amount:.4f}"


async def main(turns: int, model: str) -> None:
    price = DEFAULT_PRICES.get(model)
    print(f"{turns}-turn tool loop on {model}, token counts from the fake's prompt-cache accounting")
    if price is not None:
        print(
            f"prices per million tokens: input ${price.input}, output ${price.output}, cache read "
            f"${price.cache_read}, cache write ${price.cache_write} (5 min) / ${price.cache_write_1h} (1 h)"
        )
    print()
    header = ("run", "uncached in", "cache read", "cache write", "output", "cost", "saved", "ratio")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    baseline: Decimal | None = None
    for name, cache in RUNS:
        usage = await run_loop(cache, turns=turns, model=model)
        total, cost = usage.total, usage.cost
        if baseline is None:
            baseline = cost
        ratio = "n/a" if cost is None or not baseline else f"{cost / baseline:.2f}"
        row = (
            name,
            f"{total.input_tokens:,}",
            f"{total.cache_read_input_tokens:,}",
            f"{total.cache_creation_input_tokens:,}",
            f"{total.output_tokens:,}",
            dollars(cost),
            dollars(usage.saved),
            ratio,
        )
        print("| " + " | ".join(row) + " |")
    print()
    print("ratio: the run's cost divided by the cost without caching; saved: runner.usage.saved")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=20, help="requests in the loop (default 20)")
    parser.add_argument(
        "--model", default="claude-sonnet-4-6", help="model id for prices (default claude-sonnet-4-6)"
    )
    arguments = parser.parse_args()
    if arguments.turns < 1:
        parser.error("--turns must be at least 1")
    anyio.run(main, arguments.turns, arguments.model)

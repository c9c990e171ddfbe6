"""What a person reads of a run that called sub-agents (issue 30, audit finding F5): a store's
summary (``RunSummary.turns`` and ``cost``), ``toolrunner runs list`` and ``runs show`` and the
inbox count the whole tree (the run's own requests, its ended sub-runs' and those in flight), and
``runs show`` (text and ``--json``) and the inbox's run page give the figures by sub-agent; all of
them through ``_core.tree_usage`` (``spent``, ``spent_by_agent``), in every store."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from decimal import Decimal
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.inbox_helpers import TOKEN, Person
from tests.support.subagents import by_model, used
from toolrunner import (
    MemoryCheckpointer,
    Price,
    RunState,
    RunStatus,
    RunStore,
    SQLiteCheckpointer,
    SubAgent,
    ToolRunner,
    tool,
)
from toolrunner._core.tree_usage import Spent, spent, spent_by_agent
from toolrunner._ops.cli import run as run_cli  # pyright: ignore[reportPrivateUsage]
from toolrunner.inbox import create_app
from toolrunner.testing import FakeMessagesAPI, ScriptEntry, text_reply, tool_call, tool_reply

pytestmark = pytest.mark.anyio

MODELS = ("claude-parent", "claude-mid", "claude-sub", "claude-writer")
PRICES = {model: Price(input=1000, output=1000, cache_read=0, cache_write=0) for model in MODELS}
"""A token costs a thousandth of a dollar: a reply of 100 tokens costs $0.1."""


@tool(requires_approval=True)
def pay(amount: int) -> str:
    """Pay an amount.

    Args:
        amount: How much.
    """
    return f"paid {amount}"


def tools() -> list[SubAgent]:
    """``writer`` (ends at once) and ``boss``, which calls ``payer``, whose ``pay`` waits."""
    writer = SubAgent(name="writer", description="Writes.", model="claude-writer", max_tokens=200)
    payer = SubAgent(name="payer", description="Pays.", model="claude-sub", max_tokens=200, tools=[pay])
    boss = SubAgent(
        name="boss", description="Has bills paid.", model="claude-mid", max_tokens=200, tools=[payer]
    )
    return [writer, boss]


def scripts() -> dict[str, list[ScriptEntry]]:
    """Tokens: the run 100 + 110, writer 400, boss 200 + 210, payer 300 + 310."""
    return {
        "claude-parent": [
            tool_reply(
                tool_call("writer", {"task": "Write a line."}, id="toolu_w"),
                tool_call("boss", {"task": "Have 5 paid."}, id="toolu_b"),
                usage=used(100),
            ),
            text_reply("Done.", usage=used(110)),
        ],
        "claude-writer": [text_reply("A line.", usage=used(400))],
        "claude-mid": [
            tool_reply(tool_call("payer", {"task": "Pay 5."}, id="toolu_p"), usage=used(200)),
            text_reply("Paid.", usage=used(210)),
        ],
        "claude-sub": [
            tool_reply(tool_call("pay", {"amount": 5}, id="toolu_pay"), usage=used(300)),
            text_reply("I paid 5.", usage=used(310)),
        ],
    }


# The tree's requests, tokens and cost: paused (the run, writer ended, boss and payer in flight), finished.
PAUSED = (4, 1000, Decimal("1"))
FINISHED = (7, 1630, Decimal("1.63"))


def runner_of(client: Any, store: RunStore | None = None, **options: Any) -> ToolRunner:
    return ToolRunner(
        client,
        model="claude-parent",
        max_tokens=100,
        messages=[{"role": "user", "content": "Go."}],
        tools=tools(),
        prices=PRICES,
        checkpointer=store,
        run_id=None if store is None else "tree",
        **options,
    )


def figures(state: RunState) -> dict[tuple[str, ...], tuple[int, int, Decimal | None]]:
    return {
        path: (spent.requests, spent.total.total_tokens, spent.cost)
        for path, spent in spent_by_agent(state).items()
    }


def tree(state: RunState) -> tuple[int, int, Decimal | None]:
    figures = spent(state)
    return (figures.requests, figures.total.total_tokens, figures.cost)


def assert_adds_up(state: RunState) -> None:
    """The figures by agent add up to the tree's, as the limits count it."""
    tree = spent(state)
    by_agent = spent_by_agent(state).values()
    assert sum(figures.requests for figures in by_agent) == tree.requests
    assert sum(figures.total.total_tokens for figures in by_agent) == tree.total.total_tokens
    assert sum(figures.cost or 0 for figures in by_agent) == tree.cost


async def pause(store: RunStore | None = None) -> tuple[ToolRunner, FakeMessagesAPI]:
    fake = FakeMessagesAPI(responder=by_model(scripts()))
    runner = runner_of(fake.async_client(), store)
    async for _ in runner:
        pass
    assert runner.end_reason == "awaiting_approval"
    return runner, fake


# -- the core: the tree's figures by agent -----------------------------------------------------------


async def test_the_figures_by_agent_count_sub_runs_ended_and_in_flight_and_add_up() -> None:
    runner, _ = await pause()
    state = runner.state
    assert [summary.path for summary in state.sub_runs] == [("toolu_w", "writer")]  # ended
    assert state.calls["toolu_b"].sub_run is not None  # in flight, with payer in flight below it
    assert figures(state) == {(): (1, 100, Decimal("0.1")), ("writer",): (1, 400, Decimal("0.4")),
                              ("boss",): (1, 200, Decimal("0.2")), ("boss", "payer"): (1, 300, Decimal("0.3"))}  # fmt: skip
    assert tree(state) == PAUSED
    assert_adds_up(state)
    # the runner's own figures read the same tree
    assert runner.tree_usage.total.total_tokens == 1000
    assert {path: usage.total.total_tokens for path, usage in runner.usage_by_agent().items()} == {
        path: total for path, (_, total, _) in figures(state).items()
    }

    runner.approve("toolu_pay", by="ada")
    await runner.until_done()
    state = runner.state
    assert state.calls == {}  # every sub-run ended: the summaries alone remain
    assert figures(state) == {(): (2, 210, Decimal("0.21")), ("writer",): (1, 400, Decimal("0.4")),
                              ("boss",): (2, 410, Decimal("0.41")), ("boss", "payer"): (2, 610, Decimal("0.61"))}  # fmt: skip
    assert tree(state) == FINISHED
    assert_adds_up(state)


def test_a_run_without_sub_agents_has_its_own_figures_only() -> None:
    state = RunState(params={"model": "m", "max_tokens": 1}, messages=({"role": "user", "content": "Hi."},))
    assert figures(state) == {(): (0, 0, Decimal(0))}
    assert spent(state) == Spent(0, state.total, state.cost)


# -- every store: the summary is the tree's ----------------------------------------------------------


async def test_each_stores_summary_counts_the_whole_tree_paused_and_finished(store: RunStore) -> None:
    runner, _ = await pause(store)
    summary = await store.get_run("tree")
    assert summary is not None
    assert summary.status is RunStatus.AWAITING
    assert (summary.turns, summary.cost) == (PAUSED[0], PAUSED[2])
    assert runner.requests_sent == 1  # the run's own, which is all the summary counted before
    (listed,) = (await store.list_runs()).runs
    assert listed == summary

    await store.approve_call("tree", "toolu_pay", by="ada")  # a decision's save writes the columns too
    decided = await store.get_run("tree")
    assert decided is not None
    assert (decided.status, decided.turns, decided.cost) == (RunStatus.READY, PAUSED[0], PAUSED[2])

    async with FakeMessagesAPI(responder=by_model(_after_the_pause())).async_client() as client:
        resumed = await ToolRunner.resume(
            client, checkpointer=store, run_id="tree", tools=tools(), prices=PRICES
        )
        await resumed.until_done()
    done = await store.get_run("tree")
    assert done is not None
    assert (done.status, done.turns, done.cost) == (RunStatus.FINISHED, FINISHED[0], FINISHED[2])
    loaded = await store.load("tree")
    assert loaded is not None
    assert (spent(loaded.state).requests, spent(loaded.state).cost) == (done.turns, done.cost)


def _after_the_pause() -> dict[str, list[ScriptEntry]]:
    """The replies the run gets once ``pay`` is approved."""
    return {model: entries[1:] for model, entries in scripts().items() if model != "claude-writer"}


# -- the command line and the inbox ------------------------------------------------------------------


def cli(path: Path, *argv: str) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    code = run_cli([*argv, "--store", str(path)], out, err)
    return code, out.getvalue() + err.getvalue()


def test_runs_list_and_show_give_the_trees_figures_and_show_them_by_agent(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"

    async def paused() -> None:
        store = SQLiteCheckpointer(path)
        try:
            await pause(store)
        finally:
            store.close()

    anyio.run(paused)
    code, out = cli(path, "runs", "list", "--json")
    assert code == 0, out
    (listed,) = json.loads(out)["runs"]
    assert (listed["turns"], Decimal(listed["cost"])) == (4, Decimal(1))
    code, out = cli(path, "runs", "list")
    assert code == 0, out
    assert "$1.0000" in out

    code, out = cli(path, "runs", "show", "tree")
    assert code == 0, out
    assert "4 turns, 960 input and 40 output tokens, $1.0000" in out
    lines = out.splitlines()
    start = lines.index("── by agent")
    assert lines[start + 1 : start + 5] == [
        "  the run itself  1 turn, 90 input and 10 output tokens, $0.1000",
        "  writer          1 turn, 390 input and 10 output tokens, $0.4000",
        "  boss            1 turn, 190 input and 10 output tokens, $0.2000",
        "  boss → payer    1 turn, 290 input and 10 output tokens, $0.3000",
    ]

    code, out = cli(path, "runs", "show", "tree", "--json")
    assert code == 0, out
    shown = json.loads(out)
    assert (shown["summary"]["turns"], Decimal(shown["summary"]["cost"])) == (4, Decimal(1))
    rows = [
        (
            row["agents"],
            row["turns"],
            row["usage"]["input_tokens"],
            row["usage"]["output_tokens"],
            Decimal(row["cost"]),
        )
        for row in shown["usage_by_agent"]
    ]
    assert rows == [
        ([], 1, 90, 10, Decimal("0.1")),
        (["writer"], 1, 390, 10, Decimal("0.4")),
        (["boss"], 1, 190, 10, Decimal("0.2")),
        (["boss", "payer"], 1, 290, 10, Decimal("0.3")),
    ]


@pytest.fixture
async def ada() -> AsyncIterator[tuple[Person, MemoryCheckpointer]]:
    store = MemoryCheckpointer()
    async with Person(create_app(store, token=TOKEN)) as person:
        await person.log_in("ada")
        yield person, store


async def test_the_inbox_shows_the_trees_figures_and_by_agent(ada: tuple[Person, MemoryCheckpointer]) -> None:
    person, store = ada
    await pause(store)
    page = await person.get("/run", id="tree")
    assert page.status_code == 200
    assert "4 turns, 960 input and 40 output tokens, $1.0000." in person.last
    section = person.last.split('<section class="by-agent">', 1)[1].split("</section>", 1)[0]
    assert [item.split("</li>")[0] for item in section.split("<li>")[1:]] == [
        '<span class="agent">the run itself</span>: 1 turn, 90 input and 10 output tokens, $0.1000',
        '<span class="agent">writer</span>: 1 turn, 390 input and 10 output tokens, $0.4000',
        '<span class="agent">boss</span>: 1 turn, 190 input and 10 output tokens, $0.2000',
        '<span class="agent">boss → payer</span>: 1 turn, 290 input and 10 output tokens, $0.3000',
    ]
    # the waiting calls' list and the runs' list read the summary
    for listing, status in (("/", {}), ("/runs", {"status": "awaiting"})):
        assert (await person.get(listing, **status)).status_code == 200
        assert "$1.0000" in person.last

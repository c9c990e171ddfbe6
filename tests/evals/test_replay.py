"""``replay_runs`` (issue 32): saved runs replayed with a change, their calls answered from the
recorded journal, divergences marked, run when safe or stubbed; resumable and budgeted; on asyncio
and trio. The recorded tools fail the test if a replay calls them."""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pydantic
import pytest

from toolrunner import MemoryCheckpointer, RunState, SQLiteCheckpointer, ToolError, ToolRunner, Toolset, tool
from toolrunner.evals import DIVERGED, Replay, estimate_cost, replay_runs
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    fault,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

MODEL = "claude-sonnet-4-6"
LEDGER: list[str] = []


@tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    LEDGER.append(f"get_weather {city}")
    return f"sunny in {city}"


@tool
def send_email(to: str, body: str) -> str:
    """Send an email."""
    LEDGER.append(f"send_email {to}")
    return f"sent to {to}"


@tool
def forbidden_weather(city: str) -> str:
    """The weather in a city."""
    pytest.fail(f"a replay ran the recorded tool get_weather({city!r})")


@tool(name="send_email")
def forbidden_email(to: str, body: str) -> str:
    """Send an email."""
    pytest.fail(f"a replay ran the recorded tool send_email({to!r})")


@tool(name="get_weather")
def safe_weather(city: str) -> str:
    """The weather in a city."""
    LEDGER.append(f"safe get_weather {city}")
    return f"rainy in {city}"


FORBIDDEN = [tool(name="get_weather")(forbidden_weather.function), forbidden_email]


async def record(
    store: Any, run_id: str, script: list[Any], question: str = "Weather in Paris? Tell Bob."
) -> RunState:
    """A run made and saved as production would."""
    fake = FakeMessagesAPI(script)
    runner = ToolRunner(
        fake.async_client(),
        model=MODEL,
        max_tokens=64,
        messages=[{"role": "user", "content": question}],
        tools=[get_weather, send_email],
        checkpointer=store,
        run_id=run_id,
    )
    async for _ in runner:
        pass
    return runner.state


async def record_one(
    tools: list[Any], script: list[Any], question: str = "Oslo?", **options: Any
) -> MemoryCheckpointer:
    """A store holding one run, "r1", made with ``tools`` (and ``options``) on ``script``."""
    store = MemoryCheckpointer()
    fake = FakeMessagesAPI(script)
    runner = ToolRunner(
        fake.async_client(), model=MODEL, max_tokens=64, messages=[{"role": "user", "content": question}],
        tools=tools, checkpointer=store, run_id="r1", **options,
    )  # fmt: skip
    async for _ in runner:
        pass
    return store


async def record_cities(path: Path, count: int) -> SQLiteCheckpointer:
    """A SQLite store of ``count`` runs, ``r0``, ``r1``, ...: each asks the weather in ``City{n}``
    (``_echo_record`` answers a replay of any of them)."""
    store = SQLiteCheckpointer(path)
    for number in range(count):
        await record(
            store,
            f"r{number}",
            weather_then_email(city=f"City{number}"),
            f"Weather in City{number}? Tell Bob.",
        )
    return store


def weather_then_email(city: str = "Paris", to: str = "bob") -> list[Any]:
    return [
        tool_reply(tool_call("get_weather", {"city": city})),
        tool_reply(tool_call("send_email", {"to": to, "body": f"sunny in {city}"})),
        text_reply(f"It is sunny in {city}; I told {to}."),
    ]


def results_sent(fake: FakeMessagesAPI) -> list[tuple[str, Any, bool]]:
    """Every tool_result the replay's requests carried: (tool_use_id, content, is_error)."""
    last = fake.requests[-1].body["messages"]
    return [
        (block["tool_use_id"], block.get("content"), bool(block.get("is_error")))
        for message in last
        if message["role"] == "user" and isinstance(message["content"], list)
        for block in message["content"]
        if block["type"] == "tool_result"
    ]


async def test_a_replay_with_the_same_calls_is_answered_from_the_journal_and_runs_no_tool() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    LEDGER.clear()
    fake = FakeMessagesAPI(weather_then_email())
    report = await replay_runs(
        fake.async_client(), Replay(name="v2", params={"system": "Be brief."}, tools=FORBIDDEN), store=store
    )
    (run,) = report.runs
    assert (run.status, run.source_id, run.replay_id) == ("replayed", "r1", "v2.r1")
    assert run.replayed is not None
    assert run.comparison is not None
    assert [call.answered for call in run.replayed.calls] == ["journal", "journal"]
    assert [call.result for call in run.replayed.calls] == ["sunny in Paris", "sent to bob"]
    assert run.comparison.same
    assert not run.comparison.divergences
    assert LEDGER == []  # the forbidden tools fail the test if called; the recorded ones did not run either
    assert all(request.body["system"] == "Be brief." for request in fake.requests)
    assert [content for _, content, _ in results_sent(fake)] == ["sunny in Paris", "sent to bob"]


async def test_a_divergent_call_gets_the_marked_result_and_runs_nothing() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    fake = FakeMessagesAPI(weather_then_email(to="alice"))
    report = await replay_runs(fake.async_client(), Replay(name="v2", tools=FORBIDDEN), store=store)
    (run,) = report.runs
    assert run.replayed is not None
    assert run.comparison is not None
    assert [call.answered for call in run.replayed.calls] == ["journal", "marked"]
    assert results_sent(fake)[-1][1:] == (DIVERGED.format(name="send_email"), True)
    comparison = run.comparison
    assert comparison.first_divergent_turn == 1
    assert [call.input for call in comparison.calls_added] == [{"to": "alice", "body": "sunny in Paris"}]
    assert [call.input for call in comparison.calls_dropped] == [{"to": "bob", "body": "sunny in Paris"}]
    assert comparison.final_answer_changed
    assert [call.name for call in comparison.divergences] == ["send_email"]


async def test_inputs_match_after_the_documented_normalisation() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    fake = FakeMessagesAPI(
        [
            tool_reply(tool_call("get_weather", {"city": "  Paris "})),
            tool_reply(tool_call("send_email", {"body": "sunny in Paris", "to": "bob"})),
            text_reply("Done."),
        ]
    )
    report = await replay_runs(fake.async_client(), Replay(name="v2", tools=FORBIDDEN), store=store)
    assert report.runs[0].replayed is not None
    assert [call.answered for call in report.runs[0].replayed.calls] == ["journal", "journal"]


async def test_a_call_made_more_often_than_recorded_is_a_divergence_past_the_recorded_ones() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    fake = FakeMessagesAPI(
        [
            tool_reply(
                tool_call("get_weather", {"city": "Paris"}), tool_call("get_weather", {"city": "Paris"})
            ),
            text_reply("Sunny."),
        ]
    )
    report = await replay_runs(fake.async_client(), Replay(name="v2", tools=FORBIDDEN), store=store)
    replayed = report.runs[0].replayed
    assert replayed is not None
    assert [call.answered for call in replayed.calls] == ["journal", "marked"]


async def test_divergent_calls_run_a_tool_marked_safe_or_a_stub() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    LEDGER.clear()
    stubbed: list[object] = []

    async def stub(input: object) -> str:
        stubbed.append(input)
        return "queued (stub)"

    fake = FakeMessagesAPI(weather_then_email(city="Rome", to="carol"))
    replay = Replay(
        name="v2",
        tools=[safe_weather, forbidden_email],
        safe_tools=["get_weather"],
        stubs={"send_email": stub},
    )
    report = await replay_runs(fake.async_client(), replay, store=store)
    replayed = report.runs[0].replayed
    assert replayed is not None
    assert [(call.answered, call.result) for call in replayed.calls] == [
        ("safe", "rainy in Rome"),
        ("stub", "queued (stub)"),
    ]
    assert LEDGER == ["safe get_weather Rome"]
    assert stubbed == [{"to": "carol", "body": "sunny in Rome"}]


async def test_a_recorded_error_result_is_given_back_as_an_error() -> None:
    @tool(name="get_weather")
    def failing(city: str) -> str:
        """The weather in a city."""
        raise ToolError("the weather service is down")

    store = await record_one(
        [failing], [tool_reply(tool_call("get_weather", {"city": "Oslo"})), text_reply("Sorry.")], "Oslo?"
    )
    replay_fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"city": "Oslo"})), text_reply("Sorry!")]
    )
    report = await replay_runs(
        replay_fake.async_client(), Replay(name="v2", tools=FORBIDDEN[:1]), store=store
    )
    assert results_sent(replay_fake) == [
        (results_sent(replay_fake)[0][0], "the weather service is down", True)
    ]
    assert report.runs[0].replayed is not None
    assert report.runs[0].replayed.calls[0].is_error


async def test_replaying_from_a_later_turn_keeps_the_record_before_it() -> None:
    store = MemoryCheckpointer()
    recorded = await record(store, "r1", weather_then_email())
    fake = FakeMessagesAPI(
        [tool_reply(tool_call("send_email", {"to": "bob", "body": "sunny in Paris"})), text_reply("Done.")]
    )
    report = await replay_runs(
        fake.async_client(), Replay(name="v2", tools=FORBIDDEN, from_turn=1), store=store
    )
    first = fake.requests[0].body["messages"]
    assert len(first) == 3
    assert first[1]["role"] == "assistant"
    assert first[0]["content"] == recorded.messages[0]["content"]
    replayed = report.runs[0].replayed
    assert replayed is not None
    assert [call.answered for call in replayed.calls] == ["recorded", "journal"]
    assert report.runs[0].comparison is not None
    assert report.runs[0].comparison.first_divergent_turn is None


async def test_replays_are_saved_and_a_second_call_reads_them_back_without_a_request(tmp_path: Path) -> None:
    store = await record_cities(tmp_path / "runs.db", 3)
    into = SQLiteCheckpointer(tmp_path / "evals.db")
    fake = FakeMessagesAPI(responder=_echo_record)
    first = await replay_runs(fake.async_client(), Replay(name="v2", tools=FORBIDDEN), store=store, into=into)
    assert [run.status for run in first.runs] == ["replayed"] * 3
    sent = len(fake.requests)
    second = await replay_runs(
        fake.async_client(), Replay(name="v2", tools=FORBIDDEN), store=store, into=into
    )
    assert len(fake.requests) == sent
    assert second.to_dict()["runs"] == first.to_dict()["runs"]


async def test_the_budget_stops_the_replays_and_a_larger_one_goes_on_where_they_stopped(
    tmp_path: Path,
) -> None:
    store = await record_cities(tmp_path / "runs.db", 4)
    into = SQLiteCheckpointer(tmp_path / "evals.db")
    fake = FakeMessagesAPI(responder=_echo_record)
    replay = Replay(name="v2", tools=FORBIDDEN)
    one_request = (await replay_runs(fake.async_client(), replay, runs=["r0"], store=store)).cost
    assert one_request is not None
    assert one_request > 0
    fake.requests.clear()
    stopped = await replay_runs(
        fake.async_client(),
        replay,
        store=store,
        into=into,
        max_concurrency=1,
        max_cost=one_request * Decimal("1.5"),
    )
    assert stopped.stopped_by_budget
    statuses = [run.status for run in stopped.runs]
    assert "stopped" in statuses
    assert statuses.count("replayed") < 4
    before = [request.body["messages"] for request in fake.requests]
    fake.requests.clear()
    finished = await replay_runs(fake.async_client(), replay, store=store, into=into, max_concurrency=1)
    assert [run.status for run in finished.runs] == ["replayed"] * 4
    again = [request.body["messages"] for request in fake.requests]
    assert not [messages for messages in again if messages in before]  # no request was sent twice
    assert all(run.comparison is not None and run.comparison.same for run in finished.runs)


def _echo_record(request: RecordedRequest) -> ScriptedReply:
    """Answer as the recorded conversation went: a pure function of the request (its question and
    how many replies its history holds)."""
    messages = request.body["messages"]
    city = messages[0]["content"].removeprefix("Weather in ").removesuffix("? Tell Bob.")
    replies = weather_then_email(city=city)
    return replies[sum(1 for message in messages if message["role"] == "assistant")]


async def test_a_failing_replay_is_reported_and_the_others_go_on() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    await record(store, "r2", weather_then_email(city="Rome"), "Weather in Rome? Tell Bob.")

    def answer(request: RecordedRequest) -> Any:
        if "Paris" in request.body["messages"][0]["content"]:
            return fault(400, message="prompt is too long")
        return _echo_record(request)

    fake = FakeMessagesAPI(responder=answer)
    report = await replay_runs(
        fake.async_client(), Replay(name="v2", tools=FORBIDDEN), store=store, runs=["r1", "r2"]
    )
    assert [run.status for run in report.runs] == ["failed", "replayed"]
    assert report.runs[0].error is not None
    assert "prompt is too long" in report.runs[0].error


async def test_runs_that_did_not_end_are_skipped_with_the_reason() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    state = (await record(MemoryCheckpointer(), "r2", weather_then_email())).replace(phase=_awaiting())
    report = await replay_runs(
        FakeMessagesAPI(weather_then_email()).async_client(),
        Replay(name="v2", tools=FORBIDDEN),
        store=store,
        runs=["r1", state],
    )
    assert [run.status for run in report.runs] == ["replayed", "skipped"]
    assert report.runs[1].error is not None
    assert "has not ended" in report.runs[1].error


def _awaiting() -> Any:
    from toolrunner import Phase

    return Phase.AWAITING


async def test_exported_runs_replay_without_a_store() -> None:
    state = await record(MemoryCheckpointer(), "exported", weather_then_email())
    loaded = RunState.from_dict(state.to_dict())
    fake = FakeMessagesAPI(weather_then_email())
    report = await replay_runs(fake.async_client(), Replay(name="v2", tools=FORBIDDEN), runs=[loaded])
    assert [run.status for run in report.runs] == ["replayed"]


async def test_the_estimate_prices_the_recorded_tokens_at_the_replays_model() -> None:
    state = await record(MemoryCheckpointer(), "r1", weather_then_email())
    same = estimate_cost([state], Replay(name="v2"))
    assert same == state.cost
    other = estimate_cost([state], Replay(name="v2", params={"model": "claude-opus-4-6"}))
    assert other is not None
    assert same is not None
    assert other > same
    assert estimate_cost([state], Replay(name="v2", params={"model": "no-such-model"})) is None


async def test_bad_arguments_get_clear_errors_and_nothing_runs() -> None:
    from toolrunner import ParamsError

    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    fake = FakeMessagesAPI()
    client = fake.async_client()
    with pytest.raises(ParamsError, match="Replay\\(name\\)"):
        Replay(name="")
    with pytest.raises(ParamsError, match="from_turn"):
        Replay(name="v2", from_turn=-1)
    with pytest.raises(ParamsError, match="messages"):
        Replay(name="v2", params={"messages": []})
    with pytest.raises(ParamsError, match="no run 'nope'"):
        await replay_runs(client, Replay(name="v2", tools=FORBIDDEN), store=store, runs=["nope"])
    with pytest.raises(ParamsError, match="store="):
        await replay_runs(client, Replay(name="v2", tools=FORBIDDEN))
    with pytest.raises(ParamsError, match="more than once"):
        await replay_runs(client, Replay(name="v2", tools=FORBIDDEN), store=store, runs=["r1", "r1"])
    report = await replay_runs(
        client, Replay(name="v2"), store=store
    )  # the record's tools are code: names only
    assert report.runs[0].status == "failed"
    assert "pass them to the replay" in (report.runs[0].error or "")
    mistakes: list[tuple[dict[str, Any], str]] = [
        ({"safe_tools": ["nope"]}, "safe_tools names \\['nope'\\]"),
        ({"stubs": {"nope": str}}, "stubs names \\['nope'\\]"),
        ({"safe_tools": ["send_email"], "stubs": {"send_email": str}}, "both marked safe and given a stub"),
    ]
    for mistake, message in mistakes:  # refused before any run, not once a run
        with pytest.raises(ParamsError, match=message):
            await replay_runs(client, Replay(name="v2", tools=FORBIDDEN, **mistake), store=store)
    with pytest.raises(ParamsError, match="is a toolset"):
        await replay_runs(client, Replay(name="v2", tools=[Toolset([get_weather])]), store=store)
    concurrencies: list[Any] = [0, 1.5, True]
    for concurrency in concurrencies:
        with pytest.raises(ParamsError, match="max_concurrency"):
            await replay_runs(
                client, Replay(name="v2", tools=FORBIDDEN), store=store, max_concurrency=concurrency
            )
    for interval in (0, -1.0, float("nan")):
        with pytest.raises(ParamsError, match="poll_interval"):
            await replay_runs(client, Replay(name="v2", tools=FORBIDDEN), store=store, poll_interval=interval)
    with pytest.raises(ParamsError, match="needs a price for model 'my-model'"):
        await replay_runs(
            client,
            Replay(name="v2", tools=FORBIDDEN, params={"model": "my-model"}),
            store=store,
            max_cost="1",
        )
    saved = await store.load("r1")
    assert saved is not None
    with pytest.raises(ParamsError, match="must have its run_id"):
        await replay_runs(client, Replay(name="v2", tools=FORBIDDEN), runs=[saved.state.replace(run_id="")])
    assert fake.requests == []


class Forecast(pydantic.BaseModel):
    city: str
    sunny: bool


async def test_typed_answers_are_compared_as_data() -> None:
    store = await record_one(
        [], [text_reply('{"city": "Paris", "sunny": true}')], "Paris?", output_format=Forecast
    )
    replay_fake = FakeMessagesAPI(
        [text_reply('{"sunny": true,  "city": "Paris"}'), text_reply('{"city": "Paris", "sunny": false}')]
    )
    same = await replay_runs(
        replay_fake.async_client(), Replay(name="v2", tools=[], output_format=Forecast), store=store
    )
    changed = await replay_runs(
        replay_fake.async_client(), Replay(name="v3", tools=[], output_format=Forecast), store=store
    )
    assert same.runs[0].replayed is not None
    assert same.runs[0].replayed.output == {"city": "Paris", "sunny": True}
    assert same.runs[0].comparison is not None
    assert not same.runs[0].comparison.final_answer_changed  # other words, the same data
    assert changed.runs[0].comparison is not None
    assert changed.runs[0].comparison.final_answer_changed


async def test_the_batch_path_sends_one_batch_per_turn_for_many_replays_at_batch_rates(
    tmp_path: Path,
) -> None:
    store = await record_cities(tmp_path / "runs.db", 5)
    listed = await replay_runs(
        FakeMessagesAPI(responder=_echo_record).async_client(),
        Replay(name="listed", tools=FORBIDDEN),
        store=store,
    )
    fake = FakeMessagesAPI(responder=_echo_record, batch_polls=2)
    report = await replay_runs(
        fake.async_client(),
        Replay(name="batched", tools=FORBIDDEN),
        store=store,
        batch=True,
        poll_interval=0.001,
    )
    assert [run.status for run in report.runs] == ["replayed"] * 5
    items = [request for request in fake.requests if request.custom_id is not None]
    plain = [
        request
        for request in fake.requests
        if request.url.endswith("/v1/messages") and request.batch_id is None
    ]
    assert plain == []  # every request went in a batch
    batches = Counter(request.batch_id for request in items)
    assert sorted(batches.values()) == [5, 5, 5]  # three turns, each one batch of every replay's request
    assert listed.cost is not None
    assert report.cost == listed.cost / 2  # priced at batch rates
    assert all(run.comparison is not None and run.comparison.same for run in report.runs)


def test_two_scorers_of_one_name_are_refused() -> None:
    from toolrunner import ParamsError

    with pytest.raises(ParamsError, match="two scorers named \\['<lambda>'\\]"):
        Replay(name="v2", scorers=[lambda recorded, replayed: True, lambda recorded, replayed: 0.5])


async def test_a_call_a_replays_hook_denies_is_marked_hook_and_is_no_divergence() -> None:
    from toolrunner import Deny, Hooks, ToolCallInfo

    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())

    def no_email(info: ToolCallInfo) -> Deny | None:
        return Deny("Emails are off during the evaluation.") if info.name == "send_email" else None

    fake = FakeMessagesAPI(weather_then_email())
    report = await replay_runs(
        fake.async_client(),
        Replay(name="v2", tools=FORBIDDEN, hooks=Hooks(before_tool_call=no_email)),
        store=store,
    )
    (run,) = report.runs
    assert run.replayed is not None
    assert run.comparison is not None
    assert [(call.answered, call.result) for call in run.replayed.calls] == [
        ("journal", "sunny in Paris"),
        ("hook", "Emails are off during the evaluation."),
    ]
    assert run.comparison.divergences == ()


async def test_content_block_results_come_back_as_they_were_recorded() -> None:
    @tool(name="get_weather")
    def blocks(city: str) -> list[dict[str, str]]:
        """The weather in a city."""
        return [{"type": "text", "text": f"sunny in {city}"}, {"type": "text", "text": " (20 C)"}]

    store = await record_one(
        [blocks], [tool_reply(tool_call("get_weather", {"city": "Oslo"})), text_reply("Sunny.")], "Oslo?"
    )
    replay_fake = FakeMessagesAPI(
        [tool_reply(tool_call("get_weather", {"city": "Oslo"})), text_reply("Sunny.")]
    )
    report = await replay_runs(
        replay_fake.async_client(), Replay(name="v2", tools=FORBIDDEN[:1]), store=store
    )
    replayed = report.runs[0].replayed
    assert replayed is not None
    assert [call.answered for call in replayed.calls] == ["journal"]
    recorded = await store.load("r1")
    assert recorded is not None
    assert results_sent(replay_fake)[0][1] == recorded.state.messages[2]["content"][0]["content"]


# -- what an outside audit found ---------------------------------------------------------------------


async def test_a_normalize_that_raises_fails_its_run_and_the_others_go_on() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    await record(store, "r2", [text_reply("No tools needed.")], "Hello?")

    def picky(name: str, value: object) -> object:
        raise KeyError("city")

    fake = FakeMessagesAPI(
        responder=lambda request: text_reply("Hi.") if "Hello" in str(request.body) else fault(500)
    )
    report = await replay_runs(
        fake.async_client(),
        Replay(name="v2", tools=FORBIDDEN, normalize=picky),
        store=store,
        runs=["r1", "r2"],
    )
    assert [run.status for run in report.runs] == ["failed", "replayed"]
    assert "KeyError" in (report.runs[0].error or "") or "city" in (report.runs[0].error or "")


async def test_a_typed_record_needs_the_output_type_in_the_replay() -> None:
    from toolrunner import ParamsError

    store = await record_one(
        [], [text_reply('{"city": "Paris", "sunny": true}')], "Paris?", output_format=Forecast
    )
    with pytest.raises(ParamsError, match="typed final answer"):
        await replay_runs(FakeMessagesAPI().async_client(), Replay(name="v2", tools=[]), store=store)


async def test_a_hooks_runwith_is_matched_with_the_input_the_call_runs_with() -> None:
    from toolrunner import Hooks, RunWith, ToolCallInfo

    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())

    def to_rome(
        info: ToolCallInfo,
    ) -> RunWith | None:  # the changed agent looks Rome up, whatever the model asked
        return RunWith({"city": "Rome"}) if info.name == "get_weather" else None

    def to_paris(info: ToolCallInfo) -> RunWith | None:
        return RunWith({"city": "Paris"}) if info.name == "get_weather" else None

    fake = FakeMessagesAPI(weather_then_email())
    rome = await replay_runs(
        fake.async_client(),
        Replay(name="rome", tools=FORBIDDEN, hooks=Hooks(before_tool_call=to_rome)),
        store=store,
    )
    replayed = rome.runs[0].replayed
    assert replayed is not None
    assert rome.runs[0].comparison is not None
    assert [(call.answered, call.is_error) for call in replayed.calls] == [
        ("marked", True),
        ("journal", False),
    ]
    assert [call.name for call in rome.runs[0].comparison.divergences] == ["get_weather"]
    fake = FakeMessagesAPI(weather_then_email(city="Oslo"))
    paris = await replay_runs(
        fake.async_client(),
        Replay(name="paris", tools=FORBIDDEN, hooks=Hooks(before_tool_call=to_paris)),
        store=store,
    )
    replayed = paris.runs[0].replayed
    assert replayed is not None
    assert (replayed.calls[0].answered, replayed.calls[0].result) == ("hook", "sunny in Paris")


async def test_a_call_to_a_tool_the_replay_does_not_offer_is_marked() -> None:
    store = MemoryCheckpointer()
    await record(store, "r1", weather_then_email())
    fake = FakeMessagesAPI(weather_then_email())
    report = await replay_runs(fake.async_client(), Replay(name="v2", tools=FORBIDDEN[1:]), store=store)
    replayed = report.runs[0].replayed
    assert replayed is not None
    assert [call.answered for call in replayed.calls] == ["marked", "journal"]


async def test_a_replay_the_budget_stopped_keeps_its_cost_when_read_back(tmp_path: Path) -> None:
    store = await record_cities(tmp_path / "runs.db", 2)
    into = SQLiteCheckpointer(tmp_path / "evals.db")
    fake = FakeMessagesAPI(responder=_echo_record)
    replay = Replay(name="v2", tools=FORBIDDEN)
    first = await replay_runs(
        fake.async_client(), replay, store=store, into=into, max_concurrency=1, max_cost="0.00001"
    )
    assert first.stopped_by_budget
    sent = len(fake.requests)
    again = await replay_runs(
        fake.async_client(), replay, store=store, into=into, max_concurrency=1, max_cost="0.00001"
    )
    assert len(fake.requests) == sent
    assert again.cost == first.cost
    assert again.cost is not None
    assert again.cost > 0


async def test_a_failed_record_is_skipped_saying_it_failed() -> None:
    store = MemoryCheckpointer()
    state = (await record(store, "r1", weather_then_email())).replace(
        phase=_ready(), failure={"type": "APIStatusError", "message": "overloaded"}
    )
    report = await replay_runs(
        FakeMessagesAPI().async_client(), Replay(name="v2", tools=FORBIDDEN), runs=[state]
    )
    assert report.runs[0].status == "skipped"
    assert "it failed (APIStatusError: overloaded)" in (report.runs[0].error or "")


def _ready() -> Any:
    from toolrunner import Phase

    return Phase.READY


async def test_runs_exported_with_runs_show_json_are_read_back_and_replayed(tmp_path: Path) -> None:
    import json

    from toolrunner import ParamsError
    from toolrunner.evals import read_runs

    first = await record(MemoryCheckpointer(), "e1", weather_then_email())
    second = await record(
        MemoryCheckpointer(), "e2", weather_then_email(city="Rome"), "Weather in Rome? Tell Bob."
    )
    lines = tmp_path / "runs.jsonl"
    lines.write_text(
        "\n".join(json.dumps({"summary": {}, "state": state.to_dict()}) for state in (first, second))
    )
    states = read_runs(lines)
    assert [state.run_id for state in states] == ["e1", "e2"]
    report = await replay_runs(
        FakeMessagesAPI(responder=_echo_record).async_client(),
        Replay(name="v2", tools=FORBIDDEN),
        runs=states,
    )
    assert [run.status for run in report.runs] == ["replayed", "replayed"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(json.dumps(first.to_dict()) + "\nnot json\n")
    with pytest.raises(ParamsError, match="line 2 is not JSON"):
        read_runs(broken)

"""The batch path of replays: ``BatchSender`` sends the requests of many runners as Message Batches
(collected as the runners finish a step), ``batch_prices`` prices them at batch rates, and a
request whose batch result is not a message fails its run with ``BatchRequestError``."""

from __future__ import annotations

import itertools
import pickle
import re
from collections.abc import Awaitable, Callable
from decimal import Decimal
from typing import Any

import anthropic
import anyio
import anyio.lowlevel
import httpx2
import pytest
from hypothesis import given, strategies as st

from tests.support.helpers import MODEL
from toolrunner import DEFAULT_PRICES, ParamsError, Price, ToolRunner, ToolRunnerError, find_price, tool
from toolrunner.evals import BatchRequestError, BatchSender, batch_prices
from toolrunner.evals._batch import flush_due
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptEntry,
    fault,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

TINY = 0.001  # seconds between polls: the fake's batches end at a count of retrieves, not in time
LONG = 3600.0  # a window that never ends within a test: only "every member waits" sends a batch
FIRST = {"input_tokens": 1000, "output_tokens": 100}
SECOND = {"input_tokens": 2000, "output_tokens": 50}


@tool
async def look(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def two_turns(request: RecordedRequest) -> ScriptEntry:
    """Each run asks once with a question (its text), gets a ``look`` call, then the final answer."""
    content = request.messages[-1]["content"]
    if isinstance(content, str):
        return tool_reply(tool_call("look", {"q": content}), usage=FIRST)
    return text_reply("done", usage=SECOND)


def runner(sender: BatchSender, question: str, *tools: Any, **options: Any) -> ToolRunner[Any]:
    settings: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 64,
        "messages": [{"role": "user", "content": question}],
        "tools": list(tools) or [look],
        "prices": batch_prices(),
    }
    return ToolRunner(sender.client, **(settings | options))


async def replay(sender: BatchSender, run: ToolRunner[Any]) -> None:
    async with sender.member():
        await run.until_done()


async def until(condition: Callable[[], bool]) -> None:
    """Let the other tasks run until ``condition`` holds (no clock: a bounded number of rounds)."""
    for _ in range(100_000):
        if condition():
            return
        await anyio.lowlevel.checkpoint()
    raise AssertionError("the condition never held")


def items(fake: FakeMessagesAPI) -> list[RecordedRequest]:
    """The Messages requests the fake received (the requests of batches, and any sent plainly)."""
    return [r for r in fake.requests if r.method == "POST" and r.url.endswith("/v1/messages")]


def batch_of(fake: FakeMessagesAPI) -> dict[str, str]:
    """Each run's question (its first user text) of every batch item, by custom_id: its batch."""
    return {r.custom_id or "": r.batch_id or "" for r in items(fake)}


def cancels(fake: FakeMessagesAPI) -> list[str]:
    return [r.url.split("/")[-2] for r in fake.requests if r.method == "POST" and r.url.endswith("/cancel")]


# -- many replays, one batch per step ---------------------------------------------------------------


async def test_three_replays_send_one_batch_per_turn_priced_at_batch_rates() -> None:
    fake = FakeMessagesAPI(responder=two_turns, batch_polls=2)
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY, window=LONG) as sender:
        runs = [runner(sender, question) for question in ("Paris", "Rome", "Oslo")]
        async with anyio.create_task_group() as group:
            for run in runs:
                group.start_soon(replay, sender, run)

    assert len(sender.batches) == 2  # one per turn: the three first requests, then the three second
    sent = items(fake)
    assert all(r.batch_id is not None for r in sent)  # no plain POST /v1/messages
    for batch_id in sender.batches:
        questions = [r.messages[0]["content"] for r in sent if r.batch_id == batch_id]
        assert sorted(questions) == ["Oslo", "Paris", "Rome"]  # one request of each replay
    assert [len(r.messages) for r in sent] == [1, 1, 1, 3, 3, 3]
    assert len({r.custom_id for r in sent}) == 6

    list_price = find_price(DEFAULT_PRICES, MODEL)
    assert list_price is not None
    for run in runs:
        assert run.finished
        assert run.last_message is not None
        assert run.last_message.content[0].type == "text"
        at_list = sum((list_price.cost(request.usage) for request in run.usage.requests), Decimal(0))
        assert at_list == Decimal("0.01125")  # (1000 + 2000) * $3 + (100 + 50) * $15, per million
        assert run.usage.cost == at_list / 2


async def test_replays_started_together_share_the_first_batch_without_a_barrier() -> None:
    fake = FakeMessagesAPI(responder=lambda request: text_reply("ok"), batch_polls=1)
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "Hi"}],
    }

    async def ask(sender: BatchSender) -> None:
        async with sender.member():
            await sender.client.messages.create(**params)

    async with (
        fake.async_client() as client,
        BatchSender(client, poll_interval=TINY, window=LONG) as sender,
        anyio.create_task_group() as group,
    ):
        for _ in range(5):
            group.start_soon(ask, sender)
    assert len(sender.batches) == 1
    assert len(items(fake)) == 5


async def test_a_member_busy_in_a_slow_tool_misses_the_batch_the_window_sends() -> None:
    released = anyio.Event()
    window_batch: list[str] = []

    @tool(name="slow")
    async def slow(q: str) -> str:
        """Take long."""
        await released.wait()
        return "slow done"

    def respond(request: RecordedRequest) -> ScriptEntry:
        content = request.messages[-1]["content"]
        if isinstance(content, str):
            name = "slow" if content == "Paris" else "look"
            return tool_reply(tool_call(name, {"q": content}))
        if not released.is_set():  # the second request of Rome or Oslo, in a batch while Paris is busy
            window_batch.append(request.batch_id or "")
            released.set()
        return text_reply("done")

    fake = FakeMessagesAPI(responder=respond, batch_polls=1)
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY, window=0.01) as sender:
        runs = {question: runner(sender, question, look, slow) for question in ("Paris", "Rome", "Oslo")}
        async with anyio.create_task_group() as group:
            for run in runs.values():
                group.start_soon(replay, sender, run)

    assert all(run.finished for run in runs.values())
    second = {r.messages[0]["content"]: r.batch_id or "" for r in items(fake) if len(r.messages) == 3}
    # Paris's slow tool returned only once a batch held a second request: that batch went out while
    # Paris was busy (not waiting), which only the window does; Paris's own came in a later batch.
    assert window_batch[0] in (second["Rome"], second["Oslo"])
    assert second["Paris"] not in (second["Rome"], second["Oslo"])
    assert sender.batches.index(second["Paris"]) > sender.batches.index(window_batch[0])


async def test_a_member_that_leaves_lets_the_others_batch_go() -> None:
    fake = FakeMessagesAPI(responder=lambda request: text_reply("ok"), batch_polls=1)
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    leave = anyio.Event()
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY, window=LONG) as sender:

        async def idle() -> None:
            async with sender.member():
                await leave.wait()

        async def ask() -> None:
            async with sender.member():
                await sender.client.messages.create(**params)

        async with anyio.create_task_group() as group:
            group.start_soon(idle)
            group.start_soon(ask)
            for _ in range(50):  # the queue holds while the idle member does not wait
                await anyio.lowlevel.checkpoint()
            assert sender.batches == []
            leave.set()
    assert len(sender.batches) == 1


# -- results that are not messages, and failures of the batch itself -----------------------------------


async def test_an_errored_result_fails_its_run_with_batch_request_error_and_not_the_others() -> None:
    def respond(request: RecordedRequest) -> ScriptEntry:
        if request.messages[0]["content"] == "Rome":
            return fault(529)
        return two_turns(request)

    fake = FakeMessagesAPI(responder=respond, batch_polls=1)
    outcomes: dict[str, BaseException | None] = {}

    async def attempt(sender: BatchSender, question: str) -> None:
        try:
            await replay(sender, runner(sender, question))
            outcomes[question] = None
        except Exception as error:
            outcomes[question] = error

    async with (
        fake.async_client() as client,
        BatchSender(client, poll_interval=TINY) as sender,
        anyio.create_task_group() as group,
    ):
        for question in ("Paris", "Rome"):
            group.start_soon(attempt, sender, question)

    assert outcomes["Paris"] is None
    error = outcomes["Rome"]
    assert isinstance(error, BatchRequestError)
    assert (error.result_type, error.error_type, error.error_message) == (
        "errored",
        "overloaded_error",
        "Overloaded",
    )
    assert error.batch_id == sender.batches[0]
    assert error.custom_id in batch_of(fake)
    assert "errored (overloaded_error: Overloaded)" in str(error)
    assert "replay the run again" in str(error)


async def test_an_invalid_request_errored_says_to_fix_the_params() -> None:
    fake = FakeMessagesAPI(responder=lambda request: text_reply("never"), batch_polls=1)
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY) as sender:
        with pytest.raises(BatchRequestError, match="The service refused its params") as caught:
            await sender.client.messages.create(
                model=MODEL, max_tokens=8, messages=[{"role": "assistant", "content": "Hi"}]
            )
    assert caught.value.error_type == "invalid_request_error"


async def test_a_canceled_batch_fails_its_runs_with_batch_request_error() -> None:
    fake = FakeMessagesAPI(responder=two_turns)  # batches end when canceled, or when the test says
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY) as sender:
        run = runner(sender, "Paris")
        errors: list[BatchRequestError] = []
        async with anyio.create_task_group() as group:

            async def cancel_the_batch() -> None:
                await until(lambda: bool(sender.batches))
                await client.messages.batches.cancel(sender.batches[0])  # as from the Console

            group.start_soon(cancel_the_batch)
            with pytest.raises(BatchRequestError) as caught:
                await replay(sender, run)
            errors.append(caught.value)
    (error,) = errors
    assert error.result_type == "canceled"
    assert error.error_type is None
    assert "was canceled" in str(error)
    assert not run.finished


def failing_client(
    fake: FakeMessagesAPI, fails: Callable[[httpx2.Request], bool]
) -> anthropic.AsyncAnthropic:
    """A client on ``fake`` whose requests that ``fails`` picks get a 529 (overloaded) instead."""
    inner = fake.async_transport()

    class Failing(httpx2.AsyncBaseTransport):
        async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
            if fails(request):
                body = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
                return httpx2.Response(529, json=body)
            return await inner.handle_async_request(request)

    return anthropic.AsyncAnthropic(
        api_key="test",
        base_url="https://api.anthropic.com",
        max_retries=0,
        http_client=httpx2.AsyncClient(transport=Failing()),
    )


async def run_two(sender: BatchSender) -> list[BaseException]:
    """Two runners at once through ``sender``; the errors they raised."""
    errors: list[BaseException] = []

    async def attempt(question: str) -> None:
        try:
            await replay(sender, runner(sender, question))
        except Exception as error:
            errors.append(error)

    async with anyio.create_task_group() as group:
        group.start_soon(attempt, "Paris")
        group.start_soon(attempt, "Rome")
    return errors


async def test_a_failed_create_goes_to_every_waiter_of_the_batch() -> None:
    fake = FakeMessagesAPI(responder=two_turns, batch_polls=1)
    client = failing_client(
        fake, lambda request: request.method == "POST" and request.url.path.endswith("batches")
    )
    async with client, BatchSender(client, poll_interval=TINY) as sender:
        errors = await run_two(sender)
    assert len(errors) == 2
    assert all(isinstance(error, anthropic.OverloadedError) for error in errors)
    assert errors[0] is errors[1]  # the exception raised, as it was
    assert sender.batches == []


async def test_a_failed_retrieve_goes_to_every_waiter_and_the_batch_is_canceled() -> None:
    fake = FakeMessagesAPI(responder=two_turns)
    client = failing_client(fake, lambda request: request.method == "GET")
    async with client, BatchSender(client, poll_interval=TINY) as sender:
        errors = await run_two(sender)
    assert [type(error) for error in errors] == [anthropic.OverloadedError] * 2
    assert cancels(fake) == sender.batches  # nobody reads it any more: canceled, best effort


# -- what the batch path refuses ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("options", "what"),
    [
        ({"stream": True}, "client.messages.stream"),
        ({"betas": ["context-1m-2025-08-07"]}, "client.beta.messages.create"),
        ({"context_management": {"edits": []}}, "client.beta.messages.create"),
    ],
)
async def test_streaming_and_beta_runners_are_refused_with_what_to_do(
    options: dict[str, Any], what: str
) -> None:
    fake = FakeMessagesAPI()
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY) as sender:
        run = runner(sender, "Paris", **options)
        with pytest.raises(ParamsError) as caught:
            await replay(sender, run)
    message = str(caught.value)
    assert what in message
    assert "takes non-streaming requests to client.messages.create without betas" in message
    assert "Replay with stream=False and without betas or beta-only params" in message
    assert fake.requests == []


async def test_the_client_refuses_every_way_around_the_batch_and_delegates_the_rest() -> None:
    fake = FakeMessagesAPI()
    params: dict[str, Any] = {
        "model": MODEL,
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "Hi"}],
    }
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY) as sender:
        assert isinstance(sender.client, anthropic.AsyncAnthropic)
        batch_client: Any = sender.client  # called in ways its type does not allow
        refused: list[Callable[[], object]] = [
            lambda: batch_client.messages.create(**params, stream=True),
            lambda: batch_client.messages.create(**params, betas=["x"]),
            lambda: batch_client.messages.stream(**params),
            lambda: batch_client.messages.parse(**params),
            lambda: batch_client.messages.with_raw_response,
            lambda: batch_client.beta.messages.create(**params),
            lambda: batch_client.beta.messages.stream(**params),
            lambda: batch_client.with_options(timeout=5),
            lambda: batch_client.with_raw_response.messages,
        ]
        for call in refused:
            with pytest.raises(
                ParamsError,
                match=re.escape("sender.client sends each request as one request of a Message Batch,"),
            ):
                call()
        with pytest.raises(ParamsError, match="extra_headers"):
            batch_client.messages.create(**params, extra_headers={"x": "y"})
        assert batch_client.messages.count_tokens == client.messages.count_tokens
        assert batch_client.beta.messages.count_tokens == client.beta.messages.count_tokens
        assert batch_client.beta.models.list == client.beta.models.list
        assert (await batch_client.messages.batches.list()).data == []
        assert client.messages.create != batch_client.messages.create  # the original is untouched
    assert [r.url.rsplit("/", 1)[-1] for r in fake.requests] == ["batches"]  # only the list


async def test_extra_body_joins_the_params_and_timeout_is_left_out() -> None:
    fake = FakeMessagesAPI([text_reply("ok")], batch_polls=1)
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY) as sender:
        message = await sender.client.messages.create(
            model=MODEL,
            max_tokens=8,
            messages=[{"role": "user", "content": "Hi"}],
            extra_body={"metadata": {"user_id": "u1"}},
            timeout=5,
            stream=False,
        )
    assert message.content[0].type == "text"
    (item,) = items(fake)
    assert item.body == {
        "model": MODEL,
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "Hi"}],
        "metadata": {"user_id": "u1"},
    }


async def test_the_client_and_members_are_used_inside_the_sender_only() -> None:
    fake = FakeMessagesAPI()
    async with fake.async_client() as client:
        sender = BatchSender(client)
        with pytest.raises(
            ToolRunnerError, match=r"within `async with BatchSender\(client\) as sender:`.*not entered yet"
        ):
            _ = sender.client
        async with sender:
            batch_client = sender.client
        with pytest.raises(ToolRunnerError, match="closed"):
            _ = sender.client
        with pytest.raises(ToolRunnerError, match="closed"):
            _ = batch_client.messages.create(model=MODEL, max_tokens=8, messages=[])
        with pytest.raises(ToolRunnerError, match="closed"):
            async with sender.member():
                pass
        with pytest.raises(ToolRunnerError, match="entered once"):
            async with sender:
                pass


@pytest.mark.parametrize(
    "options",
    [{"poll_interval": -1}, {"window": float("nan")}, {"window": True}, {"poll_interval": "30"}],
)
async def test_bad_options_are_refused(options: dict[str, Any]) -> None:
    async with FakeMessagesAPI().async_client() as client:
        with pytest.raises(ParamsError, match="must be a number of seconds from 0"):
            BatchSender(client, **options)


def test_a_sync_client_is_refused() -> None:
    with FakeMessagesAPI().client() as client, pytest.raises(ParamsError, match="AsyncAnthropic"):
        BatchSender(client)  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]


# -- cancellation -------------------------------------------------------------------------------------------


async def test_a_cancelled_replay_in_flight_does_not_break_the_others() -> None:
    fake = FakeMessagesAPI(responder=two_turns)
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY, window=LONG) as sender:
        runs = {question: runner(sender, question) for question in ("Paris", "Rome", "Oslo")}
        scopes = {question: anyio.CancelScope() for question in runs}

        async def cancellable(question: str) -> None:
            with scopes[question]:
                await replay(sender, runs[question])

        async with anyio.create_task_group() as group:
            for question in runs:
                group.start_soon(cancellable, question)
            await until(lambda: len(sender.batches) == 1)
            scopes["Rome"].cancel()
            await until(lambda: len(fake.requests) > 4)  # the batch is polled still
            fake.end_batches()
            await until(lambda: len(sender.batches) == 2)
            fake.end_batches()
    assert (runs["Paris"].finished, runs["Rome"].finished, runs["Oslo"].finished) == (True, False, True)
    second = [r.messages[0]["content"] for r in items(fake) if r.batch_id == sender.batches[1]]
    assert sorted(second) == ["Oslo", "Paris"]
    assert cancels(fake) == []


async def test_a_cancelled_replay_whose_request_is_queued_never_sends_it() -> None:
    fake = FakeMessagesAPI(responder=lambda request: text_reply("ok"), batch_polls=1)
    busy = anyio.Event()
    params: dict[str, Any] = {"model": MODEL, "max_tokens": 8}
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY, window=LONG) as sender:

        async def ask(text: str, before: Callable[[], Awaitable[None]] | None = None) -> None:
            async with sender.member():
                if before is not None:
                    await before()
                await sender.client.messages.create(**params, messages=[{"role": "user", "content": text}])

        with anyio.CancelScope() as cancelled:
            async with anyio.create_task_group() as group:
                group.start_soon(ask, "busy", busy.wait)
                group.start_soon(ask, "queued")
                for _ in range(50):  # the queued request waits for the busy member
                    await anyio.lowlevel.checkpoint()
                assert sender.batches == []
                cancelled.cancel()
        async with anyio.create_task_group() as group:
            group.start_soon(ask, "later")
    assert [r.messages[0]["content"] for r in items(fake)] == ["later"]


async def test_a_batch_whose_waiters_all_left_is_canceled_on_the_service() -> None:
    fake = FakeMessagesAPI(responder=two_turns)
    async with fake.async_client() as client, BatchSender(client, poll_interval=TINY) as sender:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(replay, sender, runner(sender, "Paris"))
                await until(lambda: len(sender.batches) == 1)
                scope.cancel()
        await until(lambda: bool(cancels(fake)))
    assert cancels(fake) == sender.batches


async def test_cancelling_the_sender_cancels_its_batches_in_flight_and_its_waiters() -> None:
    fake = FakeMessagesAPI(responder=two_turns)
    async with fake.async_client() as client:
        sender = BatchSender(client, poll_interval=TINY, window=LONG)
        runs: list[ToolRunner[Any]] = []
        with anyio.CancelScope() as scope:
            async with sender:
                runs += [runner(sender, question) for question in ("Paris", "Rome")]
                async with anyio.create_task_group() as group:
                    for run in runs:
                        group.start_soon(replay, sender, run)
                    await until(lambda: len(sender.batches) == 1)
                    scope.cancel()
        assert scope.cancelled_caught
        ended = await client.messages.batches.retrieve(sender.batches[0])
    assert cancels(fake) == sender.batches
    assert ended.request_counts.canceled == 2
    assert not any(run.finished for run in runs)


# -- when to send, and prices -------------------------------------------------------------------------------


def expected_flush(queued: int, member_states: tuple[bool, ...], window_over: bool) -> bool:
    """The rule as the issue words it, over each member's state (waiting or not)."""
    return queued > 0 and (all(member_states) or window_over)


def test_flush_due_follows_the_rule_over_every_small_case() -> None:
    checked = 0
    for queued, members, window_over in itertools.product(range(4), range(5), (False, True)):
        for states in itertools.product((False, True), repeat=members):
            waiting = sum(states)
            assert flush_due(
                queued=queued, members=members, waiting=waiting, window_over=window_over
            ) == expected_flush(queued, states, window_over), (queued, states, window_over)
            checked += 1
    assert checked == 4 * 2 * (1 + 2 + 4 + 8 + 16)


@given(
    queued=st.integers(0, 10_000),
    states=st.lists(st.booleans(), max_size=200),
    window_over=st.booleans(),
)
def test_flush_due_is_the_rule_for_any_counts(queued: int, states: list[bool], window_over: bool) -> None:
    assert flush_due(
        queued=queued, members=len(states), waiting=sum(states), window_over=window_over
    ) == expected_flush(queued, tuple(states), window_over)


@pytest.mark.parametrize(("queued", "members", "waiting"), [(-1, 0, 0), (0, -1, 0), (1, 1, 2), (1, 1, -1)])
def test_flush_due_refuses_impossible_counts(queued: int, members: int, waiting: int) -> None:
    with pytest.raises(ValueError, match="waiting <= members"):
        flush_due(queued=queued, members=members, waiting=waiting, window_over=False)


def test_batch_prices_halve_every_amount_long_prompts_too() -> None:
    prices = batch_prices()
    assert set(prices) == set(DEFAULT_PRICES)
    sonnet = prices["claude-sonnet-4-5"]
    assert (sonnet.input, sonnet.output, sonnet.cache_read, sonnet.cache_write, sonnet.cache_write_1h) == (
        Decimal("1.5"),
        Decimal("7.5"),
        Decimal("0.15"),
        Decimal("1.875"),
        Decimal("3"),
    )
    haiku, listed = prices["claude-haiku-5-5"], DEFAULT_PRICES["claude-haiku-5-5"]
    assert haiku.long_prompt is not None
    assert listed.long_prompt is not None
    assert haiku.long_prompt.input == listed.long_prompt.input / 2
    assert haiku.long_prompt_threshold == listed.long_prompt_threshold
    usage = anthropic.types.Usage(
        input_tokens=150_000, output_tokens=1000, cache_read_input_tokens=10, cache_creation_input_tokens=20
    )
    for model, price in DEFAULT_PRICES.items():
        assert prices[model].cost(usage) * 2 == price.cost(usage), model
    mine = {"my-model": Price("1", "2", "0.1", "1.25")}
    assert batch_prices(mine) == {"my-model": Price("0.5", "1", "0.05", "0.625")}
    assert batch_prices({}) == {}


@pytest.mark.parametrize(
    ("result_type", "words"),
    [("canceled", "the batch was canceled"), ("expired", "within 24 hours"), ("missing", "has no line")],
)
def test_batch_request_errors_say_what_happened_and_what_to_do(result_type: Any, words: str) -> None:
    error = BatchRequestError(result_type, batch_id="msgbatch_1", custom_id="request-7")
    assert str(error).startswith("Request 'request-7' of Message Batch 'msgbatch_1'")
    assert words in str(error)
    assert "Replay the run again" in str(error)
    assert isinstance(error, ToolRunnerError)
    again = pickle.loads(pickle.dumps(error))
    assert (type(again), str(again), again.result_type, again.custom_id) == (
        BatchRequestError,
        str(error),
        result_type,
        "request-7",
    )

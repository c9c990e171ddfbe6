"""The fake's Message Batches endpoints, through the SDK's own `client.messages.batches`."""

from __future__ import annotations

from typing import Any

import anthropic
import pytest
from anthropic.types import TextBlock, ToolUseBlock
from anthropic.types.messages import MessageBatchIndividualResponse

from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
    ScriptedReply,
    disconnect,
    fault,
    serve,
    text_reply,
    tool_call,
    tool_reply,
)

pytestmark = pytest.mark.anyio

USER: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
PARAMS: dict[str, Any] = {"model": "m", "max_tokens": 10, "messages": USER}
BAD_PARAMS: dict[str, Any] = {
    "model": "m",
    "max_tokens": 10,
    "messages": [{"role": "assistant", "content": "Hi."}],
}
COUNTS_ZERO = {"succeeded": 0, "errored": 0, "canceled": 0, "expired": 0}


def _requests(*custom_ids: str, params: dict[str, Any] = PARAMS) -> list[Any]:
    return [{"custom_id": custom_id, "params": params} for custom_id in custom_ids]


def _by_id(results: list[MessageBatchIndividualResponse]) -> dict[str, dict[str, Any]]:
    return {line.custom_id: line.result.model_dump(exclude_none=True) for line in results}


async def test_a_batch_is_in_progress_until_the_test_ends_it_then_serves_its_results() -> None:
    fake = FakeMessagesAPI(
        [text_reply("Sunny.", usage={"input_tokens": 7, "output_tokens": 3}), tool_reply(tool_call("f", {}))]
    )
    async with fake.async_client() as client:
        batch = await client.messages.batches.create(requests=_requests("first", "second"))
        assert batch.processing_status == "in_progress"
        assert batch.request_counts.model_dump() == {**COUNTS_ZERO, "processing": 2}
        assert batch.results_url is None
        assert batch.ended_at is None
        again = await client.messages.batches.retrieve(batch.id)
        assert again.processing_status == "in_progress"
        with pytest.raises(anthropic.AnthropicError, match="Has it finished processing"):
            await client.messages.batches.results(batch.id)  # the SDK checks results_url first

        assert fake.end_batches() == [batch.id]
        assert fake.end_batches() == []
        ended = await client.messages.batches.retrieve(batch.id)
        assert ended.processing_status == "ended"
        assert ended.ended_at is not None
        assert ended.request_counts.model_dump() == {**COUNTS_ZERO, "succeeded": 2, "processing": 0}
        assert ended.results_url == f"https://api.anthropic.com/v1/messages/batches/{batch.id}/results"
        results = [line async for line in await client.messages.batches.results(batch.id)]
    assert [line.custom_id for line in results] == ["first", "second"]
    first, second = (line.result for line in results)
    assert first.type == "succeeded"
    assert second.type == "succeeded"
    assert first.message.content == [TextBlock(type="text", text="Sunny.")]
    assert (first.message.usage.input_tokens, first.message.usage.output_tokens) == (7, 3)
    assert isinstance(second.message.content[0], ToolUseBlock)
    assert second.message.content[0].id == "toolu_fake_0001"
    fake.assert_complete()


async def test_each_request_of_a_batch_is_recorded_as_a_messages_request() -> None:
    seen: list[RecordedRequest] = []

    def respond(request: RecordedRequest) -> ScriptedReply:
        seen.append(request)
        return text_reply(f"answer to {request.custom_id}")

    fake = FakeMessagesAPI([text_reply("scripted")], responder=respond)
    async with fake.async_client(default_headers={"x-test": "yes"}) as client:
        requests: list[Any] = [
            {"custom_id": "a", "params": PARAMS},
            {"custom_id": "b", "params": {**PARAMS, "system": "Be brief."}},
        ]
        batch = await client.messages.batches.create(requests=requests)
        fake.end_batches()
        results = _by_id([line async for line in await client.messages.batches.results(batch.id)])
    create, item_a, item_b = fake.requests[:3]
    assert (create.method, create.url, create.batch_id) == (
        "POST",
        "https://api.anthropic.com/v1/messages/batches",
        None,
    )
    assert [(r.index, r.method, r.url, r.batch_id, r.custom_id) for r in (item_a, item_b)] == [
        (1, "POST", "https://api.anthropic.com/v1/messages", batch.id, "a"),
        (2, "POST", "https://api.anthropic.com/v1/messages", batch.id, "b"),
    ]
    assert item_a.body == PARAMS
    assert item_b.body["system"] == "Be brief."
    assert item_a.messages == USER
    assert item_b.headers["x-test"] == "yes"
    assert seen == [item_b]  # the script answered "a" (entries go in request order), the responder "b"
    assert results["a"]["message"]["content"] == [{"type": "text", "text": "scripted"}]
    assert results["b"]["message"]["content"] == [{"type": "text", "text": "answer to b"}]


def test_the_sync_client_serves_batches_too() -> None:
    fake = FakeMessagesAPI([text_reply("one"), text_reply("two")], batch_polls=2)
    with fake.client() as client:
        batch = client.messages.batches.create(requests=_requests("x", "y"))
        assert client.messages.batches.retrieve(batch.id).processing_status == "in_progress"
        assert client.messages.batches.retrieve(batch.id).processing_status == "ended"  # the 2nd retrieve
        results = list(client.messages.batches.results(batch.id))
    assert [
        (line.custom_id, line.result.message.content[0])
        for line in results
        if line.result.type == "succeeded"
    ] == [("x", TextBlock(type="text", text="one")), ("y", TextBlock(type="text", text="two"))]
    fake.assert_complete()


async def test_an_invalid_request_is_errored_and_uses_no_entry() -> None:
    fake = FakeMessagesAPI([text_reply("for the valid one"), text_reply("left")])
    async with fake.async_client() as client:
        requests: list[Any] = [
            {"custom_id": "bad", "params": BAD_PARAMS},
            {"custom_id": "good", "params": PARAMS},
            {"custom_id": "streamed", "params": {**PARAMS, "stream": True}},
        ]
        batch = await client.messages.batches.create(requests=requests)
        fake.end_batches()
        ended = await client.messages.batches.retrieve(batch.id)
        results = _by_id([line async for line in await client.messages.batches.results(batch.id)])
    assert ended.request_counts.model_dump() == {**COUNTS_ZERO, "succeeded": 1, "errored": 2, "processing": 0}
    assert results["bad"] == {
        "type": "errored",
        "error": {
            "type": "error",
            "error": {
                "type": "invalid_request_error",
                "message": 'messages: first message must use the "user" role',
            },
        },
    }
    assert results["good"]["message"]["content"] == [{"type": "text", "text": "for the valid one"}]
    assert results["streamed"]["error"]["error"]["type"] == "invalid_request_error"
    assert "do not support streaming" in results["streamed"]["error"]["error"]["message"]
    assert len(fake.unused) == 1


async def test_faults_disconnects_and_a_used_up_script_become_errored_results() -> None:
    fake = FakeMessagesAPI([fault(529), disconnect()])
    async with fake.async_client() as client:
        batch = await client.messages.batches.create(
            requests=_requests("overloaded", "dropped", "unscripted")
        )
        fake.end_batches()
        results = _by_id([line async for line in await client.messages.batches.results(batch.id)])
    errors = {custom_id: result["error"]["error"] for custom_id, result in results.items()}
    assert errors["overloaded"] == {"type": "overloaded_error", "message": "Overloaded"}
    assert errors["dropped"] == {"type": "api_error", "message": "Internal server error"}
    assert errors["unscripted"]["type"] == "api_error"
    assert "request #4 arrived but the script has only 2 replies" in errors["unscripted"]["message"]


async def test_cancel_makes_the_batch_canceling_then_ended_with_its_requests_canceled() -> None:
    fake = FakeMessagesAPI([text_reply("never seen")])
    async with fake.async_client() as client:
        batch = await client.messages.batches.create(requests=_requests("only"))
        canceling = await client.messages.batches.cancel(batch.id)
        assert canceling.processing_status == "canceling"
        assert canceling.cancel_initiated_at is not None
        assert (await client.messages.batches.cancel(batch.id)).processing_status == "canceling"
        with pytest.raises(anthropic.BadRequestError, match="still canceling"):
            await client.messages.batches.delete(batch.id)
        ended = await client.messages.batches.retrieve(batch.id)  # the next retrieve ends it
        assert ended.processing_status == "ended"
        assert ended.request_counts.model_dump() == {**COUNTS_ZERO, "canceled": 1, "processing": 0}
        results = [line async for line in await client.messages.batches.results(batch.id)]
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.batches.cancel(batch.id)
        deleted = await client.messages.batches.delete(batch.id)
        with pytest.raises(anthropic.NotFoundError):
            await client.messages.batches.retrieve(batch.id)
    assert [(line.custom_id, line.result.type) for line in results] == [("only", "canceled")]
    assert caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"Message Batch {batch.id!r} has ended; only a batch in progress can be canceled.",
        },
    }
    assert (deleted.id, deleted.type) == (batch.id, "message_batch_deleted")
    assert fake.unused == []  # the entry was picked at create time, and stays used


async def test_end_batches_ends_a_canceling_batch_with_its_requests_canceled() -> None:
    fake = FakeMessagesAPI([text_reply("a"), text_reply("b")])
    async with fake.async_client() as client:
        canceled = await client.messages.batches.create(requests=_requests("a"))
        kept = await client.messages.batches.create(requests=_requests("b"))
        await client.messages.batches.cancel(canceled.id)
        assert fake.end_batches() == [canceled.id, kept.id]
        canceled_results = [
            line.result.type async for line in await client.messages.batches.results(canceled.id)
        ]
        kept_results = [line.result.type async for line in await client.messages.batches.results(kept.id)]
    assert (canceled_results, kept_results) == (["canceled"], ["succeeded"])


async def test_results_before_the_end_get_the_service_error() -> None:
    fake = FakeMessagesAPI([text_reply("a")])
    async with fake.async_client() as client:
        batch = await client.messages.batches.create(requests=_requests("a"))
        with pytest.raises(anthropic.BadRequestError) as results_caught:
            await client.get(f"/v1/messages/batches/{batch.id}/results", cast_to=object)
        with pytest.raises(anthropic.BadRequestError, match="still in_progress"):
            await client.messages.batches.delete(batch.id)
    assert results_caught.value.body == {
        "type": "error",
        "error": {
            "type": "invalid_request_error",
            "message": f"Message Batch {batch.id!r} is still in_progress; its results are available once it has ended.",
        },
    }


async def test_an_unknown_batch_id_gets_404_in_the_service_shape() -> None:
    fake = FakeMessagesAPI()
    async with fake.async_client() as client:
        calls = [
            client.messages.batches.retrieve("msgbatch_nope"),
            client.messages.batches.cancel("msgbatch_nope"),
            client.messages.batches.delete("msgbatch_nope"),
            client.messages.batches.results("msgbatch_nope"),
            client.get("/v1/messages/batches/msgbatch_nope/results", cast_to=object),
        ]
        for call in calls:
            with pytest.raises(anthropic.NotFoundError) as caught:
                await call
            assert caught.value.body == {
                "type": "error",
                "error": {"type": "not_found_error", "message": "Message Batch 'msgbatch_nope' not found."},
            }
        with pytest.raises(anthropic.NotFoundError, match="serves no GET /v1/messages/batches/a/b"):
            await client.get("/v1/messages/batches/a/b", cast_to=object)


MALFORMED: list[tuple[dict[str, Any], str]] = [
    ({}, "requests: Field required"),
    ({"requests": {}}, "requests: Input should be a valid list"),
    ({"requests": []}, "requests: List should have at least 1 item after validation, not 0"),
    ({"requests": ["x"]}, "requests.0: Input should be a valid dictionary"),
    ({"requests": [{"params": PARAMS}]}, "requests.0.custom_id: Field required"),
    ({"requests": [{"custom_id": "a"}]}, "requests.0.params: Field required"),
    (
        {"requests": [{"custom_id": "not ok!", "params": PARAMS}]},
        "requests.0.custom_id: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'",
    ),
    (
        {"requests": _requests("a", "a")},
        "requests.1.custom_id: Duplicate custom_id 'a'; each must be unique in the batch",
    ),
    (
        {"requests": [{"custom_id": "a", "params": []}]},
        "requests.0.params: Input should be a valid dictionary",
    ),
]


@pytest.mark.parametrize(("body", "message"), MALFORMED)
async def test_a_malformed_create_body_gets_400_and_makes_no_batch(
    body: dict[str, Any], message: str
) -> None:
    fake = FakeMessagesAPI([text_reply("unused")])
    async with fake.async_client() as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.post("/v1/messages/batches", body=body, cast_to=object)
        page = await client.messages.batches.list()
    assert caught.value.body == {
        "type": "error",
        "error": {"type": "invalid_request_error", "message": message},
    }
    assert page.data == []
    assert len(fake.requests) == 2  # the create and the list: no request of a batch was recorded
    assert len(fake.unused) == 1


async def test_an_unparseable_create_body_gets_400() -> None:
    fake = FakeMessagesAPI()
    async with fake.async_client() as client:
        with pytest.raises(anthropic.BadRequestError, match="error parsing the body"):
            await client.post("/v1/messages/batches", content=b"{", cast_to=object)
    assert fake.requests[0].body == {}


async def test_list_gives_the_newest_first_page_by_page() -> None:
    fake = FakeMessagesAPI([text_reply("a"), text_reply("b"), text_reply("c")])
    async with fake.async_client() as client:
        ids = [(await client.messages.batches.create(requests=_requests("r"))).id for _ in range(3)]
        first = await client.messages.batches.list(limit=2)
        everything = [batch.id async for batch in await client.messages.batches.list(limit=2)]
        before = await client.messages.batches.list(before_id=ids[0], limit=1)
        with pytest.raises(anthropic.BadRequestError, match="limit"):
            await client.messages.batches.list(limit=0)
    assert [batch.id for batch in first.data] == [ids[2], ids[1]]
    assert (first.has_more, first.first_id, first.last_id) == (True, ids[2], ids[1])
    assert everything == ids[::-1]
    assert [batch.id for batch in before.data] == [ids[1]]
    assert before.has_more
    assert [r.url.rsplit("/", 1)[-1] for r in fake.requests if r.method == "GET"][:2] == [
        "batches?limit=2",
        "batches?limit=2",
    ]


async def test_an_async_responder_answers_the_requests_of_a_batch() -> None:
    async def respond(request: RecordedRequest) -> ScriptedReply:
        return text_reply(f"async {request.custom_id}")

    fake = FakeMessagesAPI(responder=respond, batch_polls=1)
    async with fake.async_client() as client:
        batch = await client.messages.batches.create(requests=_requests("p", "q"))
        results = _by_id([line async for line in await client.messages.batches.results(batch.id)])
    assert {custom_id: result["message"]["content"][0]["text"] for custom_id, result in results.items()} == {
        "p": "async p",
        "q": "async q",
    }


def test_the_sync_client_refuses_a_batch_for_an_async_responder() -> None:
    async def respond(request: RecordedRequest) -> ScriptedReply:
        return text_reply("never")

    fake = FakeMessagesAPI(responder=respond)
    with fake.client() as client, pytest.raises(anthropic.APIConnectionError) as caught:
        client.messages.batches.create(requests=_requests("p"))
    assert isinstance(caught.value.__cause__, TypeError)
    assert "is async, so the sync client cannot await it" in str(caught.value.__cause__)


def test_batches_are_served_over_real_http() -> None:
    fake = FakeMessagesAPI([text_reply("over HTTP")])
    with serve(fake) as served, served.client() as client:
        batch = client.messages.batches.create(requests=_requests("h"))
        fake.end_batches()
        ended = client.messages.batches.retrieve(batch.id)
        results = list(client.messages.batches.results(batch.id))
    assert ended.results_url == f"{served.base_url}/v1/messages/batches/{batch.id}/results"
    assert fake.requests[1].url == f"{served.base_url}/v1/messages"
    assert fake.requests[1].custom_id == "h"
    assert [line.result.type for line in results] == ["succeeded"]


async def test_the_beta_batches_are_served_too() -> None:
    fake = FakeMessagesAPI([text_reply("beta")], batch_polls=1)
    async with fake.async_client() as client:
        batch = await client.beta.messages.batches.create(requests=_requests("b"))
        results = [line async for line in await client.beta.messages.batches.results(batch.id)]
    assert [(line.custom_id, line.result.type) for line in results] == [("b", "succeeded")]


@pytest.mark.parametrize("polls", [0, -1, 1.5, True, "2"])
def test_batch_polls_must_be_a_whole_number_from_1(polls: Any) -> None:
    with pytest.raises(ValueError, match="batch_polls must be a whole number from 1 or None"):
        FakeMessagesAPI(batch_polls=polls)

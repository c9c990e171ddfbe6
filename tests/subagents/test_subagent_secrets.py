"""A sub-agent's transport params (``extra_headers``, ``extra_query``, ``timeout``) are kept out of
every state and of ``definition()``, as a run's own are, at any depth (audit F2): a secret in a
header is never written to a store, and the sub-run still sends it, after a resume too (the
``SubAgent`` given again carries it)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.subagents import by_model, outer, paid, payer, paying_scripts, stored_bytes
from toolrunner import SQLiteCheckpointer, SubAgent, ToolRunner
from toolrunner.testing import (
    FakeMessagesAPI,
    RecordedRequest,
)

pytestmark = pytest.mark.anyio

SECRETS = (b"SECRET-OUTER-1", b"SECRET-Q-2", b"SECRET-HDR-3")


def two_levels() -> SubAgent:
    """Two levels, each with a secret of its own: ``outer`` (headers and query) over ``payer``
    (an ``Authorization`` header and a timeout), whose ``pay`` needs approval."""
    inner = payer(params={"extra_headers": {"Authorization": "Bearer SECRET-HDR-3"}, "timeout": 30.0})
    return outer(
        inner,
        params={
            "extra_headers": {"X-Outer": "SECRET-OUTER-1"},
            "extra_query": {"key": "SECRET-Q-2"},
            "stop_sequences": ["END"],
        },
    )


def sent(request: RecordedRequest) -> tuple[str | None, str | None, str | None, bool]:
    """What a request carried of the transport params: its headers, and the query's key."""
    headers = request.headers
    return (
        headers.get("authorization"),
        headers.get("x-outer"),
        headers.get("x-run"),
        "key=SECRET-Q-2" in request.url,
    )


def test_a_sub_agents_definition_and_params_leave_its_transport_params_out() -> None:
    agent = two_levels()
    assert agent.params == {"stop_sequences": ["END"]}
    assert agent.transport == {
        "extra_headers": {"X-Outer": "SECRET-OUTER-1"},
        "extra_query": {"key": "SECRET-Q-2"},
    }
    (inner,) = agent.tools
    assert isinstance(inner, SubAgent)
    for definition in (agent.definition(), inner.definition()):
        assert not any(secret.decode() in json.dumps(definition) for secret in SECRETS)
    assert "extra_headers" not in agent.agent_plan.params
    assert "timeout" not in inner.agent_plan.params


async def test_a_secret_header_of_a_sub_agent_is_never_stored_and_is_sent_after_a_resume(
    tmp_path: Path,
) -> None:
    paid.clear()
    fake = FakeMessagesAPI(responder=by_model(paying_scripts()))
    run_headers = {"X-Run": "run-1"}
    async with fake.async_client() as client:
        store = SQLiteCheckpointer(tmp_path / "runs.db")
        try:
            runner = ToolRunner(
                client,
                model="claude-parent",
                max_tokens=100,
                messages=[{"role": "user", "content": "Pay my bill."}],
                tools=[two_levels()],
                checkpointer=store,
                run_id="bill",
                extra_headers=run_headers,
            )
            async for _ in runner:
                pass
            assert runner.end_reason == "awaiting_approval"
            await store.approve_call("bill", "toolu_c1", by="ada")
        finally:
            store.close()
        assert not [secret for secret in SECRETS if secret in stored_bytes(tmp_path)]

        store = SQLiteCheckpointer(tmp_path / "runs.db")
        try:
            resumed = await ToolRunner.resume(
                client, run_id="bill", checkpointer=store, tools=[two_levels()], extra_headers=run_headers
            )
            await resumed.until_done()
            loaded = await store.load("bill")
            assert loaded is not None
            assert not [secret.decode() for secret in SECRETS if secret.decode() in loaded.state.to_json()]
        finally:
            store.close()
    assert not [secret for secret in SECRETS if secret in stored_bytes(tmp_path)]

    assert paid == [5]
    by_request = [(request.body["model"], sent(request)) for request in fake.requests]
    # Each level sends its own and those of the levels above it (the run's own, then the outer
    # sub-agent's); the nearer level's headers join them. After the resume (the last three
    # requests) the same, from the sub-agents given again.
    sub = ("Bearer SECRET-HDR-3", "SECRET-OUTER-1", "run-1", True)
    client_key = fake.requests[0].headers.get("authorization")  # the client's own, which payer's replaces
    assert client_key is not None
    assert "SECRET" not in client_key
    mid = (client_key, "SECRET-OUTER-1", "run-1", True)
    top = (client_key, None, "run-1", False)
    assert by_request == [
        ("claude-parent", top),
        ("claude-mid", mid),
        ("claude-sub", sub),
        ("claude-sub", sub),
        ("claude-mid", mid),
        ("claude-parent", top),
    ]
    assert all(
        request.body.get("stop_sequences") == ["END"]
        for request in fake.requests
        if request.body["model"] == "claude-mid"
    )

"""The payload store: large blocks as stubs, the history as a chain of nodes, files written whole."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from anthropic.types import Message

from toolrunner import StateError, tool_result_block
from toolrunner._core.messages import reply_param
from toolrunner.temporal import FilePayloadStore, MemoryPayloadStore
from toolrunner.temporal._payloads import REF, Payloads, is_stub

pytestmark = pytest.mark.anyio

BIG = "x" * 5000


def reply(*blocks: dict[str, Any]) -> Message:
    return Message.model_validate(
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "model": "claude-sonnet-4-6",
            "content": list(blocks),
            "stop_reason": "tool_use",
            "stop_sequence": None,
            "usage": {"input_tokens": 1, "output_tokens": 2},
        }
    )


async def test_a_large_result_travels_as_a_stub_and_resolves_to_itself() -> None:
    payloads = Payloads(MemoryPayloadStore(), inline_limit=1000)
    small = tool_result_block("a", "ok")
    large = tool_result_block("b", BIG, is_error=True)

    assert await payloads.stash_result(small) == small
    stub = await payloads.stash_result(large)
    assert set(stub) == {"type", "tool_use_id", "is_error", REF}
    assert (stub["tool_use_id"], stub.get("is_error")) == ("b", True)

    message = {"role": "user", "content": [small, stub]}
    assert await payloads.resolve([message]) == [{"role": "user", "content": [small, large]}]


async def test_a_replys_large_blocks_become_text_stubs_and_its_tool_use_blocks_stay() -> None:
    payloads = Payloads(MemoryPayloadStore(), inline_limit=1000)
    original = reply(
        {"type": "text", "text": BIG},
        {"type": "tool_use", "id": "t1", "name": "write", "input": {"text": BIG}},
    )
    light = Message.model_validate(await payloads.stash_reply(original))

    text, call = light.content
    assert text.type == "text"
    assert is_stub(text.model_dump())
    assert call.type == "tool_use"
    assert call.input == {"text": BIG}  # the lifecycle reads tool inputs: they stay whole
    # What the workflow appends to the history resolves to what a ToolRunner appends.
    assert await payloads.resolve([reply_param(light)]) == [reply_param(original)]


async def test_a_history_reads_back_along_its_chain_in_a_cold_worker() -> None:
    store = MemoryPayloadStore()
    warm = Payloads(store)
    params, tools = {"model": "m", "max_tokens": 5}, ["lookup"]
    key, snapshot = await warm.save_history(
        None, params=params, tools=tools, messages=[{"role": "user", "content": "1"}]
    )
    for number in range(2, 5):
        key, snapshot = await warm.save_history(
            key, params=None, tools=None, messages=[{"role": "user", "content": str(number)}]
        )

    cold = await Payloads(store).load_history(key)
    assert cold == snapshot
    assert cold.params == params
    assert cold.tools == ("lookup",)
    assert [message["content"] for message in cold.messages] == ["1", "2", "3", "4"]


async def test_a_missing_payload_is_named_with_its_store() -> None:
    store = MemoryPayloadStore()
    with pytest.raises(StateError, match=r"MemoryPayloadStore\(0 payloads\) has no payload 'abc'"):
        await Payloads(store).load_history("abc")


async def test_the_file_store_writes_each_payload_whole_once(tmp_path: Path) -> None:
    store = FilePayloadStore(tmp_path / "payloads")
    key = "ab" + "0" * 62
    async with anyio.create_task_group() as group:
        for _ in range(5):  # writers of one key (retried activities) write the same bytes
            group.start_soon(store.put, key, b'{"a": 1}')
    assert json.loads(await store.get(key)) == {"a": 1}
    assert [path.name for path in (tmp_path / "payloads").rglob("*")] == ["ab", key]  # no temporary files
    with pytest.raises(KeyError):
        await store.get("cd" + "0" * 62)
    with pytest.raises(ValueError, match=r"is not a payload key"):
        await store.get("../etc/passwd")

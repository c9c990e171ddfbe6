"""Errors pass through ``async with`` and ``with`` as themselves: the body's, the service's, a refused
save's.
"""

from __future__ import annotations

import anthropic
import pytest

from tests.support.counted_tools import look_keyed as look
from tests.support.helpers import MODEL, USER, make_runner
from toolrunner import (
    Checkpoint,
    CheckpointError,
    MemoryCheckpointer,
    SyncToolRunner,
    ToolRunner,
)
from toolrunner.testing import FakeMessagesAPI, fault, text_reply, tool_call, tool_reply

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("fresh_runs")]

# -- errors pass through `async with` as themselves -------------------------------------------------


async def test_an_error_in_the_body_of_async_with_arrives_as_itself() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    with pytest.raises(ValueError, match=r"^from the body$"):
        async with make_runner(fake, look) as runner:
            async for _ in runner:
                raise ValueError("from the body")


async def test_a_service_error_inside_async_with_arrives_as_itself() -> None:
    fake = FakeMessagesAPI([fault(400)])
    with pytest.raises(anthropic.BadRequestError):
        async with make_runner(fake, look) as runner:
            await runner.until_done()


async def test_a_refused_save_inside_async_with_arrives_as_itself() -> None:
    store = MemoryCheckpointer()
    await store.save(
        Checkpoint(
            "r",
            ToolRunner(FakeMessagesAPI().async_client(), model=MODEL, max_tokens=8, messages=[USER]).state,
            0,
        )
    )
    fake = FakeMessagesAPI([text_reply("Hi.")])
    with pytest.raises(CheckpointError, match="is saved already"):
        async with make_runner(fake, look, checkpointer=store, run_id="r") as runner:
            await runner.until_done()


def test_an_error_in_the_body_of_a_sync_with_arrives_as_itself() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("look", {"q": "a"}, id="a")), text_reply("Done.")])
    runner = SyncToolRunner(fake.client(), model=MODEL, max_tokens=64, messages=[USER], tools=[look])
    with pytest.raises(KeyError), runner:
        for _ in runner:
            raise KeyError("from the body")

"""The one place that sends a request or opens a stream, through the SDK.

Every driver sends through ``send_request``: the async runner, the blocking runner (a sync client
in a worker thread) and the Temporal activity. HTTP, retries and SSE parsing are the SDK's.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeAlias, cast

import anthropic
import anyio.to_thread

from .._core.events import RunnerEvent
from .._core.types import Reply, ToolCall
from .params import beta_only_params
from .streaming import StreamWatch, SyncStreamManager, watch_stream, watch_sync_stream

__all__ = ["Client", "send_request"]

Client: TypeAlias = anthropic.AsyncAnthropic | anthropic.Anthropic


async def send_request(
    client: Client,
    kwargs: dict[str, Any],
    *,
    stream: bool = False,
    emit: Callable[[RunnerEvent], None] | None = None,
    on_tool_use: Callable[[ToolCall], None] | None = None,
) -> Reply | StreamWatch:
    """Send one Messages request built from ``kwargs`` (``betas``, or a param only the beta endpoint
    takes, picks the beta endpoint).

    Returns the reply, or with ``stream=True`` the watched stream of the reply (text deltas go to
    ``emit`` and completed client tool_use blocks to ``on_tool_use`` as the stream is read). A sync
    client sends from a worker thread. What the service sends back is not checked here.
    """
    betas = kwargs.pop("betas", None)
    beta = bool(betas) or not beta_only_params().isdisjoint(kwargs)
    messages = client.beta.messages if beta else client.messages
    if betas:
        kwargs["betas"] = betas
    if not isinstance(client, anthropic.AsyncAnthropic):
        if stream:  # SyncToolRunner(stream=True): the body reads the SDK's sync stream in its thread
            manager = cast(SyncStreamManager, messages.stream(**kwargs))  # pyright: ignore[reportCallIssue]
            return await anyio.to_thread.run_sync(partial(watch_sync_stream, manager, emit=emit))
        return await anyio.to_thread.run_sync(partial(messages.create, **kwargs))  # type: ignore[arg-type]  # the create of either endpoint's resource
    if not stream:
        return await messages.create(**kwargs)  # type: ignore[no-any-return]
    return await watch_stream(
        messages.stream(**kwargs),  # type: ignore[arg-type]
        emit=emit,
        on_tool_use=on_tool_use,
    )

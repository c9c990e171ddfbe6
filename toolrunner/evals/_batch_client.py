"""``sender.client``: a copy of a client whose ``messages.create`` queues its params for the next
Message Batch (``_batch``'s sender), and whose other ways of sending a Messages request (streams,
the beta endpoint, raw responses, copies) refuse with ``ParamsError``, saying what to do; the rest
(``messages.batches``, ``count_tokens``, ...) is the original client's.
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from typing import Any, NoReturn, TypeAlias

import anthropic
from anthropic.types import Message

from .._core.errors import ParamsError

__all__ = ["Submit", "batch_client"]

Submit: TypeAlias = Callable[[dict[str, Any]], Coroutine[Any, Any, Message]]
"""Queues the params of one request; awaited, the request's message."""

_TRANSPORT = ("extra_headers", "extra_query", "extra_body", "timeout", "stream")
"""What ``create`` takes besides the params: how to send, not what (``stream=False`` is the only stream)."""

_REFUSAL = (
    "sender.client sends each request as one request of a Message Batch, and that path takes "
    "non-streaming requests to client.messages.create without betas, so {what} cannot go through it. "
    "Replay with stream=False and without betas or beta-only params (fallbacks, mcp_servers, "
    "context_management, ...) to use the batch path, or replay with your own client, without a BatchSender."
)


def _refused(what: str) -> ParamsError:
    return ParamsError(_REFUSAL.format(what=what))


class _Refusing:
    """Stands for an attribute of ``sender.client`` that would send a request outside the batch."""

    def __init__(self, what: str) -> None:
        self._what = what

    def __getattr__(self, name: str) -> NoReturn:
        raise _refused(f"{self._what}.{name}")

    def __call__(self, *args: object, **kwargs: object) -> NoReturn:
        raise _refused(f"{self._what}(...)")


class _BatchMessages:
    """``sender.client.messages``: ``create`` goes through the next batch; the rest is the original's."""

    def __init__(self, original: object, submit: Submit, check_open: Callable[[str], None]) -> None:
        self._original = original
        self._submit = submit
        self._check_open = check_open

    def create(self, **kwargs: Any) -> Coroutine[Any, Any, Message]:
        """Queue the params as one request of the next batch; awaited, the request's message."""
        if kwargs.get("stream"):
            raise _refused("client.messages.create(stream=True)")
        if "betas" in kwargs:
            raise _refused("a request with betas")
        for name in ("extra_headers", "extra_query"):
            if kwargs.get(name):
                raise ParamsError(
                    f"sender.client cannot send {name}: a request of a Message Batch has only its params. "
                    "Give headers to the client itself (default_headers=...), or replay without a BatchSender."
                )
        self._check_open("sender.client")
        params = {name: value for name, value in kwargs.items() if name not in _TRANSPORT}
        params.update(kwargs.get("extra_body") or {})  # `timeout` does not apply: the batch has its own time
        return self._submit(params)

    def stream(self, *args: object, **kwargs: object) -> NoReturn:
        raise _refused("client.messages.stream(...)")

    def parse(self, *args: object, **kwargs: object) -> NoReturn:
        raise _refused("client.messages.parse(...)")

    def __getattr__(self, name: str) -> Any:
        if name in ("with_raw_response", "with_streaming_response"):
            raise _refused(f"client.messages.{name}")
        return getattr(self._original, name)


class _BetaMessages:
    """``sender.client.beta.messages``: every way of sending is refused; batches and count_tokens work."""

    def __init__(self, original: object) -> None:
        self._original = original

    def __getattr__(self, name: str) -> Any:
        if name in (
            "create",
            "stream",
            "parse",
            "tool_runner",
            "with_raw_response",
            "with_streaming_response",
        ):
            return _Refusing(f"client.beta.messages.{name}")
        return getattr(self._original, name)


class _Beta:
    """``sender.client.beta``: its ``messages`` refuse to send; the rest is the original's."""

    def __init__(self, original: Any) -> None:
        self._original = original
        self.messages = _BetaMessages(original.messages)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._original, name)


def batch_client(
    client: anthropic.AsyncAnthropic, submit: Submit, check_open: Callable[[str], None]
) -> anthropic.AsyncAnthropic:
    """A copy of ``client`` (same HTTP client) whose ``messages.create`` checks the params, calls
    ``check_open("sender.client")`` and returns ``submit(params)``; its ``beta.messages`` and the
    other ways of sending refuse with ``ParamsError``."""
    copy = client.copy()
    replaced: dict[str, object] = {
        "messages": _BatchMessages(client.messages, submit, check_open),
        "beta": _Beta(client.beta),
        "with_raw_response": _Refusing("client.with_raw_response"),
        "with_streaming_response": _Refusing("client.with_streaming_response"),
        "copy": _Refusing("client.copy"),  # a copy would have the original messages
        "with_options": _Refusing("client.with_options"),
    }
    copy.__dict__.update(replaced)  # over the SDK's cached properties and methods of the instance
    return copy

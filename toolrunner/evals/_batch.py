"""The batch path of replays: requests of many replays sent as one Message Batch, at batch rates.

``BatchSender`` gives a client (``sender.client``) whose ``messages.create`` does not send a
request: it queues the params as one request of the next batch, and returns the request's message
once that batch has ended. Replays register as members (``async with sender.member():``); the queue
goes out as one batch as soon as every member waits (its request queued or in a batch in flight),
or ``window`` seconds after the first request of the queue, whichever comes first: the requests of
many replays are collected as they finish their previous step. When to send is ``flush_due``, a
pure function of counts. ``BatchRequestError`` is a request whose batch result is not a message;
``batch_prices`` is a price table at batch rates (half of every amount). See docs/evals.md, "The batch path".
"""

from __future__ import annotations

import contextlib
import contextvars
import itertools
import math
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Self, TypeAlias, cast

import anthropic
import anyio
import anyio.lowlevel
from anthropic.types import Message
from anthropic.types.messages import (
    MessageBatch,
    MessageBatchCanceledResult,
    MessageBatchErroredResult,
    MessageBatchExpiredResult,
    MessageBatchResult,
    MessageBatchSucceededResult,
)
from anthropic.types.messages.batch_create_params import Request as BatchItem
from anyio.abc import TaskGroup

from .._core.errors import ParamsError, ToolRunnerError
from .._core.usage import DEFAULT_PRICES, Price
from ._batch_client import batch_client

__all__ = ["BatchRequestError", "BatchSender", "ResultType", "batch_prices", "flush_due"]

ResultType: TypeAlias = Literal["errored", "canceled", "expired", "missing"]
"""Why a request of a batch has no message: the service's result types other than ``succeeded``,
and ``"missing"`` for a request the batch's results do not name."""

CANCEL_GRACE = 30.0
"""Seconds a shielded ``batches.cancel`` may take while the sender is being cancelled."""

SETTLE_CHECKPOINTS = 2
"""Scheduling rounds the flusher lets pass before it sends a batch that is due: replays started
together (``start_soon`` in a loop) register as members in them, so none of them misses the batch."""


def flush_due(*, queued: int, members: int, waiting: int, window_over: bool) -> bool:
    """Whether the queue goes out as one batch now.

    Args:
        queued: Requests in the queue, not sent yet.
        members: Members registered (replays under way).
        waiting: Members with a request queued or in a batch in flight (from 0 to ``members``).
        window_over: Whether ``window`` seconds have passed since the first request of the queue.

    An empty queue is never sent. Otherwise it is sent once every member waits (none of them can
    add a request before a batch ends, so waiting longer gains nothing), or once the window is over
    (a member busy in a slow tool does not hold the others back for longer). With no members, a
    request goes out at once.
    """
    if queued < 0 or members < 0 or not 0 <= waiting <= members:
        raise ValueError(
            f"flush_due needs counts from 0 and waiting <= members, not queued={queued}, "
            f"members={members}, waiting={waiting}."
        )
    return queued > 0 and (waiting == members or window_over)


class BatchRequestError(ToolRunnerError):
    """A request sent through a ``BatchSender`` whose batch result is not a message.

    Attributes:
        result_type: ``"errored"``, ``"canceled"`` or ``"expired"`` (the service's result type), or
            ``"missing"``: the batch's results have no line for the request.
        batch_id: The Message Batch the request was sent in.
        custom_id: The request's ``custom_id`` in that batch.
        error_type: The service's error type of an ``errored`` result (``"invalid_request_error"``,
            ``"overloaded_error"``, ...); ``None`` for the other result types.
        error_message: The service's error message of an ``errored`` result; ``None`` otherwise.
    """

    def __init__(
        self,
        result_type: ResultType,
        *,
        batch_id: str,
        custom_id: str,
        error_type: str | None = None,
        error_message: str | None = None,
    ) -> None:
        self.result_type: ResultType = result_type
        self.batch_id = batch_id
        self.custom_id = custom_id
        self.error_type = error_type
        self.error_message = error_message
        super().__init__(_describe(self))

    def __reduce__(self) -> tuple[Any, ...]:
        fields = (self.result_type, self.batch_id, self.custom_id, self.error_type, self.error_message)
        return (_rebuild_error, fields)


def _rebuild_error(
    result_type: ResultType, batch_id: str, custom_id: str, error_type: str | None, error_message: str | None
) -> BatchRequestError:
    return BatchRequestError(
        result_type,
        batch_id=batch_id,
        custom_id=custom_id,
        error_type=error_type,
        error_message=error_message,
    )


def _describe(error: BatchRequestError) -> str:
    where = f"Request {error.custom_id!r} of Message Batch {error.batch_id!r}"
    match error.result_type:
        case "errored":
            what = f"{error.error_type or 'an error'}: {error.error_message or 'no message'}"
            if error.error_type == "invalid_request_error":
                return (
                    f"{where} errored ({what}). The service refused its params: fix what the message "
                    "names, then replay the run again."
                )
            return f"{where} errored ({what}). This may pass: replay the run again; it goes into a new batch."
        case "canceled":
            return (
                f"{where} was canceled: the batch was canceled (by batches.cancel, here or in the Console) "
                "before the request was processed, so it has no message. Replay the run again."
            )
        case "expired":
            return (
                f"{where} expired: the batch did not end within 24 hours of its creation, so the service "
                "stopped processing it. Replay the run again (fewer replays at once make smaller "
                "batches), or replay it without the batch path."
            )
        case "missing":
            return (
                f"{where} has no line in the batch's results, so it has no message. Replay the run "
                "again; if it happens again, report it."
            )


def batch_prices(prices: Mapping[str, Price] | None = None) -> dict[str, Price]:
    """``prices`` (``DEFAULT_PRICES`` when ``None``) at Message Batches rates: every amount halved,
    the ``long_prompt`` price too, its threshold kept. The batch discount is 50% of every token
    price, and the prompt-caching multipliers stack on it (a cache read is 0.1x the batch input
    price, a 5-minute cache write 1.25x it), which halving every amount gives."""
    table = DEFAULT_PRICES if prices is None else prices
    return {model: _halved(price) for model, price in table.items()}


def _halved(price: Price) -> Price:
    return Price(
        price.input / 2,
        price.output / 2,
        price.cache_read / 2,
        price.cache_write / 2,
        cache_write_1h=price.cache_write_1h / 2,
        long_prompt=None if price.long_prompt is None else _halved(price.long_prompt),
        long_prompt_threshold=price.long_prompt_threshold,
    )


@dataclass(eq=False, slots=True)
class _Member:
    batcher: _Batcher
    pending: int = 0  # its requests queued or in a batch in flight


_MEMBER: contextvars.ContextVar[_Member | None] = contextvars.ContextVar(
    "toolrunner_batch_member", default=None
)


@dataclass(eq=False, slots=True)
class _Request:
    custom_id: str
    params: dict[str, Any]
    member: _Member | None
    done: anyio.Event = field(default_factory=anyio.Event)
    outcome: Message | BaseException | None = None
    settled: bool = False  # it has its outcome, or its waiter left


class _Batcher:
    """The queue, the members and the batches in flight of one ``BatchSender``."""

    def __init__(self, client: anthropic.AsyncAnthropic, poll_interval: float, window: float) -> None:
        self.client = client
        self.poll_interval = poll_interval
        self.window = window
        self.batches: list[str] = []
        self.state: Literal["new", "open", "closed"] = "new"
        self.group: TaskGroup | None = None
        self.queue: list[_Request] = []
        self.deadline = math.inf  # when the window of the queue's first request is over
        self.members: set[_Member] = set()
        self.unsettled: set[_Request] = set()
        self.changed: anyio.Event | None = None
        self.ids = itertools.count(1)

    def check_open(self, what: str) -> None:
        if self.state != "open":
            raise ToolRunnerError(
                f"{what} is used within `async with BatchSender(client) as sender:` only (the sender "
                f"is {'not entered yet' if self.state == 'new' else 'closed'}); run the replays inside that block."
            )

    def wake(self) -> None:
        if self.changed is not None:
            self.changed.set()
            self.changed = anyio.Event()

    def waiting(self) -> int:
        return sum(1 for member in self.members if member.pending > 0)

    async def submit(self, params: dict[str, Any]) -> Message:
        member = _MEMBER.get()
        request = _Request(
            f"request-{next(self.ids)}",
            params,
            member if member is not None and member.batcher is self else None,
        )
        if not self.queue:
            self.deadline = anyio.current_time() + self.window
        self.queue.append(request)
        self.unsettled.add(request)
        if request.member is not None:
            request.member.pending += 1
        self.wake()
        try:
            await request.done.wait()
        finally:
            if not request.settled:  # its waiter was cancelled
                self.settle(request, None)
                if request in self.queue:  # not sent: it never will be
                    self.queue.remove(request)
                self.wake()
        if isinstance(request.outcome, BaseException):
            raise request.outcome
        assert request.outcome is not None
        return request.outcome

    def settle(self, request: _Request, outcome: Message | BaseException | None) -> None:
        if request.settled:
            return
        request.settled = True
        request.outcome = outcome
        self.unsettled.discard(request)
        if request.member is not None:
            request.member.pending -= 1
        request.done.set()

    @contextlib.asynccontextmanager
    async def member(self) -> AsyncGenerator[None]:
        self.check_open("sender.member()")
        member = _Member(self)
        self.members.add(member)
        token = _MEMBER.set(member)
        try:
            yield
        finally:
            _MEMBER.reset(token)
            self.members.discard(member)
            self.wake()

    async def flush_loop(self) -> None:
        assert self.group is not None
        yielded = False
        while True:
            changed = self.changed
            assert changed is not None
            now = anyio.current_time()
            due = flush_due(
                queued=len(self.queue),
                members=len(self.members),
                waiting=self.waiting(),
                window_over=now >= self.deadline,
            )
            if due and not yielded:  # the tasks ready to run go first: replays just started register
                yielded = True
                for _ in range(SETTLE_CHECKPOINTS):
                    await anyio.lowlevel.checkpoint()
                continue
            yielded = False
            if due:
                requests, self.queue, self.deadline = self.queue, [], math.inf
                self.group.start_soon(self.run_batch, requests)
                continue
            with anyio.move_on_after(self.deadline - now if self.queue else None):
                await changed.wait()

    async def run_batch(self, requests: list[_Request]) -> None:
        requests = [request for request in requests if not request.settled]
        if not requests:
            return
        batches = self.client.messages.batches
        items = [cast(BatchItem, {"custom_id": r.custom_id, "params": r.params}) for r in requests]
        try:
            batch = await batches.create(requests=items)
        except Exception as error:
            for request in requests:
                self.settle(request, error)
            return
        self.batches.append(batch.id)
        try:
            results = await self.results(batch, requests)
        except anyio.get_cancelled_exc_class():
            with anyio.move_on_after(CANCEL_GRACE, shield=True):
                await self.cancel(batch.id)
            raise
        except Exception as error:  # nobody will read the batch: it is canceled, best effort
            for request in requests:
                self.settle(request, error)
            await self.cancel(batch.id)
            return
        for request in requests:
            self.settle(request, _outcome(results.get(request.custom_id), batch.id, request.custom_id))

    async def results(self, batch: MessageBatch, requests: list[_Request]) -> dict[str, MessageBatchResult]:
        batches = self.client.messages.batches
        while batch.processing_status != "ended":
            if all(request.settled for request in requests):  # every waiter left
                await self.cancel(batch.id)
                return {}
            await anyio.sleep(self.poll_interval)
            batch = await batches.retrieve(batch.id)
        return {line.custom_id: line.result async for line in await batches.results(batch.id)}

    async def cancel(self, batch_id: str) -> None:
        with contextlib.suppress(anthropic.APIError):
            await self.client.messages.batches.cancel(batch_id)


def _outcome(result: MessageBatchResult | None, batch_id: str, custom_id: str) -> Message | BatchRequestError:
    match result:
        case MessageBatchSucceededResult():
            return result.message
        case MessageBatchErroredResult():
            error = result.error.error
            return BatchRequestError(
                "errored",
                batch_id=batch_id,
                custom_id=custom_id,
                error_type=error.type,
                error_message=error.message,
            )
        case MessageBatchCanceledResult() | MessageBatchExpiredResult():
            return BatchRequestError(result.type, batch_id=batch_id, custom_id=custom_id)
        case None:
            return BatchRequestError("missing", batch_id=batch_id, custom_id=custom_id)


class BatchSender:
    """Sends the Messages requests of many replays as Message Batches, at the batch discount.

    Args:
        client: The client the batches are created, polled and read with.
        poll_interval: Seconds between two retrieves of a batch in flight.
        window: Seconds the queue waits, after its first request, for the members that are busy.

    Use it as ``async with BatchSender(client) as sender:``, give ``sender.client`` to the replays'
    runners, and wrap each replay in ``async with sender.member():``. ``sender.batches`` holds the
    ids of the batches sent, in order.
    """

    def __init__(
        self, client: anthropic.AsyncAnthropic, *, poll_interval: float = 30.0, window: float = 2.0
    ) -> None:
        if not isinstance(client, anthropic.AsyncAnthropic):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise ParamsError(
                f"BatchSender needs an anthropic.AsyncAnthropic client, not {type(client).__name__!r}."
            )
        for name, value in (("poll_interval", poll_interval), ("window", window)):
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value < math.inf:
                raise ParamsError(
                    f"BatchSender({name}=...) must be a number of seconds from 0, not {value!r}."
                )
        self._batcher = _Batcher(client, float(poll_interval), float(window))
        self._client = batch_client(client, self._batcher.submit, self._batcher.check_open)

    @property
    def client(self) -> anthropic.AsyncAnthropic:
        """A copy of the client whose ``messages.create`` sends through the next batch."""
        self._batcher.check_open("sender.client")
        return self._client

    @property
    def batches(self) -> list[str]:
        """The ids of the batches sent, in the order they were created."""
        return list(self._batcher.batches)

    @property
    def poll_interval(self) -> float:
        """Seconds between two retrieves of a batch in flight."""
        return self._batcher.poll_interval

    @property
    def window(self) -> float:
        """Seconds the queue waits, after its first request, for the members that are busy."""
        return self._batcher.window

    def member(self) -> contextlib.AbstractAsyncContextManager[None]:
        """Register the current task as a member (one replay) for the block: the queue waits for it."""
        return self._batcher.member()

    async def __aenter__(self) -> Self:
        batcher = self._batcher
        if batcher.state != "new":
            raise ToolRunnerError("A BatchSender is entered once; make a new one for another `async with`.")
        batcher.changed = anyio.Event()
        group = anyio.create_task_group()
        await group.__aenter__()
        batcher.group, batcher.state = group, "open"
        group.start_soon(batcher.flush_loop, name="toolrunner BatchSender flush")
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> bool | None:
        batcher = self._batcher
        batcher.state = "closed"
        assert batcher.group is not None
        batcher.group.cancel_scope.cancel()  # the flusher, and the batches still in flight (canceled)
        try:
            return await batcher.group.__aexit__(exc_type, exc, tb)
        finally:
            for request in list(batcher.unsettled):  # waiters outside the block
                batcher.settle(request, ToolRunnerError(_CLOSED))


_CLOSED = (
    "The BatchSender closed before the batch of this request ended (its batch was canceled); run "
    "the replays inside `async with BatchSender(client) as sender:`."
)

"""Where a Temporal run keeps its large data: a content-addressed ``PayloadStore``, and the history
kept there by reference.

Workflow history holds what activities take and return, forever, and Temporal caps it (2 MB a
payload, 50 MB and 50K events a run). So a run's large data never enters it:

- a content block larger than ``inline_limit`` bytes (a 10 KB tool result, a long text) is put in
  the store under its SHA-256 and travels as a *stub*: a small block with a ``toolrunner_ref`` key.
  A tool_result stub keeps its ``tool_use_id`` (and ``is_error``); a stub for a reply's block is a
  text block, so the reply still validates as an SDK ``Message``. tool_use and compaction blocks
  stay whole: the lifecycle reads a call's input, and a compaction's summary and tool changes;
  ``max_tokens`` bounds them;
- the history is a chain of *nodes* in the store, one per request: the messages appended since the
  node before (with stubs), the params when they changed, and the key of the node before. A
  request activity takes only what is new and the key of the last node, so what a run writes to
  workflow history grows with each turn's news, not with the history.

Keys are the SHA-256 of the bytes stored, so writing a key twice writes the same bytes: a retried
activity, or two runs with the same tool result, share one payload. Nothing is ever deleted here:
expire old payloads in the store itself (a bucket's lifecycle rule, a TTL) once their runs are over.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

import anyio.to_thread
from anthropic.types import ToolResultBlockParam

from .._core.errors import StateError
from .._core.messages import reply_param
from .._core.types import Reply

__all__ = [
    "REF",
    "FilePayloadStore",
    "MemoryPayloadStore",
    "PayloadStore",
    "Payloads",
    "Snapshot",
    "is_stub",
]

REF = "toolrunner_ref"
"""The key that marks a block as a stub for a block in the store."""


@runtime_checkable
class PayloadStore(Protocol):
    """A store of immutable payloads by key, shared by every worker of a task queue.

    Keys are SHA-256 hex digests of the data, so ``put`` of a key that exists may do nothing, and
    a store never needs to decide between two versions of a key.
    """

    async def put(self, key: str, data: bytes) -> None:
        """Store ``data`` under ``key``; atomically: a reader sees all of it or nothing."""
        ...

    async def get(self, key: str) -> bytes:
        """The data stored under ``key``; raise ``KeyError`` when there is none."""
        ...


class MemoryPayloadStore:
    """Payloads in a dict: for tests, and for workers that all run in one process.

    Attributes:
        payloads: The data by key.
    """

    def __init__(self) -> None:
        self.payloads: dict[str, bytes] = {}

    async def put(self, key: str, data: bytes) -> None:
        self.payloads[key] = data

    async def get(self, key: str) -> bytes:
        return self.payloads[key]

    def __repr__(self) -> str:
        return f"MemoryPayloadStore({len(self.payloads)} payloads)"


class FilePayloadStore:
    """Payloads as files in a directory (``<dir>/ab/abcdef...``), off the event loop.

    Workers on one machine, or on machines that share the directory, can share it. A payload is
    written to a temporary file and renamed into place, so a reader never sees half of one.

    Args:
        directory: Where the payloads go; created if missing.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def __repr__(self) -> str:
        return f"FilePayloadStore({str(self.directory)!r})"

    async def put(self, key: str, data: bytes) -> None:
        await anyio.to_thread.run_sync(self._write, self._path(key), data)

    async def get(self, key: str) -> bytes:
        path = self._path(key)
        try:
            return await anyio.to_thread.run_sync(path.read_bytes)
        except FileNotFoundError:
            raise KeyError(key) from None

    def _path(self, key: str) -> Path:
        if not key.isalnum():
            raise ValueError(f"{key!r} is not a payload key; keys are hex digests.")
        return self.directory / key[:2] / key

    @staticmethod
    def _write(path: Path, data: bytes) -> None:
        if path.exists():
            return  # the same key holds the same bytes
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise


def is_stub(block: object) -> bool:
    """Whether a content block stands for a block in the store."""
    return isinstance(block, Mapping) and REF in block


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The history as of one node: the request params, the ``tools`` param (runnable tools by
    name, raw definitions as given) and the messages, with stubs."""

    params: Mapping[str, Any]
    tools: tuple[Any, ...]
    messages: tuple[Any, ...]


_EMPTY = Snapshot(params={}, tools=(), messages=())


class Payloads:
    """One worker's access to a ``PayloadStore``: stubs out large blocks, keeps history nodes, and
    caches what it read (payloads never change, so the cache is never stale).

    Args:
        store: The store.
        inline_limit: Blocks whose JSON is longer than this many bytes go to the store.
        cache_size: How many payloads and histories to keep in memory.
    """

    def __init__(self, store: PayloadStore, *, inline_limit: int = 1024, cache_size: int = 2048) -> None:
        self.store = store
        self.inline_limit = inline_limit
        self._cache: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._cache_size = cache_size

    # -- blocks ---------------------------------------------------------------------------------

    async def stash_result(self, block: ToolResultBlockParam) -> ToolResultBlockParam:
        """A tool_result block as workflow history carries it: itself, or a stub."""
        key = await self._stash(block)
        if key is None:
            return block
        stub: dict[str, Any] = {"type": "tool_result", "tool_use_id": block["tool_use_id"], REF: key}
        for name in ("is_error", "toolset_name"):  # what the lifecycle and the service read
            if name in block:
                stub[name] = cast("Mapping[str, Any]", block)[name]
        return cast(ToolResultBlockParam, stub)

    async def stash_reply(self, reply: Reply) -> dict[str, Any]:
        """A reply as workflow history carries it (JSON): each block that the history would keep
        and that is larger than the limit becomes a stub, except tool_use and compaction blocks."""
        data = reply.model_dump(mode="json", by_alias=True, exclude_unset=True, warnings=False)
        content: list[Any] = []
        for block, kept in zip(data["content"], reply_param(reply)["content"], strict=True):
            key = None if block.get("type") in _WHOLE else await self._stash(kept)
            content.append(block if key is None else {"type": "text", "text": "", REF: key})
        data["content"] = content
        return data

    async def stash_value(self, value: Any) -> Any:
        """JSON data (a typed answer) as workflow history carries it: itself, or a stub
        ``{"toolrunner_ref": key}`` when its JSON is longer than the limit."""
        data = _encode(value)
        if value is None or len(data) <= self.inline_limit:
            return value
        key = await self._put(data)
        self._remember(("block", key), value)
        return {REF: key}

    async def load_value(self, value: Any) -> Any:
        """``stash_value``'s data, whole."""
        return await self._load(value[REF]) if is_stub(value) else value

    async def resolve(self, messages: Sequence[Any]) -> list[Any]:
        """The messages with every stub replaced by the block it stands for."""
        return [await self._resolve_message(message) for message in messages]

    async def _resolve_message(self, message: Any) -> Any:
        if not isinstance(message, Mapping):
            return message
        message = cast("Mapping[str, Any]", message)
        content: object = message.get("content")
        if not isinstance(content, list) or not any(is_stub(block) for block in cast("list[Any]", content)):
            return message
        blocks = [
            await self._load(block[REF]) if is_stub(block) else block for block in cast("list[Any]", content)
        ]
        return {**message, "content": blocks}

    # -- history nodes --------------------------------------------------------------------------

    async def save_history(
        self,
        base: str | None,
        *,
        params: Mapping[str, Any] | None,
        tools: Sequence[Any] | None,
        messages: Sequence[Any],
    ) -> tuple[str, Snapshot]:
        """Store the node that follows ``base`` with what is new; its key and the whole history.

        ``params`` and ``tools`` are ``None`` when they are the same as ``base``'s.
        """
        before = await self.load_history(base) if base is not None else _EMPTY
        if base is None and (params is None or tools is None):
            raise StateError("the first request of a run must carry its params and tools; this is a bug.")
        node = {"parent": base, "params": params, "tools": tools, "messages": list(messages)}
        key = await self._put(_encode(node))
        snapshot = Snapshot(
            params=before.params if params is None else params,
            tools=before.tools if tools is None else tuple(tools),
            messages=(*before.messages, *messages),
        )
        self._remember(("history", key), snapshot)
        return key, snapshot

    async def load_history(self, key: str) -> Snapshot:
        """The history as of the node ``key``: read back along the chain to a node in the cache."""
        chain: list[Mapping[str, Any]] = []
        snapshot: Snapshot | None = None
        cursor: str | None = key
        while cursor is not None:
            snapshot = self._recall(("history", cursor))
            if snapshot is not None:
                break
            node = cast("Mapping[str, Any]", json.loads(await self._get(cursor)))
            chain.append(node)
            cursor = node["parent"]
        snapshot = snapshot or _EMPTY
        for node in reversed(chain):
            snapshot = Snapshot(
                params=snapshot.params if node["params"] is None else node["params"],
                tools=snapshot.tools if node["tools"] is None else tuple(node["tools"]),
                messages=(*snapshot.messages, *node["messages"]),
            )
        self._remember(("history", key), snapshot)
        return snapshot

    # -- the store, through the cache -----------------------------------------------------------

    async def _stash(self, block: Mapping[str, Any]) -> str | None:
        data = _encode(block)
        if len(data) <= self.inline_limit:
            return None
        key = await self._put(data)
        self._remember(("block", key), block)
        return key

    async def _load(self, key: str) -> Any:
        block = self._recall(("block", key))
        if block is None:
            block = json.loads(await self._get(key))
            self._remember(("block", key), block)
        return block

    async def _put(self, data: bytes) -> str:
        key = hashlib.sha256(data).hexdigest()
        await self.store.put(key, data)
        return key

    async def _get(self, key: str) -> bytes:
        try:
            return await self.store.get(key)
        except KeyError:
            raise StateError(
                f"the payload store {self.store!r} has no payload {key!r}, which a run refers to; a store must keep "
                "a run's payloads until the run is over (check its expiry rules), and every worker must use the same store."
            ) from None

    def _remember(self, key: tuple[str, str], value: Any) -> None:
        self._cache[key] = value
        self._cache.move_to_end(key)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _recall(self, key: tuple[str, str]) -> Any:
        value = self._cache.get(key)
        if value is not None:
            self._cache.move_to_end(key)
        return value


_WHOLE = ("tool_use", "compaction")
"""The blocks of a reply that never become stubs: the run's orchestration reads them."""


def _encode(value: object) -> bytes:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode()

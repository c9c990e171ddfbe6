"""What the inbox adds to every exchange: the security headers of each response (a content security
policy that runs no script but the inbox's own file, no framing, no sniffing), and a limit on the
size of a request's body, enforced before any handler reads it."""

from __future__ import annotations

from typing import Any

from starlette.responses import PlainTextResponse

__all__ = ["BODY_LIMIT", "BodyLimit", "SecurityHeaders"]

BODY_LIMIT = 4 * 1024**2
"""The largest request body the inbox reads (an edited input or an answer is within it)."""

_POLICY = "; ".join(
    [
        "default-src 'none'",
        "script-src 'self'",
        "style-src 'self'",
        "img-src 'self'",
        "connect-src 'self'",
        "form-action 'self'",
        "base-uri 'none'",
        "frame-ancestors 'none'",
    ]
)
_HEADERS = [
    (b"content-security-policy", _POLICY.encode()),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"same-origin"),
    (b"cross-origin-opener-policy", b"same-origin"),
]


class BodyLimit:
    """Refuses (413) a request body larger than ``BODY_LIMIT`` before any handler reads it: the
    login form is read before anyone is known, so its size cannot wait for a session."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http" or scope["method"] in ("GET", "HEAD"):
            await self.app(scope, receive, send)
            return
        too_large = PlainTextResponse(
            f"The form is larger than {BODY_LIMIT // 1024**2} MiB, so it was not read; send a shorter one.",
            status_code=413,
        )
        declared = dict(scope["headers"]).get(b"content-length", b"")
        if declared.isdigit() and int(declared) > BODY_LIMIT:  # refused before a byte of it is read
            await too_large(scope, receive, send)
            return
        chunks: list[bytes] = []
        size = 0
        more = True
        while more:  # a body of no stated length (chunked) is counted as it comes
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk: bytes = message.get("body", b"")
            size += len(chunk)
            if size > BODY_LIMIT:
                await too_large(scope, receive, send)
                return
            chunks.append(chunk)
            more = bool(message.get("more_body", False))
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


class SecurityHeaders:
    """Adds the security headers to every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_headers(message: Any) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)

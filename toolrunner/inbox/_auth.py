"""Who may use the inbox, and which requests may change something.

- **The token.** Every request but the login page's needs a session, and a session is had only by
  giving the token (``Sessions.check_token``, in constant time).
- **The session** is a cookie (``HttpOnly``, ``SameSite=Lax``, ``Secure`` over HTTPS) that holds the
  person's name, a random id and when it was issued, signed with a key derived from the token: the
  processes that share the token accept each other's sessions, and a new token ends every session.
- **CSRF.** A form that changes something carries a token derived from the session's id
  (``Sessions.csrf``), which a page of another site cannot read; and a request whose ``Origin`` (or
  ``Referer``) is another origin than the inbox's own is refused before its form is read
  (``same_origin``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass
from urllib.parse import urlsplit

__all__ = ["COOKIE", "MIN_TOKEN", "Session", "Sessions", "new_token", "origin_of", "safe_next", "same_origin"]

COOKIE = "toolrunner_inbox"
"""The session cookie's name."""
MIN_TOKEN = 16
"""The fewest characters a given token may have."""


def new_token() -> str:
    """A token for a new inbox: 256 random bits, URL-safe."""
    return secrets.token_urlsafe(32)


@dataclass(frozen=True, slots=True)
class Session:
    """A person logged in: the name they gave (who decides), the session's id, and when it began
    (seconds since the epoch)."""

    name: str
    id: str
    issued: int


class Sessions:
    """Issues and reads the session cookies and CSRF tokens of one token.

    Args:
        token: What a person gives at the login page.
        max_age: Seconds a session lasts.
        now: The clock (seconds since the epoch).
    """

    def __init__(self, token: str, *, max_age: float, now: Callable[[], float] = time.time) -> None:
        self._token = hashlib.sha256(token.encode()).digest()
        self._key = hmac.new(token.encode(), b"toolrunner inbox session", hashlib.sha256).digest()
        self.max_age = max_age
        self._now = now

    def check_token(self, given: str) -> bool:
        """Whether ``given`` is the token (compared in constant time, its length included)."""
        return hmac.compare_digest(hashlib.sha256(given.encode(errors="surrogatepass")).digest(), self._token)

    def issue(self, name: str) -> str:
        """A new session of ``name``, as the cookie's value."""
        payload = {"name": name, "id": secrets.token_hex(16), "issued": int(self._now())}
        body = _b64(json.dumps(payload, ensure_ascii=True, separators=(",", ":")).encode())
        return f"{body}.{self._sign(body)}"

    def read(self, cookie: str | None) -> Session | None:
        """The session a cookie holds, or ``None``: no cookie, a forged or damaged one, or one
        older than ``max_age``."""
        if not cookie or "." not in cookie:
            return None
        body, signature = cookie.rsplit(".", 1)
        if not hmac.compare_digest(signature, self._sign(body)):
            return None
        try:
            data = json.loads(_unb64(body))
            session = Session(str(data["name"]), str(data["id"]), int(data["issued"]))
        except (ValueError, KeyError, TypeError, binascii.Error):
            return None
        if not 0 <= self._now() - session.issued < self.max_age:
            return None
        return session

    def csrf(self, session: Session) -> str:
        """The CSRF token of the forms of ``session``'s pages."""
        return hmac.new(self._key, f"csrf:{session.id}".encode(), hashlib.sha256).hexdigest()

    def check_csrf(self, session: Session, given: object) -> bool:
        """Whether a form sent ``session``'s CSRF token."""
        return isinstance(given, str) and hmac.compare_digest(given.encode(), self.csrf(session).encode())

    def _sign(self, body: str) -> str:
        return _b64(hmac.new(self._key, f"session:{body}".encode(), hashlib.sha256).digest())


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def origin_of(url: str) -> str | None:
    """The origin of a URL (``scheme://host[:port]``, lower case), or ``None`` for one without."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    default = {"http": 80, "https": 443}[parts.scheme]
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{parts.scheme}://{host}" + ("" if port in (None, default) else f":{port}")


def same_origin(
    origin: str | None, referer: str | None, allowed: Collection[str], *, fetch_site: str | None = None
) -> bool:
    """Whether a request that changes something comes from a page of the inbox: the browser's
    ``Sec-Fetch-Site`` (``fetch_site``) does not say another site or origin sent it, and its
    ``Origin`` header, or when a browser sent none, its ``Referer``'s origin, is one of
    ``allowed``. A request with neither (some privacy settings strip both) passes here, and its
    CSRF token decides."""
    if fetch_site is not None and fetch_site.lower() not in ("same-origin", "none"):
        return False  # "cross-site", or "same-site": another port or subdomain of the same site
    if origin is not None:
        return origin_of(origin) in allowed  # "null" (a sandboxed or file page) is no origin: refused
    if referer is not None:
        return origin_of(referer) in allowed
    return True


def safe_next(path: object) -> str:
    """Where to go after logging in: a path of this site (``/run?id=...``), else the inbox's start.
    Never another site (``//evil.example``, ``/\\evil.example``, ``https://...``)."""
    if (
        not isinstance(path, str)
        or not path.startswith("/")
        or path.startswith(("//", "/\\"))
        or any(ord(character) < 0x20 or character == "\\" for character in path)
    ):
        return "/"
    return path

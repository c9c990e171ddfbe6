"""Store URLs as they may be shown: never with a secret, in any form libpq reads one.

A PostgreSQL store is given a libpq connection string, which holds a password in the user
information of a URL (``postgresql://app:secret@db/agents``), in a query parameter of one
(``?password=secret``, ``?sslpassword=...``, their names and values percent-encoded or not), or as a
keyword/value pair (``host=db password='se cret'``). Whatever toolrunner prints or puts in a
message (the command line's output and errors, the lines ``runs show`` gives to paste, the inbox)
goes through ``shown_url``, or leaves the URL out when ``holds_secret`` says it holds one.

Pure, and imports nothing of the package: the command line uses it before it loads a store.
"""

from __future__ import annotations

import re
import urllib.parse

__all__ = ["MASK", "SECRET_KEYS", "holds_secret", "is_conninfo", "shown_url"]

SECRET_KEYS = frozenset({"password", "sslpassword"})
"""The libpq parameters whose values are secrets."""
MASK = "***"
"""What a secret is shown as."""
_HIDDEN = "<connection settings that cannot be read>"

_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://")
_KEYWORDS = (
    "host", "hostaddr", "port", "dbname", "user", "password", "passfile", "require_auth",
    "channel_binding", "connect_timeout", "client_encoding", "options", "application_name",
    "fallback_application_name", "keepalives", "keepalives_idle", "keepalives_interval",
    "keepalives_count", "tcp_user_timeout", "replication", "gssencmode", "sslmode", "sslnegotiation",
    "requiressl", "sslcompression", "sslcert", "sslkey", "sslpassword", "sslcertmode", "sslrootcert",
    "sslcrl", "sslcrldir", "sslsni", "requirepeer", "ssl_min_protocol_version", "ssl_max_protocol_version",
    "krbsrvname", "gsslib", "gssdelegation", "service", "target_session_attrs", "load_balance_hosts",
)  # fmt: skip
"""The keywords of libpq's connection strings (PostgreSQL 17)."""
_CONNINFO = re.compile(rf"(?:^|\s)(?:{'|'.join(_KEYWORDS)})\s*=")


def is_conninfo(text: str) -> bool:
    """Whether ``text`` is a libpq keyword/value connection string (``host=db dbname=agents``)
    rather than a URL or a file's path: no ``scheme://``, and a libpq keyword followed by ``=``."""
    return _SCHEME.match(text) is None and _CONNINFO.search(text) is not None


def shown_url(text: str) -> str:
    """``text`` (a store URL, a keyword/value connection string, or a path) as it may be shown:
    each secret libpq would read in it is ``***``. A keyword/value string that cannot be read
    whole is not shown at all."""
    if _SCHEME.match(text):
        return _shown_uri(text)
    if is_conninfo(text):
        pairs = _pairs(text)
        if pairs is None:
            return _HIDDEN
        return " ".join(f"{key}={MASK if key in SECRET_KEYS else value}" for key, value in pairs)
    return text


def holds_secret(text: str) -> bool:
    """Whether ``text`` holds a secret that ``shown_url`` masks (an empty password counts too)."""
    return shown_url(text) != text


def _shown_uri(uri: str) -> str:
    scheme, _, rest = uri.partition("://")
    head, mark, query = rest.partition("?")
    # The user information ends at the last "@" before the query: a password with an "@" or a "/"
    # left unencoded is masked whole rather than shown in part.
    userinfo, at, hosts = head.rpartition("@")
    if at and ":" in userinfo:
        head = f"{userinfo.partition(':')[0]}:{MASK}@{hosts}"
    if mark:
        parameters = [_shown_parameter(parameter) for parameter in query.split("&")]
        return f"{scheme}://{head}?{'&'.join(parameters)}"
    return f"{scheme}://{head}"


def _shown_parameter(parameter: str) -> str:
    key, equals, _ = parameter.partition("=")
    if urllib.parse.unquote(key).strip() in SECRET_KEYS:  # libpq decodes a name as it does a value
        return f"{key}{equals}{MASK}"
    return parameter


def _pairs(text: str) -> list[tuple[str, str]] | None:
    """The keyword/value pairs of a libpq connection string, each value as written (quoted or
    not); ``None`` if it cannot be read whole (libpq's own ``conninfo_parse``)."""
    pairs: list[tuple[str, str]] = []
    position, end = 0, len(text)
    while True:
        while position < end and text[position].isspace():
            position += 1
        if position == end:
            return pairs
        start = position
        while position < end and text[position] != "=" and not text[position].isspace():
            position += 1
        key = text[start:position]
        while position < end and text[position].isspace():
            position += 1
        if position == end or text[position] != "=" or not key:
            return None
        position += 1
        while position < end and text[position].isspace():
            position += 1
        start = position
        if position < end and text[position] == "'":
            position += 1
            while position < end and text[position] != "'":
                position += 2 if text[position] == "\\" else 1
            if position >= end:
                return None  # an unterminated quote: libpq refuses it
            position += 1
        else:
            while position < end and not text[position].isspace():
                position += 2 if text[position] == "\\" else 1
        pairs.append((key, text[start : min(position, end)]))

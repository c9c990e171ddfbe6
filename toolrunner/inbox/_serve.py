"""Serving the inbox: ``toolrunner inbox --store URL`` (``serve``), and ``app_from_environment``
for ``uvicorn --factory`` with several worker processes."""

from __future__ import annotations

import ipaddress
import os
import re
import socket
from collections.abc import Collection
from typing import TextIO

from starlette.applications import Starlette

from .._stores.open import open_store
from ._app import create_app
from ._auth import new_token

__all__ = ["ORIGINS_VARIABLE", "STORE_VARIABLE", "TOKEN_VARIABLE", "app_from_environment", "serve"]

STORE_VARIABLE = "TOOLRUNNER_STORE"
TOKEN_VARIABLE = "TOOLRUNNER_INBOX_TOKEN"
ORIGINS_VARIABLE = "TOOLRUNNER_INBOX_ORIGINS"


def app_from_environment() -> Starlette:
    """The inbox over the store ``$TOOLRUNNER_STORE`` names, with the token
    ``$TOOLRUNNER_INBOX_TOKEN`` (and the origins of ``$TOOLRUNNER_INBOX_ORIGINS``, separated by
    spaces or commas), closing the store when it shuts down: a factory for ``uvicorn --factory
    toolrunner.inbox:app_from_environment --workers 4``, whose worker processes each make their own.

    Raises:
        ValueError: A variable is missing, or the token is shorter than 16 characters.
    """
    url = os.environ.get(STORE_VARIABLE, "")
    token = os.environ.get(TOKEN_VARIABLE, "")
    if not url or not token:
        raise ValueError(
            f"the inbox needs ${STORE_VARIABLE} (the store's URL) and ${TOKEN_VARIABLE} (the token every "
            "process of the inbox shares) in its environment; set both."
        )
    origins = [origin for origin in re.split(r"[\s,]+", os.environ.get(ORIGINS_VARIABLE, "")) if origin]
    return create_app(open_store(url), token=token, origins=origins, close_store=True)


def serve(
    url: str,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
    origins: Collection[str] = (),
    poll_interval: float = 2.0,
    root_path: str = "",
    err: TextIO,
) -> None:
    """Serve the inbox over the store at ``url`` until interrupted (Ctrl-C), printing on ``err``
    where it listens and, when it made the token itself, the token (only there, once).
    ``root_path`` is the path a reverse proxy serves it under (``/inbox``)."""
    if root_path and (not root_path.startswith("/") or root_path.endswith("/")):
        raise ValueError(
            f"the root path must start with a slash and not end with one, like '/inbox', not {root_path!r}."
        )
    store = open_store(url)
    made = token is None
    token = new_token() if token is None else token
    app = create_app(store, token=token, origins=origins, poll_interval=poll_interval, close_store=True)
    listener = _listen(host, port)
    bound_host, bound_port = listener.getsockname()[:2]
    shown_host = f"[{bound_host}]" if ":" in bound_host else bound_host
    print(
        f"toolrunner inbox: the runs of {store!r}, at http://{shown_host}:{bound_port}{root_path}/ (Ctrl-C stops it)",
        file=err,
    )
    if made:
        print(
            f"Log in with the token {token}\n(made now and shown only here; to keep one across restarts, or share it "
            f"between processes, give it in ${TOKEN_VARIABLE} or --token-file)",
            file=err,
        )
    if not _loopback(bound_host):
        print(
            f"toolrunner inbox: listening on {bound_host}, beyond this machine, over plain HTTP: serve it behind a "
            "reverse proxy that speaks HTTPS (see docs/inbox.md).",
            file=err,
        )
    err.flush()
    import uvicorn

    config = uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        root_path=root_path,
        proxy_headers=True,  # the scheme and client a proxy on $FORWARDED_ALLOW_IPS (127.0.0.1) forwards
        timeout_graceful_shutdown=2,  # the live list's event streams stay open until closed
    )
    uvicorn.Server(config).run(sockets=[listener])


def _listen(host: str, port: int) -> socket.socket:
    family, kind, protocol, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )[0]
    listener = socket.socket(family, kind, protocol)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        listener.bind(address)
    except OSError as error:
        listener.close()
        raise OSError(
            f"the inbox cannot listen on {host}:{port} ({error.strerror}); pick another --port."
        ) from None
    listener.listen(128)
    return listener


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"

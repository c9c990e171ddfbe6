"""Errors of the service and of the network, sorted: those that may pass by themselves
(``transient``) and those that asking again will not change (``permanent``), as pure decisions.

The rule is the SDK's own rule of what to retry, read from the error alone: a request the service
rate-limited (429) or found overloaded (529) or failed on (5xx), one that timed out (408) or met a
conflict (409), and a connection lost or timed out, may pass; every other answer the service
refused a request with (400 invalid, 401 and 403 not allowed, 404 no such model, 413 too large,
422, ...) will come again for the same request. The SDK retried the transient ones already
(``max_retries``) before the error reached toolrunner.

Read by what decides on such an error: a sub-run whose request failed (``_core.subruns``: a
permanent error ends the sub-run with an error result, a transient one is raised) and a resumer
that tries a failed run again (``_ops.resumer``).
"""

from __future__ import annotations

import anthropic

__all__ = ["permanent", "transient"]

_RETRIED = (408, 409, 429)
"""The 4xx statuses the SDK retries (with every 5xx)."""


def transient(error: BaseException) -> bool:
    """Whether ``error`` is an API error that may pass by itself: a connection lost or timed out,
    or an answer of status 408, 409, 429 or 5xx (529, overloaded, among them)."""
    if isinstance(error, anthropic.APIConnectionError):  # its APITimeoutError too
        return True
    if isinstance(error, anthropic.APIStatusError):
        return error.status_code in _RETRIED or error.status_code >= 500
    return False


def permanent(error: BaseException) -> bool:
    """Whether ``error`` is an API error that the same request will meet again: an answer of any
    other status (400, 401, 403, 404, 413, 422, ...). Neither transient nor permanent: any error
    that is not the service's answer or the connection's (a bug, a store's, a cancellation)."""
    return isinstance(error, anthropic.APIStatusError) and not transient(error)

"""Request params checked as the installed SDK's ``messages.create`` takes them, for whoever sends
a run's requests: a ``ToolRunner`` (``_runner.params.check_params``) and a ``SubAgent`` (its
``params``, at construction), so that both refuse the same names and values with the same words.

- ``check_param_names``: every name must be a param of ``client.messages.create`` (or of the beta
  endpoint's); a typo is named with the name it is closest to;
- ``check_param_values``: what a request could never carry (text with lone surrogates);
- ``split_transport``: the params that say how to send (``TRANSPORT``: headers, query, timeout),
  kept apart from the run's state, so a secret in a header is never saved.

Pure functions with no I/O: each raises a ``ParamsError`` whose message says what to do.
"""

from __future__ import annotations

import difflib
import inspect
from collections.abc import Collection, Mapping
from functools import cache
from typing import Any

from anthropic.resources.beta.messages import AsyncMessages as _BetaMessages
from anthropic.resources.messages import AsyncMessages as _Messages

from .._core.errors import ParamsError
from .._core.unicode import sendable

__all__ = [
    "TRANSPORT",
    "beta_only_params",
    "check_param_names",
    "check_param_values",
    "known_param_names",
    "split_transport",
]

TRANSPORT = ("extra_headers", "extra_query", "timeout")
"""Request params that say how to send, not what: not part of the run's state (never saved, so a
secret in a header stays out of the store), given again on resume."""


def split_transport(params: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``params`` as two: those the run's state keeps, and the transport params (``TRANSPORT``),
    which it never keeps (the one place that decides which params are never saved)."""
    kept = {name: value for name, value in params.items() if name not in TRANSPORT}
    return kept, {name: params[name] for name in TRANSPORT if name in params}


def check_param_names(
    params: Collection[str],
    *,
    options: Collection[str],
    advice: str,
    where: str = "",
    notes: Mapping[str, str] | None = None,
) -> None:
    """Every name of ``params`` (but ``tools``) must be a param of ``client.messages.create``.

    Args:
        params: The names given.
        options: The other names the caller takes (a runner's options, a sub-agent's arguments),
            which a misspelt name may be close to.
        advice: What to do, said after the name refused.
        where: What the params are of, before the message (``"the SubAgent 'x': "``).
        notes: A further note for a name, said last (where it goes instead).

    Raises:
        ParamsError: A name is not a param; the message names it, and the closest name if any.
    """
    known = known_param_names()
    for name in params:
        if name not in known and name != "tools":
            close = difflib.get_close_matches(name, known | frozenset(options), n=1)
            hint = f" Did you mean {close[0]!r}?" if close else ""
            raise ParamsError(
                f"{where}{name!r} is not a parameter of client.messages.create.{hint} {advice}"
                + (notes or {}).get(name, "")
            )


def check_param_values(params: Mapping[str, Any], *, where: str = "", skip: Collection[str] = ()) -> None:
    """The values of ``params`` (but those named in ``skip``) must be sendable as UTF-8.

    Raises:
        ParamsError: A value holds text with lone surrogates; the message names its param.
    """
    for name, value in params.items():
        if name not in skip and sendable(value) is not value:
            raise ParamsError(
                f"{where}the param {name!r} holds text with lone surrogates (as os.listdir gives for names that are "
                "not UTF-8), which cannot be sent as UTF-8; replace them first, for example with "
                "text.encode('utf-16-le', 'surrogatepass').decode('utf-16-le', 'replace')."
            )


@cache
def known_param_names() -> frozenset[str]:
    """The params either endpoint's ``create`` takes, as the installed SDK declares them (``stream``
    aside: a run streams by its own option)."""
    names: set[str] = set()
    names.update(inspect.signature(_Messages.create).parameters)
    names.update(inspect.signature(_BetaMessages.create).parameters)
    names -= {"self", "stream"}  # stream=True is a runner option
    return frozenset(names)


@cache
def beta_only_params() -> frozenset[str]:
    """The params only the beta endpoint's ``create`` takes (``fallbacks``, ``mcp_servers``,
    ``context_management``, ...), as the installed SDK declares them: a request with one of them
    goes to ``client.beta.messages``, as the SDK's runner sends every request."""
    beta = set(inspect.signature(_BetaMessages.create).parameters)
    return frozenset(beta - set(inspect.signature(_Messages.create).parameters) - {"betas"})

"""The rules for the text a store keeps as a name: a run's id, and who decided a call (``by=``).

One rule each, checked at every way in (the runner, a store's methods, the command line and the
inbox) before anything is saved, so that no store is given a name another store, or a page, cannot
take. Both are text every store can save and every page can show on one line:

- a **run id** is a ``str`` of 1 to ``RUN_ID_LIMIT`` characters, with no control character (C0,
  DEL, C1: PostgreSQL's text cannot hold NUL, and a tab or a newline breaks the lines of a listing),
  no line or paragraph separator, no invisible format character (Unicode's ``Cf``: a zero-width
  space, a byte order mark, a bidirectional override that shows ``ada`` for another name; the
  zero-width joiner and non-joiner stay, as names in Persian or emoji sequences need them) and no
  lone surrogate (UTF-8 cannot encode one). The limit keeps
  it within what PostgreSQL can index (about 2,700 bytes; 512 characters take at most 2,048);
- a **decider** (``by=``) is ``None`` (not known) or a ``str`` of the same text, with something
  besides spaces in it, of at most ``BY_LIMIT`` characters: a name or a user id (an e-mail address,
  an identity provider's subject: both at most 255).

Pure and cheap: no I/O, nothing imported beyond the errors.
"""

from __future__ import annotations

import re
import unicodedata

from .errors import ApprovalError, ParamsError

__all__ = [
    "BY_LIMIT",
    "RUN_ID_LIMIT",
    "check_by",
    "check_reason",
    "check_run_id",
    "storable_text",
    "unshowable",
    "unshowable_problem",
]

RUN_ID_LIMIT = 512
"""The most characters of a run id."""
BY_LIMIT = 256
"""The most characters of who decided a call."""

_UNSHOWABLE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff]")
_UNSTORABLE = re.compile("[\x00\ud800-\udfff]")
_JOINERS = "\u200c\u200d"
"""The format characters a name may hold: scripts (Persian, Indic) and emoji sequences need them."""


def unshowable(text: str) -> str | None:
    """The first character of ``text`` that a name may not hold (a control character, a line or
    paragraph separator, a lone surrogate, an invisible format character other than a joiner),
    described; ``None`` if there is none."""
    found = _UNSHOWABLE.search(text)
    if found is None:
        if text.isascii():
            return None
        for index, char in enumerate(text):
            if char not in _JOINERS and unicodedata.category(char) == "Cf":
                return f"an invisible format character ({char!r}, at {index})"
        return None
    char = found.group()
    if "\ud800" <= char <= "\udfff":
        return "lone surrogates (as os.listdir gives for file names that are not UTF-8)"
    kind = "a line separator" if char in "\u2028\u2029" else "a control character"
    return f"{kind} ({char!r}, at {found.start()})"


def unshowable_problem(what: str, text: str, *, shown_on: str = "page") -> str | None:
    """What is wrong with ``text`` as a name (``what`` names it in the message), if it holds a
    character a name may not hold (``unshowable``): the start of the error every check of a name
    gives; ``None`` if it holds none."""
    problem = unshowable(text)
    if problem is None:
        return None
    return f"{what} holds {problem}, which not every store can save or every {shown_on} show"


def storable_text(text: object) -> bool:
    """Whether ``text`` is a ``str`` every store can take as a value (no NUL, which PostgreSQL's
    text refuses, and no lone surrogate, which UTF-8 cannot encode). Looser than a run id: what
    a store lists (a cursor's key, say) may come from before the rule."""
    return isinstance(text, str) and _UNSTORABLE.search(text) is None


def check_run_id(run_id: object, name: str = "run_id") -> str:
    """``run_id``, checked to be a run id every store can save (see the module docstring).

    Raises:
        ParamsError: It is not; the message says why, and what to give.
    """
    if not isinstance(run_id, str):
        raise ParamsError(
            f"{name} must be a str (the run's name in the store), not {type(run_id).__name__!r}; "
            f"for example {name}='order-42'."
        )
    if not run_id:
        raise ParamsError(f"{name} must name the run, not be empty; for example {name}='order-42'.")
    if len(run_id) > RUN_ID_LIMIT:
        raise ParamsError(
            f"{name} {run_id[:40]!r}... is {len(run_id):,} characters long; a run id has at most "
            f"{RUN_ID_LIMIT} (what every store can index): name the run with a shorter id, or a hash of this one."
        )
    problem = unshowable_problem(f"{name} {run_id!r}", run_id)
    if problem is not None:
        raise ParamsError(
            f"{problem}; name the run with printable text (from a file name that is not UTF-8: "
            "os.fsencode(name).hex())."
        )
    return run_id


def check_by(by: object, name: str = "by=") -> str | None:
    """``by``, checked to be who decided a call as every store can save it and every page show it
    (see the module docstring): ``None``, or a name or an id as text. ``name`` is what the message
    calls it (``"--by "`` on the command line).

    Raises:
        ApprovalError: It is not; the message says why, and nothing is decided.
    """
    if by is None:
        return None
    option = name.rstrip()
    if not isinstance(by, str):
        example = f"str({by!r})" if isinstance(by, int) and not isinstance(by, bool) else "'ada'"
        raise ApprovalError(
            f"{option} takes who decided, as a str (a name or an id), not {type(by).__name__!r}; give it as text "
            f"({name}{example}), or leave it out. Nothing was decided."
        )
    if not by.strip():
        raise ApprovalError(
            f"{name}{by!r} names no one; give who decided (a name or an id), or leave {option} out. Nothing was "
            "decided."
        )
    if len(by) > BY_LIMIT:
        raise ApprovalError(
            f"{option} is {len(by):,} characters long; who decided is kept with the call and shown on every page, "
            f"so give a name or an id of at most {BY_LIMIT} characters. Nothing was decided."
        )
    problem = unshowable_problem(f"{name}{by!r}", by)
    if problem is not None:
        raise ApprovalError(f"{problem}; give a name or an id of printable text. Nothing was decided.")
    return by


def check_reason(tool_use_id: str, reason: object) -> str:
    """A denial's reason, checked to be text the model can read (every way of denying shares it).

    Raises:
        ApprovalError: It is not a str, or holds nothing but spaces; the call still waits.
    """
    if not isinstance(reason, str) or not reason.strip():
        raise ApprovalError(
            f"denying {tool_use_id!r} needs a reason the model can read, not {reason!r}; for example 'The "
            "amount is over the limit; ask the user first.'"
        )
    return reason

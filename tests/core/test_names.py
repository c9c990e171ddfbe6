"""The rule for names a store keeps (``_core/ids.py``): a run id and who decided. Every way in uses
these two checks (tests/stores/test_store_edges.py shows each entry point refusing what they refuse); here,
what the rule itself takes and refuses."""

from __future__ import annotations

import pytest

from toolrunner import ApprovalError, ParamsError
from toolrunner._core.ids import check_by, check_run_id

INVISIBLE = [
    "\u202eada",  # a right-to-left override: shows another name than the one kept
    "ada\u2066bob\u2069",  # an isolate
    "\ufeffada",  # a byte order mark
    "a\u200bda",  # a zero-width space
    "ada\u00ad",  # a soft hyphen
    "ada\u2060",  # a word joiner
]
"""Names with an invisible format character (Unicode's Cf): each shows as another text."""

WRITTEN_WITH_JOINERS = [
    "\u0645\u06cc\u200c\u0631\u0648\u0645",  # Persian: the zero-width non-joiner is part of the spelling
    "\U0001f469\u200d\U0001f4bb",  # an emoji sequence, joined
    "Zoë Ådahl",
    "\u674e\u96f7",
]


@pytest.mark.parametrize("name", INVISIBLE, ids=ascii)
def test_an_invisible_format_character_is_refused_in_a_decider_and_a_run_id(name: str) -> None:
    with pytest.raises(ApprovalError, match=r"invisible format character .* Nothing was decided"):
        check_by(name)
    with pytest.raises(ParamsError, match="invisible format character"):
        check_run_id(name)


@pytest.mark.parametrize("name", WRITTEN_WITH_JOINERS, ids=ascii)
def test_names_in_any_script_are_kept_as_given(name: str) -> None:
    assert check_by(name) == name
    assert check_run_id(name) == name

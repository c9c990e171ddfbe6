"""The names that left ``toolrunner.__all__`` (``_DEPRECATED``) still work until they go, warn at
each use with what to use instead, and are in no star import, no ``dir()`` and no page of the docs
but the list of them in docs/api.md."""

from __future__ import annotations

import importlib
import re
import warnings
from pathlib import Path

import pytest

import toolrunner
from toolrunner import ApprovalError, ToolResultAdapter

ROOT = Path(__file__).resolve().parent.parent
DEPRECATED = toolrunner._DEPRECATED  # pyright: ignore[reportPrivateUsage]
REMOVED_IN = toolrunner._REMOVED_IN  # pyright: ignore[reportPrivateUsage]


def test_the_deprecated_names_are_those_the_issue_took_out() -> None:
    assert set(DEPRECATED) == {
        "Step",
        "STOP_REASON_STEPS",
        "decisions_since",
        "DecidedMeanwhileError",
        "DEFAULT_ADAPTER",
    }


@pytest.mark.parametrize("name", sorted(DEPRECATED))
def test_a_deprecated_name_still_works_and_warns_at_each_use(name: str) -> None:
    module, _ = DEPRECATED[name]
    expected = getattr(importlib.import_module(f"toolrunner.{module}"), name)
    for _ in range(2):  # every use, not only the first
        with pytest.warns(DeprecationWarning, match=rf"^'toolrunner\.{name}' is deprecated") as caught:
            value = getattr(toolrunner, name)
        assert value is expected
        [warning] = caught
        message = str(warning.message)
        assert message.startswith(f"'toolrunner.{name}' is deprecated and goes in toolrunner {REMOVED_IN}: ")
        assert message.endswith("instead.")
        assert warning.filename == __file__  # it points at the code that used the name


def test_from_import_warns_too() -> None:
    with pytest.warns(
        DeprecationWarning, match=r"'toolrunner\.DEFAULT_ADAPTER' .* use ToolResultAdapter\(\)"
    ):
        from toolrunner import DEFAULT_ADAPTER
    assert isinstance(DEFAULT_ADAPTER, ToolResultAdapter)
    assert DEFAULT_ADAPTER.to_content({"a": 1}) == ToolResultAdapter().to_content({"a": 1})


def test_code_that_catches_the_old_error_still_runs() -> None:
    with pytest.warns(DeprecationWarning, match="catch ApprovalError, its base"):
        error_type = toolrunner.DecidedMeanwhileError
    assert issubclass(error_type, ApprovalError)


@pytest.mark.parametrize("name", sorted(DEPRECATED))
def test_a_deprecated_name_is_in_no_all_dir_or_star_import(name: str) -> None:
    assert name not in toolrunner.__all__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # neither lists nor star imports touch a deprecated name
        assert name not in dir(toolrunner)
        namespace: dict[str, object] = {}
        exec("from toolrunner import *", namespace)
    assert name not in namespace
    assert "ToolRunner" in namespace


def _pages() -> list[Path]:
    return [
        ROOT / "README.md",
        *sorted((ROOT / "docs").glob("*.md")),
        *sorted((ROOT / "examples").glob("*.py")),
    ]


@pytest.mark.parametrize("page", _pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_the_docs_use_no_deprecated_name(page: Path) -> None:
    """A reader copies what the docs show. docs/api.md lists the deprecated names in a section of
    their own, and only there."""
    text = page.read_text(encoding="utf-8")
    if page.name == "api.md":
        text = re.sub(r"^## `toolrunner`: deprecated\n.*?(?=^## )", "", text, flags=re.M | re.S)
    used = sorted(name for name in DEPRECATED if re.search(rf"\b{name}\b", text))
    assert not used, (
        f"{page.relative_to(ROOT)} uses {used!r}, which are deprecated; show what docs/api.md's "
        "deprecated section says to use instead."
    )


def test_the_api_reference_lists_each_deprecated_name_with_what_to_use_instead() -> None:
    text = (ROOT / "docs" / "api.md").read_text(encoding="utf-8")
    section = re.search(r"^## `toolrunner`: deprecated\n(.*?)(?=^## )", text, flags=re.M | re.S)
    assert section is not None, "docs/api.md has no section `toolrunner`: deprecated"
    assert REMOVED_IN in section[1]
    for name in DEPRECATED:
        assert re.search(rf"^\|[^|\n]*`{name}`", section[1], flags=re.M), (
            f"the deprecated section lacks {name!r}"
        )

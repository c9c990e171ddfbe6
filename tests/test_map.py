"""The package's map and its sizes: CONTRIBUTING.md's map names every module where it lives, and
no module but the frozen legacy body is over the house rule's size."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "toolrunner"
FROZEN = PACKAGE / "temporal" / "_legacy"
MOST_LINES = 500
"""The house rule (CONTRIBUTING.md): split a module by responsibility before it passes about 500
lines. The test allows no slack: "about" is for the moment one writes, not for what lands."""

PARTS = {
    "_core": "`_core/`",
    "_tracing": "`_tracing/`",
    "_tools": "`_tools/`",
    "_stores": "`_stores/`",
    "_runner": "`_runner/`",
    "_ops": "`_ops/`",
    "temporal": "`toolrunner.temporal`",
    "inbox": "`toolrunner.inbox`",
    "web": "`toolrunner.web`",
    "evals": "`toolrunner.evals`",
    "testing": "`toolrunner.testing`",
}
"""Each subpackage, and the words that open its part of the map."""


def modules() -> list[Path]:
    """Every module of the package but the frozen body and the packages' ``__init__``."""
    return sorted(
        path for path in PACKAGE.rglob("*.py") if FROZEN not in path.parents and path.name != "__init__.py"
    )


def map_parts(text: str) -> dict[str, str]:
    """CONTRIBUTING.md's Layout section cut into each subpackage's part (what follows the first
    line naming it, up to the next subpackage's), with ``""`` for the whole section."""
    start = text.index("## Layout")
    section = text[start : text.index("\n## ", start + 1)]
    lines = section.splitlines()
    opens: list[tuple[int, str]] = []
    for part, words in PARTS.items():
        number = next((n for n, line in enumerate(lines) if line.lstrip().startswith(f"- {words}")), None)
        assert number is not None, f"CONTRIBUTING.md's map has no part for {part}/ (a line '- {words}')"
        opens.append((number, part))
    opens.sort()
    parts = {"": section}
    for (number, part), following in zip(opens, [*opens[1:], (len(lines), "")], strict=True):
        parts[part] = "\n".join(lines[number : following[0]])
    return parts


def test_no_module_is_over_the_house_rule() -> None:
    over = [
        f"{path.relative_to(ROOT)}: {count} lines"
        for path in modules()
        if (count := len(path.read_text(encoding="utf-8").splitlines())) > MOST_LINES
    ]
    assert not over, f"split these by responsibility (CONTRIBUTING.md, Layout): {over}"


def test_the_map_names_every_module_where_it_lives() -> None:
    parts = map_parts((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    missing: list[str] = []
    for path in modules():
        folder = path.relative_to(PACKAGE).parts[0] if path.parent != PACKAGE else ""
        if f"`{path.name}`" not in parts[folder] and f"`{path.relative_to(PACKAGE)}`" not in parts[folder]:
            missing.append(str(path.relative_to(PACKAGE)))
    assert not missing, f"CONTRIBUTING.md's map does not name these where they live: {missing}"


def test_the_map_names_no_module_the_tree_lacks() -> None:
    parts = map_parts((ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8"))
    names = {path.name for path in modules()} | {str(path.relative_to(PACKAGE)) for path in modules()}
    named = set(re.findall(r"`(?:toolrunner/)?([A-Za-z_][\w/]*\.py)`", parts[""]))
    unknown = sorted(
        name
        for name in named
        if name != "__init__.py"
        and not name.startswith(("tests/", "scripts/"))
        and name not in names
        and Path(name).name not in names
    )
    assert not unknown, f"CONTRIBUTING.md's map names modules the tree lacks: {unknown}"


TEST_PATH = re.compile(r"\btests/[\w/]+\.py\b")


def test_every_test_file_the_text_names_is_there() -> None:
    """The package's docstrings and comments, the docs, the benchmarks and the scripts name test
    files by path (``tests/core/test_lifecycle.py``); each must be there, or a reader is sent to a
    file that moved (the frozen body keeps the paths of its day)."""
    texts = [
        *(path for path in PACKAGE.rglob("*.py") if FROZEN not in path.parents),
        *(ROOT / "docs").glob("*.md"),
        *(ROOT / "benchmarks").glob("*"),
        *(ROOT / "scripts").glob("*.py"),
        ROOT / "README.md",
        ROOT / "CONTRIBUTING.md",
        ROOT / "pyproject.toml",
        ROOT / ".ci" / "run",
    ]
    missing = sorted(
        f"{text.relative_to(ROOT)}: {name}"
        for text in texts
        if text.is_file()
        for name in set(TEST_PATH.findall(text.read_text(encoding="utf-8")))
        if not (ROOT / name).is_file()
    )
    assert not missing, f"these name a test file that is not there: {missing}"

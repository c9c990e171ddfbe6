"""The package's metadata says what a package index shows, and says it once.

- The version lives in ``toolrunner.__version__``; ``pyproject.toml`` reads it from there, and
  CHANGELOG.md has a section for it.
- The licence is an SPDX expression with its file (the TOML-table form stops building in 2027).
- README.md is the package index page: its links are absolute, into the project's repository, and
  each names a file of this tree.

What the built wheel and sdist hold, and the wheel installed, are checked by scripts/check_wheel.py
(a step of .ci/run: it builds, which needs PyPI).
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Any

from packaging.version import Version

import toolrunner

ROOT = Path(__file__).resolve().parent.parent


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def repository() -> str:
    return pyproject()["project"]["urls"]["Repository"]


def test_the_version_is_toolrunner_version_which_pyproject_reads() -> None:
    assert "__version__" in toolrunner.__all__
    assert str(Version(toolrunner.__version__)) == toolrunner.__version__, "a normalized PEP 440 version"
    config = pyproject()
    assert "version" not in config["project"], (
        "pyproject.toml gives a version of its own; keep only toolrunner.__version__ (dynamic)."
    )
    assert "version" in config["project"]["dynamic"]
    assert config["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "toolrunner.__version__"}


def test_the_changelog_has_a_section_for_this_version_and_a_link_for_each() -> None:
    text = (ROOT / "CHANGELOG.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## \[([^\]]+)\]", text, flags=re.MULTILINE)
    assert sections, "CHANGELOG.md has no `## [version] - date` sections"
    assert sections[0] == toolrunner.__version__, (
        f"CHANGELOG.md's first section is {sections[0]!r}, not this version, {toolrunner.__version__!r}; "
        "add a section for it."
    )
    links = re.findall(r"^\[([^\]]+)\]: https://", text, flags=re.MULTILINE)
    assert links == sections, "each section of CHANGELOG.md needs its link at the end, in the same order"


def test_the_licence_is_an_spdx_expression_with_its_file() -> None:
    config = pyproject()
    project = config["project"]
    assert project["license"] == "MIT"
    assert project["license-files"] == ["LICENSE"]
    assert (ROOT / "LICENSE").read_text(encoding="utf-8").startswith("MIT License\n")
    # PEP 639: a licence classifier next to an expression is an error for the build backends.
    assert not [c for c in project["classifiers"] if c.startswith("License ::")]
    assert "setuptools>=77" in config["build-system"]["requires"]  # the first to read license-files


def test_the_project_urls_are_in_the_repository() -> None:
    urls: dict[str, str] = pyproject()["project"]["urls"]
    assert {"Homepage", "Documentation", "Repository", "Issues", "Changelog"} <= set(urls)
    outside = {name: url for name, url in urls.items() if not url.startswith(repository())}
    assert not outside, f"project URLs outside the repository {repository()!r}: {outside}"


def test_readmes_links_work_on_a_package_index_page() -> None:
    """A package index shows README.md away from this tree, where a relative link leads nowhere."""
    text = re.sub(r"```.*?```", "", (ROOT / "README.md").read_text(encoding="utf-8"), flags=re.S)
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    assert targets, "README.md has no links"
    relative = [target for target in targets if not re.match(r"https?://|#", target)]
    assert not relative, (
        f"README.md has relative links {relative!r}, which break on a package index page; "
        f"link to {repository()}/blob/main/<path> instead."
    )
    prefix = f"{repository()}/blob/main/"
    broken = [
        target
        for target in targets
        if target.startswith(prefix) and not (ROOT / target.removeprefix(prefix).split("#")[0]).is_file()
    ]
    assert not broken, f"README.md links to files this tree does not have: {broken!r}"
    assert any(target.startswith(prefix) for target in targets)


def test_every_file_of_the_package_that_is_not_python_is_package_data() -> None:
    """What setuptools puts in the wheel besides modules is what ``package-data`` names: a file it
    misses (the inbox's icon, once) is missing from every installed copy. scripts/check_wheel.py
    checks the built wheel too; this catches it without a build."""
    import fnmatch
    import subprocess

    patterns: list[str] = pyproject()["tool"]["setuptools"]["package-data"]["toolrunner"]
    tracked = subprocess.run(
        ["git", "ls-files", "toolrunner"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    data = [path.removeprefix("toolrunner/") for path in tracked if not path.endswith(".py")]
    assert data, "git lists no data file under toolrunner/"
    missing = [path for path in data if not any(fnmatch.fnmatch(path, pattern) for pattern in patterns)]
    assert missing == [], f"add these to [tool.setuptools.package-data]: {missing}"

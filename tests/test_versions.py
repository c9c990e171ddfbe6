"""The versions toolrunner supports are the versions CI tests.

``.ci/run`` runs the suite twice: in ``.venv``, as README.md says (the newest versions), and in
``.venv-floors``, with ``.ci/floors.txt`` as pip constraints (each requirement at the lowest version
``pyproject.toml`` allows). A floor changed in ``pyproject.toml`` and not in ``.ci/floors.txt``, or
the reverse, fails here, so the declared range stays the tested range; so does a floor the
"Supported versions" tables of README.md and docs/index.md do not give.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
FLOORS = ROOT / ".ci" / "floors.txt"
PROJECT = "claude-toolrunner"
# The requirements the README's table lists; docs/index.md lists every one a user installs.
CORE = ("anthropic", "pydantic", "anyio")


def requirements_of(extra: str | None) -> list[Requirement]:
    """The requirements ``pip install '.[extra]'`` installs (the dependencies without an extra), the
    extras of this project that it names followed through."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    extras: dict[str, list[str]] = project["optional-dependencies"]
    requirements = [Requirement(spec) for spec in project["dependencies"]]
    pending, seen = [] if extra is None else [extra], set[str]()
    while pending:
        name = pending.pop()
        if name in seen:
            continue
        seen.add(name)
        for spec in extras[name]:
            requirement = Requirement(spec)
            if canonicalize_name(requirement.name) == PROJECT:
                pending.extend(requirement.extras)
            else:
                requirements.append(requirement)
    return requirements


def floors_of(requirements: list[Requirement]) -> dict[str, Version]:
    floors: dict[str, Version] = {}
    for requirement in requirements:
        lowest = [Version(spec.version) for spec in requirement.specifier if spec.operator == ">="]
        assert len(lowest) == 1, (
            f"{str(requirement)!r} in pyproject.toml needs one `>=` floor, which .ci/run tests; give it one."
        )
        name = canonicalize_name(requirement.name)
        assert name not in floors, f"{name!r} is required twice in pyproject.toml; keep one floor for it."
        floors[name] = lowest[0]
    return floors


def declared_floors() -> dict[str, Version]:
    """The floors of what the floor run installs: ``.[test]``."""
    return floors_of(requirements_of("test"))


def user_floors() -> dict[str, Version]:
    """The floors of what users install: the dependencies and the extras of the library's features."""
    floors = floors_of(requirements_of(None))
    for extra in ("server", "mcp", "otel", "temporal", "postgres", "inbox"):
        floors |= floors_of(requirements_of(extra))
    return floors


def pinned_floors() -> dict[str, Version]:
    pins: dict[str, Version] = {}
    for number, line in enumerate(FLOORS.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        match = re.fullmatch(r"([A-Za-z0-9._-]+)==([^\s=]+)", line)
        assert match, f".ci/floors.txt:{number}: {line!r} is not `name==version`; pin exactly one version."
        name = canonicalize_name(match[1])
        assert name not in pins, f".ci/floors.txt:{number}: {name!r} is pinned twice; keep one line."
        pins[name] = Version(match[2])
    return pins


def test_the_floors_ci_installs_are_the_floors_pyproject_declares() -> None:
    declared, pinned = declared_floors(), pinned_floors()
    assert declared, "pyproject.toml declares no requirements"
    differing = {
        name: (str(declared.get(name)), str(pinned.get(name)))
        for name in declared.keys() | pinned.keys()
        if declared.get(name) != pinned.get(name)
    }
    assert not differing, (
        f"pyproject.toml's floors and .ci/floors.txt disagree (name: (pyproject.toml, .ci/floors.txt)): "
        f"{differing}. Change the floor in both, then run .ci/run, which tests the suite on .ci/floors.txt."
    )


def test_ci_runs_the_suite_on_the_floors_in_a_venv_of_its_own() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    assert "pip install --quiet -c .ci/floors.txt -e '.[test]'" in script
    assert "python3 -m venv --clear .venv-floors" in script
    assert ".venv-floors/" in (ROOT / ".gitignore").read_text().splitlines()


def supported_versions(page: Path) -> str:
    text = page.read_text()
    assert "\n## Supported versions\n" in text, f"{page.name} has no '## Supported versions' section"
    return text.split("\n## Supported versions\n", 1)[1].split("\n## ", 1)[0]


def test_the_supported_versions_tables_give_the_floors() -> None:
    """README.md's table gives the core floors, docs/index.md's every floor a user installs, in rows
    that start ``| `name` | floor |`` (the newest version CI ran on follows)."""
    floors = user_floors()
    assert set(CORE) <= floors.keys()
    for page, names in ((ROOT / "README.md", CORE), (ROOT / "docs" / "index.md", sorted(floors))):
        section = supported_versions(page)
        missing = [
            f"| `{name}` | {floors[name]} |"
            for name in names
            if f"| `{name}` | {floors[name]} |" not in section
        ]
        assert not missing, f"the Supported versions table of {page.name} lacks the rows {missing}"

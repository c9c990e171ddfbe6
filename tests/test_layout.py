"""The layers contract: the package's folders are its layers, and each imports only those below it.

    _core      the run's state, its transitions and the order of its effects: no I/O, no clock, no
               thread, no logging, no store (``CORE_MAY_NOT``), nothing of the package above it
    _tracing   the seam to OpenTelemetry                              (imports _core)
    _tools     where tools come from, and running one                 (_core, _tracing)
    _stores    where runs are kept                                    (_core, _tools)
    _runner    the in-process driver: ToolRunner, SyncToolRunner      (_core, _tracing, _tools, _stores)
    _ops       operating saved runs: the command line, rendering, the event printer, the resumer
    temporal, inbox, web, mcp: public subpackages over the layers (web drives temporal's runs too); testing imports nothing of toolrunner

Every module is read, at any depth (``temporal/`` too), with every import it makes: at the top, in
a function, or for type checkers only. ``layer_violations`` is the checker; a test plants imports
in a copy of the package to show that it finds each kind. Also: no import cycles, and the package's
lazy table of public names matches what type checkers read.

One island: ``temporal/_legacy/``, the frozen workflow body of runs started by toolrunner 0.1.0,
imports nothing of toolrunner outside itself (``frozen_violations``), so that no change to the live
modules can change what it asks Temporal for; and only the workflow imports it.
"""

from __future__ import annotations

import ast
import importlib
import io
import re
import shutil
import tokenize
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "toolrunner"

LAYERS: dict[str, frozenset[str]] = {
    "_core": frozenset(),
    "_tracing": frozenset({"_core"}),
    "_tools": frozenset({"_core", "_tracing"}),
    "_stores": frozenset({"_core", "_tools"}),
    "_runner": frozenset({"_core", "_tracing", "_tools", "_stores"}),
    "_ops": frozenset({"_core", "_tracing", "_tools", "_stores", "_runner", "inbox", "evals"}),
    "inbox": frozenset({"_core", "_tools", "_stores", "_ops"}),
    "web": frozenset({"_core", "_tracing", "_tools", "_stores", "_runner", "_ops", "temporal"}),
    "temporal": frozenset({"_core", "_tracing", "_tools", "_stores", "_runner"}),
    "mcp": frozenset({"_core", "_tools"}),
    "evals": frozenset({"_core", "_tracing", "_tools", "_stores", "_runner"}),
    "testing": frozenset(),
}
"""Each top-level part of the package, and the parts it may import (besides itself)."""

CORE_MAY_NOT = frozenset(
    {
        "anyio",
        "asyncio",
        "trio",
        "threading",
        "time",
        "logging",
        "sqlite3",
        "psycopg",
        "psycopg_pool",
        "httpx2",
    }
)
"""What the core's import closure may not reach: I/O, clocks, threads, logging, stores."""


def modules(root: Path) -> Iterator[tuple[str, Path]]:
    """Each module of the package at ``root``: its dotted name (``toolrunner._core.run``) and file."""
    for path in sorted(root.rglob("*.py")):
        parts = list(path.relative_to(root.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        yield ".".join(parts), path


def imported(name: str, path: Path, *, runtime: bool = False, top: bool = False) -> set[str]:
    """The modules ``name`` imports (dotted, absolute): toolrunner's and others' (``anyio``). With
    ``runtime``, not those imported for type checkers only (``if TYPE_CHECKING:``); with ``top``,
    not those a function imports when it runs (a lazy import)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    skipped: set[int] = set()
    if top:
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                skipped.update(id(inner) for child in node.body for inner in ast.walk(child))
    if runtime:
        for node in ast.walk(tree):
            if isinstance(node, ast.If) and ast.unparse(node.test) in (
                "TYPE_CHECKING",
                "typing.TYPE_CHECKING",
            ):
                skipped.update(id(inner) for child in node.body for inner in ast.walk(child))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level == 0:
                base = node.module or ""
            else:
                parts = package.split(".")
                base = ".".join(parts[: len(parts) - node.level + 1] + ([node.module] if node.module else []))
            if node.module is None:  # from . import x: x is a module
                found.update(f"{base}.{alias.name}" for alias in node.names)
            else:
                found.add(base)
    return found


def part_of(module: str) -> str | None:
    """The top-level part of the package a module of it belongs to (``_core``, ``temporal``, ...);
    ``None`` for the package's own ``__init__`` and ``__main__``."""
    parts = module.split(".")
    if len(parts) < 2 or parts[1] in ("__main__",):
        return None
    return parts[1]


def layer_violations(root: Path) -> list[str]:
    """What breaks the layers in the package at ``root`` (empty when nothing does)."""
    found: list[str] = []
    graph = {name: imported(name, path) for name, path in modules(root)}
    runtime = {name: imported(name, path, runtime=True) for name, path in modules(root)}
    for name, targets in graph.items():
        part = part_of(name)
        if part is None:
            continue
        if part not in LAYERS:
            found.append(f"{name} is in {part!r}, which is no layer: add it to LAYERS or move it")
            continue
        for target in sorted(targets):
            if not target.startswith("toolrunner."):
                continue
            other = part_of(target)
            if other is None:
                found.append(f"{name} imports the package itself ({target})")
            elif other != part and other not in LAYERS[part]:
                found.append(f"{name} ({part}) imports {target} ({other}), which {part} may not")
    # The core's closure: what its modules import at run time, following the package's modules.
    reached: set[str] = set()
    todo = [name for name in runtime if part_of(name) == "_core"]
    while todo:
        module = todo.pop()
        if module in reached:
            continue
        reached.add(module)
        for target in runtime.get(module, ()):
            if target.startswith("toolrunner"):
                # the module (and the packages on its way, but the package's own __init__, which
                # Python runs first whatever is imported, and which is no part of the core)
                todo.extend(
                    known
                    for known in runtime
                    if known != "toolrunner" and (known == target or target.startswith(known + "."))
                )
            elif target.split(".")[0] in CORE_MAY_NOT:
                found.append(f"the core's closure reaches {target} (imported by {module})")
    return found


def test_the_package_keeps_its_layers() -> None:
    assert layer_violations(PACKAGE) == []


@pytest.mark.parametrize(
    ("where", "line", "expected"),
    [
        ("_core/state.py", "import anyio", "the core's closure reaches anyio"),
        ("_core/transitions.py", "import time", "the core's closure reaches time"),
        ("_core/run.py", "from logging import getLogger", "the core's closure reaches logging"),
        ("_core/effects.py", "from .._stores import sqlite", "imports toolrunner._stores (_stores)"),
        ("_core/messages.py", "from .._runner.runner import ToolRunner", "(_runner), which _core may not"),
        ("_tools/tool.py", "from .._stores.protocol import RunStore", "(_stores), which _tools may not"),
        ("_stores/memory.py", "from .._runner.saver import Saver", "(_runner), which _stores may not"),
        ("testing/_fake.py", "from toolrunner._core.types import ToolCall", "(_core), which testing may not"),
    ],
)
def test_the_checker_finds_a_planted_import(tmp_path: Path, where: str, line: str, expected: str) -> None:
    copy = tmp_path / "toolrunner"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    path = copy / where
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    violations = layer_violations(copy)
    assert any(expected in violation for violation in violations), violations


def test_the_checker_finds_a_core_import_through_another_core_module(tmp_path: Path) -> None:
    # The closure follows the core's own imports: a new core module that imports threading is found
    # through the module that imports it.
    copy = tmp_path / "toolrunner"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    (copy / "_core" / "locks.py").write_text("import threading\n", encoding="utf-8")
    assert any("reaches threading (imported by toolrunner._core.locks)" in v for v in layer_violations(copy))


FROZEN = "toolrunner.temporal._legacy"
"""The frozen body's package: it may import toolrunner only from itself."""
FROZEN_USERS = frozenset({"toolrunner.temporal._workflow"})
"""The modules that may import the frozen body (the workflow, which hands old runs to it)."""


def frozen_violations(root: Path) -> list[str]:
    """What ties the frozen body (``FROZEN``) to live code in the package at ``root``: an import of
    toolrunner outside it by one of its modules (any import: at the top, in a function, for type
    checkers only, ``import toolrunner`` itself), or an import of it by a module not in
    ``FROZEN_USERS``. Empty when nothing does."""
    found: list[str] = []
    for name, path in modules(root):
        inside = name == FROZEN or name.startswith(FROZEN + ".")
        for target in sorted(imported(name, path)):
            if target != "toolrunner" and not target.startswith("toolrunner."):
                continue
            into = target == FROZEN or target.startswith(FROZEN + ".")
            if inside and not into:
                found.append(
                    f"{name} is frozen but imports {target}, live code: copy what it needs into {FROZEN}"
                )
            elif into and not inside and name not in FROZEN_USERS:
                found.append(
                    f"{name} imports {target}, the frozen body, which only {sorted(FROZEN_USERS)} may"
                )
    return found


def test_the_frozen_body_imports_nothing_live() -> None:
    assert any(name.startswith(FROZEN + ".") for name, _ in modules(PACKAGE)), "no frozen body to check"
    assert frozen_violations(PACKAGE) == []


@pytest.mark.parametrize(
    ("where", "line", "expected"),
    [
        (
            "temporal/_legacy/transitions.py",
            "from ..._core.state import RunState",
            "imports toolrunner._core.state",
        ),
        ("temporal/_legacy/body.py", "from toolrunner._core import transitions", "imports toolrunner._core"),
        ("temporal/_legacy/state.py", "from ..._tools.tool import Tool", "imports toolrunner._tools.tool"),
        ("temporal/_legacy/data.py", "from .._data import RunInput", "imports toolrunner.temporal._data"),
        ("temporal/_legacy/names.py", "from .. import _names", "imports toolrunner.temporal._names"),
        ("temporal/_legacy/log.py", "import toolrunner", "is frozen but imports toolrunner,"),
        (
            "temporal/_legacy/plan.py",
            "def later() -> None:\n    from toolrunner._runner import runner",
            "imports toolrunner._runner",
        ),
        (
            "temporal/_legacy/types.py",
            "if TYPE_CHECKING:\n    from ..._core.types import ToolCall",
            "imports toolrunner._core.types",
        ),
        (
            "temporal/_driver.py",
            "from ._legacy.state import RunState",
            "imports toolrunner.temporal._legacy.state",
        ),
    ],
)
def test_the_frozen_checker_finds_a_planted_import(
    tmp_path: Path, where: str, line: str, expected: str
) -> None:
    copy = tmp_path / "toolrunner"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    path = copy / where
    path.write_text(path.read_text(encoding="utf-8") + f"\n{line}\n", encoding="utf-8")
    violations = frozen_violations(copy)
    assert any(expected in violation for violation in violations), violations


def test_no_module_of_the_package_takes_part_in_an_import_cycle() -> None:
    # Imports at a module's top, type-only ones included; a function's import runs when called.
    graph = {
        name: {target for target in imported(name, path, top=True) if target.startswith("toolrunner.")}
        for name, path in modules(PACKAGE)
    }
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append([*path[path.index(target) :], target])
            elif target in graph and target != "toolrunner" and not module.startswith(target + "."):
                visit(target, [*path, target])

    for module in graph:
        if module != "toolrunner":
            visit(module, [module])
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_each_layer_says_what_lives_in_it_and_what_it_may_import() -> None:
    for part in ("_core", "_tracing", "_tools", "_stores", "_runner", "_ops"):
        init = PACKAGE / part / "__init__.py"
        assert init.is_file(), f"{part} has no __init__.py"
        docstring = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert docstring, f"{part}/__init__.py says nothing of what lives there"
        assert "import" in docstring, f"{part}/__init__.py does not say what it may import"


def test_the_package_names_each_public_name_once_where_it_is_imported_from() -> None:
    """``toolrunner/__init__.py`` imports each public name when first used (``_PUBLIC``); the imports
    type checkers read, ``_PUBLIC`` and ``__all__`` must name the same names, from the same modules.
    The deprecated names (``_DEPRECATED``) are read by type checkers too, and are in no ``__all__``."""
    import toolrunner

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for child in node.body:
                if isinstance(child, ast.ImportFrom) and child.level == 1 and child.module is not None:
                    typed.update({alias.asname or alias.name: child.module for alias in child.names})
    lazy = {
        name: module
        for module, names in toolrunner._PUBLIC.items()  # pyright: ignore[reportPrivateUsage]
        for name in names
    }
    deprecated = {
        name: module
        for name, (module, _) in toolrunner._DEPRECATED.items()  # pyright: ignore[reportPrivateUsage]
    }
    assert typed == lazy | deprecated
    assert not set(lazy) & set(deprecated)
    assert sorted(lazy) == sorted(name for name in toolrunner.__all__ if name != "__version__")
    for name in lazy:
        assert getattr(toolrunner, name) is getattr(importlib.import_module(f"toolrunner.{lazy[name]}"), name)


# -- the map matches the tree: no text names a module that moved -------------------------------------

MOVED = {
    "_approvals": "_tools/approvals.py",
    "_availability": "_core/tool_changes.py",
    "_batching": "_stores/group_commit.py",
    "_blocks": "_core/result_blocks.py",
    "_caching": "_core/caching.py",
    "_calls": "_runner/running_calls.py",
    "_checkpoint": "_stores/protocol.py",
    "_cli": "_ops/cli.py",
    "_commands": "_ops/commands.py",
    "_compaction": "_core/compaction.py",
    "_console": "_ops/printer.py",
    "_controls": "_runner/body.py",
    "_core": "_core/run.py",
    "_docstrings": "_tools/docstrings.py",
    "_effects": "_core/effects.py",
    "_errors": "_core/errors.py",
    "_events": "_core/events.py",
    "_execution": "_tools/execution.py",
    "_exits": "_ops/exits.py",
    "_extensions": "_runner/sdk_features.py",
    "_formats": "_stores/formats.py",
    "_history": "_core/history.py",
    "_ids": "_core/ids.py",
    "_leases": "_stores/leases.py",
    "_lifecycle": "_core/transitions.py",
    "_log": "_core/log.py",
    "_mcp_results": "_tools/mcp_results.py",
    "_memory": "_stores/memory.py",
    "_messages": "_core/messages.py",
    "_options": "_runner/options.py",
    "_otel": "_tracing/otel.py",
    "_params": "_runner/params.py",
    "_postgres": "_stores/postgres.py",
    "_requests": "_runner/requests.py",
    "_results": "_tools/results.py",
    "_resume_command": "_ops/resume_command.py",
    "_resumer": "_ops/resumer.py",
    "_runner": "_runner/runner.py",
    "_runs": "_stores/runs.py",
    "_schema": "_tools/schema.py",
    "_sdk_tools": "_tools/sdk.py",
    "_show": "_ops/render.py",
    "_sqlite": "_stores/sqlite.py",
    "_sqlstore": "_stores/sql.py",
    "_state": "_core/state.py",
    "_state_schema": "_core/state_schema.py",
    "_stdlog": "_runner/stdlog.py",
    "_stores": "_stores/open.py",
    "_streaming": "_runner/streaming.py",
    "_sync": "_runner/sync.py",
    "_text": "_core/unicode.py",
    "_tools": "_tools/tool.py",
    "_toolsets": "_tools/toolsets.py",
    "_tracing": "_tracing/trace.py",
    "_types": "_core/types.py",
    "_urls": "_stores/urls.py",
    "_usage": "_core/usage.py",
    "_waiting": "_stores/waiting.py",
}
"""The flat modules of toolrunner before its layers (issue 28), and where each went."""


def _prose(path: Path) -> Iterator[tuple[int, str]]:
    """The lines of ``path`` a reader takes for the map: all of a page; a module's comments and
    docstrings (strings in triple quotes), by line number."""
    text = path.read_text(encoding="utf-8")
    if path.suffix != ".py":
        yield from enumerate(text.splitlines(), 1)
        return
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.COMMENT or (
            token.type == tokenize.STRING and token.string.lstrip("rbuRBU").startswith(('"""', "'''"))
        ):
            for offset, line in enumerate(token.string.splitlines()):
                yield token.start[0] + offset, line


def moved_references(root: Path, paths: list[Path]) -> list[str]:
    """Where ``paths`` (pages, and modules: their comments and docstrings) name one of the modules
    of the package at ``root`` that moved (``MOVED``) as if it were still there: ``_lifecycle``,
    ``_runner.py``, ``toolrunner/_calls.py``, ``_core.nothing`` (no submodule ``nothing``). A name
    that is a module or package again somewhere (``temporal/_controls.py``, the ``_core`` package,
    ``_core.run``) is no old one."""
    files = {path.stem for path in root.rglob("*.py")}
    names = files | {path.name for path in root.rglob("_*") if path.is_dir()}
    alternatives = "|".join(sorted(MOVED, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w./-])(toolrunner/)?({alternatives})(\.py\b|\.\w+)?(?![\w(/])")
    found: list[str] = []
    for path in paths:
        for number, line in _prose(path):
            for match in pattern.finditer(line):
                prefix, name, suffix = match.group(1), match.group(2), match.group(3) or ""
                package = root / name
                if suffix == ".py":
                    stale = not (root / f"{name}.py").is_file() if prefix else name not in files
                elif suffix:
                    stale = package.is_dir() and not (
                        (package / f"{suffix[1:]}.py").is_file() or (package / suffix[1:]).is_dir()
                    )
                    stale = stale or (name not in names and not package.is_dir())
                else:
                    stale = name not in names
                if stale:
                    where = path.relative_to(root.parent) if path.is_relative_to(root.parent) else path
                    found.append(f"{where}:{number}: {match.group(0)!r} (now {MOVED[name]})")
    return found


def test_no_text_names_a_module_that_moved() -> None:
    """CONTRIBUTING.md's map, the docs, README.md and the package's docstrings and comments name
    modules as they are now. Two texts are left as they were written: CHANGELOG.md (history) and
    ``temporal/_legacy/`` (frozen, its bytes pinned by tests/temporal/test_temporal_legacy.py)."""
    root = PACKAGE.parent
    frozen = PACKAGE / "temporal" / "_legacy"
    pages = [root / "README.md", root / "CONTRIBUTING.md", *sorted((root / "docs").glob("*.md"))]
    modules = [path for path in sorted(PACKAGE.rglob("*.py")) if not path.is_relative_to(frozen)]
    assert frozen.is_dir()  # what is left out is there, so that leaving it out is no accident
    stale = moved_references(PACKAGE, [*modules, *pages])
    assert not stale, "these name modules that moved; name them by their place now:\n" + "\n".join(stale)


def test_the_moved_check_finds_each_kind_of_stale_name(tmp_path: Path) -> None:
    copy = tmp_path / "toolrunner"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    page = tmp_path / "page.md"
    page.write_text(
        "The transitions are in `_lifecycle.py`; the driver is `toolrunner/_runner.py`, the core\n"
        "``_core.py`` and ``_core.nothing``; `_sync` is the front end, `_tracing.py` is fine (temporal has\n"
        "one), and so are `_core.run`, `_core/run.py`, `tool_calls`, `self._calls` and `_messages(x)`.\n",
        encoding="utf-8",
    )
    found = moved_references(copy, [page])
    assert [entry.split(": ", 1)[1] for entry in found] == [
        "'_lifecycle.py' (now _core/transitions.py)",
        "'toolrunner/_runner.py' (now _runner/runner.py)",
        "'_core.py' (now _core/run.py)",
        "'_core.nothing' (now _core/run.py)",
        "'_sync' (now _runner/sync.py)",
    ]


# -- drivers perform: they do not write the core's fields ---------------------------------------------

DRIVERS = ("_runner", "temporal")
"""The packages of the drivers (the frozen legacy body aside)."""
WIRING = {"listener", "tools", "hooks"}
"""What a driver may set on the core: where its events go, where the core reads its tools' flags
(``ToolFlags``), and which hooks it can ask (``HookPlan``: a Temporal run learns them from its
workers once it started), the driver's connections, not decisions."""
NOT_YET_IN_THE_CORE: set[tuple[str, str]] = set()
"""The writes left of those issue 28 moves into the core: the test fails when one goes (take it off
this list) as when a new one comes (make it a method of RunCore instead)."""


def core_writes(root: Path) -> set[tuple[str, str]]:
    """Each (module, field) where a driver's module assigns a field of a ``RunCore`` (an attribute
    of ``core`` or of ``self._core``), but ``WIRING``."""
    found: set[tuple[str, str]] = set()
    for package in DRIVERS:
        for path in sorted((root / package).rglob("*.py")):
            if "_legacy" in path.parts:
                continue
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                targets: list[ast.expr] = []
                if isinstance(node, ast.Assign):
                    targets = [
                        element
                        for target in node.targets
                        for element in (target.elts if isinstance(target, ast.Tuple) else [target])
                    ]
                elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                    targets = [node.target]
                for target in targets:
                    if not isinstance(target, ast.Attribute) or target.attr in WIRING:
                        continue
                    owner = target.value
                    if (isinstance(owner, ast.Name) and owner.id == "core") or (
                        isinstance(owner, ast.Attribute) and owner.attr == "_core"
                    ):
                        found.add((path.relative_to(root).as_posix(), target.attr))
    return found


def test_no_driver_writes_the_cores_fields_but_those_listed() -> None:
    """A driver performs effects and calls the core's methods; what the run does next is the
    core's to decide (docs/design.md, "How one checks that no driver decides")."""
    assert core_writes(PACKAGE) == NOT_YET_IN_THE_CORE


def test_the_write_checker_finds_a_planted_write(tmp_path: Path) -> None:
    copy = tmp_path / "toolrunner"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "static", "templates"))
    body = copy / "_runner" / "body.py"
    body.write_text(
        body.read_text(encoding="utf-8") + "\n\ndef _planted(self):\n    self._core.closing = True\n",
        encoding="utf-8",
    )
    driver = copy / "temporal" / "_driver.py"
    driver.write_text(
        driver.read_text(encoding="utf-8") + "\n\ndef _planted(core):\n    core.state, x = 1, 2\n"
    )
    assert core_writes(copy) - NOT_YET_IN_THE_CORE == {
        ("_runner/body.py", "closing"),
        ("temporal/_driver.py", "state"),
    }

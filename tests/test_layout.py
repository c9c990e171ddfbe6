"""The package's layout keeps its architecture: no import cycles (type-only imports included), the
drivers are imported by no core module (only by the front ends over them: the blocking runner, the
resumer and the command line that starts one), and ``toolrunner.testing`` imports nothing else of
toolrunner.
"""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "toolrunner"
DRIVERS = {"_runner", "_sync", "_resumer"}
FRONT_ENDS = {"__init__", "_sync", "_resumer", "_cli", "_commands", "_resume_command"}


def imports() -> dict[str, set[str]]:
    """Module -> the package modules it imports (``from ._x import ...``, anywhere in the file)."""
    graph: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.glob("*.py")):
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 1:
                if node.module is not None:
                    found.add(node.module.split(".")[0])
                else:
                    found.update(alias.name for alias in node.names)
        graph[path.stem] = found
    return graph


def test_no_module_of_the_package_takes_part_in_an_import_cycle() -> None:
    graph = imports()
    cycles: list[list[str]] = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(graph.get(module, ())):
            if target in path:
                cycles.append([*path[path.index(target) :], target])
            elif target in graph and target != "__init__":
                visit(target, [*path, target])

    for module in graph:
        if module != "__init__":
            visit(module, [module])
    assert not cycles, f"import cycles: {cycles[:3]}"


def test_no_core_module_imports_a_driver() -> None:
    importers = {module for module, targets in imports().items() if targets & DRIVERS}
    assert importers <= FRONT_ENDS, sorted(importers - FRONT_ENDS)


def test_the_testing_kit_imports_nothing_else_of_toolrunner() -> None:
    for path in (PACKAGE / "testing").glob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom):
                assert node.level <= 1, f"{path.name} imports from the package above it"
                assert not (node.module or "").startswith("toolrunner"), f"{path.name} imports {node.module}"


def test_the_package_names_each_public_name_once_where_it_is_imported_from() -> None:
    """``toolrunner/__init__.py`` imports each public name when first used (``_PUBLIC``); the imports
    type checkers read, ``_PUBLIC`` and ``__all__`` must name the same names, from the same modules."""
    import toolrunner

    tree = ast.parse((PACKAGE / "__init__.py").read_text(encoding="utf-8"))
    typed: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 1 and node.module is not None:
            typed.update({alias.asname or alias.name: node.module for alias in node.names})
    lazy = {
        name: module
        for module, names in toolrunner._PUBLIC.items()  # pyright: ignore[reportPrivateUsage]
        for name in names
    }
    assert typed == lazy
    assert sorted(lazy) == sorted(toolrunner.__all__)
    for name in toolrunner.__all__:
        assert getattr(toolrunner, name) is getattr(importlib.import_module(f"toolrunner.{lazy[name]}"), name)

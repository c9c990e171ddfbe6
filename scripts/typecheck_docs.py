"""Type-check what users copy: every ```python block of README.md and docs/*.md, and every program
in examples/, with mypy --strict and with pyright strict.

    python scripts/typecheck_docs.py [--mypy | --pyright]

The blocks are the ones tests/test_docs.py runs (the same parser). Each is written to a temporary
directory as a module of its own (``docs_tools_3.py`` is the third block of docs/tools.md), so that
a block type-checks alone, as it runs alone; a message names the page and the line there. The
checkers see ``toolrunner`` from this tree, so a wrong annotation of the public API shows up where
the docs use it; mypy also checks the whole package (``pyproject.toml``'s ``[tool.mypy]``; pyright
checks it in ``.ci/run``'s own pyright step). ``.ci/run`` runs this; it exits 1 when either checker
reports an error.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_docs import Block, all_blocks  # noqa: E402 - the parser of the docs' tests, after the path is set

EXAMPLES = sorted((ROOT / "examples").glob("*.py"))


def module_name(block: Block) -> str:
    """``docs/tools.md`` block 3 -> ``docs_tools_3``; README.md's -> ``readme_1``."""
    stem = re.sub(r"\W", "_", block.page.removesuffix(".md").lower())
    return f"{stem}_{block.index}"


def write_blocks(directory: Path) -> dict[str, Block]:
    """Each block as ``directory/<module>.py``, its lines where the page has them (blank lines
    before it), so that a checker's line numbers are the page's."""
    written: dict[str, Block] = {}
    for block in all_blocks():
        name = module_name(block)
        (directory / f"{name}.py").write_text("\n" * (block.line - 1) + block.code, encoding="utf-8")
        written[f"{name}.py"] = block
    return written


def page_of(line: str, blocks: dict[str, Block]) -> str:
    """A checker's message with the temporary file's name replaced by the page's."""
    for file, block in blocks.items():
        line = line.replace(file, f"{block.page} (block {block.index})")
    return line


def run_mypy(directory: Path, blocks: dict[str, Block]) -> bool:
    files = [str(ROOT / "toolrunner"), *sorted(str(directory / name) for name in blocks)]
    files += [str(path) for path in EXAMPLES]
    command = [
        sys.executable,
        "-m",
        "mypy",
        "--strict",
        "--no-incremental",
        "--python-version",
        "3.11",
        *files,
    ]
    result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, check=False)
    output = (result.stdout + result.stderr).replace(f"{directory}/", "")
    for line in output.splitlines():
        print(f"mypy: {page_of(line, blocks)}")
    return result.returncode == 0


def run_pyright(directory: Path, blocks: dict[str, Block]) -> bool:
    config = {
        "typeCheckingMode": "strict",
        "pythonVersion": "3.11",
        "extraPaths": [str(ROOT)],
        # As in pyproject.toml: public functions check their arguments at run time.
        "reportUnnecessaryIsInstance": False,
    }
    (directory / "pyrightconfig.json").write_text(json.dumps(config), encoding="utf-8")
    command = [
        sys.executable,
        "-m",
        "pyright",
        "--pythonpath",
        sys.executable,
        "--project",
        str(directory / "pyrightconfig.json"),
        *sorted(str(directory / name) for name in blocks),
        *(str(path) for path in EXAMPLES),
    ]
    result = subprocess.run(command, cwd=directory, capture_output=True, text=True, check=False)
    output = (result.stdout + result.stderr).replace(f"{directory}/", "")
    for line in output.splitlines():
        if line.strip():
            print(f"pyright: {page_of(line, blocks)}")
    return result.returncode == 0


def main() -> int:
    parser = argparse.ArgumentParser(description="Type-check the docs' python blocks and the examples.")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--mypy", action="store_true", help="run mypy only")
    which.add_argument("--pyright", action="store_true", help="run pyright only")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="toolrunner-docs-types-") as scratch:
        directory = Path(scratch)
        blocks = write_blocks(directory)
        print(f"typecheck_docs: {len(blocks)} blocks of the docs and {len(EXAMPLES)} examples")
        passed = True
        for name, check in (("mypy --strict", run_mypy), ("pyright strict", run_pyright)):
            if (arguments.mypy and check is run_pyright) or (arguments.pyright and check is run_mypy):
                continue
            began = time.monotonic()
            ok = check(directory, blocks)
            print(f"typecheck_docs: {name}: {'ok' if ok else 'FAILED'} ({time.monotonic() - began:.0f} s)")
            passed = passed and ok
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

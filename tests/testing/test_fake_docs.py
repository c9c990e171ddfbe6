"""Every Python block of docs/testing.md runs as it is."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "testing.md"
BLOCKS = [
    (DOC.read_text()[: match.start()].count("\n") + 2, match.group(1))
    for match in re.finditer(r"^```python\n(.*?)^```$", DOC.read_text(), flags=re.MULTILINE | re.DOTALL)
]


@pytest.mark.parametrize(("line", "code"), BLOCKS, ids=[f"line {line}" for line, _ in BLOCKS])
def test_docs_block_runs(line: int, code: str) -> None:
    exec(compile(code, f"{DOC}:{line}", "exec"), {"__name__": "docs_testing_md"})


def test_the_docs_have_python_blocks() -> None:
    assert len(BLOCKS) >= 8

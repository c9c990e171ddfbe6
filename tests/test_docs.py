"""The documentation runs and is complete.

- Every ```python block of README.md and docs/*.md runs on its own, in a fresh namespace as
  ``__main__`` with no command-line arguments, offline (without ANTHROPIC_API_KEY), with warnings
  as errors and a time limit. The blocks of one page share a subprocess (imports are slow; pages
  run in parallel), which runs them in a scratch directory; tracebacks give the line numbers of the
  page itself. A block that cannot run offline is marked with ``<!-- skip-test -->`` on the line
  before it and reported as skipped.
- docs/api.md has a section for every name of ``toolrunner.__all__``, ``toolrunner.testing.__all__``,
  ``toolrunner.mcp.__all__``, ``toolrunner.temporal.__all__``, ``toolrunner.evals.__all__`` and
  ``toolrunner.web.__all__``, mentioning each parameter and public
  method.
- Every page is in the nav of mkdocs.yml and linked from docs/index.md; links to pages resolve.
"""

from __future__ import annotations

import enum
import inspect
import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, is_typeddict

import pytest

import toolrunner
import toolrunner.evals
import toolrunner.mcp
import toolrunner.temporal
import toolrunner.testing
import toolrunner.web
from tests.support.postgres_server import new_schema

ROOT = Path(__file__).resolve().parent.parent
BLOCK_TIMEOUT = 60  # seconds per block
SKIP_MARKER = "<!-- skip-test -->"

# Blocks that fail in pages owned by someone else, as {("docs/page.md", index): "reason naming the owner"}.
KNOWN_FAILURES: dict[tuple[str, int], str] = {}

_FENCE = re.compile(r"^(?P<indent>[ \t]*)(?P<fence>`{3,}|~{3,})[ \t]*(?P<info>[^`\n]*?)[ \t]*$")


@dataclass(frozen=True)
class Block:
    page: str  # relative to ROOT, with forward slashes
    index: int  # 1-based, counting the page's python blocks
    line: int  # 1-based line of the first code line
    code: str
    skip: bool

    @property
    def where(self) -> str:
        return f"{self.page} block {self.index} (line {self.line})"


def pages() -> list[Path]:
    found = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    return [page for page in found if page.is_file()]


def python_blocks(page: Path, name: str | None = None) -> Iterator[Block]:
    """The ```python blocks of a markdown page, dedented, with their first line numbers."""
    lines = page.read_text(encoding="utf-8").splitlines()
    name = name if name is not None else page.relative_to(ROOT).as_posix()
    count = 0
    number = 0
    while number < len(lines):
        opening = _FENCE.match(lines[number])
        number += 1
        if opening is None:
            continue
        fence, indent = opening["fence"], len(opening["indent"])
        body: list[str] = []
        while number < len(lines):
            closing = _FENCE.match(lines[number])
            if (
                closing is not None
                and not closing["info"]
                and closing["fence"][0] == fence[0]
                and len(closing["fence"]) >= len(fence)
            ):
                break
            line = lines[number]
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            number += 1
        start = number - len(body) + 1  # 1-based line of the first code line
        number += 1  # past the closing fence
        words = opening["info"].split()
        if not words or words[0] not in ("python", "py"):
            continue
        count += 1
        before = [line.strip() for line in lines[: start - 2] if line.strip()]
        yield Block(name, count, start, "\n".join(body) + "\n", bool(before) and before[-1] == SKIP_MARKER)


def all_blocks() -> list[Block]:
    return [block for page in pages() for block in python_blocks(page)]


# Runs in the subprocess: argv = [blocks.json, results.json]; results are written after each block,
# so that a block that kills the process is still named.
_WORKER = r"""
import contextlib, io, json, os, signal, sys, traceback, warnings

blocks_path, results_path = sys.argv[1], sys.argv[2]
with open(blocks_path, encoding="utf-8") as file:
    blocks = json.load(file)
home = os.getcwd()
results = {}


class BlockTimeout(Exception):
    pass


def alarm(signum, frame):
    raise BlockTimeout(f"the block did not finish within {blocks['timeout']} s")


signal.signal(signal.SIGALRM, alarm)
for block in blocks["blocks"]:
    os.chdir(home)
    warnings.resetwarnings()
    warnings.simplefilter("error")
    output = io.StringIO()
    code = "\n" * (block["line"] - 1) + block["code"]  # tracebacks give the page's line numbers
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    sys.argv = [block["path"]]  # as a program run without arguments (a block may parse them)
    error = None
    signal.alarm(blocks["timeout"])
    try:
        with contextlib.redirect_stdout(output), contextlib.redirect_stderr(output):
            exec(compile(code, block["path"], "exec"), namespace)
    except BaseException:
        error = traceback.format_exc()
    finally:
        signal.alarm(0)
    results[str(block["index"])] = {"error": error, "output": output.getvalue()}
    with open(results_path, "w", encoding="utf-8") as file:
        json.dump(results, file)
"""


def run_blocks(
    blocks: list[Block], work: Path, timeout: int, env: dict[str, str] | None = None
) -> tuple[dict[str, Any], str]:
    """Run ``blocks`` in one subprocess in ``work``, with ``env`` added to its environment: their
    results by index, and the process's stderr."""
    blocks_path, results_path = work / "blocks.json", work / "results.json"
    blocks_path.write_text(
        json.dumps(
            {
                "timeout": timeout,
                "blocks": [
                    {"index": b.index, "line": b.line, "code": b.code, "path": str(ROOT / b.page)}
                    for b in blocks
                ],
            }
        ),
        encoding="utf-8",
    )
    env = {key: value for key, value in os.environ.items() if key != "ANTHROPIC_API_KEY"} | (env or {})
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    try:
        process = subprocess.run(
            [sys.executable, "-W", "error", "-c", _WORKER, str(blocks_path), str(results_path)],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout * len(blocks) + 60,
            check=False,
        )
        stderr = process.stderr
    except subprocess.TimeoutExpired as expired:
        stderr = f"the page's subprocess was killed after {expired.timeout} s\n{expired.stderr or ''}"
    results: dict[str, Any] = (
        json.loads(results_path.read_text(encoding="utf-8")) if results_path.exists() else {}
    )
    return results, str(stderr)


@pytest.fixture(scope="session")
def page_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[tuple[dict[str, Any], str]]]]:
    """The pages of the selected blocks, each run in its own subprocess, all pages at once."""
    selected: set[str] = set()
    for item in request.session.items:
        params: dict[str, object] = getattr(getattr(item, "callspec", None), "params", {})
        block = params.get("block")
        if isinstance(block, Block):
            selected.add(block.page)
    # A block that uses PostgreSQL reads its URL from DATABASE_URL: a new schema on the tests' server.
    needs_database = any(
        "DATABASE_URL" in block.code for block in all_blocks() if block.page in selected and not block.skip
    )
    env = {"DATABASE_URL": new_schema(request.getfixturevalue("postgres_server"))} if needs_database else {}
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as executor:
        runs = {
            page: executor.submit(
                run_blocks,
                [block for block in all_blocks() if block.page == page and not block.skip],
                tmp_path_factory.mktemp("docs"),
                BLOCK_TIMEOUT,
                env,
            )
            for page in sorted(selected)
        }
        yield runs
        executor.shutdown(cancel_futures=True)


def _params() -> list[Any]:
    params: list[Any] = []
    for block in all_blocks():
        marks: list[pytest.MarkDecorator] = []
        reason = KNOWN_FAILURES.get((block.page, block.index))
        if reason is not None:
            marks.append(pytest.mark.xfail(reason=reason, strict=True))
        params.append(pytest.param(block, id=f"{block.page}#{block.index}", marks=marks))
    return params


@pytest.mark.parametrize("block", _params())
def test_code_block_runs(block: Block, page_runs: dict[str, Future[tuple[dict[str, Any], str]]]) -> None:
    if block.skip:
        pytest.skip(f"{block.where} is marked {SKIP_MARKER}")
    run = page_runs.get(block.page)
    assert run is not None, f"{block.page} was not started; page_runs starts the pages of the selected tests."
    results, stderr = run.result()
    result = results.get(str(block.index))
    if result is None:
        pytest.fail(
            f"{block.where} did not run: the page's subprocess ended before it.\n{stderr}", pytrace=False
        )
    if result["error"] is not None:
        pytest.fail(
            f"{block.where} failed:\n{result['error']}\nIts output:\n{result['output']}", pytrace=False
        )


def test_blocks_are_found() -> None:
    # Guards the parser: the pages that exist have runnable blocks, and none is empty.
    blocks = all_blocks()
    assert any(block.page == "docs/tools.md" for block in blocks)
    assert all(block.code.strip() for block in blocks), [b.where for b in blocks if not b.code.strip()]


def test_the_parser_handles_indents_other_fences_and_the_skip_marker(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text(
        "Intro\n\n```python\nx = 1\n```\n\n```text\nnot code\n```\n\n- item\n\n    ```python\n    y = 2\n"
        "    if y:\n        pass\n    ```\n\n<!-- skip-test -->\n```python\nraise SystemExit\n```\n",
        encoding="utf-8",
    )
    blocks = list(python_blocks(page, "page.md"))
    assert [(b.index, b.line, b.code, b.skip) for b in blocks] == [
        (1, 4, "x = 1\n", False),
        (2, 14, "y = 2\nif y:\n    pass\n", False),
        (3, 21, "raise SystemExit\n", True),
    ]


def test_the_runner_reports_failures_warnings_timeouts_and_a_dead_process(tmp_path: Path) -> None:
    codes = [
        "import sys\nprint('hello', sys.argv[1:])\n",
        "import warnings\nwarnings.warn('old', DeprecationWarning)\n",
        "\n\nraise ValueError('boom')\n",
        "import time\ntime.sleep(30)\n",
        "import os\nos._exit(3)\n",
        "print('never')\n",
    ]
    blocks = [Block("docs/x.md", n, 10 * n, code, False) for n, code in enumerate(codes, 1)]
    results, _ = run_blocks(blocks, tmp_path, timeout=1)
    assert results["1"] == {"error": None, "output": "hello []\n"}  # no arguments
    assert "DeprecationWarning: old" in results["2"]["error"]
    assert 'x.md", line 32' in results["3"]["error"]  # the page's own line number
    assert "ValueError: boom" in results["3"]["error"]
    assert "did not finish within 1 s" in results["4"]["error"]
    assert set(results) == {"1", "2", "3", "4"}  # the process died in block 5


def _public_names() -> list[str]:
    return [
        *toolrunner.__all__,
        *toolrunner.testing.__all__,
        *toolrunner.mcp.__all__,
        *toolrunner.temporal.__all__,
        *toolrunner.evals.__all__,
        *toolrunner.web.__all__,
    ]


@cache
def _api_sections() -> dict[str, str]:
    """The text of each section of docs/api.md, by the `name` its heading starts with."""
    sections: dict[str, str] = {}
    name: str | None = None
    for line in (ROOT / "docs" / "api.md").read_text(encoding="utf-8").splitlines():
        if line.startswith("#"):
            heading = re.match(r"#+ `(\w+)`", line)
            name = heading[1] if heading is not None else None
        if name is not None:
            sections[name] = sections.get(name, "") + line + "\n"
    return sections


def _documented_parts(obj: object) -> list[str]:
    """The parameter names and public members that the API entry of ``obj`` must mention."""
    if not (inspect.isclass(obj) or inspect.isfunction(obj)):
        return []  # constants and type aliases
    if inspect.isclass(obj) and is_typeddict(obj):
        return list(obj.__annotations__)  # every key
    if inspect.isclass(obj) and issubclass(obj, BaseException | enum.Enum):
        return []
    try:
        # A Protocol's signature is a placeholder (*args, **kwargs): only its members count.
        protocol = inspect.isclass(obj) and getattr(obj, "_is_protocol", False)
        parameters = [] if protocol else list(inspect.signature(obj).parameters)
    except (TypeError, ValueError):
        parameters = []
    members = [
        name
        for name, member in (vars(obj).items() if inspect.isclass(obj) else ())
        if not name.startswith("_") and (callable(member) or isinstance(member, property | classmethod))
    ]
    return [*parameters, *members]


@pytest.mark.parametrize("name", _public_names())
def test_api_reference_covers_every_public_name(name: str) -> None:
    section = _api_sections().get(name)
    assert section is not None, (
        f"docs/api.md has no section for {name!r}; add a heading `### \\`{name}\\`` with its signature and summary."
    )
    obj = (
        getattr(toolrunner, name, None)
        or getattr(toolrunner.testing, name, None)
        or getattr(toolrunner.mcp, name, None)
        or getattr(toolrunner.temporal, name, None)
        or getattr(toolrunner.evals, name, None)
        or getattr(toolrunner.web, name)
    )
    missing = [part for part in _documented_parts(obj) if not re.search(rf"\b{re.escape(part)}\b", section)]
    assert not missing, (
        f"the section of docs/api.md for {name!r} does not mention {missing!r}; document them."
    )


# -- the site: every page is reachable, every link to a page resolves -------------------------------------


def test_every_doc_page_is_in_the_site_nav_and_the_index() -> None:
    pages_in_nav = set(
        re.findall(r":\s*([\w/-]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(encoding="utf-8"), re.M)
    )
    index = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    for page in sorted((ROOT / "docs").glob("*.md")):
        assert page.name in pages_in_nav, f"docs/{page.name} is not in the nav of mkdocs.yml; add it there."
        if page.name != "index.md":
            assert f"]({page.name})" in index, (
                f"docs/{page.name} is not linked from docs/index.md; add it to the map."
            )


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_links_to_pages_resolve(page: Path) -> None:
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)  # not inside code
    targets = re.findall(r"\]\(([^)#\s:]+\.md)(?:#[^)]*)?\)", text)
    broken = [target for target in targets if not (page.parent / target).is_file()]
    assert not broken, f"{page.relative_to(ROOT)} links to pages that do not exist: {broken!r}"


@pytest.mark.parametrize("page", pages(), ids=lambda page: page.relative_to(ROOT).as_posix())
def test_the_docs_import_public_names_only(page: Path) -> None:
    """A reader copies what the docs show: private modules (``toolrunner._x``) may change any day."""
    text = page.read_text(encoding="utf-8")
    private = sorted(
        set(re.findall(r"^\s*from (toolrunner(?:\.\w+)*\._\w+) import", text, flags=re.MULTILINE))
    )
    assert not private, f"{page.relative_to(ROOT)} imports from {private}; import the public names instead."

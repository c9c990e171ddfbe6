"""Check that the docs site renders whole offline: no request leaves the machine.

    python scripts/check_docs_site.py [SITE]

It builds the site (``mkdocs build --strict``, into a temporary directory; or takes the built
``SITE``), serves it on 127.0.0.1, and loads every page in Debian's Chromium through Playwright
(``apt-get install -y chromium``; Playwright's own browser download cannot be reached here). Every
request a page makes is recorded, and answered only when it goes to the local server: one to any
other host is refused and fails the check, naming the page and the address (a web font, a script
from a CDN). Each mermaid diagram must be drawn as an SVG, not left as code. ``.ci/run`` runs it
after ``npm ci`` (the site's own mermaid, see scripts/mkdocs_hooks.py). It exits 1 on a failure.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Generator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from playwright.sync_api import Route, sync_playwright

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path(os.environ.get("TOOLRUNNER_CHROMIUM", "/usr/bin/chromium"))
CHROMIUM_ARGS = [
    "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",  # the browser's own requests, which are not the page's
    "--disable-component-update",
    "--disable-sync",
]
DIAGRAM_LIMIT = 30_000  # milliseconds a diagram may take to be drawn (a bound, not a measurement)
# How many diagrams the page shows drawn as an SVG (each in its host's shadow root).
DRAWN = "Array.from(document.querySelectorAll('.mermaid')).filter(host => host.shadowRoot?.querySelector('svg')).length"
# Material draws each diagram in a closed shadow root; opened, its SVG can be found.
OPEN_SHADOW_ROOTS = """
const attach = Element.prototype.attachShadow;
Element.prototype.attachShadow = function (init) { return attach.call(this, { ...init, mode: "open" }); };
"""


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        pass


@contextmanager
def served(site: Path) -> Generator[str]:
    """``site`` over HTTP on a free port of 127.0.0.1; yields its base URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(site)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def build(site: Path) -> None:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    command = [sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", str(site)]
    subprocess.run(command, cwd=ROOT, env=env, check=True)


def pages(site: Path) -> list[str]:
    """Every page of the site, as the path to ask the server for."""
    found = sorted(path.relative_to(site).as_posix() for path in site.rglob("*.html"))
    return ["/" + name.removesuffix("index.html") for name in found]


def diagrams(site: Path, path: str) -> int:
    """How many mermaid diagrams the page at ``path`` holds, as the build wrote them."""
    html = site / path.lstrip("/") / "index.html" if path.endswith("/") else site / path.lstrip("/")
    return html.read_text(encoding="utf-8").count('<pre class="mermaid">')


def check(site: Path) -> list[str]:
    """What failed, one line each; nothing when every page rendered offline."""
    if not CHROMIUM.is_file():
        return [
            f"the check needs Chromium at {str(CHROMIUM)!r}; install it with `apt-get install -y chromium`."
        ]
    failures: list[str] = []
    with served(site) as base, sync_playwright() as playwright:
        local = urlsplit(base).netloc
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True)
        context = browser.new_context(service_workers="block")
        context.add_init_script(OPEN_SHADOW_ROOTS)
        current = ["(none)"]
        requests = 0

        def route(route: Route) -> None:
            nonlocal requests
            requests += 1
            url = route.request.url
            if urlsplit(url).scheme in ("data", "blob") or urlsplit(url).netloc == local:
                route.continue_()
            else:
                failures.append(f"{current[0]} asked for {url}, which is not on this machine")
                route.abort()

        context.route("**/*", route)
        page = context.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(f"{current[0]}: {error}"))
        for path in pages(site):
            current[0] = path
            response = page.goto(base + path, wait_until="networkidle")
            if response is None or not response.ok:
                failures.append(f"{path} did not load ({None if response is None else response.status})")
                continue
            expected = diagrams(site, path)
            if expected:
                try:
                    page.wait_for_function(f"{DRAWN} >= {expected}", timeout=DIAGRAM_LIMIT)
                except Exception:  # Playwright's TimeoutError: the diagrams are missing or left as code
                    drawn = page.evaluate(f"() => {DRAWN}")
                    failures.append(
                        f"{path}: {drawn} of its {expected} mermaid diagram(s) were drawn as an SVG"
                    )
        browser.close()
        failures.extend(f"a script failed on {error}" for error in errors)
    if not failures:
        print(
            f"check_docs_site: {len(pages(site))} pages rendered offline ({requests} requests, all to {local})"
        )
    return failures


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="toolrunner-site-") as scratch:
        if len(sys.argv) > 1:
            site = Path(sys.argv[1]).resolve()
        else:
            site = Path(scratch) / "site"
            build(site)
        failures = check(site)
    for failure in failures:
        print(f"check_docs_site: {failure}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

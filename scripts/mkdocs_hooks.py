"""MkDocs hooks (``hooks:`` in mkdocs.yml): the docs site serves its own copy of mermaid.

Material for MkDocs draws the lifecycle diagram with mermaid, and fetches it from a CDN unless the
page already has it; offline, the diagram then shows as code. So the site serves the mermaid of
package.json (``npm ci`` installs it into node_modules/; nothing of it is committed), as
``mermaid.min.js`` at the site's root, which mkdocs.yml's ``extra_javascript`` loads, for
``mkdocs build`` and ``mkdocs serve`` alike.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.exceptions import PluginError
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
MERMAID = ROOT / "node_modules" / "mermaid" / "dist" / "mermaid.min.js"


def on_files(files: Files, *, config: MkDocsConfig) -> Files:
    """Add node_modules' ``mermaid.min.js`` to the site's files."""
    if not MERMAID.is_file():
        raise PluginError(
            f"the docs site serves its own mermaid, and {str(MERMAID)!r} is missing; run `npm ci` in "
            f"{str(ROOT)!r} first (package.json pins it)."
        )
    files.append(
        File(
            MERMAID.name,
            src_dir=str(MERMAID.parent),
            dest_dir=config.site_dir,
            use_directory_urls=config.use_directory_urls,
        )
    )
    return files

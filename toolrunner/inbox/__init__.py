"""The inbox: a small web app over a store, where the person who decides reads the runs that wait
for a decision and approves (perhaps with an edited input), denies or answers their calls; and
sees the runs that finished or failed. See docs/inbox.md.

``toolrunner inbox --store URL`` serves it (the ``[inbox]`` extra: Starlette, Jinja, uvicorn);
``create_app`` makes the ASGI app to serve another way, and ``app_from_environment`` is a factory
for ``uvicorn --factory`` (several worker processes). Imported only when used: ``import
toolrunner`` imports neither this package nor Starlette.
"""

from ._app import create_app as create_app
from ._serve import app_from_environment as app_from_environment

__all__ = ["app_from_environment", "create_app"]

"""Agents in a web page: a run served over AG-UI or the Vercel AI SDK's UI message stream (the
``[web]`` extra; see docs/web.md).

``Agent`` holds what the runs need (the client, the store, the tools, the request params);
``TemporalAgent`` serves the same apps over workflow runs on Temporal (``toolrunner.temporal``);
``agui_app`` and ``ui_message_stream_app`` are ASGI apps (Starlette) that serve it, each with
an example page. Imports ``_core``, ``_stores``, ``_runner`` (and ``temporal``, when a
``TemporalAgent`` is used).

Modules: ``_agent.py`` (``Agent``: a request's run started, decided, driven under its lease or
followed from the store while another process drives it), ``_temporal.py`` (``TemporalAgent``:
the same, each conversation a workflow run), ``_session.py`` (a request and its answer, whatever
serves it), ``_log.py`` (a run's events in this process, numbered: from a stream, or from the
saved history of a run followed; the protocol-neutral events are ``_events.py``), ``_http.py`` (what both apps share), ``_agui.py`` and
``_ui_stream.py`` (the two protocols: they only encode), ``static/`` (the example pages, plain
ES modules: ``agui.html`` and ``chat.html``, their small clients ``agui.js`` and ``chat.js``,
what both draw with, ``page.js``, and the SSE reader, ``sse.js``).
"""

from __future__ import annotations

from ._agent import Agent as Agent
from ._agui import APPROVAL_SCHEMA as APPROVAL_SCHEMA, agui_app as agui_app
from ._http import DECIDED_BY as DECIDED_BY
from ._temporal import TemporalAgent as TemporalAgent
from ._ui_stream import ui_message_stream_app as ui_message_stream_app

__all__ = ["APPROVAL_SCHEMA", "DECIDED_BY", "Agent", "TemporalAgent", "agui_app", "ui_message_stream_app"]

# FROZEN as of commit 8cff606. Never edit: see ``_legacy/__init__.py``.
"""The names the legacy body asks Temporal for (``toolrunner/temporal/_names.py`` at 8cff606):
part of every history it recorded, and served by today's workers under the same names."""

from __future__ import annotations

__all__ = ["DECISION_ACTIVITY", "REQUEST_ACTIVITY", "TOOL_ACTIVITY", "TOOL_NOT_REGISTERED"]

REQUEST_ACTIVITY = "toolrunner.request"
TOOL_ACTIVITY = "toolrunner.tool"
DECISION_ACTIVITY = "toolrunner.decision"
TOOL_NOT_REGISTERED = "ToolNotRegistered"

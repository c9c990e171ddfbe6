"""The frozen workflow body of runs started by toolrunner 0.1.0: ``LegacyRun``.

``ToolRunnerWorkflow`` gives a run this body when ``workflow.patched("effects-core")`` is false (a
history without the marker: a run started before the workflow drove the core). Such a run must
issue, on every replay and to its end, the commands it issued when it ran, so nothing this body
runs may change when live code does. Every module here is a copy, frozen as of commit 8cff606:

- ``body``: ``LegacyRun``, the old workflow body (``toolrunner/temporal/_legacy.py``);
- the copies of ``toolrunner/_core``'s ``transitions``, ``state``, ``state_schema``, ``messages``,
  ``plan``, ``results``, ``result_blocks``, ``errors``, ``types``, ``usage`` and ``unicode``: each
  the file as it was, less the top-level definitions the body never reaches (classes whole);
- ``data`` and ``names``: the dataclasses and names of ``toolrunner/temporal/_data.py`` and
  ``_names.py`` that the body passes to Temporal, with the fields it uses; ``log``: its lines go to
  ``workflow.logger``.

Copies rather than imports pinned by a test of their source: the copies cannot change when the core
does, so the core stays free to change, and a pin would instead fail on every edit of a module the
body happens to import, and ask whoever made it to vendor the old version then. Nothing here
imports toolrunner outside this package, and nothing outside it imports from here but
``ToolRunnerWorkflow`` (``_workflow.py``): ``tests/test_layout.py`` checks both
(``frozen_violations``), and ``tests/temporal/test_temporal_legacy.py`` pins each file's text: a
change to a frozen file fails it, and says what to do. What is not frozen: the SDK and pydantic
models the body validates replies with, and the activities it calls (today's workers serve them,
under the names of ``names``, and take the wire form of ``data``).

Never edit these files: nothing but a security fix may change them. Such a fix must keep the
commands of every history recorded so far (``tests/temporal/test_temporal_replay.py`` replays
them): if it changes what the body asks Temporal for, guard it with a ``workflow.patched()`` id of
its own and record a history that takes the new path; then update the pin on purpose. The package
goes when no run is left on it (docs/temporal.md, "Runs started by an earlier toolrunner").
"""

from .body import LegacyRun as LegacyRun

__all__ = ["LegacyRun"]

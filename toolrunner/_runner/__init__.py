"""The in-process driver: ``runner`` (``ToolRunner``, made of the parts below, which its methods
delegate to), ``performer`` (``Performer``: performs the core's effects in the caller's task),
``body`` (``LoopBody``: what the loop body may ask of a runner), ``sdk_features`` (``RunnerTools``:
the tools' index and lifetime, and tool changes), ``sync`` (``SyncToolRunner``, the blocking front end),
``options`` and ``params`` (what a runner is given, checked), ``hooks`` (``Hooks``, and the
code that calls them), ``requests`` (the one seam that sends
a request), ``streaming``, ``running_calls`` (the calls running now), ``saver`` (the runner's side
of saving), ``events`` (``runner.events()``), ``stdlog`` (the core's log lines to ``logging``).

It may import ``_core``, ``_tracing``, ``_tools`` and ``_stores``.
"""

"""The in-process driver: ``runner`` (``ToolRunner``: performs the core's effects in the caller's
task), ``sync`` (``SyncToolRunner``, the blocking front end), ``body`` (what the loop body may ask
of a runner), ``sdk_features`` (the SDK runner's tool lifetime, tool changes and compaction),
``options`` and ``params`` (what a runner is given, checked), ``requests`` (the one seam that sends
a request), ``streaming``, ``running_calls`` (the calls running now), ``saver`` (the runner's side
of saving), ``events`` (``runner.events()``), ``stdlog`` (the core's log lines to ``logging``).

It may import ``_core``, ``_tracing``, ``_tools`` and ``_stores``.
"""

"""Operating saved runs: ``cli`` (the parser and exit statuses of ``toolrunner``), ``commands``
(the commands, imported once one runs; ``decide_commands`` those that decide a call,
``command_context`` what they share), ``exits``, ``render`` (runs as text for people and JSON for
scripts), ``printer`` (``EventPrinter``), ``resumer`` (``Resumer``: decided runs go on by
themselves), ``resume_command`` (``toolrunner resume``), ``replay_command`` (``toolrunner replay``:
saved runs replayed as an evaluation) and ``app_loader`` (what ``--app`` and ``--replay`` name).

It may import every layer below it, and the inbox (which serves over a store).
"""

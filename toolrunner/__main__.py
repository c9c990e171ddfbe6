"""``python -m toolrunner``: the command line (``toolrunner runs ...``)."""

from ._ops.cli import main

raise SystemExit(main())

"""``python -m toolrunner``: the command line (``toolrunner runs ...``)."""

from ._cli import main

raise SystemExit(main())

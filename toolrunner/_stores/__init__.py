"""Where runs are kept: ``protocol`` (``Checkpointer``, ``RunStore``, ``Checkpoint``, decisions
through a store), ``runs`` (a saved run's status and summary, pure), ``listing`` (a listing's
arguments, pure), ``deciding`` (the decisions taken through a store, and an edited input checked,
pure), ``leases`` (which runs a resumer may take up, pure), ``formats`` (an edited input's string
formats), ``memory``, ``sqlite`` and ``postgres`` (the stores; the SQL ones share ``sql``, their
base and queries, and ``group_commit``; ``sqlite_schema`` and ``postgres_schema`` make, check and
upgrade their tables), ``waiting`` (waiting for ready runs), ``open`` (``open_store(url)``) and
``urls`` (store URLs shown without their secrets).

It may import ``_core`` and ``_tools``; never a driver.
"""

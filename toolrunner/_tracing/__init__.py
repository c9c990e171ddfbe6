"""Tracing: the seam between a driver and OpenTelemetry (``trace``: what a driver tells a run's
trace; ``otel``: the OpenTelemetry side, imported only when a runner is given ``tracing=``;
``subrun_spans``: its spans of sub-agents' runs; ``content``: content as the conventions shape it).

It may import ``_core`` only.
"""

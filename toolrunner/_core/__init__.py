"""The core: the run's state as one value, its pure transitions, and the order of its effects.

What lives here does no I/O, reads no clock (a driver may give its own, ``clock=``, to time a
sub-agent's call), starts no thread, logs nothing itself (``log`` hands a
line to the sink the driver layer sets) and knows no store: every driver (``ToolRunner``, the
Temporal workflow) performs the effects its programs yield, so a decision made here is made once,
for all of them, and can be tested without any of them.

- the state: ``state`` (``RunState``), ``state_json`` (its JSON form), ``state_schema`` (its
  saved form's schema and migrations), ``types`` (what every layer shares), ``errors`` (the exception tree), ``api_errors``
  (which errors of the service pass by themselves, and which come again);
- the transitions: ``transitions`` (pure functions of a state), ``approval`` (those of calls that
  wait for decisions), ``stop_reasons`` (what a reply's stop reason asks for), ``tool_changes``,
  ``compaction``, ``caching``, ``usage``, ``tree_usage`` (a run's tree's usage: the budget its
  limits hold for, per-agent figures), ``tree_audit`` (its sub-runs' decisions, in its audit), ``progress`` (its sub-runs in flight), ``tree_tools`` (the tools a resumed run's sub-runs need), ``messages``, ``message_checks``, ``history`` and
  ``history_import`` (histories: read, checked, converted), ``results`` (a tool_result block), ``result_blocks``, ``unicode``, ``ids``,
  ``output`` (typed final answers: the schema sent, an answer judged), ``hook_types`` (the values
  of the hooks that can refuse or change a call);
- the order of effects: ``effects`` (what a program asks of its driver), ``run`` (``RunCore``, the
  programs: one iteration, requests, steps and saves, steering), built in one chain of classes over
  ``base`` (its fields, the state made current, the tools), ``window`` (the history's window,
  compaction's requests), ``decisions`` (gates, approvals, decisions through the store), ``hooks`` (per-tool limits, the
  tool call hooks) and ``turn``
  (a reply's turn finished, its calls run); ``reasons`` (the texts the model reads for a call that
  did not run), ``drive`` (the trampoline every driver runs them with), ``plan`` (in which order a
  message's calls run), ``events`` (what listeners hear), ``log``.

It imports nothing of toolrunner outside ``_core``; ``tests/test_layout.py`` holds it to that, and
to importing no anyio, asyncio, threading, time, logging or store module.
"""

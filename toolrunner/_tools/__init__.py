"""Where tools come from, and running one: ``tool`` (``@tool``: ``Tool``, ``ToolContext``),
``callables`` (what ``@tool`` reads from a callable), ``inputs`` (the model's input checked),
``definition`` (the ``definition=`` fields), ``schema`` and ``docstrings`` (a tool's input and its
description), ``toolsets`` (the seam: ``RunnableTool``, ``Toolset``), ``sdk`` (the SDK's tools and
toolsets adapted to it), ``mcp_results`` (an MCP call's result as a tool's value), ``results`` (the
result adapter: what a tool returns, as tool_result content), ``execution`` (one call run: its input
checked, its time limit, its errors as results), ``approvals`` (gates and the checks of a decision's
input), ``subagents`` (``SubAgent``, a run as a tool), ``request_params`` (request params checked as
the SDK takes them, for a runner and a sub-agent alike; the transport params kept apart).

It may import ``_core`` and ``_tracing``.
"""

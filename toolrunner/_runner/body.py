"""What the loop body may ask of a runner (``LoopBody``, a part of ``ToolRunner``): the params of
the next request, the usage, the tool results, steering (and the params it installs), decisions;
and ``ToolRunner``'s members that read its tree (``TreeViews``: the usage of the run's own requests
and of its tree's, and the sub-runs in flight).

These change the run only through the core (``RunCore``: its transitions and its programs, driven
by the runner's ``Performer``), and they refuse to steer from inside a tool or while the runner is
finishing a turn, where the history would change under it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from types import MappingProxyType
from typing import Any

from .._core.errors import ApprovalError, AwaitingApprovalError, ParamsError, ToolRunnerError
from .._core.events import Listener
from .._core.ids import check_by, check_reason
from .._core.messages import message_param
from .._core.progress import SubRunProgress, sub_runs_in_progress
from .._core.results import tool_result_block
from .._core.run import RunCore
from .._core.state import Phase, decided_at
from .._core.transitions import pending_calls
from .._core.tree_usage import requests_by_agent
from .._core.types import Decision, Reply, ToolResultMessage
from .._core.usage import Price, UsageTracker
from .._tools.approvals import answer_block, check_approved_input
from .._tools.execution import current_call
from .._tools.request_params import split_transport
from .._tools.subagents import tool_at
from .._tools.toolsets import RunnableTool
from .options import Options
from .params import check_params
from .performer import Performer
from .sdk_features import RunnerTools

__all__ = ["LoopBody", "TreeViews"]


class LoopBody:
    """The loop body's side of a ``ToolRunner`` (see the module docstring), whose public methods
    delegate here.

    Args:
        core: The run's core.
        options: The runner's options.
        tools: The runner's tools (indexed again when the ``tools`` param changes).
        performer: Drives the steps the body asks for, and holds the transport params.
        prices: The prices of the run's models (``usage`` gives the cost at them).
    """

    def __init__(
        self,
        core: RunCore[RunnableTool],
        options: Options,
        tools: RunnerTools,
        performer: Performer,
        prices: Mapping[str, Price],
    ) -> None:
        self._core = core
        self._options = options
        self._prices = prices
        self._tools = tools
        self._performer = performer
        self._usage: tuple[tuple[object, ...], UsageTracker] | None = None
        self._deciding = threading.RLock()  # decisions may come from several threads (a sync runner's)

    # -- views ----------------------------------------------------------------------------------

    def params(self) -> Mapping[str, Any]:
        """``ToolRunner.params``."""
        state = self._core.state
        return MappingProxyType(
            {
                **state.params,
                **self._performer.transport,
                "messages": list(state.messages),
                "tools": self._tools.index.tools,
            }
        )

    def usage(self) -> UsageTracker:
        """``ToolRunner.usage``: made again only when the state's usage changed."""
        usage = self._core.state.usage
        if self._usage is None or self._usage[0] is not usage:
            self._usage = (usage, UsageTracker.of_requests(usage, prices=self._prices))
        return self._usage[1]

    def usage_by_agent(self) -> dict[tuple[str, ...], UsageTracker]:
        """``ToolRunner.usage_by_agent()``: the tree's requests by the path of sub-agents' names."""
        found = requests_by_agent(self._core.state)
        return {
            path: UsageTracker.of_requests(requests, prices=self._prices) for path, requests in found.items()
        }

    def tree_usage(self) -> UsageTracker:
        """``ToolRunner.tree_usage``: the run's requests, then its sub-runs'."""
        found = requests_by_agent(self._core.state).values()
        return UsageTracker.of_requests(
            (request for requests in found for request in requests), prices=self._prices
        )

    def sub_runs(self) -> list[SubRunProgress]:
        """``ToolRunner.sub_runs_in_progress``."""
        return list(sub_runs_in_progress(self._core.state))

    # -- tools ------------------------------------------------------------------------------------

    async def tool_response(self) -> ToolResultMessage | None:
        """``ToolRunner.generate_tool_response``."""
        core = self._core
        if core.state.phase is Phase.STREAMING:
            await self._performer.step(core.finish_stream())
        calls = pending_calls(core.state)
        if not calls:
            return None
        running = current_call()
        if running is not None and any(call.id == running.id for call in calls):
            raise ToolRunnerError(
                f"the tool {running.name!r} called generate_tool_response() for the turn it is a call of, so it "
                "would wait for its own result forever; read ctx.call instead, or ask for the results from the "
                "loop body."
            )
        results = await self._performer.step(core.settle(calls))
        if results is None:
            waiting = [call.id for call in core.waiting_in_tree()]
            raise ApprovalError(
                f"the tool calls {waiting!r} wait for a decision, so there is no complete tool response yet (the "
                "calls that need none ran); decide them with approve(), deny() or answer() first."
            )
        return {"role": "user", "content": results}

    # -- steering ---------------------------------------------------------------------------------

    def push_messages(self, *messages: Mapping[str, Any] | Reply) -> None:
        """``ToolRunner.push_messages``."""
        self._check_history_may_change("push_messages")
        params = [message_param(message, index) for index, message in enumerate(messages)]
        self._core.push_messages(params)

    def set_messages_params(
        self, params: Mapping[str, Any] | Callable[[dict[str, Any]], Mapping[str, Any]]
    ) -> None:
        """``ToolRunner.set_messages_params``."""
        self._check_history_may_change("set_messages_params")
        if callable(params):
            new = params(dict(self.params()))
            if not isinstance(new, Mapping):
                raise ParamsError(
                    f"the function given to set_messages_params returned {type(new).__name__!r}, not a mapping; "
                    "return the new params, for example {**params, 'messages': [...]}."
                )
        elif isinstance(params, Mapping):
            new = params
        else:
            raise ParamsError(
                f"set_messages_params takes a mapping of params or a function of them, not {type(params).__name__!r}."
            )
        self.apply_params(dict(new), steer=True)

    def check_can_steer(self, method: str) -> None:
        """Steering belongs to the loop body: from a tool, or while the runner is between replies,
        the history would change under the turn being finished."""
        call = current_call()
        if call is not None or self._performer.advancing:
            source = (
                f"inside the tool {call.name!r}"
                if call is not None
                else "while the runner was finishing a turn (from a callback or another task)"
            )
            raise ToolRunnerError(
                f"{method}() was called {source}; change the history from the loop body instead, between "
                "receiving a reply and asking for the next."
            )

    def _check_history_may_change(self, method: str) -> None:
        self.check_can_steer(method)
        self._core.check_history_may_change(method)

    def apply_params(self, params: dict[str, Any], *, steer: bool) -> None:
        """Check ``params`` and make them current; index the tools when they changed. Transport
        params (headers, query, timeout) are kept apart: they are not part of the run's state."""
        check_params(params)
        if steer:  # before anything changes: a history that could never be sent changes nothing
            self._core.check_steered(tuple(params["messages"]))
        params, transport = split_transport(params)
        tools = params.pop("tools", None)
        if tools is not self._tools.index.tools:
            self._tools.index_tools(tools)
        changes: dict[str, Any] = {
            "messages": tuple(params.pop("messages")),
            "params": params,
            "tools": self._tools.index.saved,
        }
        self._core.apply_params(changes, steer=steer)
        self._performer.transport = transport

    def final_reply(self) -> Reply:
        """The reply ``ToolRunner.until_done`` returns once the loop stopped.

        Raises:
            AwaitingApprovalError: The loop paused: calls wait for a decision.
            ToolRunnerError: The loop ended before any request got a reply.
        """
        state = self._core.state
        if state.phase is Phase.AWAITING:
            waiting = self._core.waiting_in_tree()
            raise AwaitingApprovalError(
                f"the run paused: the tool calls {[call.id for call in waiting]!r} wait for a decision, so there is "
                "no final reply yet. Decide them with approve(), deny() or answer() (runner.pending_approvals "
                "lists them), then call until_done() again.",
                waiting,
            )
        if state.reply is None:
            raise ToolRunnerError(
                "the runner ended before any request got a reply, so there is no final message."
            )
        return state.reply

    def listen(self, emit: Listener | None) -> Listener | None:
        """Have ``emit`` hear the run's events (``ToolRunner.events``); the listener it replaces."""
        previous, self._core.listener = self._core.listener, emit
        return previous

    # -- decisions --------------------------------------------------------------------------------

    def approve(self, tool_use_id: str, *, input: object, by: str | None) -> None:
        """``ToolRunner.approve``."""
        self.check_can_steer("approve")
        by = check_by(by)
        if input is not None:
            call = self._core.find(tool_use_id)
            tool = None if call is None else self._core.tool_of(call)
            nested = next((call for call in self._core.waiting_in_tree() if call.id == tool_use_id), None)
            if call is None and nested is not None:  # a call inside a sub-run: its sub-agent's tool
                tool = tool_at(self._tools.execution, nested.path[1::2], nested)
            check_approved_input(tool_use_id, tool, input)
        self._decide(tool_use_id, "approved", approved_input=input, by=by, at=_now())

    def deny(self, tool_use_id: str, reason: str, *, by: str | None) -> None:
        """``ToolRunner.deny``."""
        self.check_can_steer("deny")
        by = check_by(by)
        reason = check_reason(tool_use_id, reason)
        self._decide(
            tool_use_id,
            "denied",
            result=tool_result_block(tool_use_id, reason, is_error=True),
            by=by,
            at=_now(),
        )

    def answer(self, tool_use_id: str, result: object, *, is_error: bool, by: str | None) -> None:
        """``ToolRunner.answer``."""
        self.check_can_steer("answer")
        by = check_by(by)
        block = answer_block(self._options.result_adapter, tool_use_id, result, is_error=is_error)
        self._decide(tool_use_id, "answered", result=block, by=by, at=_now())

    def _decide(self, tool_use_id: str, decision: Decision, **details: Any) -> None:
        """One decision at a time, whichever thread takes it (a ``SyncToolRunner``'s body, or
        another thread, may decide while the runner works): of two on one call, the second is
        refused (``ApprovalError``)."""
        with self._deciding:
            self._core.decide(tool_use_id, decision, **details)


def _now() -> str:
    """The time of a decision, as the state keeps it (ISO 8601, UTC, to the second)."""
    return decided_at(datetime.now(UTC))


class TreeViews:
    """``ToolRunner``'s members that read its tree, through its body: the usage of the run's own
    requests and of its tree's, and its sub-runs in flight."""

    _body: LoopBody

    @property
    def usage(self) -> UsageTracker:
        """Token usage per request and in total, and the cost when the model has a price: the run's
        own requests (its sub-agents' are in ``tree_usage``)."""
        return self._body.usage()

    @property
    def tree_usage(self) -> UsageTracker:
        """The usage of the run's tree, which its limits hold for: its own requests, then its
        sub-agents' (those that ended, and those running)."""
        return self._body.tree_usage()

    def usage_by_agent(self) -> dict[tuple[str, ...], UsageTracker]:
        """``tree_usage`` by the path of sub-agents' names: ``()`` is the run's own requests,
        ``("researcher", "searcher")`` a sub-agent's sub-agent's (every sub-run there, added up)."""
        return self._body.usage_by_agent()

    @property
    def sub_runs_in_progress(self) -> list[SubRunProgress]:
        """The sub-agents' runs in flight in the run's tree, as its state holds them (each as its
        last step left it; before a listener hears a ``SubRunEvent``, what the event reports):
        each one's ``path``, ``status``, ``requests_sent``, ``usage``, ``last_message`` and
        ``state``; those of the current turn's calls, in the order they started, each followed by
        those below it. Empty when no sub-run is in flight."""
        return self._body.sub_runs()

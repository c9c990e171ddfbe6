"""Hooks on Temporal, the workers' side: the ``toolrunner.hook`` activity asks a run's hooks,
registered on the worker by name (``create_worker(hooks={"guarded": Hooks(...)})``), with what
each would see in a ``ToolRunner``, and checks their answers with ``_runner.hooks``'s code.

A hook that raises, or answers what it may not, is not a failed activity (Temporal would ask it
again): its error goes back as data, ``{"error", "type"}``, and the workflow's core fails closed
with it as a ``ToolRunner``'s does (the call denied, its result withheld, the request refused).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from anthropic.types import Message, ToolResultBlockParam
from anthropic.types.beta import BetaMessage
from temporalio import activity
from temporalio.exceptions import ApplicationError

from .._core.errors import ParamsError, message_of
from .._core.hook_types import Deny, RequestInfo, ToolCallInfo
from .._core.types import ToolCall
from .._runner.hooks import Hooks, after_tool_call, before_request, before_tool_call, check_output
from ._activity_support import heartbeating
from ._event_data import read_call
from ._hook_data import HOOK_KINDS, HookInput
from ._names import HOOK_ACTIVITY, HOOKS_NOT_REGISTERED
from ._output import answer_data

if TYPE_CHECKING:
    from ._activities import Activities

__all__ = ["HookActivity", "worker_hooks"]


def worker_hooks(hooks: object) -> dict[str, Hooks]:
    """``create_worker(hooks=...)``, checked: a mapping of names to ``Hooks``.

    Raises:
        ParamsError: It is not a mapping of non-empty names to ``Hooks``.
    """
    if isinstance(hooks, Hooks) or not isinstance(hooks, Mapping):
        raise ParamsError(
            "hooks takes a mapping of names to Hooks(...), which runs name: create_worker(hooks={'guarded': "
            f"Hooks(...)}}) and start_run(hooks='guarded'); not {type(hooks).__name__!r}."
        )
    found: dict[str, Hooks] = {}
    for name, value in cast("Mapping[object, object]", hooks).items():
        if not isinstance(name, str) or not name or not isinstance(value, Hooks):
            raise ParamsError(
                f"hooks maps a name (a non-empty str) to a Hooks(...), not {name!r}: {type(value).__name__!r}."
            )
        found[name] = value
    return found


class HookActivity:
    """The ``toolrunner.hook`` activity of one worker: its hooks by name, and its other
    activities' tools, payloads and output types."""

    def __init__(self, hooks: Mapping[str, Hooks], activities: Activities) -> None:
        self.hooks = dict(hooks)
        self._activities = activities

    def _named(self, name: str, *, retryable: bool) -> Hooks:
        found = self.hooks.get(name)
        if found is None:
            raise ApplicationError(
                f"the hooks {name!r} are not registered on this worker (it has {sorted(self.hooks)!r}); every "
                "worker of the task queue must be created with the hooks of the runs it serves: "
                "create_worker(hooks={...}).",
                type=HOOKS_NOT_REGISTERED,
                non_retryable=not retryable,
            )
        return found

    @activity.defn(name=HOOK_ACTIVITY)
    async def hook(self, input: HookInput) -> dict[str, Any]:
        """Which hooks a name stands for (``kind="plan"``: ``{"plan": [...]}``), or one hook's
        answer (``{"answer": ...}``, or its failure: ``{"error", "type"}``)."""
        # A run's first question fails it at once; a later one, on a worker deployed without the
        # hooks, is retried (another worker of the queue may have them), then fails closed.
        hooks = self._named(input.hooks, retryable=input.kind != "plan")
        if input.kind == "plan":
            return {"plan": [kind for kind in HOOK_KINDS if getattr(hooks, kind) is not None]}
        hook: Any = getattr(hooks, input.kind, None) if input.kind in HOOK_KINDS else None
        if hook is None:
            raise ApplicationError(
                f"the hooks {input.hooks!r} of this worker have no {input.kind} hook, which the run was started "
                "with: every worker of the task queue must have the same hooks under one name.",
                type=HOOKS_NOT_REGISTERED,
            )
        try:
            return {"answer": await heartbeating(self._ask(input, hook))}
        except Exception as error:  # the core fails closed with it (the module docstring)
            return {"error": message_of(error), "type": type(error).__name__}

    async def _ask(self, input: HookInput, hook: Any) -> Any:
        kind = input.kind
        if kind in ("before_tool_call", "after_tool_call"):
            assert input.call is not None
            call = read_call(input.call)
            info = ToolCallInfo(
                id=call.id,
                name=call.name,
                input=input.input,
                call=call,
                run_id=input.run_id,
                approved=input.approved,
                approved_by=input.approved_by,
            )
            if kind == "before_tool_call":
                answer = await before_tool_call(hook, info, self._tool_of(call))
                if isinstance(answer, Deny):
                    return {"deny": answer.reason}
                return None if answer is None else {"input": answer.input}
            assert input.block is not None
            block = cast(ToolResultBlockParam, await self._activities.payloads.load_value(input.block))
            return await after_tool_call(hook, info, block)
        if kind == "before_request":
            return await before_request(hook, await self._request_info(input))
        assert input.reply is not None
        return await check_output(hook, await self._answer(input))

    def _tool_of(self, call: ToolCall) -> Any:
        return self._activities.tool_options().find(call)

    async def _request_info(self, input: HookInput) -> RequestInfo:
        payloads = self._activities.payloads
        before = () if input.base is None else (await payloads.load_history(input.base)).messages
        messages = await payloads.resolve([*before, *(input.messages or ())])
        return RequestInfo(
            messages=tuple(messages),
            params=dict(input.params or {}),
            tools=tuple(input.tools or ()),
            run_id=input.run_id,
            requests_sent=input.requests_sent,
        )

    async def _answer(self, input: HookInput) -> object:
        """The final answer as a ``ToolRunner``'s hook gets it: whole, and parsed with the run's
        output type if it has one."""
        assert input.reply is not None
        [data] = await self._activities.payloads.resolve([input.reply])
        reply = (BetaMessage if input.beta else Message).model_validate(data)
        if input.output is None:
            return reply
        parsed, _ = answer_data(self._activities.outputs.find(input.output), reply)
        return parsed

"""What a runner is given, defined once for ``ToolRunner`` and ``SyncToolRunner``: its options and
the request params.

``RunnerOptions`` names the options; ``RequestParams`` the request params (``model``,
``max_tokens``, ``messages``, ``system``, ...), typed with the SDK's own param types.
``RunnerArguments`` (both, for a new run) and ``ResumeArguments`` (the options and the transport
params, for a resumed one) are the signatures' ``**options``, all but ``output_format``, a keyword of
its own in the signatures (its type is the type of the items): checkers then read every keyword, and
refuse a misspelt one, as the runner does at run time. ``read_options`` checks the options and splits
them from the params; the params are checked against the SDK's signatures (``_runner.params``), so a param
a newer SDK adds passes at run time before it is typed here (tests/runner/test_options_types.py keeps the
two lists equal). The options are configuration, kept apart from the run's state: they hold code
(tools, callbacks, adapters) and are given again when a saved run is resumed.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import Decimal, InvalidOperation
from typing import Any, Literal, TypeAlias, cast

from anthropic import NotGiven, Omit, Timeout
from anthropic.types import (
    AnthropicBetaParam,
    CacheControlEphemeralParam,
    DiagnosticsParam,
    Message,
    MetadataParam,
    ModelParam,
    OutputConfigParam,
    TextBlockParam,
    ThinkingConfigParam,
    ToolChoiceParam,
)
from anthropic.types.beta import (
    BetaBillingPolicyParam,
    BetaCacheControlEphemeralParam,
    BetaContextManagementConfigParam,
    BetaDiagnosticsParam,
    BetaFallbacksParam,
    BetaMessage,
    BetaMetadataParam,
    BetaOutputConfigParam,
    BetaRequestMCPServerURLDefinitionParam,
    BetaTextBlockParam,
    BetaThinkingConfigParam,
    BetaToolChoiceParam,
)
from anthropic.types.beta.message_create_params import Container as BetaContainer, FallbackCreditToken
from anthropic.types.message_create_params_container_param import MessageCreateParamsContainerParam
from typing_extensions import TypedDict

from .._core.caching import CachePolicy, Caching, cache_policy
from .._core.compaction import CompactionControl
from .._core.errors import ParamsError
from .._core.events import RunnerEvent
from .._core.hook_types import HookPlan
from .._core.ids import check_run_id
from .._core.output import DEFAULT_OUTPUT_RETRIES, OutputFormat, output_format_of
from .._core.transitions import Limits
from .._core.usage import DEFAULT_PRICES, Price, find_price
from .._stores.protocol import Checkpointer
from .._tools.approvals import ApproveCallback
from .._tools.results import DEFAULT_ADAPTER, ToolResultAdapter
from .._tools.sdk import SdkObject
from .._tools.subagents import SubAgent
from .._tools.tool import Tool
from .._tools.toolsets import RunnableTool, Toolset
from .._tracing.trace import Tracing
from .hooks import Hooks, hook_plan

__all__ = [
    "Options",
    "RequestParams",
    "ResumeArguments",
    "RunnerArguments",
    "RunnerOptions",
    "ToolLike",
    "TransportParams",
    "read_options",
]

ToolLike: TypeAlias = Tool | Callable[..., Any] | Mapping[str, Any] | Toolset | RunnableTool | SdkObject
"""What ``tools=[...]`` takes: ``@tool`` tools, plain functions, raw definitions, ``Toolset`` objects,
and the SDK's tools and toolsets."""


class _Options(TypedDict, total=False):
    """The options of ``ToolRunner`` and ``SyncToolRunner`` but ``output_format``, which their
    signatures take as a keyword of its own (``RunnerOptions`` has them all)."""

    tools: Iterable[ToolLike]
    """Tools made with ``@tool``, plain functions (made into tools), or raw tool definitions
    (dicts such as server tools), which are sent as given and never run."""
    run_tools_eagerly: bool
    """With ``stream=True``, start each tool call as soon as its tool_use block is complete;
    needs ``async with runner:``."""
    max_iterations: int | None
    """The most requests to send (counted from when the loop last opened); ``None``: no limit."""
    max_total_tokens: int | None
    """Stop once the replies' usage adds up to this many tokens."""
    max_cost: Decimal | float | str | None
    """Stop once the requests cost this many US dollars (needs prices for the model)."""
    on_limit: Literal["stop", "final_answer"]
    """``"stop"`` ends the loop at a limit; ``"final_answer"`` first sends one last request with
    ``tool_choice={"type": "none"}`` so that the model answers."""
    max_concurrency: int | None
    """The most tool calls to run at once; ``None``: no limit."""
    tool_timeout: float | None
    """Seconds a tool call may take (a tool's own ``timeout`` wins)."""
    result_adapter: ToolResultAdapter
    """Turns what tools return into tool_result content."""
    prices: Mapping[str, Price] | None
    """Model id to ``Price`` for ``runner.usage``; the dated defaults when ``None``."""
    on_event: Callable[[RunnerEvent], None] | None
    """Called with each ``RunnerEvent`` (text deltas, tool calls, ...), for UIs."""
    checkpointer: Checkpointer | None
    """Save the run's state there at every step (see docs/durability.md)."""
    run_id: str | None
    """The run's name in the checkpointer; a new random one when ``None``."""
    approve: ApproveCallback | None
    """Decides each call that waits for approval, inline (sync or async): ``True`` approves,
    ``False`` denies, a string denies with that reason. Without it, the loop pauses instead."""
    compaction_control: CompactionControl | None
    """Client-side compaction (the SDK's option): replace older turns with a summary once a reply's
    usage reaches a threshold (see docs/migrating.md)."""
    cache: CachePolicy | bool | Literal["5m", "1h"] | None
    """Prompt caching: ``True`` (or ``"5m"``, ``"1h"``: the TTL) sends the top-level ``cache_control``;
    a ``CachePolicy`` can add breakpoints on the system prompt and the tools. Never more than four
    breakpoints in a request, the caller's own counted first (see docs/caching.md)."""
    tracing: Tracing | None
    """Trace the runner with OpenTelemetry (see docs/observability.md); ``None``: no tracing."""
    output_retries: int
    """How many times a final answer that does not fit ``output_format`` is sent back to the model
    with its validation errors before ``OutputValidationError`` is raised (default 1)."""
    hooks: Hooks | None
    """Hooks that can refuse or change a tool call (``Hooks``; see docs/hooks.md)."""
    max_calls: Mapping[str, int] | None
    """The most calls each named tool may make in the run; a call over it is not run, and the model
    reads why (see docs/hooks.md)."""
    thread: Literal[False] | None
    """The SDK runner's option: toolrunner always sends the whole history, which is what
    ``thread=False`` asks; server-held threads are not supported."""


class TransportParams(TypedDict, total=False):
    """The request params that say how to send, not what: never saved, given again on resume
    (``_runner.params.TRANSPORT``)."""

    extra_headers: Mapping[str, str | Omit] | None
    extra_query: Mapping[str, object] | None
    timeout: float | Timeout | NotGiven | None


class _RunParams(TypedDict):
    """The request params every new run needs."""

    model: ModelParam
    max_tokens: int
    messages: Iterable[Mapping[str, Any] | Message | BetaMessage]
    """The history: message params (``MessageParam``, ``BetaMessageParam``: any mapping, as in
    ``push_messages()``, since a history is often data read back from JSON; the runner checks each
    message when it is made, ``HistoryError``), or the SDK's ``Message`` objects. Not the union of
    the SDK's TypedDicts: a mapping takes them all, and pyright spends seconds matching a list of
    dicts against each of their content blocks, at every call."""


class RequestParams(_RunParams, TransportParams, total=False):
    """The request params a runner takes: those of ``client.messages.create`` and of
    ``client.beta.messages.create`` (which a beta-only param, or ``betas``, sends through), with the
    SDK's own types (of either endpoint, where they differ). ``stream`` is the runner's own keyword,
    ``tools`` and ``thread`` are options (``RunnerOptions``), and ``compaction`` is refused (use
    ``compact_before_next_turn()``)."""

    system: str | Iterable[TextBlockParam | BetaTextBlockParam]
    cache_control: CacheControlEphemeralParam | BetaCacheControlEphemeralParam | None
    container: MessageCreateParamsContainerParam | BetaContainer | None
    diagnostics: DiagnosticsParam | BetaDiagnosticsParam | None
    inference_geo: str | None
    metadata: MetadataParam | BetaMetadataParam
    output_config: OutputConfigParam | BetaOutputConfigParam
    service_tier: Literal["auto", "standard_only"]
    speed: Literal["standard", "fast"] | None
    stop_sequences: Sequence[str]
    thinking: ThinkingConfigParam | BetaThinkingConfigParam
    tool_choice: ToolChoiceParam | BetaToolChoiceParam
    user_profile_id: str
    workspace_id: str
    extra_body: object
    # Only client.beta.messages.create takes these.
    betas: Sequence[AnthropicBetaParam]
    billing_policy: BetaBillingPolicyParam | None
    context_management: BetaContextManagementConfigParam | None
    fallback_credit_token: FallbackCreditToken | None
    fallbacks: BetaFallbacksParam | None
    mcp_servers: Iterable[BetaRequestMCPServerURLDefinitionParam]


class RunnerOptions(_Options, total=False):
    """The options of ``ToolRunner`` and ``SyncToolRunner``; every other keyword is a request param
    (``RequestParams``)."""

    output_format: type[Any] | None
    """The type of the final answer, as the SDK's runner takes it (a pydantic model; a TypedDict or
    a dataclass): its JSON schema goes in ``output_config.format``, and each reply carries
    ``parsed_output`` (see docs/typed-output.md). The signatures take it as a keyword of its own,
    so that the runner's items are typed ``ParsedReply[that type]``."""


class RunnerArguments(RequestParams, _Options, total=False):
    """The keywords of ``ToolRunner(...)`` and ``SyncToolRunner(...)`` besides ``stream`` and
    ``output_format``: the request params and the options."""


class ResumeArguments(TransportParams, _Options, total=False):
    """The keywords of ``resume(...)`` besides ``stream`` and ``output_format``: the options and the
    transport params (the other params come from the saved run)."""


@dataclass(frozen=True, slots=True)
class Options:
    """The checked options of one runner."""

    tools: Iterable[ToolLike] = ()
    stream: bool = False
    run_tools_eagerly: bool = False
    limits: Limits = field(default_factory=Limits)
    max_concurrency: int | None = None
    tool_timeout: float | None = None
    result_adapter: ToolResultAdapter = DEFAULT_ADAPTER
    prices: Mapping[str, Price] | None = None
    on_event: Callable[[RunnerEvent], None] | None = None
    checkpointer: Checkpointer | None = None
    run_id: str | None = None
    approve: ApproveCallback | None = None
    compaction_control: CompactionControl | None = None
    cache: Caching | None = None
    tracing: Tracing | None = None
    output: OutputFormat | None = None
    hooks: Hooks | None = None
    hook_plan: HookPlan | None = None


_NAMES = frozenset(RunnerOptions.__annotations__)


def read_options(
    arguments: Mapping[str, Any], *, stream: bool, is_async: bool
) -> tuple[Options, dict[str, Any]]:
    """Check the options among ``arguments`` and split them from the request params.

    Raises:
        ParamsError: An option has a value it cannot take; the message says which and why.
    """
    given = {name: value for name, value in arguments.items() if name in _NAMES}
    params = {name: value for name, value in arguments.items() if name not in _NAMES}
    tool_timeout = _numbers(given)
    adapter = _result_adapter(given.get("result_adapter", DEFAULT_ADAPTER))
    on_limit = given.get("on_limit", "stop")
    if on_limit not in ("stop", "final_answer"):
        raise ParamsError(f"on_limit must be 'stop' or 'final_answer', not {on_limit!r}.")
    _refuse_thread(given.get("thread"))
    eager = _eager(given, stream=stream, is_async=is_async)
    on_event = cast("Callable[[RunnerEvent], None] | None", _function(given, "on_event", "a RunnerEvent"))
    checkpointer, run_id = _saving(given)
    approve = cast("ApproveCallback | None", _function(given, "approve", "a ToolCall"))
    tracing = given.get("tracing")
    if tracing is not None and not isinstance(tracing, Tracing):
        raise ParamsError(f"tracing must be a Tracing(...) or None, not {type(tracing).__name__!r}.")
    limits = _limits(given, params.get("model"), on_limit)
    control = _compaction_control(given.get("compaction_control"))
    policy = cache_policy(given.get("cache"))
    hooks = given.get("hooks")
    checks = isinstance(hooks, Hooks) and hooks.check_output is not None
    output = _output(given, params, checks=checks)
    plan = hook_plan(
        hooks, given.get("max_calls"), output_retries=given.get("output_retries", DEFAULT_OUTPUT_RETRIES)
    )
    options = Options(
        tools=given.get("tools", ()),
        stream=stream,
        run_tools_eagerly=eager,
        limits=limits,
        max_concurrency=given.get("max_concurrency"),
        tool_timeout=tool_timeout,
        result_adapter=adapter,
        prices=given.get("prices"),
        on_event=on_event,
        checkpointer=checkpointer,
        run_id=run_id,
        approve=approve,
        compaction_control=control,
        cache=None if policy is None else Caching(policy),
        tracing=tracing,
        output=output,
        hooks=given.get("hooks"),
        hook_plan=plan,
    )
    return options, params


def _output(
    given: Mapping[str, Any], params: Mapping[str, Any], *, checks: bool = False
) -> OutputFormat | None:
    """``output_format`` and ``output_retries``, checked (``_core.output``); ``checks``: the run
    has a ``check_output`` hook, which shares the retries."""
    output_type = given.get("output_format")
    retries = given.get("output_retries", DEFAULT_OUTPUT_RETRIES)
    if output_type is None:
        if checks:
            output_format_of(None, retries, {}, retries_only=True)
            return None
        if "output_retries" in given:
            raise ParamsError(
                "output_retries says how often an answer that does not fit output_format (or that a check_output "
                "hook refuses) is sent back to the model: pass output_format=... with it (or "
                "hooks=Hooks(check_output=...))."
            )
        return None
    return output_format_of(output_type, retries, params)


def _numbers(given: Mapping[str, Any]) -> float | None:
    """Check the options that are counts, and return ``tool_timeout``."""
    for name in ("max_iterations", "max_total_tokens", "max_concurrency"):
        _check_positive_int(name, given.get(name))
    tool_timeout = given.get("tool_timeout")
    if tool_timeout is not None and (
        isinstance(tool_timeout, bool) or not isinstance(tool_timeout, int | float) or not tool_timeout > 0
    ):
        raise ParamsError(f"tool_timeout must be a positive number of seconds or None, not {tool_timeout!r}.")
    return tool_timeout


def _result_adapter(adapter: object) -> ToolResultAdapter:
    if adapter is DEFAULT_ADAPTER:  # nearly every runner's, checked once
        return DEFAULT_ADAPTER
    if not all(
        callable(getattr(adapter, name, None)) for name in ("to_content", "error_content", "needs_thread")
    ):
        raise ParamsError(
            f"result_adapter must be a ToolResultAdapter (or a subclass of it), not {type(adapter).__name__!r}."
        )
    return cast(ToolResultAdapter, adapter)


def _refuse_thread(thread: object) -> None:
    if thread is not None and thread is not False:
        raise ParamsError(
            f"thread={thread!r} asks for a server-held thread, which toolrunner does not use: it sends the whole "
            "history with every request, as the SDK's runner does with thread=False. Leave thread out."
        )


def _eager(given: Mapping[str, Any], *, stream: bool, is_async: bool) -> bool:
    """``run_tools_eagerly``, checked with ``stream`` against the client."""
    eager = bool(given.get("run_tools_eagerly", False))
    if stream and not is_async:
        raise ParamsError(
            "ToolRunner(stream=True) needs an anthropic.AsyncAnthropic client; with anthropic.Anthropic, "
            "use SyncToolRunner(..., stream=True)."
        )
    if eager and not stream:
        raise ParamsError("run_tools_eagerly=True needs stream=True: tools start while the reply streams.")
    return eager


def _function(given: Mapping[str, Any], name: str, argument: str) -> object:
    """The option ``name``: a function of ``argument``, or None."""
    function = given.get(name)
    if function is not None and not callable(function):
        raise ParamsError(
            f"{name} must be a function of {argument} or None, not {type(function).__name__!r}."
        )
    return function


def _saving(given: Mapping[str, Any]) -> tuple[Checkpointer | None, str | None]:
    """The checkpointer and the run's id: made if the runner saves and none was given."""
    checkpointer = given.get("checkpointer")
    if checkpointer is not None and not isinstance(checkpointer, Checkpointer):
        raise ParamsError(
            f"checkpointer must be a Checkpointer (SQLiteCheckpointer, MemoryCheckpointer, or an object with "
            f"async save() and load()), not {type(checkpointer).__name__!r}."
        )
    run_id = given.get("run_id")
    if run_id is not None:
        check_run_id(run_id)
    if checkpointer is not None and run_id is None:
        run_id = uuid.uuid4().hex
    return checkpointer, run_id


def _limits(given: Mapping[str, Any], model: object, on_limit: Any) -> Limits:
    """The run's limits; ``max_cost`` needs a price for the model."""
    max_cost = None if given.get("max_cost") is None else dollars(given["max_cost"])
    prices = given.get("prices")
    if (
        max_cost is not None
        and isinstance(model, str)
        and find_price(prices or DEFAULT_PRICES, model) is None
    ):
        raise ParamsError(
            f"max_cost needs a price for model {model!r}, and the price table has none; pass prices={{model: Price(...)}}."
        )
    for agent in _sub_agents(given.get("tools")):  # a cost budget holds for the tree (_core.tree_usage)
        if (max_cost is not None or agent.max_cost is not None) and find_price(
            prices or DEFAULT_PRICES, agent.model
        ) is None:
            raise ParamsError(
                f"max_cost holds for the run's tree and needs a price for the sub-agent {agent.name!r}'s model "
                f"{agent.model!r}, and the price table has none; pass prices={{model: Price(...)}}."
            )
    return Limits(
        max_iterations=given.get("max_iterations"),
        max_total_tokens=given.get("max_total_tokens"),
        max_cost=max_cost,
        on_limit=on_limit,
    )


def _sub_agents(tools: object) -> Iterable[SubAgent]:
    """The sub-agents among ``tools`` (a run's ``tools=``), and theirs."""
    if not isinstance(tools, Iterable) or isinstance(tools, str | bytes | Mapping):
        return
    for tool in cast("Iterable[object]", tools):
        if isinstance(tool, SubAgent):
            yield tool
            yield from _sub_agents(tool.tools)


def _compaction_control(value: object) -> CompactionControl | None:
    if value is None:
        return None
    if not isinstance(value, Mapping) or not isinstance(
        cast("Mapping[str, Any]", value).get("enabled"), bool
    ):
        raise ParamsError(
            f"compaction_control must be a dict with 'enabled': True or False (and 'context_token_threshold', "
            f"'summary_prompt', 'model', 'keep_turns'), not {value!r}."
        )
    control = cast(CompactionControl, dict(cast("Mapping[str, Any]", value)))
    unknown = sorted(set(control) - set(CompactionControl.__annotations__))
    if unknown:
        raise ParamsError(
            f"compaction_control has the unknown key(s) {unknown!r}; its keys are "
            f"{sorted(CompactionControl.__annotations__)!r}."
        )
    for name in ("context_token_threshold", "keep_turns"):
        number = control.get(name)
        if number is not None and (isinstance(number, bool) or not isinstance(number, int) or number < 0):
            raise ParamsError(f"compaction_control[{name!r}] must be an int of 0 or more, not {number!r}.")
    return control


def _check_positive_int(name: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise ParamsError(f"{name} must be a positive int or None, not {value!r}.")


def dollars(value: object) -> Decimal:
    """``max_cost`` as a positive Decimal."""
    try:
        amount = Decimal(str(value)) if isinstance(value, Decimal | int | float | str) else Decimal(-1)
    except InvalidOperation:
        amount = Decimal(-1)
    if isinstance(value, bool) or not amount.is_finite() or amount <= 0:
        raise ParamsError(f"max_cost must be a positive amount of US dollars or None, not {value!r}.")
    return amount

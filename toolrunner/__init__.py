"""toolrunner: Claude's tool-use loop on the official anthropic SDK.

The public names are re-exported here, each imported from its module when first used; the
modules behind them are private. The offline testing kit is the public subpackage
``toolrunner.testing``.
"""

import logging as _logging
import warnings as _warnings
from importlib import import_module as _import_module
from typing import TYPE_CHECKING

from ._core import log as _log
from ._runner import stdlog as _stdlog

if TYPE_CHECKING:  # what type checkers and readers see; at run time, __getattr__ imports each when first used
    from ._core.caching import CachePolicy as CachePolicy
    from ._core.compaction import CompactionControl as CompactionControl
    from ._core.errors import (
        ApprovalError as ApprovalError,
        AwaitingApprovalError as AwaitingApprovalError,
        CheckpointConflictError as CheckpointConflictError,
        CheckpointError as CheckpointError,
        HistoryError as HistoryError,
        MalformedReplyError as MalformedReplyError,
        OutputValidationError as OutputValidationError,
        ParamsError as ParamsError,
        RequestRefusedError as RequestRefusedError,
        ResultTooLargeError as ResultTooLargeError,
        RunEndedError as RunEndedError,
        StateError as StateError,
        ToolDefinitionError as ToolDefinitionError,
        ToolError as ToolError,
        ToolInputError as ToolInputError,
        ToolRunnerError as ToolRunnerError,
        UnansweredToolUseError as UnansweredToolUseError,
    )
    from ._core.events import (
        ApprovalDecided as ApprovalDecided,
        ApprovalRequested as ApprovalRequested,
        HookDecided as HookDecided,
        LoopFinished as LoopFinished,
        MessageFinished as MessageFinished,
        RunnerEvent as RunnerEvent,
        SubRunEvent as SubRunEvent,
        TextDelta as TextDelta,
        ToolCallFinished as ToolCallFinished,
        ToolCallStarted as ToolCallStarted,
    )
    from ._core.history import (
        sanitize_tool_id as sanitize_tool_id,
        text_of as text_of,
        thinking_text as thinking_text,
        to_openai as to_openai,
    )
    from ._core.history_import import ImportedHistory as ImportedHistory, from_openai as from_openai
    from ._core.hook_types import (
        Deny as Deny,
        RequestInfo as RequestInfo,
        RunWith as RunWith,
        ToolCallInfo as ToolCallInfo,
    )
    from ._core.progress import SubRunProgress as SubRunProgress
    from ._core.results import ToolResultContent as ToolResultContent, tool_result_block as tool_result_block
    from ._core.state import (
        STATE_VERSION as STATE_VERSION,
        CallRecord as CallRecord,
        CallStatus as CallStatus,
        DecisionRecord as DecisionRecord,
        Phase as Phase,
        RunState as RunState,
    )
    from ._core.types import (
        Decision as Decision,
        DecisionSource as DecisionSource,
        EndReason as EndReason,
        ParsedReply as ParsedReply,
        Reply as Reply,
        ReplyStream as ReplyStream,
        RunnerView as RunnerView,
        ToolCall as ToolCall,
        ToolResultMessage as ToolResultMessage,
    )
    from ._core.usage import (
        DEFAULT_PRICES as DEFAULT_PRICES,
        PRICES_AS_OF as PRICES_AS_OF,
        Price as Price,
        RequestUsage as RequestUsage,
        Usage as Usage,
        UsageTracker as UsageTracker,
        find_price as find_price,
    )
    from ._ops.printer import EventPrinter as EventPrinter
    from ._ops.resumer import Resumer as Resumer
    from ._runner.hooks import Hooks as Hooks
    from ._runner.options import (
        RequestParams as RequestParams,
        RunnerOptions as RunnerOptions,
        ToolLike as ToolLike,
    )
    from ._runner.runner import ToolRunner as ToolRunner
    from ._runner.sync import SyncReplyStream as SyncReplyStream, SyncToolRunner as SyncToolRunner
    from ._stores.memory import MemoryCheckpointer as MemoryCheckpointer
    from ._stores.open import open_store as open_store
    from ._stores.postgres import PostgresCheckpointer as PostgresCheckpointer
    from ._stores.protocol import (
        Checkpoint as Checkpoint,
        Checkpointer as Checkpointer,
        RunStore as RunStore,
        StoreBase as StoreBase,
    )
    from ._stores.runs import (
        Lease as Lease,
        RunPage as RunPage,
        RunStatus as RunStatus,
        RunSummary as RunSummary,
        run_status as run_status,
    )
    from ._stores.sqlite import SQLiteCheckpointer as SQLiteCheckpointer
    from ._tools.approvals import ApproveCallback as ApproveCallback
    from ._tools.results import (
        File as File,
        Image as Image,
        Link as Link,
        ToolResultAdapter as ToolResultAdapter,
    )
    from ._tools.subagents import SubAgent as SubAgent
    from ._tools.tool import (
        ApprovalGate as ApprovalGate,
        Tool as Tool,
        ToolContext as ToolContext,
        tool as tool,
    )
    from ._tools.toolsets import RunnableTool as RunnableTool, Toolset as Toolset
    from ._tracing.trace import Tracing as Tracing

if TYPE_CHECKING:  # the deprecated names (``_DEPRECATED``): in no ``__all__``, typed until they go
    from ._core.errors import DecidedMeanwhileError as DecidedMeanwhileError
    from ._core.stop_reasons import STOP_REASON_STEPS as STOP_REASON_STEPS, Step as Step
    from ._stores.deciding import decisions_since as decisions_since
    from ._tools.results import DEFAULT_ADAPTER as DEFAULT_ADAPTER

__version__ = "0.2.0"
"""The version of this toolrunner (``pyproject.toml`` reads it from here; CHANGELOG.md says what changed)."""

__all__ = [
    "DEFAULT_PRICES",
    "PRICES_AS_OF",
    "STATE_VERSION",
    "ApprovalDecided",
    "ApprovalError",
    "ApprovalGate",
    "ApprovalRequested",
    "ApproveCallback",
    "AwaitingApprovalError",
    "CachePolicy",
    "CallRecord",
    "CallStatus",
    "Checkpoint",
    "CheckpointConflictError",
    "CheckpointError",
    "Checkpointer",
    "CompactionControl",
    "Decision",
    "DecisionRecord",
    "DecisionSource",
    "Deny",
    "EndReason",
    "EventPrinter",
    "File",
    "HistoryError",
    "HookDecided",
    "Hooks",
    "Image",
    "ImportedHistory",
    "Lease",
    "Link",
    "LoopFinished",
    "MalformedReplyError",
    "MemoryCheckpointer",
    "MessageFinished",
    "OutputValidationError",
    "ParamsError",
    "ParsedReply",
    "Phase",
    "PostgresCheckpointer",
    "Price",
    "Reply",
    "ReplyStream",
    "RequestInfo",
    "RequestParams",
    "RequestRefusedError",
    "RequestUsage",
    "ResultTooLargeError",
    "Resumer",
    "RunEndedError",
    "RunPage",
    "RunState",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "RunWith",
    "RunnableTool",
    "RunnerEvent",
    "RunnerOptions",
    "RunnerView",
    "SQLiteCheckpointer",
    "StateError",
    "StoreBase",
    "SubAgent",
    "SubRunEvent",
    "SubRunProgress",
    "SyncReplyStream",
    "SyncToolRunner",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallInfo",
    "ToolCallStarted",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolInputError",
    "ToolLike",
    "ToolResultAdapter",
    "ToolResultContent",
    "ToolResultMessage",
    "ToolRunner",
    "ToolRunnerError",
    "Toolset",
    "Tracing",
    "UnansweredToolUseError",
    "Usage",
    "UsageTracker",
    "__version__",
    "find_price",
    "from_openai",
    "open_store",
    "run_status",
    "sanitize_tool_id",
    "text_of",
    "thinking_text",
    "to_openai",
    "tool",
    "tool_result_block",
]

# A library logs and leaves the output to the application: without a handler of its own, an
# application that configured no logging would print the library's warnings to stderr.
_logging.getLogger("toolrunner").addHandler(_logging.NullHandler())
# The core writes its lines through ``_log``; outside a Temporal workflow they go to that logger.
_log.set_default(_stdlog.write)

_PUBLIC: dict[str, tuple[str, ...]] = {
    "_core.caching": ("CachePolicy",),
    "_core.compaction": ("CompactionControl",),
    "_core.errors": (
        "ApprovalError",
        "AwaitingApprovalError",
        "CheckpointConflictError",
        "CheckpointError",
        "HistoryError",
        "MalformedReplyError",
        "OutputValidationError",
        "ParamsError",
        "RequestRefusedError",
        "ResultTooLargeError",
        "RunEndedError",
        "StateError",
        "ToolDefinitionError",
        "ToolError",
        "ToolInputError",
        "ToolRunnerError",
        "UnansweredToolUseError",
    ),
    "_core.events": (
        "ApprovalDecided",
        "ApprovalRequested",
        "HookDecided",
        "LoopFinished",
        "MessageFinished",
        "RunnerEvent",
        "SubRunEvent",
        "TextDelta",
        "ToolCallFinished",
        "ToolCallStarted",
    ),
    "_core.history": (
        "sanitize_tool_id",
        "text_of",
        "thinking_text",
        "to_openai",
    ),
    "_core.history_import": (
        "ImportedHistory",
        "from_openai",
    ),
    "_core.hook_types": (
        "Deny",
        "RequestInfo",
        "RunWith",
        "ToolCallInfo",
    ),
    "_core.progress": ("SubRunProgress",),
    "_core.results": (
        "ToolResultContent",
        "tool_result_block",
    ),
    "_core.state": (
        "CallRecord",
        "CallStatus",
        "DecisionRecord",
        "Phase",
        "RunState",
        "STATE_VERSION",
    ),
    "_core.types": (
        "Decision",
        "DecisionSource",
        "EndReason",
        "ParsedReply",
        "Reply",
        "ReplyStream",
        "RunnerView",
        "ToolCall",
        "ToolResultMessage",
    ),
    "_core.usage": (
        "DEFAULT_PRICES",
        "PRICES_AS_OF",
        "Price",
        "RequestUsage",
        "Usage",
        "UsageTracker",
        "find_price",
    ),
    "_ops.printer": ("EventPrinter",),
    "_ops.resumer": ("Resumer",),
    "_runner.options": (
        "RequestParams",
        "RunnerOptions",
        "ToolLike",
    ),
    "_runner.hooks": ("Hooks",),
    "_runner.runner": ("ToolRunner",),
    "_runner.sync": (
        "SyncReplyStream",
        "SyncToolRunner",
    ),
    "_stores.memory": ("MemoryCheckpointer",),
    "_stores.open": ("open_store",),
    "_stores.postgres": ("PostgresCheckpointer",),
    "_stores.protocol": (
        "Checkpoint",
        "Checkpointer",
        "RunStore",
        "StoreBase",
    ),
    "_stores.runs": (
        "Lease",
        "RunPage",
        "RunStatus",
        "RunSummary",
        "run_status",
    ),
    "_stores.sqlite": ("SQLiteCheckpointer",),
    "_tools.approvals": ("ApproveCallback",),
    "_tools.results": (
        "File",
        "Image",
        "Link",
        "ToolResultAdapter",
    ),
    "_tools.tool": (
        "ApprovalGate",
        "Tool",
        "ToolContext",
        "tool",
    ),
    "_tools.subagents": ("SubAgent",),
    "_tools.toolsets": (
        "RunnableTool",
        "Toolset",
    ),
    "_tracing.trace": ("Tracing",),
}
"""The module of each public name: imported when the name is first used, so that ``import toolrunner``
(and ``toolrunner --help``) costs no import of the SDK. ``tests/test_layout.py`` checks that this,
the imports above and ``__all__`` name the same."""
_WHERE = {name: module for module, names in _PUBLIC.items() for name in names}

_REMOVED_IN = "0.3.0"
_DEPRECATED: dict[str, tuple[str, str]] = {
    "Step": (
        "_core.stop_reasons",
        "the runner's own reading of a stop reason; read the reply's stop_reason (docs/lifecycle.md says "
        "what each one makes the runner do), or runner.end_reason once the loop ends, instead.",
    ),
    "STOP_REASON_STEPS": (
        "_core.stop_reasons",
        "the runner's own table of stop reasons; read the reply's stop_reason (docs/lifecycle.md says "
        "what each one makes the runner do), or runner.end_reason once the loop ends, instead.",
    ),
    "decisions_since": (
        "_stores.deciding",
        "how a runner reads the decisions taken through its store, which it takes over by itself when "
        "iterated again; read a run's waiting calls with store.get_run(run_id), and its decisions in "
        "RunState.decisions, instead.",
    ),
    "DecidedMeanwhileError": (
        "_core.errors",
        "a signal the runner now handles itself (it reads the decisions again and goes on), so it is never "
        "raised to your code; drop the except clause, or catch ApprovalError, its base, instead.",
    ),
    "DEFAULT_ADAPTER": (
        "_tools.results",
        "the adapter a runner given no result_adapter= uses; use ToolResultAdapter(), which is the same, instead.",
    ),
}
"""The names that left ``__all__``: still served, with a ``DeprecationWarning`` at each use, until
the release ``_REMOVED_IN``; by name, their module and what to use instead (docs/api.md, Deprecated)."""


if not TYPE_CHECKING:  # hidden from type checkers, which would take any name for one of the package's

    def __getattr__(name: str) -> object:
        if name in _DEPRECATED:
            module, instead = _DEPRECATED[name]
            _warnings.warn(
                f"{f'toolrunner.{name}'!r} is deprecated and goes in toolrunner {_REMOVED_IN}: it is {instead}",
                DeprecationWarning,
                stacklevel=2,
            )
            return getattr(_import_module(f".{module}", __name__), name)  # not kept: each use warns
        module = _WHERE.get(name)
        if module is None:
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(_import_module(f".{module}", __name__), name)
        globals()[name] = value  # once imported, a name is a plain attribute of the package
        return value

    def __dir__() -> list[str]:
        return sorted({*globals(), *__all__})

"""toolrunner: Claude's tool-use loop on the official anthropic SDK.

The public names are re-exported here; the modules behind them are private. The offline testing
kit is the public subpackage ``toolrunner.testing``.
"""

import logging as _logging

from ._caching import CachePolicy as CachePolicy
from ._checkpoint import Checkpoint as Checkpoint, Checkpointer as Checkpointer, RunStore as RunStore
from ._compaction import CompactionControl as CompactionControl
from ._console import EventPrinter as EventPrinter
from ._errors import (
    ApprovalError as ApprovalError,
    AwaitingApprovalError as AwaitingApprovalError,
    CheckpointConflictError as CheckpointConflictError,
    CheckpointError as CheckpointError,
    DecidedMeanwhileError as DecidedMeanwhileError,
    HistoryError as HistoryError,
    MalformedReplyError as MalformedReplyError,
    ParamsError as ParamsError,
    ResultTooLargeError as ResultTooLargeError,
    StateError as StateError,
    ToolDefinitionError as ToolDefinitionError,
    ToolError as ToolError,
    ToolInputError as ToolInputError,
    ToolRunnerError as ToolRunnerError,
    UnansweredToolUseError as UnansweredToolUseError,
)
from ._events import (
    ApprovalDecided as ApprovalDecided,
    ApprovalRequested as ApprovalRequested,
    LoopFinished as LoopFinished,
    MessageFinished as MessageFinished,
    RunnerEvent as RunnerEvent,
    TextDelta as TextDelta,
    ToolCallFinished as ToolCallFinished,
    ToolCallStarted as ToolCallStarted,
)
from ._history import (
    ImportedHistory as ImportedHistory,
    from_openai as from_openai,
    sanitize_tool_id as sanitize_tool_id,
    text_of as text_of,
    thinking_text as thinking_text,
    to_openai as to_openai,
)
from ._lifecycle import STOP_REASON_STEPS as STOP_REASON_STEPS, Step as Step
from ._memory import MemoryCheckpointer as MemoryCheckpointer
from ._options import RequestParams as RequestParams, RunnerOptions as RunnerOptions
from ._postgres import PostgresCheckpointer as PostgresCheckpointer
from ._results import (
    DEFAULT_ADAPTER as DEFAULT_ADAPTER,
    File as File,
    Image as Image,
    Link as Link,
    ToolResultAdapter as ToolResultAdapter,
    ToolResultContent as ToolResultContent,
    tool_result_block as tool_result_block,
)
from ._runner import ToolRunner as ToolRunner
from ._runs import (
    RunPage as RunPage,
    RunStatus as RunStatus,
    RunSummary as RunSummary,
    decisions_since as decisions_since,
    run_status as run_status,
)
from ._sqlite import SQLiteCheckpointer as SQLiteCheckpointer
from ._state import (
    STATE_VERSION as STATE_VERSION,
    CallRecord as CallRecord,
    CallStatus as CallStatus,
    Phase as Phase,
    RunState as RunState,
)
from ._stores import open_store as open_store
from ._sync import SyncReplyStream as SyncReplyStream, SyncToolRunner as SyncToolRunner
from ._tools import ApprovalGate as ApprovalGate, Tool as Tool, ToolContext as ToolContext, tool as tool
from ._toolsets import RunnableTool as RunnableTool, Toolset as Toolset
from ._tracing import Tracing as Tracing
from ._types import (
    Decision as Decision,
    EndReason as EndReason,
    Reply as Reply,
    ReplyStream as ReplyStream,
    RunnerView as RunnerView,
    ToolCall as ToolCall,
    ToolResultMessage as ToolResultMessage,
)
from ._usage import (
    DEFAULT_PRICES as DEFAULT_PRICES,
    PRICES_AS_OF as PRICES_AS_OF,
    Price as Price,
    RequestUsage as RequestUsage,
    Usage as Usage,
    UsageTracker as UsageTracker,
    find_price as find_price,
)

__version__ = "0.2.0"
"""The version of this toolrunner (``pyproject.toml`` reads it from here; CHANGELOG.md says what changed)."""

__all__ = [
    "DEFAULT_ADAPTER",
    "DEFAULT_PRICES",
    "PRICES_AS_OF",
    "STATE_VERSION",
    "STOP_REASON_STEPS",
    "ApprovalDecided",
    "ApprovalError",
    "ApprovalGate",
    "ApprovalRequested",
    "AwaitingApprovalError",
    "CachePolicy",
    "CallRecord",
    "CallStatus",
    "Checkpoint",
    "CheckpointConflictError",
    "CheckpointError",
    "Checkpointer",
    "CompactionControl",
    "DecidedMeanwhileError",
    "Decision",
    "EndReason",
    "EventPrinter",
    "File",
    "HistoryError",
    "Image",
    "ImportedHistory",
    "Link",
    "LoopFinished",
    "MalformedReplyError",
    "MemoryCheckpointer",
    "MessageFinished",
    "ParamsError",
    "Phase",
    "PostgresCheckpointer",
    "Price",
    "Reply",
    "ReplyStream",
    "RequestParams",
    "RequestUsage",
    "ResultTooLargeError",
    "RunPage",
    "RunState",
    "RunStatus",
    "RunStore",
    "RunSummary",
    "RunnableTool",
    "RunnerEvent",
    "RunnerOptions",
    "RunnerView",
    "SQLiteCheckpointer",
    "StateError",
    "Step",
    "SyncReplyStream",
    "SyncToolRunner",
    "TextDelta",
    "Tool",
    "ToolCall",
    "ToolCallFinished",
    "ToolCallStarted",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolInputError",
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
    "decisions_since",
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

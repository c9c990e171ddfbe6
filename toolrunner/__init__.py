"""toolrunner: Claude's tool-use loop on the official anthropic SDK.

The public names are re-exported here; the modules behind them are private.
"""

from ._errors import (
    HistoryError as HistoryError,
    ParamsError as ParamsError,
    ToolDefinitionError as ToolDefinitionError,
    ToolError as ToolError,
    ToolInputError as ToolInputError,
    ToolRunnerError as ToolRunnerError,
    UnansweredToolUseError as UnansweredToolUseError,
)
from ._lifecycle import ToolCall as ToolCall
from ._results import ToolResultAdapter as ToolResultAdapter
from ._runner import Reply as Reply, ToolResultMessage as ToolResultMessage, ToolRunner as ToolRunner
from ._sync import SyncToolRunner as SyncToolRunner
from ._tools import Tool as Tool, ToolContext as ToolContext, tool as tool

__all__ = [
    "HistoryError",
    "ParamsError",
    "Reply",
    "SyncToolRunner",
    "Tool",
    "ToolCall",
    "ToolContext",
    "ToolDefinitionError",
    "ToolError",
    "ToolInputError",
    "ToolResultAdapter",
    "ToolResultMessage",
    "ToolRunner",
    "ToolRunnerError",
    "UnansweredToolUseError",
    "tool",
]

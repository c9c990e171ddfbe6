"""toolrunner: Claude's tool-use loop on the official anthropic SDK."""

from ._errors import (
    HistoryError as HistoryError,
    ParamsError as ParamsError,
    ToolDefinitionError as ToolDefinitionError,
    ToolError as ToolError,
    ToolInputError as ToolInputError,
    ToolRunnerError as ToolRunnerError,
    UnansweredToolUseError as UnansweredToolUseError,
)

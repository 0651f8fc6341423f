"""Chat templates, ``<think>`` handling, tool-call text and incremental rendering to ids + masks."""

from .render import ChatRenderer, RenderedChat, RenderError, render_with_mask
from .think import (
    ReasoningOnlyError,
    has_think_tag,
    join_think,
    remove_think,
    split_think,
    strip_reasoning,
)
from .tool_calls import ToolCall, ToolCallParseError, format_tool_call, parse_tool_calls
from .validate import ROLES, validate_messages

__all__ = [
    "ROLES",
    "ChatRenderer",
    "ReasoningOnlyError",
    "RenderError",
    "RenderedChat",
    "ToolCall",
    "ToolCallParseError",
    "format_tool_call",
    "has_think_tag",
    "join_think",
    "parse_tool_calls",
    "remove_think",
    "render_with_mask",
    "split_think",
    "strip_reasoning",
    "validate_messages",
]

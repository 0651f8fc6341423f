"""Chat templates, ``<think>`` handling, tool-call text and incremental rendering to ids + masks."""

from .render import ChatRenderer, RenderedChat, RenderError, render_with_mask
from .think import join_think, split_think
from .tool_calls import ToolCall, ToolCallParseError, format_tool_call, parse_tool_calls
from .validate import ROLES, validate_messages

__all__ = [
    "ROLES",
    "ChatRenderer",
    "RenderError",
    "RenderedChat",
    "ToolCall",
    "ToolCallParseError",
    "format_tool_call",
    "join_think",
    "parse_tool_calls",
    "render_with_mask",
    "split_think",
    "validate_messages",
]

"""Chat templates (ours, by name, per model family), ``<think>`` handling, tool-call text and incremental
rendering to ids + masks."""

from .chat_templates import (
    available_templates,
    load_chat_template,
    load_tokenizer,
    pad_id_of,
    suggest_training_template,
    use_chat_template,
)
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
    "available_templates",
    "format_tool_call",
    "has_think_tag",
    "join_think",
    "load_chat_template",
    "load_tokenizer",
    "pad_id_of",
    "parse_tool_calls",
    "remove_think",
    "render_with_mask",
    "split_think",
    "strip_reasoning",
    "suggest_training_template",
    "use_chat_template",
    "validate_messages",
]

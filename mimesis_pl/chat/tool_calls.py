"""The tool-call text format our chat template writes and the parser that reads it back.

An assistant turn may end with one or more blocks::

    <tool_call>
    {"name": "interact_with_env", "arguments": {"choice": "action", "content": "Is it alive?"}}
    </tool_call>

The template renders ``message["tool_calls"]`` in exactly this form, so text the policy generates
and text rendered from structured messages are the same tokens.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

_BLOCK = re.compile(re.escape(TOOL_CALL_OPEN) + r"(.*?)" + re.escape(TOOL_CALL_CLOSE), re.DOTALL)


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)

    def to_message_dict(self) -> dict[str, Any]:
        """The OpenAI-style ``tool_calls`` entry (what chat templates receive)."""
        return {"type": "function", "function": {"name": self.name, "arguments": self.arguments}}


class ToolCallParseError(ValueError):
    """A ``<tool_call>`` block that is not ``{"name": str, "arguments": object}`` JSON."""


def format_tool_call(name: str, arguments: dict[str, Any]) -> str:
    """Render one call exactly as the chat template does."""
    payload = json.dumps({"name": name, "arguments": arguments}, ensure_ascii=False)
    return f"{TOOL_CALL_OPEN}\n{payload}\n{TOOL_CALL_CLOSE}"


def parse_tool_calls(text: str) -> tuple[list[ToolCall], str]:
    """Parse every ``<tool_call>`` block of ``text``.

    Returns ``(calls, text_without_calls)``. A block that is not valid JSON of the form
    ``{"name": str, "arguments": dict | JSON-string-of-dict}`` raises :class:`ToolCallParseError`
    whose message says what is wrong; an opener without a closer also raises (the turn was cut).
    """
    calls: list[ToolCall] = []
    for i, match in enumerate(_BLOCK.finditer(text)):
        body = match.group(1).strip()
        try:
            payload = json.loads(body)
        except json.JSONDecodeError as err:
            raise ToolCallParseError(f"tool call {i}: body is not JSON ({err.msg} at char {err.pos}): {body[:200]!r}") from None
        if not isinstance(payload, dict):
            raise ToolCallParseError(f"tool call {i}: expected a JSON object, got {type(payload).__name__}")
        name = payload.get("name")
        if not isinstance(name, str) or not name:
            raise ToolCallParseError(f"tool call {i}: field 'name' must be a non-empty string, got {name!r}")
        arguments = payload.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments)
            except json.JSONDecodeError:
                raise ToolCallParseError(f"tool call {i} ({name}): 'arguments' is a string that is not JSON") from None
        if not isinstance(arguments, dict):
            raise ToolCallParseError(f"tool call {i} ({name}): 'arguments' must be an object, got {type(arguments).__name__}")
        calls.append(ToolCall(name=name, arguments=arguments))
    rest = _BLOCK.sub("", text)
    if TOOL_CALL_OPEN in rest:
        raise ToolCallParseError("a <tool_call> block has no closing </tool_call> (generation cut short?)")
    return calls, rest.strip()

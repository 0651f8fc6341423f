"""Check conversations before they reach a Jinja template, so errors name the sample, message and field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

ROLES = ("system", "user", "assistant", "tool")


def validate_messages(messages: Any, sample: Any = None) -> None:
    """Raise ``ValueError`` naming ``sample``, the message index and the field for malformed input.

    Accepted: a non-empty list of mappings with ``role`` in :data:`ROLES` and string ``content``
    (an assistant message with ``tool_calls`` may have ``content`` ``None``); optional string
    ``reasoning_content``; ``tool_calls`` entries ``{"function": {"name": str, "arguments": dict | str}}``
    or ``{"name": str, "arguments": ...}``.
    """
    where = f"sample {sample}"
    if not isinstance(messages, Sequence) or isinstance(messages, (str, bytes)):
        raise ValueError(f"{where}: messages must be a list of dicts, got {type(messages).__name__}")
    if len(messages) == 0:
        raise ValueError(f"{where}: the conversation is empty (no messages)")
    for k, message in enumerate(messages):
        at = f"{where}: message {k}"
        if not isinstance(message, Mapping):
            raise ValueError(f"{at}: expected a dict with 'role' and 'content', got {type(message).__name__}")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(f"{at}: field 'role': unknown role {role!r}; expected one of {list(ROLES)}")
        content = message.get("content")
        tool_calls = message.get("tool_calls")
        if content is None and role == "assistant" and tool_calls:
            pass
        elif not isinstance(content, str):
            raise ValueError(f"{at} ({role}): field 'content': expected a string, got {type(content).__name__}")
        reasoning = message.get("reasoning_content")
        if reasoning is not None and not isinstance(reasoning, str):
            raise ValueError(
                f"{at} ({role}): field 'reasoning_content': expected a string or null, got {type(reasoning).__name__}"
            )
        if tool_calls is not None:
            if role != "assistant":
                raise ValueError(f"{at} ({role}): field 'tool_calls': only assistant messages can call tools")
            _validate_tool_calls(tool_calls, at)


def _validate_tool_calls(tool_calls: Any, at: str) -> None:
    if not isinstance(tool_calls, Sequence) or isinstance(tool_calls, (str, bytes)):
        raise ValueError(f"{at}: field 'tool_calls': expected a list, got {type(tool_calls).__name__}")
    for j, call in enumerate(tool_calls):
        field = f"tool_calls[{j}]"
        if not isinstance(call, Mapping):
            raise ValueError(f"{at}: field '{field}': expected a dict, got {type(call).__name__}")
        fn = call.get("function", call)
        if not isinstance(fn, Mapping):
            raise ValueError(f"{at}: field '{field}.function': expected a dict, got {type(fn).__name__}")
        name = fn.get("name")
        if not isinstance(name, str) or not name:
            raise ValueError(f"{at}: field '{field}.function.name': a tool call needs a non-empty name, got {name!r}")
        arguments = fn.get("arguments", {})
        if not isinstance(arguments, (Mapping, str)):
            raise ValueError(
                f"{at}: field '{field}.function.arguments': expected an object or a JSON string, "
                f"got {type(arguments).__name__}"
            )

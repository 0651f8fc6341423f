"""The tool-call text formats our chat templates write and the parser that reads them back.

An assistant turn may end with one or more blocks (ChatML, Qwen2.5, Qwen3 — vLLM's ``hermes``)::

    <tool_call>
    {"name": "interact_with_env", "arguments": {"choice": "action", "content": "Is it alive?"}}
    </tool_call>

Qwen3.5-style templates write the body as XML (vLLM's ``qwen3_coder``)::

    <tool_call>
    <function=interact_with_env>
    <parameter=choice>
    action
    </parameter>
    </function>
    </tool_call>

and Llama 3 writes a whole turn as one JSON object (vLLM's ``llama3_json``)::

    {"name": "interact_with_env", "parameters": {"choice": "action", "content": "Is it alive?"}}

The templates render ``message["tool_calls"]`` in exactly these forms, so text the policy generates
and text rendered from structured messages are the same tokens; :func:`parse_tool_calls` reads all three.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

from .think import remove_think

TOOL_CALL_OPEN = "<tool_call>"
TOOL_CALL_CLOSE = "</tool_call>"

_BLOCK = re.compile(re.escape(TOOL_CALL_OPEN) + r"(.*?)" + re.escape(TOOL_CALL_CLOSE), re.DOTALL)
_XML_FUNCTION = re.compile(r"^<function=([^>\n]+)>(.*?)</function>$", re.DOTALL)
_XML_PARAMETER = re.compile(r"<parameter=([^>\n]+)>\n?(.*?)\n?</parameter>", re.DOTALL)
_PYTHON_TAG = "<|python_tag|>"


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
    """Parse every ``<tool_call>`` block of ``text`` (JSON or XML body), or a Llama-3 JSON-only reply.

    Returns ``(calls, text_without_calls)``. A block that is not valid JSON of the form
    ``{"name": str, "arguments": dict | JSON-string-of-dict}`` raises :class:`ToolCallParseError`
    whose message says what is wrong; an opener without a closer also raises (the turn was cut).
    """
    calls: list[ToolCall] = []
    if TOOL_CALL_OPEN not in text:
        whole = _llama_json_call(remove_think(text))
        if whole is not None:
            return [whole], ""
    for i, match in enumerate(_BLOCK.finditer(text)):
        body = match.group(1).strip()
        if body.startswith("<function="):
            calls.append(_parse_xml_call(body, i))
            continue
        try:
            payload = json.loads(body)
        except json.JSONDecodeError as err:
            raise ToolCallParseError(
                f"tool call {i}: body is not JSON ({err.msg} at char {err.pos}): {body[:200]!r}"
            ) from None
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
            raise ToolCallParseError(
                f"tool call {i} ({name}): 'arguments' must be an object, got {type(arguments).__name__}"
            )
        calls.append(ToolCall(name=name, arguments=arguments))
    rest = _BLOCK.sub("", text)
    if TOOL_CALL_OPEN in rest:
        raise ToolCallParseError("a <tool_call> block has no closing </tool_call> (generation cut short?)")
    return calls, rest.strip()


def _parse_xml_call(body: str, i: int) -> ToolCall:
    """``<function=NAME><parameter=KEY>VALUE</parameter>…</function>``; a value that is a JSON object or
    array is parsed, every other value stays a string (the text carries no types)."""
    match = _XML_FUNCTION.match(body)
    if match is None:
        raise ToolCallParseError(
            f"tool call {i}: expected <function=NAME>…</function> inside <tool_call>, got {body[:200]!r}"
        )
    name = match.group(1).strip()
    arguments: dict[str, Any] = {}
    for key, value in _XML_PARAMETER.findall(match.group(2)):
        if value.lstrip().startswith(("{", "[")):
            try:
                value = json.loads(value)
            except json.JSONDecodeError:
                pass
        arguments[key.strip()] = value
    return ToolCall(name=name, arguments=arguments)


def _llama_json_call(text: str) -> ToolCall | None:
    """A whole reply that is one ``{"name": str, "parameters": object}`` JSON object (Llama 3), else ``None``."""
    body = text.strip()
    if body.startswith(_PYTHON_TAG):
        body = body[len(_PYTHON_TAG) :].strip()
    if not (body.startswith("{") and body.endswith("}")):
        return None
    try:
        payload = json.loads(body)
    except json.JSONDecodeError:
        return None
    if not isinstance(payload, dict) or set(payload) != {"name", "parameters"}:
        return None
    name, arguments = payload["name"], payload["parameters"]
    if not isinstance(name, str) or not name or not isinstance(arguments, dict):
        return None
    return ToolCall(name=name, arguments=arguments)

"""Turn a generated text into an OpenAI ``choices[i]`` entry: stop strings, reasoning, tool calls.

Reasoning is split as vLLM's ``qwen3`` reasoning parser splits it, with the package's one splitter
(:func:`mimesis_pl.chat.think.split_think`), and one rule vLLM's parser gets wrong for templates that
pre-fill the opener: when the rendered prompt ends inside an open ``<think>`` (the chatml / qwen3_5
templates with thinking on), the continuation starts inside reasoning. A continuation that never
writes ``</think>`` (cut by ``max_tokens``, or the turn ended early) is then all reasoning and its
``content`` is ``""``; its reasoning is never returned as public text.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Sequence
from typing import Any

from ..chat.think import split_think
from ..chat.tool_calls import ToolCallParseError, parse_tool_calls

# Any opening or closing tag of the two conventions split_think knows.
_TAG = re.compile(r"<(/?)((?:seed:)?think)>", re.IGNORECASE)


def open_reasoning_tag(generation_prompt: str) -> str | None:
    """The opener (``"<think>"``, ``"<seed:think>"``) ``generation_prompt`` leaves open, else ``None``.

    ``generation_prompt`` is what the template adds for the reply (``<|im_start|>assistant\\n<think>``);
    it leaves reasoning open when its last think tag is an opener.
    """
    tags = list(_TAG.finditer(generation_prompt))
    if not tags or tags[-1].group(1) == "/":
        return None
    return f"<{tags[-1].group(2)}>"


def split_reply(text: str, open_tag: str | None) -> tuple[str | None, str]:
    """``(reasoning_content, content)`` of a generated ``text``.

    ``open_tag`` is the opener the prompt pre-filled (:func:`open_reasoning_tag`): the text is read
    as if it followed that opener, so an unclosed reply is all reasoning and ``content`` is ``""``.
    Without a pre-filled opener, a text with no think tag is all content.
    """
    return split_think(open_tag + text if open_tag else text)


def cut_at_stop_strings(text: str, stops: Sequence[str]) -> tuple[str, bool]:
    """``text`` cut before the earliest of ``stops`` (which is left out, as vLLM does), and whether one was found."""
    found = [i for i in (text.find(s) for s in stops) if i >= 0]
    if not found:
        return text, False
    return text[: min(found)], True


def tool_calls_of(content: str) -> tuple[list[dict[str, Any]], str]:
    """OpenAI ``tool_calls`` parsed from ``content`` and the text left around them.

    A reply whose tool-call text does not parse stays plain content (no calls), as vLLM's parsers do.
    """
    try:
        calls, rest = parse_tool_calls(content)
    except ToolCallParseError:
        return [], content
    entries = [
        {
            "id": f"call_{uuid.uuid4().hex[:24]}",
            "type": "function",
            "function": {"name": call.name, "arguments": json.dumps(call.arguments, ensure_ascii=False)},
        }
        for call in calls
    ]
    return entries, rest


def shape_choice(
    text: str, *, index: int, finish_reason: str, open_tag: str | None, tools_offered: bool
) -> dict[str, Any]:
    """One ``choices[i]`` entry for a generated ``text`` (stop strings already cut).

    ``finish_reason`` is the engine's (``"stop"`` or ``"length"``); it becomes ``"tool_calls"`` when
    tools were offered and the public part of the reply calls one.
    """
    reasoning, content = split_reply(text, open_tag)
    message: dict[str, Any] = {"role": "assistant", "content": content, "reasoning_content": reasoning}
    if tools_offered and content:
        calls, rest = tool_calls_of(content)
        if calls:
            message.update(content=rest or None, tool_calls=calls)
            finish_reason = "tool_calls"
    message.setdefault("tool_calls", [])
    return {"index": index, "message": message, "finish_reason": finish_reason, "logprobs": None}

"""Separate the private reasoning from an OpenAI chat-completion response.

Servers put reasoning in several places: inline ``<think>…</think>`` in ``message.content`` (a model
served without a reasoning parser) or in a tool call's ``function.arguments``, and out of band in
``message.reasoning_content`` (vLLM/SGLang reasoning parsers), ``message.reasoning`` (newer vLLM, a string;
some gateways send an object), ``message.reasoning_details`` (OpenRouter: a list of ``reasoning.text`` /
``reasoning.summary`` / ``reasoning.encrypted`` parts) and ``message.thinking_blocks`` (LiteLLM: Anthropic
``thinking`` / ``redacted_thinking`` blocks). The reference only looked at ``reasoning_content``
(docs/decisions.md A11); we strip every one of them from the reply and keep their readable text as the
private reasoning, so no channel leaks or is lost (A71). Encrypted or redacted parts carry no readable text:
they are removed and stored as nothing.

When the request pre-filled the ``<think>`` opener (``prefilled=True``), the served text starts inside the
reasoning: a reply that never closes it (cut by ``max_tokens``, or the model ended its turn early) is all
reasoning and its public text is empty, whether or not a reasoning parser ran upstream (A75).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from mimesis_pl.chat.think import split_think

REASONING_FIELDS = ("reasoning_content", "reasoning", "reasoning_details", "thinking_blocks")
# Keys of a structured reasoning part that hold readable text, in the order they are read.
_TEXT_KEYS = ("text", "thinking", "summary", "content", "reasoning", "reasoning_content")


def reasoning_texts(value: Any) -> list[str]:
    """The readable reasoning in one reasoning field's value: a string, an object or a list of parts.

    Parts whose ``type`` says they are encrypted or redacted give nothing; an object with none of the known
    text keys is kept whole, as its JSON, rather than dropped.
    """
    if isinstance(value, str):
        return [value.strip()] if value.strip() else []
    if isinstance(value, list):
        return [text for item in value for text in reasoning_texts(item)]
    if not isinstance(value, dict):
        return []
    kind = str(value.get("type", ""))
    if "encrypted" in kind or "redacted" in kind:
        return []
    keys = [key for key in _TEXT_KEYS if key in value]
    if not keys:
        rest = {k: v for k, v in value.items() if k not in ("type", "id", "index", "format", "signature")}
        return [json.dumps(rest, ensure_ascii=False, sort_keys=True)] if rest else []
    return [text for key in keys for text in reasoning_texts(value[key])]


@dataclass(frozen=True)
class SplitChoice:
    """One choice of a completion after the split: private ``reasoning`` ("" when none) and the
    ``public`` text the caller receives (None when the message had no content, e.g. a tool call)."""

    reasoning: str
    public: str | None
    finish_reason: str | None


def split_completion(response: Any, *, prefilled: bool = False) -> tuple[dict[str, Any], list[SplitChoice]]:
    """Return ``(public_response, choices)`` for an upstream chat-completion JSON body.

    ``prefilled``: the request's generation prompt opened a ``<think>`` block (A75); an unclosed reply is
    then private reasoning, never public text.

    ``public_response`` keeps the upstream shape (id, model, usage, finish_reason, tool_calls, …) with
    each ``message.content`` replaced by its public text and the reasoning fields removed, so any
    OpenAI client can read it; ``logprobs`` of a choice that had reasoning are nulled (they would
    list the reasoning tokens). The input is not modified. Raises ValueError naming the missing or
    mistyped field when the body is not a chat completion.
    """
    if not isinstance(response, dict):
        raise ValueError(f"upstream reply is not a JSON object (got {type(response).__name__})")
    choices = response.get("choices")
    if not isinstance(choices, list) or not choices:
        raise ValueError("upstream reply has no 'choices' list (not a chat completion)")
    # Only the containers on the path to each message are copied (a deepcopy cost a sizeable share
    # of the shim's CPU per request); everything else is shared with the input, which stays unchanged.
    public_choices: list[Any] = []
    split: list[SplitChoice] = []
    for i, choice in enumerate(choices):
        message = choice.get("message") if isinstance(choice, dict) else None
        if not isinstance(message, dict):
            raise ValueError(f"upstream reply has no object at choices[{i}].message")
        message = dict(message)
        split.append(_split_message(message, i, choice.get("finish_reason"), prefilled))
        public_choice = {**choice, "message": message}
        if split[-1].reasoning and public_choice.get("logprobs") is not None:
            # Token logprobs spell out the reasoning tokens one by one; they cannot be shown.
            public_choice["logprobs"] = None
        public_choices.append(public_choice)
    return {**response, "choices": public_choices}, split


def _split_message(message: dict[str, Any], i: int, finish_reason: Any, prefilled: bool = False) -> SplitChoice:
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        # Content-part lists would need their own parsing; refusing is safer than leaking a part.
        raise ValueError(f"choices[{i}].message.content is a {type(content).__name__}, expected a string")
    parts: list[str] = []
    for name in REASONING_FIELDS:
        for text in reasoning_texts(message.pop(name, None)):
            if text not in parts:
                parts.append(text)  # some servers fill several fields with the same text
    public: str | None = None
    if content is not None:
        # A reasoning field means a parser upstream already took the reasoning out of the content; without
        # one, a pre-filled opener leaves the content starting inside the reasoning.
        inline, public = split_think(content, prefilled=prefilled and not parts)
        if inline:
            parts.append(inline)
        message["content"] = public
    if message.get("tool_calls") is not None:
        message["tool_calls"] = _split_tool_calls(message["tool_calls"], i, parts)
    return SplitChoice(
        reasoning="\n".join(parts),
        public=public,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
    )


def _split_tool_calls(calls: Any, i: int, parts: list[str]) -> list[Any]:
    """Copies of ``calls`` with any ``<think>`` block cut out of each ``function.arguments`` into ``parts``."""
    if not isinstance(calls, list):
        raise ValueError(f"choices[{i}].message.tool_calls is a {type(calls).__name__}, expected a list")
    out: list[Any] = []
    for k, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        arguments = function.get("arguments") if isinstance(function, dict) else None
        if arguments is None:
            out.append(call)
            continue
        if not isinstance(arguments, str):
            where = f"choices[{i}].message.tool_calls[{k}].function.arguments"
            raise ValueError(f"{where} is a {type(arguments).__name__}, expected a JSON string")
        inline, public = split_think(arguments)
        if inline:
            parts.append(inline)
        out.append({**call, "function": {**function, "arguments": public if inline is not None else arguments}})
    return out


def with_own_reasoning(messages: Any, entries: list[dict[str, Any]]) -> Any:
    """``messages`` with each earlier simulator turn (``assistant``) given back its own stored reasoning.

    A served simulator trained with a thinking template saw every earlier turn of its own with its reasoning;
    behind the shim the gym only ever holds the public text, so the simulator would meet a history it was never
    trained on (empty think blocks). Each assistant message with no ``reasoning_content`` and no inline tag takes
    the reasoning of the first unused stored entry whose public text equals its content (retried or failed
    replies in the store are skipped that way); the input is not modified. This only ever goes *upstream*, to
    the simulator that wrote the reasoning (docs/decisions.md A78).
    """
    if not isinstance(messages, list):
        return messages
    used: set[int] = set()
    out = []
    for message in messages:
        if (
            isinstance(message, dict)
            and message.get("role") == "assistant"
            and isinstance(message.get("content"), str)
            and not message.get("reasoning_content")
            and split_think(message["content"])[0] is None
        ):
            text = message["content"].strip()
            for i, entry in enumerate(entries):
                if i not in used and entry.get("reasoning") and (entry.get("public") or "").strip() == text:
                    used.add(i)
                    message = {**message, "reasoning_content": entry["reasoning"]}
                    break
        out.append(message)
    return out

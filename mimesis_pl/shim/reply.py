"""Separate the private reasoning from an OpenAI chat-completion response.

Servers put reasoning in two places: inline ``<think>…</think>`` in ``message.content`` (a model
served without a reasoning parser) or out of band in ``message.reasoning_content`` (vLLM/SGLang
reasoning parsers) or ``message.reasoning`` (newer vLLM). The reference only looked at
``reasoning_content`` (docs/decisions.md A11); we take all three, so neither channel leaks or is lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mimesis_pl.chat.think import split_think

REASONING_FIELDS = ("reasoning_content", "reasoning")


@dataclass(frozen=True)
class SplitChoice:
    """One choice of a completion after the split: private ``reasoning`` ("" when none) and the
    ``public`` text the caller receives (None when the message had no content, e.g. a tool call)."""

    reasoning: str
    public: str | None
    finish_reason: str | None


def split_completion(response: Any) -> tuple[dict[str, Any], list[SplitChoice]]:
    """Return ``(public_response, choices)`` for an upstream chat-completion JSON body.

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
        split.append(_split_message(message, i, choice.get("finish_reason")))
        public_choice = {**choice, "message": message}
        if split[-1].reasoning and public_choice.get("logprobs") is not None:
            # Token logprobs spell out the reasoning tokens one by one; they cannot be shown.
            public_choice["logprobs"] = None
        public_choices.append(public_choice)
    return {**response, "choices": public_choices}, split


def _split_message(message: dict[str, Any], i: int, finish_reason: Any) -> SplitChoice:
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        # Content-part lists would need their own parsing; refusing is safer than leaking a part.
        raise ValueError(f"choices[{i}].message.content is a {type(content).__name__}, expected a string")
    parts: list[str] = []
    for name in REASONING_FIELDS:
        value = message.pop(name, None)
        if isinstance(value, str) and value.strip() and value.strip() not in parts:
            parts.append(value.strip())  # some servers fill both fields with the same text
    public: str | None = None
    if content is not None:
        inline, public = split_think(content)
        if inline:
            parts.append(inline)
        message["content"] = public
    return SplitChoice(
        reasoning="\n".join(parts),
        public=public,
        finish_reason=finish_reason if isinstance(finish_reason, str) else None,
    )

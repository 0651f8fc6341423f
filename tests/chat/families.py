"""Model families for template tests: shipped templates (read from the pinned TRL install, never copied
here), our training templates, tiny tokenizers with each family's special tokens, and conversations."""

from __future__ import annotations

import copy
from importlib.metadata import PackageNotFoundError, distribution

import pytest

LLAMA_SPECIALS = [
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
]
DATE = {"date_string": "30 Nov 2026"}

# (id, our template, shipped template file in trl/chat_templates, template variables, tokenizer kind)
FAMILIES = [
    ("qwen3-think", "qwen3", "qwen3", {}, "qwen"),
    ("qwen3-nothink", "qwen3", "qwen3", {"enable_thinking": False}, "qwen"),
    ("qwen3.5-think", "qwen3_5", "qwen3_5_think", {}, "qwen"),
    ("qwen3.5-nothink", "qwen3_5", "qwen3_5_nothink", {"enable_thinking": False}, "qwen"),
    ("qwen3.5-think-nn", "qwen3_5", "qwen3_5_think", {}, "qwen-nn"),  # with Qwen's "\n\n" token
    ("qwen3.6", "qwen3_5", "qwen3_6", {}, "qwen"),
    ("qwen2.5", "qwen2_5", "qwen2_5", {}, "qwen"),
    ("llama3.1", "llama3", "llama3_1", DATE, "llama"),
    ("llama3.2", "llama3", "llama3_2", DATE, "llama"),
]
FAMILY_IDS = [f[0] for f in FAMILIES]


def shipped_template(name: str) -> str:
    """The text of a template TRL ships (``trl/chat_templates/{name}.jinja``); skips when TRL is absent."""
    try:
        path = distribution("trl").locate_file(f"trl/chat_templates/{name}.jinja")
    except PackageNotFoundError:
        pytest.skip("trl (dev extra) is not installed: it distributes the shipped chat templates")
    return path.read_text(encoding="utf-8")


def family_tokenizer(base, kind: str):
    """The tiny tokenizer as a family's: ChatML + think/tool tags already; Llama gets its header tokens.

    ``qwen-nn`` also has one token for "\\n\\n", as real Qwen vocabularies do: then Qwen3.5's empty
    reasoning "<think>\\n\\n</think>" no longer splits where its generation prompt "<think>\\n" ends.
    """
    from tokenizers import AddedToken

    tok = copy.deepcopy(base)
    if kind == "qwen-nn":
        tok.add_tokens([AddedToken("\n\n", normalized=False)])
    if kind == "llama":
        tok.add_special_tokens(
            {"bos_token": "<|begin_of_text|>", "eos_token": "<|eot_id|>", "additional_special_tokens": LLAMA_SPECIALS}
        )
    return tok


TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "interact_with_env",
            "description": "Act in the environment.",
            "parameters": {
                "type": "object",
                "properties": {"choice": {"type": "string"}, "content": {"type": "string"}},
                "required": ["choice", "content"],
            },
        },
    }
]


def call(content: str) -> dict:
    return {
        "type": "function",
        "function": {"name": "interact_with_env", "arguments": {"choice": "action", "content": content}},
    }


# The three ordinary conversations of the issue.
SYSTEM_TWO_TURNS = [
    {"role": "system", "content": "You are a helpful assistant."},
    {"role": "user", "content": "Hi, I need a hotel."},
    {"role": "assistant", "content": "Sure. Which city?"},
    {"role": "user", "content": "Paris, two nights."},
    {"role": "assistant", "content": "I found three options."},
]
THINK_TWO_TURNS = [
    {"role": "user", "content": "Is 7 prime?"},
    {"role": "assistant", "content": "<think>\nDivisors of 7: 1 and 7.\n</think>\n\nYes."},
    {"role": "user", "content": "And 9?"},
    {"role": "assistant", "content": "<think>\n9 = 3 * 3.\n</think>\n\nNo."},
]
TOOL_CALL = [
    {"role": "system", "content": "Solve the task."},
    {"role": "user", "content": "Find out what the user wants."},
    {"role": "assistant", "content": "", "tool_calls": [call("Ask the user")]},
    {"role": "tool", "content": "The user wants a cheap flight."},
    {"role": "assistant", "content": "They want a cheap flight."},
]
CONVERSATIONS = {"system-two-turns": SYSTEM_TWO_TURNS, "think-two-turns": THINK_TWO_TURNS, "tool-call": TOOL_CALL}


def without_reasoning(messages: list[dict]) -> list[dict]:
    from mimesis_pl.chat import split_think

    return [
        {**m, "content": split_think(m["content"])[1]} if m["role"] == "assistant" and m.get("content") else m
        for m in messages
    ]

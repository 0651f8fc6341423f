"""The response shaping of ``mimesis-pl serve`` as pure functions on hand-written completion texts."""

from __future__ import annotations

import json

import pytest

from mimesis_pl.serve.shaping import cut_at_stop_strings, open_reasoning_tag, shape_choice, split_reply

CHATML_THINKING_ON = "<|im_start|>assistant\n<think>"
CHATML_THINKING_OFF = "<|im_start|>assistant\n<think>\n\n</think>\n\n"


@pytest.mark.parametrize(
    ("generation_prompt", "expected"),
    [
        (CHATML_THINKING_ON, "<think>"),
        (CHATML_THINKING_OFF, None),
        ("<|im_start|>assistant\n", None),
        ("<|im_start|>assistant\n<seed:think>", "<seed:think>"),
        ("<|im_start|>assistant\n<THINK>\n", "<THINK>"),
    ],
)
def test_open_reasoning_tag_reads_the_generation_prompt(generation_prompt, expected):
    assert open_reasoning_tag(generation_prompt) == expected


def test_an_unclosed_reply_after_a_prefilled_opener_is_all_reasoning():
    # The leak: a continuation cut by max_tokens holds no tag at all.
    text = "The secret word is Paris, I must not say it. Let me think"
    assert split_reply(text, "<think>") == (text, "")
    choice = shape_choice(text, index=0, finish_reason="length", open_tag="<think>", tools_offered=False)
    assert choice["message"]["content"] == ""
    assert choice["message"]["reasoning_content"] == text
    assert choice["finish_reason"] == "length"


def test_a_closed_reply_after_a_prefilled_opener_splits_at_the_closer():
    assert split_reply("\nhidden plan\n</think>\n\nHello there", "<think>") == ("hidden plan", "Hello there")


def test_without_a_prefilled_opener_an_untagged_reply_is_all_content():
    assert split_reply("Hello there", None) == (None, "Hello there")
    # A model that writes its own opener (the qwen3 template) is split the same way; unclosed: reasoning.
    assert split_reply("<think>plan</think>Hi", None) == ("plan", "Hi")
    assert split_reply("<think>plan and more", None) == ("plan and more", "")


def test_stop_strings_cut_before_the_earliest_one():
    assert cut_at_stop_strings("Hello. Bye. End", ["End", "."]) == ("Hello", True)
    assert cut_at_stop_strings("Hello", ["x"]) == ("Hello", False)
    assert cut_at_stop_strings("Hello", []) == ("Hello", False)


def test_a_tool_call_becomes_openai_tool_calls():
    text = 'Let me ask.\n<tool_call>\n{"name": "ask", "arguments": {"q": "alive?"}}\n</tool_call>'
    choice = shape_choice(text, index=2, finish_reason="stop", open_tag=None, tools_offered=True)
    message = choice["message"]
    assert choice["index"] == 2 and choice["finish_reason"] == "tool_calls"
    assert message["content"] == "Let me ask."
    (call,) = message["tool_calls"]
    assert call["type"] == "function" and call["id"].startswith("call_")
    assert call["function"]["name"] == "ask"
    assert json.loads(call["function"]["arguments"]) == {"q": "alive?"}


def test_tool_calls_are_read_from_the_public_part_only():
    hidden = '<tool_call>\n{"name": "ask", "arguments": {}}\n</tool_call>'
    choice = shape_choice(
        hidden + "</think>Just text", index=0, finish_reason="stop", open_tag="<think>", tools_offered=True
    )
    assert choice["finish_reason"] == "stop" and choice["message"]["tool_calls"] == []
    assert choice["message"]["content"] == "Just text"


def test_tool_call_text_is_plain_content_without_tools_or_when_it_does_not_parse():
    text = '<tool_call>\n{"name": "ask", "arguments": {}}\n</tool_call>'
    assert (
        shape_choice(text, index=0, finish_reason="stop", open_tag=None, tools_offered=False)["message"]["content"]
        == text
    )
    broken = "<tool_call>\n{not json\n</tool_call>"
    choice = shape_choice(broken, index=0, finish_reason="stop", open_tag=None, tools_offered=True)
    assert choice["message"]["content"] == broken and choice["finish_reason"] == "stop"

"""split_completion on hand-written upstream bodies."""

from __future__ import annotations

import copy

import pytest

from mimesis_pl.shim.reply import SplitChoice, split_completion


def body(*messages, finish="stop"):
    return {
        "id": "x",
        "object": "chat.completion",
        "choices": [{"index": i, "message": m, "finish_reason": finish} for i, m in enumerate(messages)],
        "usage": {"total_tokens": 3},
    }


def test_out_of_band_and_inline_reasoning_are_joined_in_generation_order():
    upstream = body({"role": "assistant", "reasoning_content": "first", "content": "<think>second</think> hi"})
    original = copy.deepcopy(upstream)
    public, [choice] = split_completion(upstream)
    assert choice == SplitChoice(reasoning="first\nsecond", public="hi", finish_reason="stop")
    assert public["choices"][0]["message"] == {"role": "assistant", "content": "hi"}
    assert public["usage"] == {"total_tokens": 3} and upstream == original  # input untouched


def test_both_reasoning_fields_with_the_same_text_count_once():
    _, [choice] = split_completion(body({"content": "ok", "reasoning": "same", "reasoning_content": "same"}))
    assert choice.reasoning == "same"


def test_every_choice_is_stripped():
    public, choices = split_completion(body({"content": "<think>a</think>A"}, {"content": "B", "reasoning": "b"}))
    assert [c.public for c in choices] == ["A", "B"] and [c.reasoning for c in choices] == ["a", "b"]
    assert [c["message"]["content"] for c in public["choices"]] == ["A", "B"]


def test_logprobs_are_hidden_only_when_they_would_spell_out_reasoning():
    logprobs = {"content": [{"token": "<think>", "logprob": -0.1}]}
    upstream = body({"content": "<think>secret</think>hi"}, {"content": "plain"})
    for choice in upstream["choices"]:
        choice["logprobs"] = logprobs
    public, _ = split_completion(upstream)
    assert public["choices"][0]["logprobs"] is None and public["choices"][1]["logprobs"] == logprobs


def test_no_reasoning_gives_empty_string():
    _, [choice] = split_completion(body({"content": "  plain  "}, finish="length"))
    assert choice == SplitChoice(reasoning="", public="plain", finish_reason="length")


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ([], "not a JSON object"),
        ({"choices": []}, "no 'choices' list"),
        ({"choices": [{"text": "legacy"}]}, "choices[0].message"),
        (body({"content": [{"type": "text", "text": "<think>x</think>"}]}), "content is a list"),
    ],
)
def test_unusable_bodies_name_the_field(bad, fragment):
    with pytest.raises(ValueError) as info:
        split_completion(bad)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    "field, value",
    [
        # OpenRouter: reasoning parts; the encrypted one has no readable text and must not reach the caller either.
        (
            "reasoning_details",
            [
                {"type": "reasoning.text", "text": "SECRET-1", "signature": "sig"},
                {"type": "reasoning.summary", "summary": "SECRET-2"},
                {"type": "reasoning.encrypted", "data": "BLOB"},
            ],
        ),
        # LiteLLM: Anthropic thinking blocks.
        (
            "thinking_blocks",
            [
                {"type": "thinking", "thinking": "SECRET-1\nSECRET-2", "signature": "s"},
                {"type": "redacted_thinking", "data": "BLOB"},
            ],
        ),
        # A gateway's object-valued reasoning.
        ("reasoning", {"text": "SECRET-1", "summary": "SECRET-2"}),
    ],
)
def test_every_structured_reasoning_field_is_stripped_and_stored(field, value):
    upstream = body({"role": "assistant", "content": "hello", field: value})
    original = copy.deepcopy(upstream)
    public, [choice] = split_completion(upstream)
    assert public["choices"][0]["message"] == {"role": "assistant", "content": "hello"}
    assert "SECRET" not in repr(public) and "BLOB" not in repr(public)
    assert "SECRET-1" in choice.reasoning and "SECRET-2" in choice.reasoning and "BLOB" not in choice.reasoning
    assert upstream == original


def test_an_unknown_reasoning_object_is_kept_whole_not_dropped():
    _, [choice] = split_completion(body({"content": "hi", "reasoning": {"steps": ["SECRET"]}}))
    assert choice.reasoning == '{"steps": ["SECRET"]}'


def test_think_inside_tool_call_arguments_is_stripped_and_stored():
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '<think>SECRET</think>{"q": 1}'}}
    upstream = body({"role": "assistant", "content": None, "tool_calls": [call]}, finish="tool_calls")
    original = copy.deepcopy(upstream)
    public, [choice] = split_completion(upstream)
    (out,) = public["choices"][0]["message"]["tool_calls"]
    assert out == {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"q": 1}'}}
    assert choice == SplitChoice(reasoning="SECRET", public=None, finish_reason="tool_calls")
    assert upstream == original

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

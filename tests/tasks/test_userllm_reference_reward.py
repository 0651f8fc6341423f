"""Issue 33, items 2 and 8: userLLM's PRISM reward and commonsense_qa matching equal the reference's numbers.

The reference's PRISM reward, restated: the cleaned turn is cut at ``<|endconversation|>`` and the token kept
right after it; intent overlap = |I ∩ U| / |U| over lower-cased ``\\w+`` runs that are alphanumeric and not
among its 58 stop words (0 if either side is empty); termination = 1 only when ``is_last_turn`` is known and
equals "the token was written"; the AI detector gets the text without the token, and an empty text is 0 without
a call. Role adherence collapses every run of non-alphanumerics to one space on both sides.
"""

from __future__ import annotations

import asyncio
import re

import pytest
from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.userllm import choices_adherence, intent_overlap

END = "<|endconversation|>"
REF_STOP = set(
    "a an and are as at be but by can could did do does for from had has have how i if in into is it its me might my "
    "of on or our should so that the their them then there these they this to us was we were what when where which "
    "who why will with would you your".split()
)


def ref_words(text: str) -> set[str]:
    return {t for t in re.findall(r"\w+", text.lower()) if t.isalnum() and t not in REF_STOP}


def ref_overlap(intent: str, output: str) -> float:
    i, u = ref_words(intent), ref_words(output)
    return len(i & u) / len(u) if i and u else 0.0


def ref_prism(intent: str, cleaned: str, is_last_turn: bool | None, human: float) -> float:
    ended = END in cleaned
    output = cleaned.split(END)[0].strip() + END if ended else cleaned
    term = 1.0 if is_last_turn is not None and ended == is_last_turn else 0.0
    ai = human if output.replace(END, "").strip() else 0.0
    return (ref_overlap(intent, output) + term + ai) / 3


def ref_norm(s: str) -> str:
    s = re.sub(r"\s+", " ", re.sub(r"[^0-9a-z]+", " ", s.lower())).strip()
    return f" {s} " if s else " "


def ref_role(output: str, choices: list[str]) -> float:
    hit = sum(ref_norm(c) in ref_norm(output) for c in choices)
    return 0.0 if (hit == len(choices) or hit in (1, 2)) else 1.0 if choices else 0.0


@pytest.mark.parametrize(
    "intent, turn",
    [
        ("find a cheap vegetarian recipe", "any cheap recipe ideas? i don't eat meat"),  # 0.25 (ours was 0.333)
        ("plan a trip to rome", "thanks, that's all" + END),
        ("plan a trip to rome", "rome it is" + END),  # the kept token is a word: 1/2 (ours was 1/1)
        ("learn_python fast", "learn_python now"),  # "_" words never count
        ("", "anything"),
    ],
)
def test_intent_overlap_is_the_references(intent, turn):
    assert intent_overlap(intent, turn) == pytest.approx(ref_overlap(intent, turn))


def test_hand_worked_overlap_values():
    # U = {any, cheap, recipe, ideas, don, t, eat, meat}: "don't" splits; I ∩ U = {cheap, recipe} → 2/8
    assert intent_overlap("find a cheap vegetarian recipe", "any cheap recipe ideas? i don't eat meat") == 0.25
    assert intent_overlap("plan a trip to rome", "rome it is" + END) == 0.5  # U = {rome, endconversation}


def _row(**info):
    row = reference_row("userllm")
    row["extra_info"].update(info)
    for key, value in info.items():
        if value is None:
            row["extra_info"].pop(key)
    return row


@pytest.mark.parametrize(
    "reply, is_last_turn",
    [
        ("any cheap recipe ideas? i don't eat meat", False),
        ("rome recipe" + END, True),
        ("let us pretend the recipe is cheap" + END, False),  # judged human: 1
        (END, True),  # an empty turn: the detector term is 0 without a call
        ("any cheap recipe ideas?", None),  # is_last_turn missing: termination 0
        ("<think>ok</think>", False),  # nothing left after cleaning
    ],
)
def test_prism_reward_equals_the_reference(tiny_tokenizer, reply, is_last_turn):
    row = _row(is_last_turn=is_last_turn, source="prism")
    ctx = make_context(tiny_tokenizer, lambda p, k: reply, is_train=False, enable_think=False)
    result = asyncio.run(get_task("userllm").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    intent = get_task("userllm").parse_row(row).intent
    cleaned = re.sub(r"<think>.*?</think>", "", reply, flags=re.S).strip()
    # the scripted judge answers a yes/no field true when the turn says "pretend" or "behaviour"
    calls = len(ctx.judge.requests)
    visible = cleaned.replace(END, "").strip()
    assert calls == (1 if visible else 0)
    human = float(bool(re.search(r"\b(behaviou?r|pretend)", visible.lower())))
    assert result.score == pytest.approx(ref_prism(intent, cleaned, is_last_turn, human))


def test_natural_questions_empty_reply_scores_0_without_a_call(tiny_tokenizer):
    row = _row(source="natural_questions", question="who wrote the hobbit", assistant_suggestion_turn="films?")
    ctx = make_context(tiny_tokenizer, lambda p, k: "<think>hmm</think>", is_train=False, enable_think=False)
    result = asyncio.run(get_task("userllm").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok" and result.score == 0.0 and not ctx.judge.requests


@pytest.mark.parametrize(
    "output, choices",
    [
        ("is it the ice - cream shop?", ["ice-cream shop", "bakery", "bank", "gym"]),  # 0 (ours was 1)
        ("maybe the ice  cream   shop or bank", ["ice-cream shop", "bakery", "bank", "gym"]),
        ("where would i buy it", ["ice-cream shop", "bakery", "bank", "gym"]),
        ("bakery bank gym", ["ice-cream shop", "bakery", "bank", "gym"]),
        ("ice cream shop bakery bank gym", ["ice-cream shop", "bakery", "bank", "gym"]),
    ],
)
def test_role_adherence_equals_the_reference(output, choices):
    assert choices_adherence(output, choices) == ref_role(output, choices)

"""AlignX (all six keys), SocSci210, HumanLLM on rows shaped as the reference's preprocessing writes them."""

from __future__ import annotations

import random

import pytest
from single_turn_fixtures import THINKING, answer, row, run

from mimesis_pl.tasks.base import RowError
from mimesis_pl.tasks.preference import alignx_chosen_is_a, humanllm_reward, socsci210_reward

# -- AlignX ---------------------------------------------------------------------------------------

ALIGNX_KEYS = ["alignx", "alignx_demo", "alignx_pair", "alignx_ugc", "alignx_arbitrary", "alignx_history16"]


def alignx(key: str, index: int, **over) -> dict:
    info = {"raw_prompt": "How should I start running?", "chosen": "Ten minutes a day.", "rejected": "Do a marathon."}
    return row(key, index, **{**info, **over})


def test_alignx_ab_assignment_follows_the_reference_draw():
    expected = {0: "A", 1: "B", 2: "A", 3: "B", 4: "B", 5: "A", 6: "A", 7: "B", 8: "B", 9: "B", 42: "A", 100: "B"}
    assert {i: "A" if alignx_chosen_is_a(i) else "B" for i in expected} == expected
    assert all(alignx_chosen_is_a(i) == (random.Random(i).random() >= 0.5) for i in range(50))


@pytest.mark.parametrize("key", ALIGNX_KEYS)
def test_alignx_gold_is_a_at_index_0_and_b_at_index_1_for_every_key(tiny_tokenizer, key):
    first, second = alignx(key, 0), alignx(key, 1)
    assert [answer(tiny_tokenizer, first, x) for x in ("A", "B", "a")] == [1.0, 0.0, 0.0]  # case-sensitive
    assert [answer(tiny_tokenizer, second, x) for x in ("A", "B")] == [0.0, 1.0]
    _, messages = run(tiny_tokenizer, second, THINKING.format("B"))
    user = messages[1]["content"]
    assert user.index("Do a marathon.") < user.index("Ten minutes a day.")  # rejected shown as A at index 1
    assert "How should I start running?" in user


def test_alignx_long_name_aliases_and_pair_numbering(tiny_tokenizer):
    pairs = [
        {"prompt": "Best shoes?", "chosen": "", "rejected": "Any."},  # incomplete: skipped, still numbered
        {"prompt": "Warm up?", "chosen": "Yes, gently.", "rejected": "Never."},
        {"prompt": "Third", "chosen": "x", "rejected": "y"},  # beyond n_icl
    ]
    r = alignx(
        "alignx_pair",
        0,
        **{
            "Demographic Information": "A 60-year-old beginner.",
            "profile": "ignored when a demographic is given",
            "Pair-wise Comparative Feedback": pairs,
            "User-Generated Content": [{"prompt": "Rainy runs?", "comment": "Love them."}],
            "n_icl": None,  # null in a struct column: the default 2
            "n_ugc": 1,
        },
    )
    _, messages = run(tiny_tokenizer, r, THINKING.format("A"))
    user = messages[1]["content"]
    assert "A 60-year-old beginner." in user and "ignored" not in user
    assert "Example 2:" in user and "Warm up?" in user and "Example 1:" not in user and "Third" not in user
    assert "Rainy runs?" in user and "Love them." in user
    profile_only = alignx("alignx_ugc", 0, demographic="", profile="Runs at dawn.")
    assert "Runs at dawn." in run(tiny_tokenizer, profile_only, THINKING.format("A"))[1][1]["content"]


@pytest.mark.parametrize("missing", ["raw_prompt", "chosen", "rejected"])
def test_alignx_needs_post_chosen_and_rejected(tiny_tokenizer, missing):
    with pytest.raises(RowError, match=rf"alignx_demo_val.jsonl:row1: field extra_info.{missing}"):
        run(tiny_tokenizer, alignx("alignx_demo", 0, **{missing: ""}), THINKING.format("A"))


# -- SocSci210 ------------------------------------------------------------------------------------

SURVEY = "On a scale from 0 to 7, how much do you trust your neighbours? Only return the number, nothing else."


@pytest.mark.parametrize(
    "source", [{"prompt_text": SURVEY}, {"conversations": [{"messages": [{"role": "user", "content": SURVEY}]}]}]
)
def test_socsci210_prompt_from_either_field_with_its_instruction_rewritten(tiny_tokenizer, source):
    r = row("socsci210", 0, response=5, response_type="ordinal", r_min=0, r_max=7, **source)
    result, messages = run(tiny_tokenizer, r, THINKING.format("3"))
    assert messages[1]["content"] == (
        "On a scale from 0 to 7, how much do you trust your neighbours? Think step by step, and answer the number."
    )
    assert "demographics" in messages[0]["content"] and result.score == pytest.approx(1 - 2 / 7)


def test_socsci210_scores():
    # ordinal: 1 − |clamp(pred) − gold| / span; span ≤ 0 → exact match
    assert socsci210_reward("9", 5, "ordinal", 0, 7) == pytest.approx(1 - 2 / 7)
    assert socsci210_reward("-2", 1, "ordinal", -3, 3) == pytest.approx(1 - 3 / 6)
    assert socsci210_reward("4", 4, "ordinal", 4, 4) == 1.0 and socsci210_reward("3", 4, "ordinal", 4, 4) == 0.0
    assert socsci210_reward("Yes", 1, "binary", 0, 1) == 1.0 and socsci210_reward("no", 1, "binary", 0, 1) == 0.0
    assert socsci210_reward("2", 2.0, "categorical", 0, 7) == 1.0 and socsci210_reward("2", 3, "categorical", 0, 7) == 0
    assert socsci210_reward("+3", 3, "ordinal", 0, 7) == 0.0 and socsci210_reward("3 ", 3, "ordinal", 0, 7) == 1.0


def test_socsci210_defaults_and_bad_fields(tiny_tokenizer):
    binary = row("socsci210", 0, prompt_text="Did you vote?", response=1, response_type="Binary")  # r_max 1
    assert answer(tiny_tokenizer, binary, "yes") == 1.0
    with pytest.raises(RowError, match="field extra_info.response_type"):
        run(tiny_tokenizer, row("socsci210", 0, prompt_text="Q", response=1, response_type="likert"), "x")
    with pytest.raises(RowError, match="field extra_info.response is required"):
        run(tiny_tokenizer, row("socsci210", 0, prompt_text="Q"), "x")
    with pytest.raises(RowError, match="field extra_info.r_max must be a number"):
        run(tiny_tokenizer, row("socsci210", 0, prompt_text="Q", response=1, r_max="seven"), "x")


# -- HumanLLM -------------------------------------------------------------------------------------


def humanllm_text(n: int) -> str:
    listing = " ".join(f"Candidate {i + 1}: item {i}" for i in range(n))
    return f"User: a hiker. History 1: boots, History 2: socks; History 3: map, {listing}"


def humanllm(n: int = 20, gold: int = 3, **over) -> dict:
    info = {
        "prompt_text": humanllm_text(n),
        "candidates": [f"item {i}" for i in range(n)],
        "answer_index": gold,
        "answer_letter": "Z",  # unused by the reference; the gold is answer_index
        "answer_text": f"item {gold}",
        "task": "item_selection",
        "split": "val",
    }
    return row("humanllm", 11, **{**info, **over})


@pytest.mark.parametrize("n", [20, 12])
def test_humanllm_shows_the_candidates_once_relabelled_and_history_one_per_line(tiny_tokenizer, n):
    result, messages = run(tiny_tokenizer, humanllm(n, gold=2), THINKING.format("C,A,B,D,E"))
    user = messages[1]["content"]
    assert "Candidate 1:" not in user and user.count("item 5") == 1
    assert "User: a hiker.\nHistory 1: boots\nHistory 2: socks\nHistory 3: map\n\nA: item 0\n" in user
    last = "ABCDEFGHIJKLMNOPQRST"[n - 1]
    assert f"{last}: item {n - 1}" in user and f"{'ABCDEFGHIJKLMNOPQRSTU'[n]}: " not in user
    assert result.score == 1.0 and result.metrics["humanllm/top1_acc"] == 1.0 and result.metrics["humanllm/hit@5"]


def test_humanllm_reads_parquet_arrays(tiny_tokenizer):
    np = pytest.importorskip("numpy")
    r = humanllm(12, gold=2, candidates=np.array([f"item {i}" for i in range(12)]))
    assert run(tiny_tokenizer, r, THINKING.format("C,A,B,D,E"))[0].score == 1.0
    with pytest.raises(RowError, match="field extra_info.candidates is required"):
        run(tiny_tokenizer, humanllm(candidates=np.array([])), THINKING.format("C,A,B,D,E"))


def test_humanllm_ranking_scores():
    assert humanllm_reward("C,D,A,E,F", 3, 20) == (0.5, 1.0, 0.0)  # D at rank 2 → 1/2
    assert humanllm_reward("C, D,A,E,F", 3, 20) == (0.0, 0.0, 0.0)  # spaces break the format
    assert humanllm_reward("D,D,A,E,F", 3, 20) == (0.0, 0.0, 0.0)  # letters must be distinct
    assert humanllm_reward("A,B,C,D,M", 3, 12) == (0.0, 0.0, 0.0)  # M is past the 12 candidates
    assert humanllm_reward("a,b,c,d,e", 3, 12) == (0.0, 0.0, 0.0)  # case-sensitive


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"candidates": ["a", "b", "c", "d"], "answer_index": 4}, "answer_index"),  # 4 candidates are a row (S85)
        ({"answer_index": 20}, "answer_index"),
        ({"answer_index": None}, "answer_index"),
        ({"prompt_text": ""}, "prompt_text"),
    ],
)
def test_humanllm_bad_rows_are_row_errors(tiny_tokenizer, over, field):
    with pytest.raises(RowError, match=rf"humanllm_val.jsonl:row12: field extra_info.{field}"):
        run(tiny_tokenizer, humanllm(**over), THINKING.format("A,B,C,D,E"))

"""tau-USI features D1–D4 as published (docs/decisions.md S70), one golden test per feature on
hand-worked conversations, plus the survey scales, Eval computed once (S71) and the population ±."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mimesis_pl.eval.simulator.rows import DataFormatError
from mimesis_pl.eval.simulator.tau_usi.data import (
    SURVEY_SCALES,
    HumanEntry,
    load_difficulty,
    survey_answers,
    survey_value,
)
from mimesis_pl.eval.simulator.tau_usi.features import FEATURES, conversation_features, report_row, summary_row
from mimesis_pl.eval.simulator.tau_usi.scoring import RunTask, mean_pstd, model_eval, score_batch, survey_task_score


def users(*turns: str) -> list[dict[str, str]]:
    """A conversation: an agent greeting, then the user turns, each followed by an agent reply."""
    out = [{"role": "assistant", "content": "Hi! How can I help you today?"}]
    for t in turns:
        out += [{"role": "user", "content": t}, {"role": "assistant", "content": "Sure."}]
    return out


def feature(name: str, *turns: str, source: str = "llm") -> float:
    f = conversation_features(users(*turns), source)
    assert f is not None and set(f) == set(FEATURES)
    return f[name]


def test_meta_messages_are_dropped_per_source_and_no_user_turn_is_none():
    human_meta = ["\\tau task 3", "\\reward 1", "see <|canvas|>", "<|survey|> q1", " /stop "]
    # For a human transcript these five are meta: one real turn is left (1 turn, 2 words).
    assert feature("user_words_per_turn", "two words", *human_meta, source="human") == 2.0
    # For a simulated transcript only ###STOP### is meta: the five count as turns.
    assert feature("short_msg_rate", "two words", *human_meta, "###STOP###") == pytest.approx(6 / 6)
    assert conversation_features(users("###STOP###")) is None  # only a meta turn: no user turn
    assert conversation_features([{"role": "assistant", "content": "hello"}]) is None
    assert conversation_features([]) is None


def test_agent_markup_is_stripped_before_counting_words():
    turn = (
        "<|think|>I should be polite please<|/think|>cancel it <function=cancel>{}</function> now <|tool|>x y<|/tool|>"
    )
    assert feature("opening_words", turn) == 3.0  # "cancel it now"
    assert feature("politeness_rate", turn) == 0.0  # "please" was inside the reasoning
    assert feature("opening_words", "hello <function=call> trailing words") == 1.0  # cut to the end of text


def test_d1_politeness_short_formality_ack():
    assert feature("politeness_rate", "Thank you so much", "cancel order 5", "My apologies") == pytest.approx(2 / 3)
    assert feature("politeness_rate", "pleased to meet") == 0.0  # word boundary: "pleased" is not "please"
    assert feature("short_msg_rate", "one two three", "one two three four") == 0.5
    assert feature("formality_rate", "so \u2014 yes", "a \u2013 b", "a - b") == pytest.approx(2 / 3)
    turns = ("OK!", "sounds good.", "uh-huh", "yes please", "got it , ", "ok then")
    # whole turn one ack phrase + optional spaces and ! . - , : OK!, sounds good., uh-huh, got it , -> 4 of 6
    assert feature("ack_only_rate", *turns) == pytest.approx(4 / 6)


def test_d1_verbosity_cv_is_population_std_over_mean():
    # word counts 1, 3: mean 2, population std 1 -> cv 0.5 (the sample std would give 0.707)
    assert feature("verbosity_cv", "a", "a b c") == pytest.approx(0.5)
    assert feature("verbosity_cv", "only one turn here") == 0.0
    assert feature("verbosity_cv", "<|think|>x<|/think|>", "<|tool|>y<|/tool|>") == 0.0  # mean 0


def test_d1_repeat_and_identity_confusion_are_per_conversation_flags():
    eleven = ["i want refund"] * 11  # the trigram occurs 11 times (> 10) across turns
    assert feature("repeat_rate", *eleven, "something else") == 1.0  # a flag, not 11/12
    assert feature("repeat_rate", *(["I want refund"] * 10)) == 0.0  # 10 is not > 10 (case folded)
    assert feature("repeat_rate", "i want refund i want refund i want refund i want refund") == 0.0
    assert feature("id_confuse_rate", "how may I assist you", "cancel", "ok", "fine") == 1.0  # flag, not 1/4
    assert feature("id_confuse_rate", "I'll check my email", "ok") == 1.0
    assert feature("id_confuse_rate", "your order is late") == 1.0  # "your order" sounds like an agent
    assert feature("id_confuse_rate", "please cancel my order") == 0.0


def test_d2_frontload_id_density_words_opening():
    turns = ("cancel order W123456 now", "it is 1234567", "email me at bob@x.com", "ok")
    # words 4, 3, 4, 1 = 12; first two turns 7 -> 7/12
    assert feature("info_frontload", *turns) == pytest.approx(7 / 12)
    assert feature("user_words_per_turn", *turns) == 3.0 and feature("opening_words", *turns) == 4.0
    # ID-like matches: turn 1 "cancel" (6 letters: ordinary words count) + "w123456"; turn 2 "1234567";
    # turn 3 "bob@x.com" ("email" has 5 letters); turn 4 none -> (2 + 1 + 1 + 0) / 4
    assert feature("id_density", *turns) == pytest.approx(1.0)
    assert feature("id_density", "gift_card_7 and pay", "#12345") == pytest.approx(1.0)


def test_d3_uncertainty_certainty():
    assert feature("uncertainty_rate", "I dont remember it", "maybe later", "yes") == pytest.approx(2 / 3)
    assert feature("certainty_rate", "of course", "obviously yes", "sure") == pytest.approx(2 / 3)


def test_d3_question_classes_take_the_first_match():
    turns = (
        "are you sure? what do you mean",  # pushback first, although clarify matches too
        "what do you mean by that",  # clarify
        "how much is it",  # info
        "can you check my order",  # info
        "thanks",  # none
    )
    assert feature("pushback_q_rate", *turns) == pytest.approx(1 / 5)
    assert feature("clarify_q_rate", *turns) == pytest.approx(1 / 5)
    assert feature("info_q_rate", *turns) == pytest.approx(2 / 5)
    # A question mark alone makes no info question (the reference's phrase list decides).
    assert feature("info_q_rate", "fine?") == 0.0
    assert feature("pushback_q_rate", "don't ask me that again") == 1.0


def test_d4_emotion_accusation_pivot():
    assert feature("emotion_rate", "I am so frustrated", "ugh", "fine") == pytest.approx(2 / 3)
    assert feature("emotion_rate", "frustrating") == 0.0  # only the listed forms
    assert feature("accusation_rate", "this is useless", "your fault", "ok") == pytest.approx(2 / 3)
    assert feature("pivot_rate", "actually could we wait", "how about tuesday", "instead of that", "no") == 0.75


def test_summary_row_skips_conversations_without_features_and_reports_pct():
    a = conversation_features(users("please", "a b c d"))
    row = summary_row([a, None, conversation_features(users("x y"))])
    assert row["politeness_rate"] == pytest.approx(0.25)  # (0.5 + 0) / 2: the None is skipped, not a 0
    assert all(math.isnan(v) for v in summary_row([None]).values())
    printed = report_row(row)
    assert printed["politeness_pct"] == pytest.approx(25.0) and printed["repeat_pct"] == 0.0
    assert printed["user_wds_per_turn"] == row["user_words_per_turn"] and "id_density" in printed


def test_survey_scales_use_the_real_option_strings_exactly():
    assert survey_value("task_success", "Yes - Task completed") == pytest.approx(0.75)  # (4 - 1) / (5 - 1)
    assert survey_value("task_success", "yes - task completed") is None  # exact match only
    assert survey_value("overall_score", "5 (Excellent)") == 1.0 and survey_value("overall_score", "5") is None
    assert [survey_value("question_amount_preference", x) for x in ("Too many", "About right", "Too few")] == [0, 1, 0]
    assert survey_value("interaction_flow", "OK") == pytest.approx(1 / 3)
    assert set(SURVEY_SCALES) == {
        "task_success",
        "efficiency",
        "question_amount_preference",
        "answer_effort_time",
        "human_like",
        "interaction_flow",
        "overall_score",
        "reuse",
    }
    assert survey_answers({"reuse": {"question": "q", "answer": "Maybe"}}, "f") == {"reuse": "Maybe"}
    with pytest.raises(DataFormatError, match=r"f: field 'survey.reuse' must be an object"):
        survey_answers({"reuse": "Maybe"}, "f")


def test_survey_task_score_draws_missing_model_answers():
    human = {"human_like": "Yes", "reuse": "Absolutely yes", "efficiency": "not an option"}
    # human_like Yes (1) vs Partially (0.5): 0.5; reuse 1 vs Maybe 0.5: 0.5; efficiency: no valid human answer.
    assert survey_task_score(human, {"human_like": "Partially", "reuse": "Maybe"}, np.random.default_rng(0)) == 50.0
    # A missing model answer is a random ordinal of the field: the draw follows default_rng(seed).
    rng, check = np.random.default_rng(42), np.random.default_rng(42)
    got = survey_task_score({"human_like": "Yes"}, {}, rng)
    drawn = (float(check.choice([1, 2, 3])) - 1) / 2
    assert got == pytest.approx(100 * (1 - abs(1 - drawn)))


def _entry(task, reward, answer):
    return HumanEntry(task, tuple(users("cancel it please")), reward, {"human_like": answer})


def test_eval_is_computed_once_and_its_mean_enters_every_batch():
    human = {
        1: {"a": _entry("a", 1.0, "Yes"), "b": _entry("b", 1.0, "Yes")},
        2: {"a": _entry("a", 1.0, "No"), "b": _entry("b", 0.0, "No")},
    }
    feats = conversation_features(users("cancel it please"))
    runs = {0: {"a": RunTask(feats, 1.0, {"human_like": "Yes"}), "b": RunTask(feats, 1.0, {"human_like": "Yes"})}}
    ev = model_eval(human, runs)
    # batch 1: Yes vs Yes twice -> 100; batch 2: No vs Yes -> 0. Mean 50, population std 50 (sample: 70.7).
    assert ev["batches"] == {1: 100.0, 2: 0.0} and ev["mean"] == 50.0 and ev["std"] == 50.0
    scores = [score_batch(human[b], runs, {"a": 0.1, "b": 0.9}, ev["mean"]) for b in (1, 2)]
    for s in scores:
        assert s["eval"] == 50.0  # the model's one Eval, not the batch's own 100 or 0
        assert s["usi6"] == pytest.approx((s["D1"] + s["D2"] + s["D3"] + s["D4"] + 50 + 100 * (1 - s["ece"])) / 6)
    # batch 2: b failed for the human (reward 0 -> 0) but succeeded for the model: ECE 1/2 * 1.
    assert scores[0]["ece"] == 0.0 and scores[1]["ece"] == 0.5
    assert mean_pstd([s["ece"] for s in scores]) == {"mean": 0.25, "std": 0.25, "n": 2}


def test_difficulty_map_in_either_reference_shape(tmp_path):
    wrapped, flat = tmp_path / "wrapped.json", tmp_path / "flat.json"
    wrapped.write_text('{"source": "baselines", "n_baselines": 31, "n_tasks": 1, "difficulty": {"retail_0": 0.5}}')
    flat.write_text('{"retail_0": 0.5, "airline_3": 1}')
    assert load_difficulty(wrapped) == {"retail_0": 0.5}
    assert load_difficulty(flat) == {"retail_0": 0.5, "airline_3": 1.0}
    flat.write_text('{"retail_0": 1.5}')
    with pytest.raises(DataFormatError, match=r"flat.json: difficulty of 'retail_0' must be a number in \[0, 1\]"):
        load_difficulty(flat)

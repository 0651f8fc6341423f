"""Single-turn ToM / persona tasks: hand-worked scorers and rollouts through a scripted engine."""

from __future__ import annotations

import asyncio

import pytest
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.base import RowError
from mimesis_pl.tasks.preference import humanllm_reward, socsci210_reward
from mimesis_pl.tasks.runner import run_rows, step_metrics, validation_metrics
from mimesis_pl.tasks.tom import (
    fantom_score,
    hitom_score,
    paratomi_score,
    parse_options,
)

ROW = {
    "data_source": "hitom",
    "extra_info": {
        "index": 3,
        "story": "The pen is in the box.",
        "question": "Where?",
        "choices": "A. box, B. green drawer",
        "correct_answer": "box",
    },
}


def test_fantom_scoring_by_question_type():
    binary = {"question_type": "tom:answerability:binary", "correct_answer": "no"}
    assert fantom_score("No, she does not know.", binary, {}).reward == 1.0
    assert fantom_score("yes", binary, {}).reward == 0.0
    assert fantom_score("yes and no", binary, {}).reward == 0.0  # both polarities
    listed = {"question_type": "tom:answerability:list", "correct_answer": ["Ann", "Ben"], "wrong_answer": ["Cara"]}
    assert fantom_score("Ann, Ben", listed, {}).reward == 1.0
    assert fantom_score("Ann, Ben, Cara", listed, {}).reward == 0.0
    mc = {"question_type": "tom:belief:inaccessible:multiple-choice", "correct_answer": 2}
    assert fantom_score("(c)", mc, {}).reward == 1.0 and fantom_score("b", mc, {}).reward == 0.0
    fact = {"question_type": "fact", "correct_answer": "Rex"}
    assert fantom_score("Rex", fact, {}).reward == 1.0
    with pytest.raises(RowError, match="question_type"):
        fantom_score("x", {"question_type": "weird", "correct_answer": 1}, {"data_source": "fantom"})


def test_hitom_and_paratomi():
    assert parse_options("A. box, B. green drawer") == {"A": "box", "B": "green drawer"}
    info = ROW["extra_info"]
    assert hitom_score("A", info, ROW).reward == 1.0 and hitom_score("B", info, ROW).reward == 0.0
    assert hitom_score("box", info, ROW).reward == 0.0  # a letter is required
    para = {"correct_answer": "crate", "cands": "['crate', 'basket']"}  # literal string, parsed without eval (S6)
    assert paratomi_score("the crate", para, {}).reward == 1.0
    assert paratomi_score("crate or basket", para, {}).reward == 0.0


def test_persona_scorers():
    # ordinal: |5 − 3| / (7 − 0) = 2/7 → 1 − 2/7 = 5/7; out-of-range 9 is clamped to 7 first
    assert socsci210_reward("3", 5, "ordinal", 0, 7) == pytest.approx(5 / 7)
    assert socsci210_reward("9", 5, "ordinal", 0, 7) == pytest.approx(1 - 2 / 7)
    assert socsci210_reward("yes", 1, "binary", 0, 1) == 1.0 and socsci210_reward("3.5", 3, "ordinal", 0, 7) == 0.0
    assert humanllm_reward("C,D,A,E,F", 3, 20) == (0.5, 1.0, 0.0)  # rank 2 → 1/2
    assert humanllm_reward("C, D,A,E,F", 3, 20) == (0.0, 0.0, 0.0)  # spaces break the format
    assert humanllm_reward("D,D,A,E,F", 3, 20) == (0.0, 0.0, 0.0)  # letters must be distinct


def test_a_well_formed_answer_scores_and_passes_the_gate(tiny_tokenizer):
    ctx = make_context(
        tiny_tokenizer, lambda prompt, k: "\nThe pen never moved from the box\n</think>\n\n<answer>A</answer>"
    )
    result = asyncio.run(get_task("hitom").run(ROW, ctx, group_id="g", gen_uid="g-0"))
    assert (result.status, result.reward, result.score) == ("ok", 1.0, 1.0)
    assert result.metrics["all/format_correct"] == 1.0 and result.metrics["hitom/reward"] == 1.0
    t = result.trajectory
    assert t.num_turns == 1 and sum(t.response_mask) == t.turn_spans[0].end - t.turn_spans[0].start
    assert t.input_ids[t.turn_spans[0].end - 1] == tiny_tokenizer.eos_token_id


def test_the_gate_zeroes_a_correct_answer_without_reasoning_in_training_only(tiny_tokenizer):
    reply = "\nA\n</think>\n\n<answer>A</answer>"  # 1-2 reasoning tokens < 4
    train = asyncio.run(
        get_task("hitom").run(ROW, make_context(tiny_tokenizer, lambda p, k: reply), group_id="g", gen_uid="0")
    )
    evaluate = asyncio.run(
        get_task("hitom").run(
            ROW, make_context(tiny_tokenizer, lambda p, k: reply, is_train=False), group_id="g", gen_uid="0"
        )
    )
    assert train.metrics["all/format_correct"] == 0.0 and train.reward == 0.0 and train.score == 1.0
    assert evaluate.reward == 1.0


def test_the_answer_is_never_read_from_the_reasoning(tiny_tokenizer):
    reply = "\nmaybe <answer>A</answer> is right\n</think>\n\nnot sure"
    result = asyncio.run(
        get_task("hitom").run(ROW, make_context(tiny_tokenizer, lambda p, k: reply), group_id="g", gen_uid="0")
    )
    assert result.score == 0.0


def test_an_answer_with_no_think_tag_is_read_whole_scored_in_eval_and_gated_in_training(tiny_tokenizer):
    reply = "The pen never moved for Ava. <answer>A</answer>"  # no tag at all: the reference's fallback
    evaluate = asyncio.run(
        get_task("hitom").run(
            ROW, make_context(tiny_tokenizer, lambda p, k: reply, is_train=False), group_id="g", gen_uid="0"
        )
    )
    train = asyncio.run(
        get_task("hitom").run(ROW, make_context(tiny_tokenizer, lambda p, k: reply), group_id="g", gen_uid="0")
    )
    assert (evaluate.score, evaluate.reward, evaluate.metrics["all/format_correct"]) == (1.0, 1.0, 0.0)
    assert (train.score, train.reward) == (1.0, 0.0)  # an untagged answer fails the format gate


@pytest.mark.parametrize(
    "reply",
    [
        "<think>a</think><think>b</think><answer>A</answer>",  # two blocks
        "x <think>a</think> <answer>A</answer>",  # text before the opener
        "\nstill thinking <answer>A</answer> <think>",  # a stray opener
    ],
)
def test_a_malformed_tagged_answer_scores_0_even_in_eval(tiny_tokenizer, reply):
    ctx = make_context(tiny_tokenizer, lambda p, k: reply, is_train=False)
    assert asyncio.run(get_task("hitom").run(ROW, ctx, group_id="g", gen_uid="0")).score == 0.0


def test_one_bad_row_never_fails_the_batch(tiny_tokenizer):
    bad = {"data_source": "hitom", "extra_info": {"index": 9, "story": "x"}}  # no question
    ctx = make_context(tiny_tokenizer, lambda p, k: "\nI reason about it here\n</think>\n\n<answer>A</answer>")
    results = asyncio.run(run_rows([ROW, bad], 2, ctx, ["g0", "g1"]))
    assert [r.status for r in results] == ["ok", "ok", "task_error", "task_error"]
    assert "question" in results[2].error
    metrics = step_metrics(results)
    assert metrics["rollout/task_error_rate"] == 0.5 and metrics["rollout/hitom/reward"] == 1.0
    val = validation_metrics(results[:2])
    assert val["val-core/hitom/reward/mean@1"] == 1.0 and val["val-core/all/format_correct"] == 1.0


def test_a_truncated_turn_is_closed_with_an_untrained_end_of_turn_and_fails_the_gate(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: "\nI keep thinking and thinking " * 20, max_new_tokens=8)
    result = asyncio.run(get_task("hitom").run(ROW, ctx, group_id="g", gen_uid="0"))
    t = result.trajectory
    assert result.status == "truncated" and result.metrics["all/format_correct"] == 0.0
    assert t.turn_spans[0].end - t.turn_spans[0].start == 8 and sum(t.response_mask) == 8
    assert t.input_ids[-1] == tiny_tokenizer.eos_token_id and t.response_mask[-1] == 0

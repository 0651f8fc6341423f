"""userLLM and MirrorBench on rows shaped as the reference writes them."""

from __future__ import annotations

import asyncio
import json

import pytest
from reference_rows import reference_row
from task_fixtures import make_context

from mimesis_pl.data.simulator_rl import read_task_rows
from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.base import RowError
from mimesis_pl.tasks.userllm import choices_adherence


def _userllm(**info):
    row = reference_row("userllm")
    row["extra_info"].update(info)
    return row


def test_userllm_history_empty_string_is_a_first_turn_anything_else_a_follow_up():
    task = get_task("userllm")
    assert task.parse_row(_userllm(conversation_history="")).first_turn
    for history in (None, "<user>: hi\n<assistant>: hello"):
        assert not task.parse_row(_userllm(conversation_history=history)).first_turn
    missing = reference_row("userllm")
    del missing["extra_info"]["conversation_history"]
    assert not task.parse_row(missing).first_turn
    assert task.parse_row(_userllm()).intent == "find a cheap vegetarian recipe."  # prefix and ':' removed


def test_userllm_intent_falls_back_to_opening_prompt_then_the_first_history_line():
    task = get_task("userllm")
    row = _userllm(conversation_history="<user>: need a tent for two\n<assistant>: sure")
    del row["extra_info"]["intent"]
    assert task.parse_row(row).intent == "need a tent for two"
    row["extra_info"]["opening_prompt"] = "Buy a tent."
    assert task.parse_row(row).intent == "Buy a tent."


@pytest.mark.parametrize(
    "value, expected",
    [(True, True), (False, False), (1, True), (0, False), ("False", False), ("True", True), ("yes", True),
     ("n", False), ("0", False), (None, None), ("", None)],  # missing: unknown, as the reference (S81)
)  # fmt: skip
def test_userllm_is_last_turn_variants(value, expected):
    assert get_task("userllm").parse_row(_userllm(is_last_turn=value)).is_last_turn is expected


def test_userllm_is_last_turn_garbage_is_a_row_error():
    with pytest.raises(RowError, match="is_last_turn"):
        get_task("userllm").parse_row(_userllm(is_last_turn="maybe"))


@pytest.mark.parametrize(
    "choices",
    [
        json.dumps({"label": ["A", "B", "C"], "text": ["fridge", "oven", "garage"]}),
        {"label": ["A", "B", "C"], "text": ["fridge", "oven", "garage"]},
        [{"label": "A", "text": "fridge"}, {"label": "B", "text": "oven"}, {"label": "C", "text": "garage"}],
        ["fridge", "oven", "garage"],
        json.dumps(["fridge", "oven", "garage"]),
    ],
)
def test_userllm_choices_variants(choices):
    task = get_task("userllm").parse_row(_userllm(source="commonsense_qa", choices=choices))
    assert task.choices == ("fridge", "oven", "garage")


def test_userllm_choice_matching_as_the_reference():
    choices = ("fridge", "ice box", "oven", "car")
    assert choices_adherence("where do people keep milk?", choices) == 1.0
    assert choices_adherence("is it the ICE-BOX?", choices) == 0.0  # non-alphanumerics are spaces
    assert choices_adherence("fridges are cold", choices) == 1.0  # padded: a whole-word match only
    assert choices_adherence("fridge, ice box, oven, car?", choices) == 0.0  # all of them
    assert choices_adherence("fridge ice box oven", choices) == 1.0  # three of four
    assert choices_adherence("anything", ()) == 0.0  # no choices scores 0


def test_userllm_natural_questions_judge_sees_the_question_and_the_suggestion(tiny_tokenizer):
    row = _userllm(
        source="Natural_Questions",
        question="who wrote the hobbit",
        assistant_suggestion_turn="Would you like a list of fantasy films instead?",
        conversation_history="<user>: who wrote the hobbit\n<assistant>: Would you like films instead?",
    )
    ctx = make_context(tiny_tokenizer, lambda p, k: "no, just tell me who wrote it", enable_think=False)
    result = asyncio.run(get_task("userllm").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    judged = ctx.judge.requests[-1][-1]["content"]
    assert "who wrote the hobbit" in judged and "fantasy films instead" in judged
    prompt = ctx.policy.engine.prompts[0]
    assert "<assistant>: Would you like films instead?" in prompt  # the follow-up prompt shows the history


def test_userllm_natural_questions_without_its_fields_is_a_row_error(tmp_path):
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(_userllm(source="natural_questions", question="who wrote the hobbit")) + "\n")
    with pytest.raises(RowError, match=r"row0: source natural_questions needs .*assistant_suggestion_turn"):
        read_task_rows([str(path)])


def test_userllm_prism_termination_reads_the_false_string_as_false(tiny_tokenizer):
    ctx = make_context(tiny_tokenizer, lambda p, k: "any cheap recipe for two?", enable_think=False)
    result = asyncio.run(get_task("userllm").run(_userllm(), ctx, group_id="g", gen_uid="0"))
    assert result.metrics["userllm/termination"] == 1.0  # no end token and is_last_turn "False"
    assert ctx.policy.engine.prompts and "<|im_start|>system\n<|im_end|>" in ctx.policy.engine.prompts[0]


def test_mirrorbench_reads_turns_keeps_ten_and_drops_a_trailing_assistant_turn(tiny_tokenizer):
    row = reference_row("mirrorbench")
    turns = [{"role": ("user", "assistant")[i % 2], "content": f"turn {i}"} for i in range(14)]
    row["extra_info"]["turns"] = turns
    ctx = make_context(tiny_tokenizer, lambda p, k: "ok and then?", enable_think=False)
    result = asyncio.run(get_task("mirrorbench").run(row, ctx, group_id="g", gen_uid="0"))
    assert result.status == "ok", result.error
    # the first 10 real turns (5 user, 5 assistant), the trailing assistant (turn 9) dropped: 5 user, 4 mirror turns
    assert result.metrics["mirrorbench/turns"] == 5.0 and len(ctx.partner.requests) == 4
    judged = ctx.judge.requests[-1][-1]["content"]
    assert "turn 8" in judged and "turn 10" not in judged


def test_mirrorbench_turns_that_are_not_messages_are_a_row_error(tmp_path):
    row = reference_row("mirrorbench")
    row["extra_info"]["turns"] = ["hi", "hello"]
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(RowError, match=r"row0: field extra_info\.turns\[0\] must be dict"):
        read_task_rows([str(path)])

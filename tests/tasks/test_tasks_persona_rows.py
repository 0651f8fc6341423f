"""LifeChoices, Mistakes, TwinVoice, Social-R1, BehaviorChain on rows shaped as the reference's preprocessing
writes them; malformed answer keys are row errors naming file, row and field."""

from __future__ import annotations

import asyncio
import json

import pytest
from single_turn_fixtures import THINKING, answer, row, run
from task_fixtures import make_context

from mimesis_pl.tasks import get_task
from mimesis_pl.tasks.base import RowError
from mimesis_pl.tasks.runner import run_rows

# -- LifeChoices ----------------------------------------------------------------------------------

MCQ = {
    "Scenario": "A rich man you dislike proposes.",
    "Question": "What do you do?",
    "Options": ["Accept at once", "Refuse him plainly", "Ask for a week", "Ask your mother"],
    "Correct Answer": "B. Refuse him plainly",
}


def lifechoices(mcq=MCQ, **over) -> dict:
    info = {
        "character_name": "Elizabeth Bennet",
        "input_text": "I value sincerity over fortune.",
        "Multiple Choice Question": mcq,
        "book": "Pride and Prejudice",
    }
    return row("lifechoices", 4, **{**info, **over})


def test_lifechoices_nested_question_and_a_correct_answer_with_its_text(tiny_tokenizer):
    result, messages = run(tiny_tokenizer, lifechoices(), THINKING.format("B"))
    user = messages[1]["content"]
    assert messages[0]["content"] == "" and result.score == 1.0
    assert "Elizabeth Bennet" in user and "I value sincerity over fortune." in user and "B. Refuse him plainly" in user
    assert answer(tiny_tokenizer, lifechoices(), "A") == 0.0
    short = lifechoices({**MCQ, "Options": ["Accept", "Refuse"], "Correct Answer": "B"})
    assert answer(tiny_tokenizer, short, "B") == 1.0  # missing options are empty


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"input_text": None}, "input_text"),
        ({"Multiple Choice Question": {k: v for k, v in MCQ.items() if k != "Scenario"}}, "Scenario"),
        ({"Multiple Choice Question": {**MCQ, "Correct Answer": ""}}, "Correct Answer"),
        ({"Multiple Choice Question": {**MCQ, "Correct Answer": "E"}}, "Correct Answer"),
    ],
)
def test_lifechoices_missing_fields_are_row_errors(tiny_tokenizer, over, field):
    with pytest.raises(RowError, match=rf"lifechoices_val.jsonl:row5: field extra_info\..*{field}"):
        run(tiny_tokenizer, lifechoices(**over), THINKING.format("B"))


# -- Mistakes -------------------------------------------------------------------------------------

OPTIONS = {"AnswerAText": "2/5", "AnswerBText": "5/6", "AnswerCText": "1/6", "AnswerDText": ""}


def test_mistakes_reads_both_field_spellings_and_omits_empty_options(tiny_tokenizer):
    canonical = row(
        "mistakes", 1, QuestionText="1/2 + 1/3?", MisconceptionName="Adds tops and bottoms", TargetOption="a", **OPTIONS
    )
    lower = row(
        "mistakes", 2, question="1/2 + 1/3?", misconception_text="Adds tops and bottoms", target_option=" A ", **OPTIONS
    )
    for r in (canonical, lower):
        result, messages = run(tiny_tokenizer, r, THINKING.format("A"))
        user = messages[1]["content"]
        assert result.score == 1.0 and "K-12" in messages[0]["content"]
        assert "Math Problem:" in user and "A) 2/5\nB) 5/6\nC) 1/6" in user and "D)" not in user
        assert "Student Misconception: Adds tops and bottoms" in user
        assert answer(tiny_tokenizer, r, "B") == 0.0


@pytest.mark.parametrize("target", ["Answer: B", "E", "AB", "D"])  # D names an empty option
def test_mistakes_malformed_target_option_is_a_row_error(tiny_tokenizer, target):
    r = row("mistakes", 6, QuestionText="1/2 + 1/3?", TargetOption=target, **OPTIONS)
    with pytest.raises(RowError, match=r"mistakes_val.jsonl:row7: field extra_info.TargetOption"):
        run(tiny_tokenizer, r, THINKING.format("B"))


# -- TwinVoice ------------------------------------------------------------------------------------

CHOICES = ["Exciting news, can't wait!", "lol another one, nah", "Please share the specs.", "I have preordered two."]


@pytest.mark.parametrize(
    ("history_key", "choices_key", "encode"),
    [("conversation_history", "answer_choices", list), ("history", "choices", json.dumps)],
)
def test_twinvoice_lists_or_json_strings_and_both_field_names(tiny_tokenizer, history_key, choices_key, encode):
    r = row(
        "twinvoice",
        0,
        **{history_key: encode(["lol this again", "nah"]), choices_key: encode(CHOICES)},
        anchor_post="New phone launch tomorrow!",
        answer_idx=1,
        dimension="style",
    )
    result, messages = run(tiny_tokenizer, r, THINKING.format("B"))
    user = messages[1]["content"]
    assert messages[0]["content"] == "" and result.score == 1.0
    assert (
        "- lol this again\n- nah" in user
        and "New phone launch tomorrow!" in user
        and "D. I have preordered two." in user
    )


@pytest.mark.parametrize(
    ("over", "field"),
    [
        ({"answer_idx": -1}, "answer_idx"),  # wrapped to "D" before
        ({"answer_idx": 99}, "answer_idx"),  # a bare IndexError before
        ({"answer_idx": None}, "answer_idx"),
        ({"answer_idx": True}, "answer_idx"),
        ({"conversation_history": "not json"}, "conversation_history"),
    ],
)
def test_twinvoice_bad_answer_index_or_history_is_a_row_error(tiny_tokenizer, over, field):
    info = {"conversation_history": [], "anchor_post": "post", "answer_choices": CHOICES, "answer_idx": 0}
    with pytest.raises(RowError, match=rf"twinvoice_val.jsonl:row3: field extra_info.{field}"):
        run(tiny_tokenizer, row("twinvoice", 2, **{**info, **over}), THINKING.format("A"))


def test_a_bad_answer_key_in_a_batch_is_a_counted_task_error_naming_the_field(tiny_tokenizer):
    good = row("twinvoice", 0, anchor_post="p", answer_choices=CHOICES, answer_idx=1)
    bad = row("twinvoice", 1, anchor_post="p", answer_choices=CHOICES, answer_idx=-1)
    ctx = make_context(tiny_tokenizer, lambda p, k: THINKING.format("B"))
    results = asyncio.run(run_rows([good, bad], 1, ctx, ["g0", "g1"]))
    assert [r.status for r in results] == ["ok", "task_error"]
    assert "twinvoice_val.jsonl:row2" in results[1].error and "answer_idx" in results[1].error


@pytest.mark.parametrize("data_source", ["twinvoice", "lifechoices", "fantom", "hitom", "alignx_demo", "humanllm"])
def test_a_bad_row_is_rejected_before_any_generation(tiny_tokenizer, data_source):
    ctx = make_context(tiny_tokenizer, lambda p, k: THINKING.format("A"))
    with pytest.raises(RowError, match=rf"{data_source}_val.jsonl:row1: field extra_info\."):
        asyncio.run(get_task(data_source).run(row(data_source, 0, answer_idx=-1), ctx, group_id="g", gen_uid="0"))
    assert ctx.policy.engine.prompts == []


# -- Social-R1 ------------------------------------------------------------------------------------

QUESTION = "Sam forgot Jo's birthday and Jo said 'it's fine'. How does Jo feel?\nA. delighted\nB. hurt"


@pytest.mark.parametrize(
    "info",
    [
        {"prompt_text": QUESTION, "answer_letter": "b"},
        {"conversations": [{"messages": [{"role": "user", "content": QUESTION}]}], "answer_text": "B) hurt"},
        {"prompt": QUESTION, "answer_text": "B. hurt"},
        {"prompt_text": "", "prompt": QUESTION, "answer_text": "B"},
    ],
)
def test_social_r1_prompt_and_gold_sources(tiny_tokenizer, info):
    r = row("social_r1", 0, **info)
    result, messages = run(tiny_tokenizer, r, THINKING.format("B"))
    assert messages[1]["content"] == QUESTION and result.score == 1.0  # the prompt verbatim
    assert answer(tiny_tokenizer, r, "A") == 0.0


def test_social_r1_accepts_any_letter_and_rejects_a_row_without_prompt_or_gold(tiny_tokenizer):
    assert answer(tiny_tokenizer, row("social_r1", 0, prompt_text="Pick J.", answer_letter="J"), "J") == 1.0
    with pytest.raises(RowError, match="prompt_text or conversations or prompt"):
        run(tiny_tokenizer, row("social_r1", 0, answer_letter="A"), THINKING.format("A"))
    with pytest.raises(RowError, match="answer_letter or extra_info.answer_text"):
        run(tiny_tokenizer, row("social_r1", 0, prompt_text="Q"), THINKING.format("A"))


# -- BehaviorChain --------------------------------------------------------------------------------


def chain(**over) -> dict:
    raw = {
        "profile": "A cautious baker.",
        "history_truncated": [
            {"chapter_num": "Chapter 1", "chapter_content": "She lost her savings once."},
            {"chapter_num": "Chapter 2", "chapter_content": "She rebuilt the shop."},
        ],
        "prior_chain": [{"context": "A friend offers a risky deal.", "behavior": "She declines politely."}],
        "current_context": "A stranger offers to double her money.",
        "persona_name": "Rosa",
        "options": ["Invests all", "Declines", "Invests half", "Borrows money"],
        "right_option_letter": "B",
    }
    return row("behavior_chain", 8, raw=json.dumps({**raw, **over}))


def test_behavior_chain_reads_everything_from_the_raw_json_string(tiny_tokenizer):
    result, messages = run(tiny_tokenizer, chain(), THINKING.format("B"))
    user = messages[1]["content"]
    assert messages[0]["content"] == "" and result.score == 1.0
    assert "A cautious baker." in user and "Chapter 1\nShe lost her savings once.\n\nChapter 2" in user
    assert "Step 0:\nContext: A friend offers a risky deal.\nBehavior: She declines politely." in user
    assert "A stranger offers to double her money." in user and "Rosa" in user and "B. Declines" in user
    text_form = chain(
        history_truncated=None, history_text="Long ago.", prior_chain=None, prior_chain_text="Declined twice.",
        options=None, options_dict={"A": "Invests all", "B": "Declines"},
    )  # fmt: skip
    result, messages = run(tiny_tokenizer, text_form, THINKING.format("B"))
    user = messages[1]["content"]
    assert "Long ago." in user and "Declined twice." in user and "C. \n" in user and result.score == 1.0


@pytest.mark.parametrize("gold", ["", "E", None])
def test_behavior_chain_bad_gold_is_a_row_error(tiny_tokenizer, gold):
    with pytest.raises(RowError, match=r"behavior_chain_val.jsonl:row9: field extra_info.raw.right_option_letter"):
        run(tiny_tokenizer, chain(right_option_letter=gold), THINKING.format("B"))

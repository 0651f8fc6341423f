"""FANToM, HiToM, ParaToMi on rows shaped as the reference's preprocessing writes them (fields in extra_info)."""

from __future__ import annotations

import json

import pytest
from single_turn_fixtures import THINKING, answer, row, run

from mimesis_pl.tasks.base import RowError

CONTEXT = "Ann: I moved to Oslo.\nBen: Nice!\n(Cara joins)\nCara: Hi all."


def fantom(kind: str, gold, **extra) -> dict:
    return row(
        "fantom",
        3,
        context=CONTEXT,
        complete_question="Who knows that Ann moved?",
        question="Who knows?",
        question_type=kind,
        correct_answer=gold,
        set_id="s1",
        part_id="p1",
        tom_type="first",
        missed_info_accessibility="inaccessible",
        **extra,
    )


# -- FANToM ---------------------------------------------------------------------------------------


def test_fantom_prompt_has_an_empty_system_message_the_rules_and_the_rows_extra_information(tiny_tokenizer):
    r = fantom("fact", "Oslo", extra_info="Cara arrived after the move was mentioned.")
    _, messages = run(tiny_tokenizer, r, THINKING.format("Oslo"))
    system, user = messages[0], messages[1]["content"]
    assert system == {"role": "system", "content": ""}
    assert CONTEXT in user and "Cara arrived after the move was mentioned." in user
    assert "Who knows that Ann moved?" in user and "Who knows?\n" not in user  # complete_question wins
    assert "only" in user and "<answer>" in user


@pytest.mark.parametrize("gold", [2, "2"])
def test_fantom_belief_mc_gold_is_an_int_or_an_int_string(tiny_tokenizer, gold):
    r = fantom("tom:belief:inaccessible:multiple-choice", gold)
    assert [answer(tiny_tokenizer, r, a) for a in ("c", "(c)", "c.", "C", "b", "c because")] == [1, 1, 1, 1, 0, 0]


@pytest.mark.parametrize("gold", [-1, 4, "x"])
def test_fantom_mc_gold_outside_0_to_3_is_a_row_error_never_wrapped(tiny_tokenizer, gold):
    with pytest.raises(RowError, match=r"fantom_val.jsonl:row4: field extra_info.correct_answer"):
        run(tiny_tokenizer, fantom("tom:belief:accessible:multiple-choice", gold), THINKING.format("d"))


@pytest.mark.parametrize(
    ("gold", "wrong"),
    [(["Ann", "Ben"], ["Cara"]), ("['Ann', 'Ben']", "['Cara']"), ("Ann, Ben", "Cara"), ('["Ann", "Ben"]', "")],
)
def test_fantom_list_gold_as_a_list_or_a_list_string(tiny_tokenizer, gold, wrong):
    r = fantom("tom:answerability:list", gold, wrong_answer=wrong)
    assert answer(tiny_tokenizer, r, "Ann and Ben") == 1.0
    assert answer(tiny_tokenizer, r, "Ann") == 0.0
    if wrong:
        assert answer(tiny_tokenizer, r, "Ann, Ben, Cara") == 0.0


@pytest.mark.parametrize(
    ("reply", "gold", "score"),
    [
        ("No, she does not know.", "no", 1.0),
        ("Cara doesn't know about the move.", "no", 1.0),  # the reference's " doesn't know " cue
        ("Nobody told her", "no", 1.0),  # a leading "no" counts, as in the reference's metric
        ("Yes, Cara knows it.", "yes", 1.0),
        ("yes, and no.", "yes", 0.0),  # both polarities
        ("yes and no", "yes", 1.0),  # a bare final "no" is no cue in the reference's metric
        ("No.", "no:long", 1.0),
        ("No.", "No", 1.0),  # any case (docs/decisions.md S50)
    ],
)
def test_fantom_binary_cues(tiny_tokenizer, reply, gold, score):
    assert answer(tiny_tokenizer, fantom("tom:answerability:binary", gold), reply) == score


def test_fantom_binary_gold_outside_yes_no_and_unknown_types_are_row_errors(tiny_tokenizer):
    with pytest.raises(RowError, match="correct_answer"):
        run(tiny_tokenizer, fantom("tom:info_accessibility:binary", "maybe"), THINKING.format("yes"))
    with pytest.raises(RowError, match="question_type"):
        run(tiny_tokenizer, fantom("tom:belief:inaccessible:dist.", "x"), THINKING.format("yes"))


def test_fantom_fact_is_squad_f1(tiny_tokenizer):
    r = fantom("fact", "She moved to Oslo")
    assert answer(tiny_tokenizer, r, "she moved to Oslo.") == 1.0
    assert answer(tiny_tokenizer, r, "Oslo") == pytest.approx(2 * 1 * 0.25 / 1.25)  # P 1, R 1/4


def test_fantom_missing_gold_names_the_field(tiny_tokenizer):
    r = fantom("fact", None)
    with pytest.raises(RowError, match=r"row4: field extra_info.correct_answer is required"):
        run(tiny_tokenizer, r, THINKING.format("x"))


# -- HiToM ----------------------------------------------------------------------------------------

STORY = "Ava and Ben entered the den. The pen is in the box. Ava exited the den. Ben moved the pen to the drawer."


def hitom(**over) -> dict:
    info = dict(
        story=STORY,
        question="Where does Ava think the pen is?",
        choices="A. box, B. drawer, C. green bucket",
        correct_answer="box",
        extra_info="Ava left before the pen was moved.",
        deception="False",
        story_length=1,
        question_order=0,
    )
    return row("hitom", 0, **{**info, **over})


def test_hitom_prompt_carries_the_story_rules_choices_and_extra_information(tiny_tokenizer):
    _, messages = run(tiny_tokenizer, hitom(), THINKING.format("A"))
    user = messages[1]["content"]
    assert messages[0]["content"] == "" and STORY in user and "Ava left before the pen was moved." in user
    assert "Where does Ava think the pen is?\nA. box, B. drawer, C. green bucket" in user
    assert "lie" in user and "leave" in user and "private" in user.lower()  # the story assumptions


def test_hitom_scores_the_option_text_against_correct_answer(tiny_tokenizer):
    assert [answer(tiny_tokenizer, hitom(), x) for x in ("A", "a", "B", "box", "(A)")] == [1, 1, 0, 0, 0]
    newline = hitom(choices="A. red, big box\nB. drawer", correct_answer="red, big box")
    assert answer(tiny_tokenizer, newline, "A") == 1.0  # commas inside an option, newline-separated (S54)


def test_hitom_missing_gold_is_a_row_error(tiny_tokenizer):
    with pytest.raises(RowError, match=r"hitom_val.jsonl:row1: field extra_info.correct_answer"):
        run(tiny_tokenizer, hitom(correct_answer=""), THINKING.format("A"))


# -- ParaToMi -------------------------------------------------------------------------------------

SENTENCES = ["Liam entered the garage.", "The apple is in the crate.", "Liam exited the garage."]


@pytest.mark.parametrize("story", [SENTENCES, str(SENTENCES), json.dumps(SENTENCES), " ".join(SENTENCES)])
@pytest.mark.parametrize("cands", [["crate", "basket"], "['crate', 'basket']"])
def test_paratomi_story_and_cands_as_lists_or_list_strings(tiny_tokenizer, story, cands):
    r = row("paratomi", 0, story=story, question="Where will Liam look?", cands=cands, correct_answer="crate")
    result, messages = run(tiny_tokenizer, r, THINKING.format("the crate"))
    user = messages[1]["content"]
    assert " ".join(SENTENCES) in user and "Possible answers: crate, basket" in user
    assert messages[0]["content"] == "" and result.score == 1.0
    assert answer(tiny_tokenizer, r, "crate or basket") == 0.0


def test_paratomi_extra_information_and_a_candidate_string_that_is_not_a_list(tiny_tokenizer):
    r = row("paratomi", 0, story=SENTENCES, question="Where?", cands="crate", correct_answer="crate", extra_info="Hint")
    result, messages = run(tiny_tokenizer, r, THINKING.format("crate"))
    assert "Possible answers: crate" in messages[1]["content"] and "Hint" in messages[1]["content"]
    assert result.score == 1.0

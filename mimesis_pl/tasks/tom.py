"""Theory-of-mind QA: FANToM, HiToM, ParaToMi — single thinking turn, ``<answer>`` scored as the reference does.

Rows are read as the reference's preprocessing writes them (fields in ``extra_info``; the row's own nested
``extra_info`` string is shown as the prompt's "Extra information" section). Lists stored as strings are parsed
without ``eval`` (docs/decisions.md S6); a missing or malformed gold is a row error, never a silent 0 (S50).
"""

from __future__ import annotations

import re
import string
from collections.abc import Mapping
from typing import Any

from .answers import bare_letter, has_word, letter_reader, token_f1
from .base import RowError, row_name
from .fields import as_index, as_list, as_text, first_of, literal_list, required, row_error
from .single_turn import Scored, SingleTurnTask, chat


def nested_extra(info: Mapping[str, Any]) -> str:
    """The row's own ``extra_info.extra_info`` text (hints some ToM sets carry), ``""`` when absent."""
    return as_text(info.get("extra_info"))


def tom_sections(*sections: tuple[str, str]) -> str:
    """``Title:\\ntext`` blocks separated by blank lines; empty sections are left out."""
    return "\n\n".join(f"{title}:\n{text}" for title, text in sections if text.strip())


# -- FANToM ----------------------------------------------------------------------------------

_FANTOM_TASK = (
    "Below is a conversation among several people, followed by a question about it. Assume each person knows only "
    "what was said in the conversation while they were there, and nothing else. Give your final answer inside "
    "<answer></answer> tags."
)


def fantom_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    question = as_text(required(info, row, "complete_question", "question"))
    body = tom_sections(
        ("Context", as_text(info.get("context"))),
        ("Extra information (to help you understand and answer)", nested_extra(info)),
        ("Question", question),
    )
    return chat("", f"{_FANTOM_TASK}\n\n{body}")


def name_list(value: Any, row: Mapping[str, Any], name: str) -> list[str]:
    """FANToM's list golds: a list, or a string such as ``"['Ann', 'Ben']"`` or ``"Ann, Ben"``."""
    if isinstance(value, str):
        parsed = literal_list(value)
        items = parsed if parsed is not None else value.split(",")
    else:
        items = as_list(value, row, name)
    return [n for n in (str(i).strip(" []'\"\t\n") for i in items) if n]


def says_yes(text: str) -> bool:
    """FANToM's yes cues on the lower-cased, quote-stripped answer."""
    t = text.lower().strip().strip("'\"")
    return t.startswith(("yes", "true")) or any(cue in t for cue in (" yes,", " yes ", " yes.", " knows "))


def says_no(text: str) -> bool:
    """FANToM's no cues (a leading "no" also matches "not"/"nobody", as in the reference's metric)."""
    t = text.lower().strip().strip("'\"")
    cues = (" no,", " no ", " no.", " does not know ", " doesn't know ")
    return t.startswith(("no", "false")) or any(cue in t for cue in cues)


_FANTOM_LETTER = re.compile(r"\(?([a-d])\)?\.?")  # "c", "(c)", "c)", "c."
_BINARY_GOLD = {"yes": True, "no": False, "no:long": False}


def fantom_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    """By ``question_type``, in the reference's order: belief MC letter, list of names, binary polarity, fact F1."""
    kind = as_text(required(info, row, "question_type"))
    gold = required(info, row, "correct_answer")
    text = answer or ""
    if kind.startswith("tom:belief:") and kind.endswith(":multiple-choice"):
        want = "abcd"[as_index(gold, row, "correct_answer", 4)]
        got = _FANTOM_LETTER.fullmatch(text.strip().lower())
        return Scored(float(got is not None and got.group(1) == want))
    if kind.endswith(":list"):
        correct = name_list(gold, row, "correct_answer")
        if not correct:
            raise row_error(row, "correct_answer", "lists no names")
        wrong = name_list(first_of(info, "wrong_answer", default=[]), row, "wrong_answer")
        ok = all(has_word(text, n) for n in correct) and not any(has_word(text, n) for n in wrong)
        return Scored(float(ok))
    if kind.endswith(":binary"):
        polarity = _BINARY_GOLD.get(as_text(gold).lower())
        if polarity is None:
            raise row_error(row, "correct_answer", f"must be yes, no or no:long for a binary question, got {gold!r}")
        yes, no = says_yes(text), says_no(text)
        return Scored(float(yes and not no if polarity else no and not yes))
    if kind.startswith("fact"):
        return Scored(token_f1(text, as_text(gold)) if text.strip() else 0.0)
    raise RowError(f"{row_name(row)}: field extra_info.question_type {kind!r} is not a FANToM question type")


# -- HiToM ------------------------------------------------------------------------------------

_HITOM_TASK = (
    "Read the story and answer the question. Assume the following about the story:\n"
    "1. A person who is in a place sees everything that happens there until they leave it.\n"
    "2. A person can know another's mind only by sharing a place with them or interacting with them.\n"
    "3. People may lie. What someone says does not change what they themselves believe.\n"
    "4. A person trusts what they hear from someone who left the place later than they did.\n"
    "5. A private conversation is heard only by the people in it; a public announcement by everyone present.\n"
    "Reason step by step, then give only the letter of your choice inside <answer></answer> tags, e.g. "
    "<answer>A</answer>."
)
# An option: a capital letter, ". ", its text up to the next ", X. " / newline + "X. " or the end. Unlike the
# reference's parser, commas inside an option and newline-separated options are read (docs/decisions.md S54).
_OPTION = re.compile(r"(?:^|(?<=[,\n]))\s*([A-Z])\.\s+(.*?)\s*(?=,\s*[A-Z]\.\s|\n\s*[A-Z]\.\s|$)", re.DOTALL)


def parse_options(choices: str) -> dict[str, str]:
    """``"A. box, B. green drawer"`` → ``{"A": "box", "B": "green drawer"}``."""
    return {m.group(1): m.group(2).strip().rstrip(",").strip() for m in _OPTION.finditer(choices.strip())}


def hitom_options(info: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, str]:
    options = parse_options(as_text(required(info, row, "choices")))
    if not options:
        raise row_error(row, "choices", f"has no 'A. …, B. …' options: {info.get('choices')!r:.80}")
    return options


def hitom_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    story, question = (as_text(required(info, row, k)) for k in ("story", "question"))
    choices = as_text(required(info, row, "choices"))
    body = tom_sections(
        ("Story", story), ("Extra information", nested_extra(info)), ("Question", f"{question}\n{choices}")
    )
    return chat("", f"{_HITOM_TASK}\n\n{body}")


def hitom_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    """1 when the answered letter's option text equals ``correct_answer`` (both stripped)."""
    options = hitom_options(info, row)
    gold = as_text(required(info, row, "correct_answer"))
    letter = bare_letter(answer, "ABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return Scored(float(letter in options and options[letter] == gold))


# -- ParaToMi --------------------------------------------------------------------------------

_PARATOMI_TASK = (
    "You observe the story below from the outside. Answer the question with the most specific location only, "
    "inside <answer></answer> tags."
)


def paratomi_story(info: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``story``: a list of sentences or its Python-list string (joined with spaces), or plain text."""
    story = required(info, row, "story")
    if isinstance(story, str):
        sentences = literal_list(story) if story.lstrip().startswith("[") else None
        return " ".join(str(s).strip() for s in sentences) if sentences is not None else story.strip()
    return " ".join(str(s).strip() for s in as_list(story, row, "story"))


def paratomi_cands(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    """``cands``: a list or its string form; a string that is not a list is the one candidate."""
    cands = first_of(info, "cands", default=[])
    if isinstance(cands, str):
        parsed = literal_list(cands)
        cands = parsed if parsed is not None else [cands]
    return [as_text(c) for c in as_list(cands, row, "cands") if as_text(c)]


def paratomi_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    question = as_text(required(info, row, "question"))
    cands = paratomi_cands(info, row)
    if cands:
        question += "\nPossible answers: " + ", ".join(cands)
    body = tom_sections(
        ("Story", paratomi_story(info, row)), ("Extra information", nested_extra(info)), ("Question", question)
    )
    return chat("", f"{_PARATOMI_TASK}\n\n{body}")


def paratomi_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    """1 when the gold location occurs as a whole word and no other candidate does."""
    gold = as_text(required(info, row, "correct_answer"))
    others = [c for c in paratomi_cands(info, row) if c.lower() != gold.lower()]
    text = answer or ""
    return Scored(float(has_word(text, gold) and not any(has_word(text, c) for c in others)))


def fantom(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, fantom_prompt, fantom_score)


def hitom(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, hitom_prompt, hitom_score, read=letter_reader(string.ascii_uppercase))


def paratomi(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, paratomi_prompt, paratomi_score)

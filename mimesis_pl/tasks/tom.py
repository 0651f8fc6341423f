"""Theory-of-mind QA: FANToM, HiToM, ParaToMi — single thinking turn, ``<answer>`` scored 1/0.

Dataset strings that hold lists are parsed with ``json`` or ``ast.literal_eval``, never ``eval`` (docs/decisions.md S6).
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping
from typing import Any

from .answers import has_word, parse_letter, token_f1
from .base import RowError, require, row_name
from .single_turn import Scored, SingleTurnTask, user_prompt

_TOM_SYSTEM = "You read stories and conversations closely and reason about what each person knows and believes."
_POSITIVE = ("yes", "true", "knows")
_NEGATIVE = ("no", "false", "does not know")


def parse_list(value: Any, row: Mapping[str, Any], name: str) -> list:
    """A list from a list or its string form (JSON or a Python literal); a RowError otherwise."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if hasattr(value, "tolist"):  # numpy arrays from parquet
        return list(value.tolist())
    if isinstance(value, str):
        for parse in (json.loads, ast.literal_eval):
            try:
                parsed = parse(value)
            except (ValueError, SyntaxError):
                continue
            if isinstance(parsed, (list, tuple)):
                return list(parsed)
    raise RowError(f"{row_name(row)}: extra_info.{name} must be a list (or its JSON/literal string), got {value!r:.80}")


# -- FANToM ----------------------------------------------------------------------------------


def fantom_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    question = require(info, row, "complete_question", "question")
    context = require(info, row, "context")
    extra = info.get("extra_info") or ""
    body = f"Conversation:\n{context}\n\n{extra}\n\nQuestion: {question}".replace("\n\n\n\n", "\n\n")
    return user_prompt(_TOM_SYSTEM, body)


def polarity(text: str) -> str | None:
    """``"neg"`` if the text says no/false/does not know, else ``"pos"`` if yes/true/knows, else ``None``."""
    if any(has_word(text, w) for w in _NEGATIVE):
        return "neg"
    if any(has_word(text, w) for w in _POSITIVE):
        return "pos"
    return None


def fantom_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    """Scored by ``question_type`` (multiple-choice letter, list of names, binary polarity, fact F1)."""
    kind = str(require(info, row, "question_type"))
    gold = require(info, row, "correct_answer")
    text = answer or ""
    if kind.endswith("multiple-choice"):
        letter = parse_letter(answer, "abcd")
        return Scored(float(letter is not None and letter == "ABCD"[int(gold)]))
    if kind.endswith(":list"):
        correct = parse_list(gold, row, "correct_answer")
        wrong = parse_list(info.get("wrong_answer") or [], row, "wrong_answer")
        ok = all(has_word(text, n) for n in correct) and not any(has_word(text, n) for n in wrong)
        return Scored(float(bool(text) and ok))
    if kind.endswith(":binary"):
        want = polarity(str(gold))
        pos, neg = any(has_word(text, w) for w in _POSITIVE), any(has_word(text, w) for w in _NEGATIVE)
        return Scored(float((want == "pos" and pos and not neg) or (want == "neg" and neg and not pos)))
    if kind.startswith("fact"):
        return Scored(token_f1(text, str(gold)) if answer is not None else 0.0)
    raise RowError(f"{row_name(row)}: extra_info.question_type {kind!r} is not a FANToM question type")


# -- HiToM ------------------------------------------------------------------------------------

_OPTION = re.compile(r"([A-Z])\.\s*(.*?)(?=,\s*[A-Z]\.\s|$)", re.DOTALL)


def parse_options(choices: str) -> dict[str, str]:
    """``"A. box, B. green drawer"`` → ``{"A": "box", "B": "green drawer"}``."""
    return {m.group(1): m.group(2).strip().rstrip(",").strip() for m in _OPTION.finditer(choices.strip())}


def hitom_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    story, question, choices = (require(info, row, k) for k in ("story", "question", "choices"))
    body = f"Story:\n{story}\n\nQuestion: {question}\nChoices: {choices}\nAnswer with the letter of one choice."
    return user_prompt(_TOM_SYSTEM, body)


def hitom_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    options = parse_options(str(require(info, row, "choices")))
    if not options:
        raise RowError(f"{row_name(row)}: extra_info.choices has no 'A. …' options")
    letter = parse_letter(answer, "".join(options))
    gold = str(require(info, row, "correct_answer")).strip().lower()
    return Scored(float(letter is not None and options[letter].lower() == gold))


# -- ParaToMi --------------------------------------------------------------------------------


def paratomi_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    story = require(info, row, "story")
    plain_text = isinstance(story, str) and not story.lstrip().startswith("[")
    lines = [story] if plain_text else parse_list(story, row, "story")
    body = "Story:\n" + "\n".join(str(s) for s in lines) + f"\n\nQuestion: {require(info, row, 'question')}"
    cands = info.get("cands")
    if cands:
        body += "\nCandidate locations: " + ", ".join(str(c) for c in parse_list(cands, row, "cands"))
    return user_prompt(_TOM_SYSTEM, body + "\nAnswer with one location.")


def paratomi_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    gold = str(require(info, row, "correct_answer")).strip()
    others = [str(c) for c in parse_list(info.get("cands") or [], row, "cands") if str(c).strip() != gold]
    text = answer or ""
    return Scored(float(has_word(text, gold) and not any(has_word(text, c) for c in others)))


def fantom(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, fantom_prompt, fantom_score)


def hitom(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, hitom_prompt, hitom_score)


def paratomi(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, paratomi_prompt, paratomi_score)

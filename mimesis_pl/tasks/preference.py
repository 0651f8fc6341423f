"""Single-turn preference and prediction tasks: AlignX (A/B preference), SocSci210 (survey answer), HumanLLM
(ranking of 5 of up to 20 candidates). Prompt builders and pure scorers; the factories are in :mod:`.persona`.

Rows are read as the reference's preprocessing writes them; a missing or malformed field the score needs is a
row error, never a silent 0 (docs/decisions.md S50, S53).
"""

from __future__ import annotations

import random
import re
from collections.abc import Mapping
from typing import Any, Literal

from .answers import answer_reader, bare_letter, letter_reader, option_letters
from .fields import as_index, as_list, as_text, conversation_prompt, first_of, required, required_text, row_error
from .single_turn import Scored, chat

# -- AlignX --------------------------------------------------------------------------------------

_ALIGNX_SYSTEM = (
    "Predict which of two responses a particular user would prefer, using what you are told about the user and "
    "their earlier choices. You may think briefly first. End with <answer>A</answer> or <answer>B</answer>."
)


def alignx_chosen_is_a(index: int) -> bool:
    """The reference's per-row A/B draw: ``Random(index).random() < 0.5`` puts ``rejected`` first (gold B).

    Same in training and evaluation; index 0 → A, 1 → B, 2 → A, 3 → B.
    """
    return random.Random(index).random() >= 0.5


def _count(info: Mapping[str, Any], row: Mapping[str, Any], name: str) -> int:
    value = info.get(name)
    if value is None:  # absent, or null in a struct column another row filled
        return 2
    try:
        return int(value)
    except (TypeError, ValueError):
        raise row_error(row, name, f"must be an integer, got {value!r:.40}") from None


def alignx_index(info: Mapping[str, Any], row: Mapping[str, Any]) -> int:
    value = info.get("index")
    try:
        return 0 if value is None else int(value)
    except (TypeError, ValueError):
        raise row_error(row, "index", f"must be an integer (it seeds the A/B order), got {value!r:.40}") from None


def alignx_persona(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    """The optional sections about the user: description, earlier preferences, earlier comments."""
    parts = []
    persona = as_text(first_of(info, "demographic", "Demographic Information")) or as_text(info.get("profile"))
    if persona:
        parts.append(f"About this user:\n{persona}")
    pairs = as_list(first_of(info, "icl_pairs", "Pair-wise Comparative Feedback", default=[]), row, "icl_pairs")
    examples = []
    for i, pair in enumerate(pairs[: _count(info, row, "n_icl")]):
        post, good, bad = (
            as_text(pair.get(k)) if isinstance(pair, Mapping) else "" for k in ("prompt", "chosen", "rejected")
        )
        if post and good and bad:  # an incomplete pair is skipped but keeps its number
            examples.append(f"Example {i + 1}:\nPost: {post}\nThe user preferred: {good}\nover: {bad}")
    if examples:
        parts.append("Earlier preferences of this user:\n\n" + "\n\n".join(examples))
    ugc = as_list(first_of(info, "ugc", "User-Generated Content", default=[]), row, "ugc")
    comments = []
    for item in ugc[: _count(info, row, "n_ugc")]:
        post, said = (as_text(item.get(k)) if isinstance(item, Mapping) else "" for k in ("prompt", "comment"))
        if post and said:
            comments.append(f"On the post: {post}\nThe user said: {said}")
    if comments:
        parts.append("Earlier comments by this user:\n\n" + "\n\n".join(comments))
    return parts


def alignx_pair(info: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[str, str, str]:
    """``(response A, response B, gold letter)``."""
    chosen, rejected = (required_text(info, row, k) for k in ("chosen", "rejected"))
    if alignx_chosen_is_a(alignx_index(info, row)):
        return chosen, rejected, "A"
    return rejected, chosen, "B"


def alignx_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    post = required_text(info, row, "raw_prompt")  # the post; the row's chat `prompt` is unused
    a, b, _ = alignx_pair(info, row)
    parts = [
        *alignx_persona(info, row),
        f"Post:\n{post}",
        f"Response A:\n{a}",
        f"Response B:\n{b}",
        "Which response would this user prefer? Answer <answer>A</answer> or <answer>B</answer>.",
    ]
    return chat(_ALIGNX_SYSTEM, "\n\n".join(parts))


#: AlignX reads ``<answer>\s*([AB])\s*</answer>`` with the tag and the letter case-sensitive, as the reference (S84).
ALIGNX_READ = letter_reader("AB", ignore_case=False)


def alignx_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    """1 for the gold letter; case-sensitive as in the reference (``"a"`` is not an answer)."""
    gold = alignx_pair(info, row)[2]
    return Scored(float(bare_letter(answer, "AB", case_sensitive=True) == gold))


# -- SocSci210 -----------------------------------------------------------------------------------

ResponseType = Literal["ordinal", "binary", "categorical"]
_SOCSCI_SYSTEM = (
    "You answer a survey question as the respondent described in it. In one or two sentences, consider how the "
    "respondent's demographics and ideology shape their answer, then give the answer inside <answer></answer>, "
    "e.g. <answer>3</answer>."
)
_ONLY_RETURN = re.compile(r"\bOnly return\b")
_NOTHING_ELSE = re.compile(r", nothing else\.?")
_INT = re.compile(r"^-?\d+$")


def socsci210_text(prompt: str) -> str:
    """The survey prompt with its "answer only" instruction turned into one that lets the model reason."""
    return _NOTHING_ELSE.sub(".", _ONLY_RETURN.sub("Think step by step, and answer", prompt))


def socsci210_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    return chat(_SOCSCI_SYSTEM, socsci210_text(conversation_prompt(info, row)))


def socsci210_reward(pred: str | None, gold: float, kind: ResponseType, r_min: float, r_max: float) -> float:
    """Binary/categorical: ``int(pred) == int(gold)``; ordinal: ``1 − |clamp(pred) − gold| / span`` in [0, 1].

    The answer must be exactly an integer (binary also ``yes``/``no``, any case); a span ≤ 0 means exact match.
    """
    if pred is None:
        return 0.0
    text = pred.strip().lower()
    if kind == "binary" and text in ("yes", "no"):
        value = 1.0 if text == "yes" else 0.0
    elif _INT.match(text):
        value = float(int(text))
    else:
        return 0.0
    if kind != "ordinal":
        return float(int(value) == int(gold))
    span = r_max - r_min
    if span <= 0:
        return float(value == gold)
    value = min(max(value, r_min), r_max)
    return min(1.0, max(0.0, 1.0 - abs(value - gold) / span))


def _number(info: Mapping[str, Any], row: Mapping[str, Any], name: str, default: float | None) -> float:
    value = info.get(name)
    if value is None and default is not None:
        return default
    if value is None:
        raise row_error(row, name, "is required")
    try:
        return float(value)
    except (TypeError, ValueError):
        raise row_error(row, name, f"must be a number, got {value!r:.40}") from None


def socsci210_settings(info: Mapping[str, Any], row: Mapping[str, Any]) -> tuple[float, ResponseType, float, float]:
    """``(gold, response_type, r_min, r_max)`` with the reference's defaults (0; 1 for binary, else 7)."""
    kind = as_text(first_of(info, "response_type", default="ordinal")).lower()
    if kind not in ("ordinal", "binary", "categorical"):
        raise row_error(row, "response_type", f"must be ordinal, binary or categorical, got {kind!r}")
    gold = _number(info, row, "response", None)
    return gold, kind, _number(info, row, "r_min", 0.0), _number(info, row, "r_max", 1.0 if kind == "binary" else 7.0)  # type: ignore[return-value]


def socsci210_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    gold, kind, r_min, r_max = socsci210_settings(info, row)
    return Scored(socsci210_reward(answer, gold, kind, r_min, r_max))


# -- HumanLLM ------------------------------------------------------------------------------------

TOP_K = 5
MAX_CANDIDATES = 20
_CANDIDATE_1 = re.compile(r"Candidate\s*1\s*:")
_HISTORY = re.compile(r"History\s*\d+\s*:")
_RANKING = re.compile(r"^[A-T](?:,[A-T]){4}$")
#: HumanLLM reads the first ``<answer>X1,…,X5</answer>`` with no space anywhere, case-sensitive, as the reference.
HUMANLLM_READ = answer_reader(r"[A-T](?:,[A-T]){4}", ignore_case=False)
_HUMANLLM_SYSTEM = (
    "You simulate a shopper choosing what to buy next. Read the user's description, purchase history and the "
    "candidate items. You may think briefly first. Your final line must be exactly <answer>X1,X2,X3,X4,X5</answer>: "
    "five different candidate letters (A-T), separated by commas without spaces, most likely first."
)
_HUMANLLM_TASK = (
    "Task: rank the candidates this user is most likely to buy next.\n"
    "Rules: exactly five letters, all different, from the candidates' letters; separated by commas with no spaces "
    "or other characters; most likely first.\nExample: <answer>C,A,M,B,K</answer>"
)


def humanllm_candidates(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    """The candidates (a list; a JSON/list string is accepted too): any non-empty list, as the reference; only the
    first 20 (A-T) are shown, and with fewer than five no ranking can score (S85, which replaces S53)."""
    candidates = [as_text(c) for c in as_list(required(info, row, "candidates"), row, "candidates")]
    if not candidates:
        raise row_error(row, "candidates", "must hold at least one item")
    return candidates


def one_history_per_line(text: str) -> str:
    """Put each inline ``History N:`` entry on its own line, renumbered from 1, trailing ``,``/``;`` removed."""
    marks = list(_HISTORY.finditer(text))
    if not marks:
        return text
    ends = [m.start() for m in marks[1:]] + [len(text)]
    entries = [
        f"History {i + 1}: {text[m.end() : end].strip().rstrip(',;')}" for i, (m, end) in enumerate(zip(marks, ends))
    ]
    head = text[: marks[0].start()].rstrip()
    return "\n".join([head, *entries] if head else entries)


def humanllm_user_text(prompt: str, candidates: list[str]) -> str:
    """The row's prompt cut before its own ``Candidate 1:`` list, history one per line, candidates shown once
    as ``A: …`` … ``T: …``."""
    cut = _CANDIDATE_1.search(prompt)
    head = one_history_per_line(prompt[: cut.start()].rstrip() if cut else prompt)
    listing = "\n".join(f"{letter}: {text}" for letter, text in zip(option_letters(MAX_CANDIDATES), candidates))
    return f"{head}\n\n{listing}\n\n{_HUMANLLM_TASK}"


def humanllm_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    candidates = humanllm_candidates(info, row)
    return chat(_HUMANLLM_SYSTEM, humanllm_user_text(conversation_prompt(info, row), candidates))


def humanllm_gold(info: Mapping[str, Any], row: Mapping[str, Any], n: int) -> int:
    return as_index(required(info, row, "answer_index"), row, "answer_index", n)


def humanllm_reward(answer: str | None, gold: int, n_candidates: int) -> tuple[float, float, float]:
    """``(1/rank of the gold within the five or 0, hit@5, top-1)``; a format violation, a repeated letter or one
    past the candidate count scores 0."""
    if answer is None or not _RANKING.match(answer.strip()):
        return 0.0, 0.0, 0.0
    ranked = [option_letters(MAX_CANDIDATES).index(x) for x in answer.strip().split(",")]
    if len(set(ranked)) != TOP_K or max(ranked) >= n_candidates or gold not in ranked:
        return 0.0, 0.0, 0.0
    rank = ranked.index(gold) + 1
    return 1.0 / rank, 1.0, float(rank == 1)


def humanllm_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    n = len(humanllm_candidates(info, row))
    reward, hit, top1 = humanllm_reward(answer, humanllm_gold(info, row, n), n)
    return Scored(reward, {f"hit@{TOP_K}": hit, "top1_acc": top1})

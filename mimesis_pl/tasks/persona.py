"""Single-turn persona / prediction tasks, each a prompt builder and a pure scorer.

Extraction is strict everywhere: the ``<answer>`` tag of the public part only (docs/decisions.md S7, S8).
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping
from typing import Any

from .answers import letter_reward, option_letters
from .base import RowError, require, row_name
from .single_turn import Scored, SingleTurnTask, user_prompt
from .tom import parse_list

_PERSONA_SYSTEM = "You simulate one specific person faithfully: decide as they would, not as an assistant would."


def _options(options: list, letters: str = "ABCD") -> str:
    return "\n".join(f"{letter}. {text}" for letter, text in zip(letters, options))


def _json_field(value: Any, row: Mapping[str, Any], name: str) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except json.JSONDecodeError as err:
            raise RowError(f"{row_name(row)}: extra_info.{name} is not valid JSON ({err})") from None
    return value


# -- LifeChoices --------------------------------------------------------------------------------


def lifechoices_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    mcq = _json_field(require(info, row, "Multiple Choice Question"), row, "Multiple Choice Question")
    name = require(info, row, "character_name")
    body = (
        f"You are {name}. What you remember:\n{info.get('input_text', '')}\n\nScenario: {mcq['Scenario']}\n"
        f"Question: {mcq['Question']}\n{_options(list(mcq['Options']))}\nChoose the option {name} would choose."
    )
    return user_prompt(_PERSONA_SYSTEM, body)


def lifechoices_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    mcq = _json_field(require(info, row, "Multiple Choice Question"), row, "Multiple Choice Question")
    gold = str(mcq.get("Correct Answer", "")).strip()[:1].upper()
    if gold not in "ABCD" or not gold:
        raise RowError(f"{row_name(row)}: 'Correct Answer' must start with A-D, got {mcq.get('Correct Answer')!r}")
    return Scored(letter_reward(answer, gold))


# -- Mistakes ------------------------------------------------------------------------------------


def _get(info: Mapping[str, Any], row: Mapping[str, Any], name: str) -> Any:
    return require(info, row, name, name.lower())


def mistakes_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    options = [_get(info, row, f"Answer{x}Text") for x in "ABCD"]
    body = (
        f"You are a K-12 student who holds this misconception: {_get(info, row, 'MisconceptionName')}.\n"
        f"Question: {_get(info, row, 'QuestionText')}\n{_options(options)}\nAnswer as this student would."
    )
    return user_prompt(_PERSONA_SYSTEM, body)


def mistakes_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    return Scored(letter_reward(answer, str(_get(info, row, "TargetOption"))))


# -- TwinVoice -----------------------------------------------------------------------------------


def twinvoice_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    history = parse_list(require(info, row, "conversation_history", "history"), row, "conversation_history")
    choices = parse_list(require(info, row, "answer_choices", "choices"), row, "answer_choices")
    body = (
        "Posts this person wrote before:\n"
        + "\n".join(f"- {h}" for h in history)
        + f"\n\nThey are replying to: {require(info, row, 'anchor_post')}\n{_options(choices)}\n"
        "Which reply would this person write?"
    )
    return user_prompt(_PERSONA_SYSTEM, body)


def twinvoice_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    return Scored(letter_reward(answer, "ABCD"[int(require(info, row, "answer_idx"))]))


# -- Social-R1 -----------------------------------------------------------------------------------


def social_r1_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    text = info.get("prompt_text")
    if not text and info.get("conversations"):
        text = info["conversations"][0]["messages"][0]["content"]
    text = text or info.get("prompt")
    if not text:
        raise RowError(f"{row_name(row)}: extra_info needs 'prompt_text' (or conversations / prompt)")
    return user_prompt(_PERSONA_SYSTEM, str(text))


def social_r1_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    gold = info.get("answer_letter") or str(require(info, row, "answer_letter", "answer_text")).strip()[:1]
    return Scored(letter_reward(answer, str(gold), "ABCDEFGH"))


# -- BehaviorChain -------------------------------------------------------------------------------


def _chain(info: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    raw = _json_field(require(info, row, "raw"), row, "raw")
    if not isinstance(raw, dict):
        raise RowError(f"{row_name(row)}: extra_info.raw must be a JSON object")
    return raw


def behavior_chain_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    raw = _chain(info, row)
    history = raw.get("history_text") or "\n".join(
        c.get("chapter_content", "") for c in raw.get("history_truncated", [])
    )
    prior = raw.get("prior_chain_text") or "\n".join(
        f"Context: {p.get('context')}\nBehaviour: {p.get('behavior')}" for p in raw.get("prior_chain", [])
    )
    options = raw.get("options_dict") or dict(zip("ABCD", raw.get("options") or []))
    body = (
        f"You are {raw.get('persona_name', 'the character')}.\nProfile: {raw.get('profile_text', '')}\n"
        f"Story so far:\n{history}\n\nWhat you did before:\n{prior}\n\nNow: {raw.get('current_context', '')}\n"
        + "\n".join(f"{k}. {v}" for k, v in options.items())
        + "\nWhat do you do next?"
    )
    return user_prompt(_PERSONA_SYSTEM, body)


def behavior_chain_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    gold = _chain(info, row).get("right_option_letter")
    if not gold:
        raise RowError(f"{row_name(row)}: extra_info.raw needs 'right_option_letter'")
    return Scored(letter_reward(answer, str(gold)))


# -- AlignX --------------------------------------------------------------------------------------


def alignx_chosen_is_a(index: int) -> bool:
    """Deterministic A/B assignment per row (defeats position bias): ``Random(index).random() < 0.5``."""
    return random.Random(index).random() < 0.5


def alignx_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    chosen, rejected = require(info, row, "chosen"), require(info, row, "rejected")
    a, b = (chosen, rejected) if alignx_chosen_is_a(int(info.get("index", 0))) else (rejected, chosen)
    parts = [f"About this user: {info.get('demographic') or info.get('profile') or 'unknown'}"]
    for pair in list(info.get("icl_pairs") or [])[: int(info.get("n_icl", 2))]:
        parts.append(f"They once preferred, for '{pair['prompt']}': '{pair['chosen']}' over '{pair['rejected']}'.")
    for post in list(info.get("ugc") or [])[: int(info.get("n_ugc", 2))]:
        parts.append(f"They commented on '{post['prompt']}': '{post['comment']}'.")
    parts.append(f"Prompt: {require(info, row, 'raw_prompt')}\nA. {a}\nB. {b}\nWhich response does this user prefer?")
    return user_prompt(_PERSONA_SYSTEM, "\n".join(parts))


def alignx_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    gold = "A" if alignx_chosen_is_a(int(info.get("index", 0))) else "B"
    return Scored(letter_reward(answer, gold, "AB"))


# -- SocSci210 -----------------------------------------------------------------------------------

_INT = re.compile(r"^[-+]?\d+$")


def socsci210_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    text = str(require(info, row, "prompt_text")).replace("Only return", "Think step by step, and answer")
    return user_prompt(_PERSONA_SYSTEM, text)


def socsci210_reward(pred: str | None, gold: float, kind: str, r_min: float, r_max: float) -> float:
    """Ordinal: ``1 − |clamp(pred) − gold| / span`` (clamped to [0, 1]); binary/categorical or span ≤ 0: exact."""
    if pred is None:
        return 0.0
    text = pred.strip().lower()
    if kind == "binary" and text in ("yes", "no"):
        value = 1.0 if text == "yes" else 0.0
    elif _INT.match(text):
        value = float(int(text))
    else:
        return 0.0
    span = r_max - r_min
    if kind != "ordinal" or span <= 0:
        return float(value == gold)
    value = min(max(value, r_min), r_max)
    return min(1.0, max(0.0, 1.0 - abs(value - gold) / span))


def socsci210_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    kind = str(info.get("response_type", "ordinal"))
    r_max_default = 1.0 if kind == "binary" else 7.0
    gold = float(require(info, row, "response"))
    r_min = float(info.get("r_min", 0.0) if info.get("r_min") is not None else 0.0)
    r_max = float(info.get("r_max") if info.get("r_max") is not None else r_max_default)
    return Scored(socsci210_reward(answer, gold, kind, r_min, r_max))


# -- HumanLLM ------------------------------------------------------------------------------------

_RANKING = re.compile(r"^[A-T](,[A-T]){4}$")


def humanllm_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    candidates = parse_list(require(info, row, "candidates"), row, "candidates")
    if len(candidates) != 20:
        raise RowError(f"{row_name(row)}: extra_info.candidates must hold 20 items, got {len(candidates)}")
    body = (
        f"{require(info, row, 'prompt_text')}\n{_options(candidates, option_letters(20))}\n"
        "Rank the five items this person is most likely to choose, most likely first, as five distinct letters "
        "separated by commas without spaces, e.g. <answer>C,A,T,E,K</answer>."
    )
    return user_prompt(_PERSONA_SYSTEM, body)


def humanllm_reward(answer: str | None, gold: str) -> tuple[float, float, float]:
    """``(1/rank of gold in the top 5 or 0, hit@5, top-1)``; any format violation scores 0."""
    if answer is None or not _RANKING.match(answer.strip()):
        return 0.0, 0.0, 0.0
    letters = answer.strip().split(",")
    if len(set(letters)) != 5:
        return 0.0, 0.0, 0.0
    if gold not in letters:
        return 0.0, 0.0, 0.0
    rank = letters.index(gold) + 1
    return 1.0 / rank, 1.0, float(rank == 1)


def humanllm_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    gold = info.get("answer_letter") or option_letters(20)[int(require(info, row, "answer_index"))]
    reward, hit5, top1 = humanllm_reward(answer, str(gold).strip().upper())
    return Scored(reward, {"hit@5": hit5, "top1": top1})


def lifechoices(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, lifechoices_prompt, lifechoices_score)


def mistakes(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, mistakes_prompt, mistakes_score)


def twinvoice(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, twinvoice_prompt, twinvoice_score)


def social_r1(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, social_r1_prompt, social_r1_score)


def behavior_chain(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, behavior_chain_prompt, behavior_chain_score)


def alignx(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, alignx_prompt, alignx_score, prefix="alignx")


def socsci210(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, socsci210_prompt, socsci210_score)


def humanllm(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, humanllm_prompt, humanllm_score)

"""Single-turn persona tasks (LifeChoices, Mistakes, TwinVoice, Social-R1, BehaviorChain) and the factories of
every persona/prediction family (AlignX, SocSci210 and HumanLLM live in :mod:`.preference`).

Rows are read as the reference's preprocessing writes them; a missing or malformed gold is a row error, never a
silent 0 (docs/decisions.md S50). Extraction is strict: a bare option letter inside the first ``<answer>`` tag
of the cleaned reply (S7, S8).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from .answers import bare_letter, letter_reader
from .fields import (
    as_index,
    as_json_list,
    as_letter,
    as_list,
    as_mapping,
    as_text,
    conversation_prompt,
    first_of,
    required,
    row_error,
)
from .preference import (
    ALIGNX_READ,
    HUMANLLM_READ,
    alignx_prompt,
    alignx_score,
    humanllm_prompt,
    humanllm_score,
    socsci210_prompt,
    socsci210_score,
)
from .single_turn import Scored, SingleTurnTask, chat

ABCD = "ABCD"
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


def lettered(options: list[str], letters: str = ABCD, sep: str = ".") -> str:
    """``A. text`` lines, one per option."""
    return "\n".join(f"{letter}{sep} {text}" for letter, text in zip(letters, options))


def letter_score(answer: str | None, gold: str, letters: str = ABCD) -> Scored:
    """1 when the answer is exactly the gold letter (case-insensitive), else 0."""
    return Scored(float(bare_letter(answer, letters) == gold))


# -- LifeChoices --------------------------------------------------------------------------------

_MCQ = "Multiple Choice Question"


def lifechoices_mcq(info: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """The nested question: a mapping (or, as an alias, its JSON string, docs/decisions.md S52)."""
    mcq = as_mapping(required(info, row, _MCQ), row, _MCQ)
    for name in ("Scenario", "Question", "Options"):
        if mcq.get(name) is None:
            raise row_error(row, f"{_MCQ}.{name}", "is required")
    return mcq


def lifechoices_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    name = as_text(required(info, row, "character_name"))
    memory = as_text(required(info, row, "input_text"))
    mcq = lifechoices_mcq(info, row)
    given = [as_text(o) for o in as_list(mcq["Options"], row, f"{_MCQ}.Options")]
    options = [given[i] if i < len(given) else "" for i in range(4)]
    user = (
        f"Play the character described below and decide as they would, choosing one of the options A-D.\n\n"
        f"Profile:\nDescription: {name}\nMemory: {memory}\n\nScenario: {as_text(mcq['Scenario'])}\n"
        f"Question: {as_text(mcq['Question'])}\nOptions:\n{lettered(options)}\n\n"
        f"Think it through step by step as {name}, then give the letter inside <answer></answer>, e.g. "
        "<answer>A</answer>."
    )
    return chat("", user)


def lifechoices_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    """Gold: the first character of ``Correct Answer`` (``"B"`` or ``"B. text"``)."""
    mcq = lifechoices_mcq(info, row)
    gold = as_text(mcq.get("Correct Answer"))
    return letter_score(answer, as_letter(gold[:1], row, f"{_MCQ}.Correct Answer", ABCD))


# -- Mistakes ------------------------------------------------------------------------------------

_MISTAKES_SYSTEM = (
    "You are simulating a K-12 student who holds the misconception described by the user. Answer the way that "
    "student would, not with the correct answer. Think briefly from the student's point of view, then give the "
    "letter of your choice inside <answer></answer>, e.g. <answer>B</answer>. If no option matches the student's "
    "thinking exactly, pick the closest one."
)


def mistakes_options(info: Mapping[str, Any]) -> dict[str, str]:
    """``{letter: text}`` from ``AnswerAText`` … ``AnswerDText`` (no aliases); empty options are left out."""
    return {x: as_text(info.get(f"Answer{x}Text")) for x in ABCD if as_text(info.get(f"Answer{x}Text"))}


def mistakes_target(info: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``TargetOption`` | ``target_option``: one letter A-D that names a non-empty option."""
    target = as_letter(required(info, row, "TargetOption", "target_option"), row, "TargetOption", ABCD)
    if target not in mistakes_options(info):
        raise row_error(row, "TargetOption", f"names option {target}, whose Answer{target}Text is empty")
    return target


def mistakes_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    question = as_text(required(info, row, "QuestionText", "question"))
    misconception = as_text(first_of(info, "MisconceptionName", "misconception_text", default=""))
    choices = "\n".join(f"{x}) {text}" for x, text in mistakes_options(info).items())
    user = (
        f"Math Problem:\nQuestion: {question}\n\nAnswer Choices:\n{choices}\n\nStudent Misconception: {misconception}"
    )
    return chat(_MISTAKES_SYSTEM, user)


def mistakes_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    return letter_score(answer, mistakes_target(info, row))


# -- TwinVoice -----------------------------------------------------------------------------------


def twinvoice_choices(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[str]:
    choices = as_json_list(required(info, row, "answer_choices", "choices"), row, "answer_choices")
    if not 2 <= len(choices) <= 4:
        raise row_error(row, "answer_choices", f"must hold 2-4 replies (A-D), got {len(choices)}")
    return [as_text(c) for c in choices]


def twinvoice_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    history = as_json_list(first_of(info, "conversation_history", "history", default=[]), row, "conversation_history")
    choices = twinvoice_choices(info, row)
    user = (
        "Here is what this person wrote before:\n"
        + ("\n".join(f"- {item}" for item in history) or "(nothing)")
        + f"\n\nThey are now replying to this post:\n{as_text(info.get('anchor_post'))}\n\n"
        f"Candidate replies:\n{lettered(choices)}\n\nWhich reply would this person write? Explain briefly inside "
        "<reasoning></reasoning>, then give the letter inside <answer></answer>, e.g. <answer>A</answer>."
    )
    return chat("", user)


def twinvoice_gold(info: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``"ABCD"[answer_idx]``; ``-1`` or an index past the choices is a row error (never wrapped)."""
    n = len(twinvoice_choices(info, row))
    return ABCD[as_index(required(info, row, "answer_idx"), row, "answer_idx", n)]


def twinvoice_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    return letter_score(answer, twinvoice_gold(info, row))


# -- Social-R1 -----------------------------------------------------------------------------------

_SOCIAL_SYSTEM = (
    "You answer multiple-choice questions about social situations and what people think and feel. Think briefly, "
    "then give the letter of your choice inside <answer></answer>, e.g. <answer>A</answer>."
)
_LEADING_LETTER = re.compile(r"^\s*([A-Za-z])\s*[.)]")


def social_r1_gold(info: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``answer_letter``, else the leading ``X.``/``X)`` of ``answer_text``, else its first character."""
    letter = first_of(info, "answer_letter")
    if letter is not None:
        return as_letter(letter, row, "answer_letter", LETTERS)
    text = as_text(required(info, row, "answer_letter", "answer_text"))
    lead = _LEADING_LETTER.match(text)
    return as_letter(lead.group(1) if lead else text[:1], row, "answer_text", LETTERS)


def social_r1_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    return chat(_SOCIAL_SYSTEM, conversation_prompt(info, row, "prompt"))


def social_r1_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    return letter_score(answer, social_r1_gold(info, row), LETTERS)


# -- BehaviorChain -------------------------------------------------------------------------------


def behavior_chain_raw(info: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, Any]:
    """Everything lives in the JSON string ``extra_info.raw`` (a mapping is accepted too, S52)."""
    return as_mapping(required(info, row, "raw"), row, "raw")


def chain_history(raw: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``history_truncated`` (chapters or strings, blank-line separated), else ``history_text``, else ``(none)``."""
    chapters = first_of(raw, "history_truncated")
    if chapters is not None:
        parts = []
        for item in as_list(chapters, row, "raw.history_truncated"):
            if isinstance(item, Mapping):
                parts.append(f"{as_text(item.get('chapter_num'))}\n{as_text(item.get('chapter_content'))}".strip())
            else:
                parts.append(as_text(item))
        return "\n\n".join(p for p in parts if p) or "(none)"
    return as_text(first_of(raw, "history_text", default="(none)"))


def chain_prior(raw: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    """``prior_chain`` as ``Step i:`` blocks (from 0, as in the reference), else its text, else ``(none)``."""
    steps = first_of(raw, "prior_chain")
    if steps is not None:
        blocks = []
        for i, step in enumerate(as_list(steps, row, "raw.prior_chain")):
            step = step if isinstance(step, Mapping) else {"behavior": step}
            blocks.append(
                f"Step {i}:\nContext: {as_text(step.get('context'))}\nBehavior: {as_text(step.get('behavior'))}"
            )
        return "\n\n".join(blocks) or "(none)"
    return as_text(first_of(raw, "prior_chain_text", default="(none)"))


def chain_options(raw: Mapping[str, Any], row: Mapping[str, Any]) -> dict[str, str]:
    """``options_dict`` {A-D} (missing letters empty), else ``options`` zipped with ABCD."""
    given = first_of(raw, "options_dict")
    if given is not None:
        given = as_mapping(given, row, "raw.options_dict")
        return {x: as_text(given.get(x)) for x in ABCD}
    listed = first_of(raw, "options")
    if listed is None:
        raise row_error(row, "raw.options_dict or extra_info.raw.options", "is required")
    return dict(zip(ABCD, (as_text(o) for o in as_list(listed, row, "raw.options"))))


def behavior_chain_gold(raw: Mapping[str, Any], row: Mapping[str, Any]) -> str:
    return as_letter(raw.get("right_option_letter"), row, "raw.right_option_letter", ABCD)


def behavior_chain_prompt(info: Mapping[str, Any], row: Mapping[str, Any]) -> list[dict[str, str]]:
    raw = behavior_chain_raw(info, row)
    persona = as_text(first_of(raw, "persona_name", default="the persona"))
    options = "\n".join(f"{x}. {text}" for x, text in chain_options(raw, row).items())
    user = (
        f"Profile:\n{as_text(first_of(raw, 'profile_text', 'profile', default='(none)'))}\n\n"
        f"Historical narrative:\n{chain_history(raw, row)}\n\nPrior behaviour chain:\n{chain_prior(raw, row)}\n\n"
        f"Current context:\n{as_text(raw.get('current_context'))}\n\nWhich behaviour will {persona} show next?\n"
        f"{options}\n\nThink step by step, then give the letter inside <answer></answer>, e.g. <answer>A</answer>."
    )
    return chat("", user)


def behavior_chain_score(answer: str | None, info: Mapping[str, Any], row: Mapping[str, Any]) -> Scored:
    return letter_score(answer, behavior_chain_gold(behavior_chain_raw(info, row), row))


# -- factories -----------------------------------------------------------------------------------


def lifechoices(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, lifechoices_prompt, lifechoices_score)


def mistakes(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, mistakes_prompt, mistakes_score, read=letter_reader(ABCD))


def twinvoice(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, twinvoice_prompt, twinvoice_score, read=letter_reader(ABCD))


def social_r1(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, social_r1_prompt, social_r1_score, read=letter_reader(LETTERS))


def behavior_chain(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, behavior_chain_prompt, behavior_chain_score, read=letter_reader(ABCD))


def alignx(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, alignx_prompt, alignx_score, prefix="alignx", read=ALIGNX_READ)


def socsci210(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, socsci210_prompt, socsci210_score)


def humanllm(data_source: str) -> SingleTurnTask:
    return SingleTurnTask(data_source, humanllm_prompt, humanllm_score, read=HUMANLLM_READ)

"""Deterministic offline stand-ins for the suites' roles (simulators, assistants, judges).

They follow the suites' protocols exactly (prompts in, text out, JSON where JSON is asked for) with simple
rules, so the tiny configs exercise the whole pipeline with no model. A few markers in the sample data
make them fail on purpose, so that the failure paths are exercised too:
``[judge-down]`` (the judge raises an infrastructure failure) and ``[judge-garbled]`` (the judge answers
without the asked-for JSON). Seeds change sampled choices only when the temperature is above 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence

from mimesis_pl.eval.failures import JudgeFailure
from mimesis_pl.eval.simulator.models import stable_hash

Messages = Sequence[Mapping[str, str]]
_ASSISTANTY = re.compile(r"certainly!|i'?d be happy|here is a detailed|as an ai", re.IGNORECASE)


def _draw(seed: int | None, temperature: float, *parts: object) -> int:
    return stable_hash(*parts, seed if temperature > 0 else 0)


def _between(text: str, start: str, end: str | None) -> str:
    i = text.find(start)
    if i == -1:
        return ""
    i += len(start)
    j = text.find(end, i) if end else -1
    return text[i:j if j != -1 else None].strip()


def _fail_on_markers(text: str) -> str | None:
    if "[judge-down]" in text:
        raise JudgeFailure("scripted judge: endpoint unavailable ([judge-down] marker)")
    if "[judge-garbled]" in text:
        return "Honestly I would say the second one, but it is hard to tell."
    return None


# ---------------------------------------------------------------------------------------------- Turing

TURING_REPLIES = (
    "ok thanks, that helps",
    "hmm not sure thats right tbh",
    "<think>they would push back and ask for something simpler</think>can u explain that more simply?",
    "Certainly! Here is a detailed answer: I'd be happy to help with that.",
    "<reasoning>short and casual</reasoning>[HUMAN]: lol fair enough",
)


def scripted_turing_user(messages: Messages, seed: int | None, temperature: float) -> str:
    return TURING_REPLIES[_draw(seed, temperature, "turing", messages[-1]["content"]) % len(TURING_REPLIES)]


def _humanness(text: str) -> int:
    score = int(text[:1].islower()) + int(len(text.split()) <= 12)
    return score - 2 * int(bool(_ASSISTANTY.search(text)))


def scripted_turing_judge(messages: Messages, seed: int | None, temperature: float) -> str:
    """Rates B against A by casualness (lowercase start, short) minus assistant phrasing, around 4."""
    prompt = messages[-1]["content"]
    garbled = _fail_on_markers(prompt)
    if garbled is not None:
        return garbled
    a = _between(prompt, "Response A:\n", "\n\nResponse B:\n")
    b = _between(prompt, "Response B:\n", "\n\nWhich response")
    return json.dumps({"rating": max(1, min(7, 4 + _humanness(b) - _humanness(a)))})

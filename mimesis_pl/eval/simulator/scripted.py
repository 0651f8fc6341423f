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

from mimesis_pl.eval.simulator.models import stable_hash
from mimesis_pl.eval.simulator.text import FIDELITY_KEYS
from mimesis_pl.failures import JudgeFailure

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
    return text[i : j if j != -1 else None].strip()


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


# ---------------------------------------------------------------------------------------------- RealUserSim


def _label(text: str, label: str) -> str:
    for line in text.splitlines():
        if line.startswith(label):
            return line[len(label) :].strip()
    return ""


def _styled(text: str, profile: str) -> str:
    p = profile.lower()
    if not p:  # task only: the clean, polite register models fall back to
        return f"Hello, {text[:1].lower()}{text[1:].rstrip('.?!')}. Thank you!".replace(" /close.", ". /close")
    if "lowercase" in p:
        text = text.lower()
    if "no punctuation" in p:
        text = re.sub(r"[.,!?;:]", "", text)
    if "typo" in p:
        text = re.sub(r"\bthe\b", "teh", text).replace("you", "u").replace("thanks", "thx")
    if "short" in p:
        words = text.split()
        text = " ".join(words[:8] + (["/close"] if "/close" in words[8:] else []))
    if "polite" in p:
        text = f"Hi, {text} Thanks."
    return text


def scripted_realusersim_user(messages: Messages, seed: int | None, temperature: float) -> str:
    """Opens with the request, asks one follow-up, then closes; styled after the profile in its prompt."""
    system = messages[0]["content"]
    own = sum(1 for m in messages if m["role"] == "assistant")
    lines = (
        _label(system, "Request description:"),
        "what if that does not work, is there another option?",
        "ok that works, thanks /close",
    )
    return _styled(lines[min(own, 2)], _label(system, "Linguistic profile:"))


def scripted_realusersim_assistant(messages: Messages, seed: int | None, temperature: float) -> str:
    ask = messages[-1]["content"].replace("/close", "").strip()
    return (
        f'Thanks for the details. For "{ask[:60]}" first check the settings, '
        "then contact support with your order number."
    )


def _traits(turns: Sequence[str]) -> dict[str, float]:
    words = [t.split() for t in turns] or [[]]
    return {
        "lower": sum(t[:1].islower() for t in turns) / max(len(turns), 1),
        "punct": sum(bool(re.search(r"[.!?]", t)) for t in turns) / max(len(turns), 1),
        "polite": float(any(re.search(r"\b(please|thanks|thank you|hello|hi)\b", t, re.IGNORECASE) for t in turns)),
        "words": sum(len(w) for w in words) / max(len(turns), 1),
        "n": float(len(turns)),
    }


def scripted_fidelity_judge(messages: Messages, seed: int | None, temperature: float) -> str:
    """Call 1 compares simple traits of the real and simulated turns in prose; call 2 formats it as JSON."""
    prompt = messages[-1]["content"]
    garbled = _fail_on_markers(prompt)
    if garbled is not None:
        return garbled
    if "CONVERSATION 1 (USER1's messages):" not in prompt:  # the formatting call: "Key: yes|no" lines -> JSON
        found = dict(re.findall(r"^(\w+_Match): (yes|no)\b", prompt, re.MULTILINE))
        return json.dumps({key: {"is_matched": found.get(key) == "yes"} for key in FIDELITY_KEYS if key in found})
    real = [m["content"] for m in json.loads(_between(prompt, "CONVERSATION 1 (USER1's messages):\n", "\n\nCONV"))]
    sim = [m["content"] for m in json.loads(_between(prompt, "CONVERSATION 2 (USER2's messages):\n", None))]
    r, s = _traits(real), _traits(sim)
    vocabulary = [{w.lower() for t in turns for w in re.findall(r"[a-zA-Z]{4,}", t)} for turns in (real, sim)]
    overlap = len(vocabulary[0] & vocabulary[1]) / max(len(vocabulary[0] | vocabulary[1]), 1)
    checks = (
        r["polite"] == s["polite"],
        abs(r["lower"] - s["lower"]) <= 0.5 and abs(r["punct"] - s["punct"]) <= 0.5,
        overlap >= 0.1,
        0.5 <= (s["words"] + 1) / (r["words"] + 1) <= 2.0,
        abs(r["n"] - s["n"]) <= 1,
    )
    return "\n".join(f"{key}: {'yes' if ok else 'no'} (trait comparison)" for key, ok in zip(FIDELITY_KEYS, checks))

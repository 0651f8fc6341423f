"""tau-USI behavioural features D1–D4 of a conversation's user turns.

Pure functions over the transcript. Meta messages (``###STOP###``) are removed first and turns left empty
dropped. Rates are fractions of user turns in [0, 1]. The phrase lists are ours (the published extractor's
lists are not available); the feature set, the dimensions and the first-match rule for the three question
classes follow the spec.
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence

STOP = "###STOP###"

DIMENSIONS: Mapping[str, tuple[str, ...]] = {
    "D1": (
        "politeness_rate",
        "short_message_rate",
        "formality_rate",
        "ack_only_rate",
        "verbosity_cv",
        "repeat_rate",
        "identity_confusion_rate",
    ),
    "D2": ("info_front_load", "id_density", "user_words_per_turn", "opening_turn_words"),
    "D3": ("uncertainty_rate", "certainty_rate", "pushback_rate", "clarify_question_rate", "info_question_rate"),
    "D4": ("emotion_rate", "accusation_rate", "pivot_rate"),
}
FEATURES = tuple(f for names in DIMENSIONS.values() for f in names)


def _pattern(*phrases: str) -> re.Pattern[str]:
    return re.compile(r"\b(" + "|".join(phrases) + r")\b", re.IGNORECASE)


_POLITE = _pattern("please", "pls", "thank you", "thanks", "thx", "sorry", "appreciate it", "appreciate")
_ACK = re.compile(
    r"^(ok(ay)?|yes|yep|yeah|no|nope|sure|thanks|thank you|thx|great|got it|alright|perfect|cool)"
    r"[.!]*$",
    re.IGNORECASE,
)
_ASSISTANT = _pattern(
    "how can i help",
    "how may i assist",
    "i can help you with",
    "is there anything else i can",
    "as an ai",
    "let me check that for you",
)
_ID = re.compile(r"#?\b(?=[A-Za-z0-9_]*\d)[A-Za-z0-9_]{4,}\b")
_UNCERTAIN = _pattern("not sure", "maybe", "i think", "probably", "don't know", "dont know", "unsure", "i guess")
_CERTAIN = _pattern("definitely", "exactly", "certainly", "absolutely", "for sure", "i'm sure", "im sure")
_PUSHBACK = re.compile(r"(\bbut\b|^no\b|that's not|that is not|\bwrong\b|i said|i already)", re.IGNORECASE)
_CLARIFY = _pattern("what do you mean", "can you clarify", "which one", "what does that mean", "meaning")
_EMOTION = re.compile(r"(!|\b(frustrat\w*|annoy\w*|ugh|upset|happy|love|hate|great|awesome|terrible)\b)", re.IGNORECASE)
_ACCUSE = _pattern("you didn't", "you did not", "your fault", "you said", "you never", "you always", "you forgot")
_PIVOT = _pattern("also", "another thing", "by the way", "one more thing", "actually", "oh and")


def user_turns(conversation: Sequence[Mapping[str, str]]) -> list[str]:
    turns = [m["content"].replace(STOP, "").strip() for m in conversation if m.get("role") == "user"]
    return [t for t in turns if t]


def _rate(turns: Sequence[str], test) -> float:
    return sum(bool(test(t)) for t in turns) / len(turns)


def conversation_features(conversation: Sequence[Mapping[str, str]]) -> dict[str, float]:
    """Every feature of :data:`FEATURES` for one conversation; all 0 when it has no user turn."""
    turns = user_turns(conversation)
    if not turns:
        return {f: 0.0 for f in FEATURES}
    words = [t.split() for t in turns]
    counts = [len(w) for w in words]
    total = sum(counts)
    mean = total / len(counts)
    trigrams = Counter(" ".join(w[i : i + 3]).lower() for w in words for i in range(len(w) - 2))
    repeated = {g for g, n in trigrams.items() if n > 10}

    def question_class(turn: str) -> str | None:
        if _PUSHBACK.search(turn):
            return "pushback"
        if _CLARIFY.search(turn):
            return "clarify"
        if turn.rstrip().endswith("?"):
            return "info"
        return None

    classes = [question_class(t) for t in turns]
    return {
        "politeness_rate": _rate(turns, _POLITE.search),
        "short_message_rate": sum(c <= 3 for c in counts) / len(turns),
        "formality_rate": _rate(turns, lambda t: "—" in t or "–" in t),
        "ack_only_rate": _rate(turns, lambda t: _ACK.match(t.strip())),
        "verbosity_cv": statistics.pstdev(counts) / mean if mean else 0.0,
        "repeat_rate": _rate(turns, lambda t: any(g in t.lower() for g in repeated)) if repeated else 0.0,
        "identity_confusion_rate": _rate(turns, _ASSISTANT.search),
        "info_front_load": sum(counts[:2]) / total if total else 0.0,
        "id_density": sum(len(_ID.findall(t)) for t in turns) / len(turns),
        "user_words_per_turn": mean,
        "opening_turn_words": float(counts[0]),
        "uncertainty_rate": _rate(turns, _UNCERTAIN.search),
        "certainty_rate": _rate(turns, _CERTAIN.search),
        "pushback_rate": classes.count("pushback") / len(turns),
        "clarify_question_rate": classes.count("clarify") / len(turns),
        "info_question_rate": classes.count("info") / len(turns),
        "emotion_rate": _rate(turns, _EMOTION.search),
        "accusation_rate": _rate(turns, _ACCUSE.search),
        "pivot_rate": _rate(turns, _PIVOT.search),
    }


def summary_row(rows: Sequence[Mapping[str, float]]) -> dict[str, float]:
    """The mean of each feature over conversations (tasks)."""
    return {f: sum(r[f] for r in rows) / len(rows) for f in FEATURES} if rows else {}

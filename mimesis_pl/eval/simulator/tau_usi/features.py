"""tau-USI behavioural features D1–D4 of a conversation's user turns (docs/decisions.md S70).

Pure functions over the transcript, as the published extractor defines them (docs/decisions.md S70):

- meta messages are dropped first, from any role — for a human transcript the tau-bench UI markers
  (``\\tau …``, ``\\reward…``, canvas/highlight/survey markers, ``/stop``), for a simulated one ``###STOP###``;
- the user turns are the turns with role ``user``; a conversation with none has no features (``None``) and
  is skipped in the summary means;
- agent markup (``<|think|>…``, ``<function=…``, ``<|tool|>…``) is stripped from each user turn; words are
  its whitespace split; phrase patterns run on the lower-cased text (formality keeps case);
- ``repeat_rate`` and ``id_confuse_rate`` are per-conversation 0/1 flags, the other rates fractions of user
  turns; a turn goes in the first matching question class (pushback, clarify, info).
"""

from __future__ import annotations

import re
import statistics
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Literal

STOP = "###STOP###"
Source = Literal["human", "llm"]

DIMENSIONS: Mapping[str, tuple[str, ...]] = {
    "D1": (
        "politeness_rate",
        "short_msg_rate",
        "formality_rate",
        "ack_only_rate",
        "verbosity_cv",
        "repeat_rate",
        "id_confuse_rate",
    ),
    "D2": ("info_frontload", "id_density", "user_words_per_turn", "opening_words"),
    "D3": ("uncertainty_rate", "certainty_rate", "pushback_q_rate", "clarify_q_rate", "info_q_rate"),
    "D4": ("emotion_rate", "accusation_rate", "pivot_rate"),
}
FEATURES = tuple(f for names in DIMENSIONS.values() for f in names)
#: Features reported raw in the summary row; every other one is a rate, reported × 100 as ``*_pct``.
RAW_FEATURES = ("verbosity_cv", "id_density", "user_words_per_turn", "opening_words")


def row_column(feature: str) -> str:
    """The summary-row column of a feature (the reference's names: ``politeness_pct``, ``user_wds_per_turn``)."""
    if feature == "user_words_per_turn":
        return "user_wds_per_turn"
    return feature if feature in RAW_FEATURES else feature.removesuffix("_rate") + "_pct"


def _alt(*phrases: str) -> re.Pattern[str]:
    """One alternation of regex fragments with a word boundary at both ends."""
    return re.compile(r"\b(?:" + "|".join(phrases) + r")\b")


_MARKUP = re.compile(r"<\|think\|>.*?<\|/think\|>|<function=.*?(?:</function>|$)|<\|tool\|>.*?<\|/tool\|>", re.DOTALL)
_DASH = re.compile("[\u2014\u2013]")
_ACK_WORDS = (
    "yes|yeah|yea|yep|yup|ok|okay|okey|sure|right|fine|great|perfect|awesome|cool|agree|agreed|correct|"
    "absolutely|indeed|alright|got it|go ahead|sounds good|that works|proceed|confirm|do it|no problem|"
    "thank you|thanks|please|mhm|uh-huh|aight"
)
_ACK_ONLY = re.compile(rf"^(?:{_ACK_WORDS})[\s!.\-,]*$")
_POLITE = _alt(
    "please|thank you|thanks|sorry|excuse me|appreciate|grateful|kind of you|wonderful|courteous|considerate",
    "i understand|no worries|my apologies|pardon",
)
_ASSISTANT_VOICE = _alt(
    r"how (?:can|may) i (?:help|assist)",
    r"what can i (?:do|help|assist) (?:for|with)",
    r"do you (?:want|require|wish|prefer)",
    r"would you (?:like|prefer)",
    r"let me (?:check|look|verify|find|pull up|search|assist|help)",
    r"i(?:'?ll| will) (?:check|look into|verify|process|handle|assist|help)",
    r"i(?:'?m| am) (?:happy|glad|here) to (?:help|assist)",
    r"is there anything else i can",
    r"thank you for (?:calling|contacting|reaching|choosing|your patience)",
    r"for (?:security|verification) (?:purposes|reasons)",
    r"(?:may|could) i verify",
    r"allow me to|permit me to",
    r"your (?:order|account|reservation|booking|request|ticket|case|inquiry)",
    r"i (?:see|understand) (?:that|your)",
    r"according to (?:our|the) (?:records|system|policy)",
    r"(?:our|the) (?:policy|system|records) (?:shows?|indicates?)",
    r"i (?:can|could) (?:offer|suggest|recommend)",
    r"(?:have you|did you) (?:tried?|considered?)",
    r"i apologize for (?:the|any) (?:inconvenience|confusion|delay|trouble)",
)
# Ordinary words of 6+ alphanumerics count too (the published definition, S70).
_ID_LIKE = re.compile(
    r"\b[a-z0-9]{6,}\b|#?\w*\d{5,}\w*|\w+_\w+_\d{3,}|(?:gift_card|credit_card|paypal)_\w+|\w+@\w+\.\w+"
)
_UNCERTAIN = _alt(
    r"i think|not sure|i don'?t remember|i don'?t recall|i believe|probably|maybe|i forgot|don'?t know|i guess",
    r"i'?m not sure|if i recall|i don'?t have|can'?t recall|can'?t find|i'?m unsure|i might|perhaps|apparently",
    r"sort of|kind of|somewhat|partly|possibly|vaguely|roughly|hesitant|doubtful|confused|uncertain|dunno",
)
_CERTAIN = _alt(
    r"definitely|absolutely|certainly|exactly|precisely|clearly|always|never|completely|entirely|fully",
    r"obvious|obviously|undoubtedly|without a doubt|for sure|of course|guaranteed|no doubt",
)
_PUSHBACK = _alt(
    r"are you sure",
    r"that'?s (?:not right|wrong|incorrect|not what)",
    r"i already (?:told|said|gave|provided|mentioned)",
    r"you already (?:asked|have)",
    r"try again|check again",
    r"that can'?t be (?:right|correct)",
    r"that'?s (?:crazy|nonsense|ridiculous|absurd)",
    r"this is (?:not fair|nonsense)",
    r"why (?:can'?t|won'?t|didn'?t|isn'?t|aren'?t|would)",
    r"doesn'?t (?:seem|sound|look|make sense)",
    r"not what i (?:asked|said|meant|wanted)",
    r"do(?:n'?t| not) ask me .* again",
    r"i would never",
)
_CLARIFY = _alt(
    r"what do you mean|what does that mean|what did you mean",
    r"could you (?:clarify|elaborate|specify)|can you (?:explain|clarify|elaborate)",
    r"i don'?t understand|what'?s the difference|what exactly|what specifically",
    r"which (?:one|reservation|order|flight|option|plan|account|item|product) (?:is|was|do|should|did|would)",
    r"i'?m not sure which|which is which",
    r"you (?:said|mentioned|told me|wrote|indicated) .{0,30}\?",
    r"that mean|what does that (?:involve|include|entail|look like)",
    r"(?:sorry|wait),? (?:what|which|how|i don'?t)",
    r"can you (?:be more specific|give me more detail|break that down|walk me through)",
    r"i'?m (?:confused|lost)",
    r"(?:how|what) (?:exactly|specifically) (?:does|do|is|are|would|will|should)",
    r"(?:could|can) you (?:repeat|say) that",
    r"what (?:is|are) the (?:options|choices|alternatives|details)",
    r"i need (?:more|some) (?:info|information|details|clarification)",
    r"(?:so|wait),? (?:you'?re saying|does that mean|is that)",
    r"meaning\??|how so\??|in what (?:way|sense)\??",
)
_INFO = _alt(
    r"what is (?:the|my)|what'?s (?:the|my)|how much|how many",
    r"when (?:will|does|is|can|did)|where (?:is|are|was|can)",
    r"how (?:do|can|would|should) i|what are (?:the|my)",
    r"can you (?:check|tell|find|look|see|show|help|list)",
    r"do you (?:have|know|see)",
    r"is (?:there|it|that) (?:a |any )?",
    r"what options|how long",
    r"what.s the (?:status|price|cost|total|balance)",
)
_EMOTION = _alt(
    r"frustrated|upset|angry|confused|worried|annoyed|furious|ridiculous|terrible|horrible|awful|ugh|stressed",
    r"anxious|nervous|uncomfortable|panic|disappointed|disappointing|irritated|irritating|aggravated|outraged",
    r"outrageous|exasperated|bothered|disgusted|miserable|devastated|heartbroken|desperate",
)
_ACCUSE = _alt(
    r"blame|fault|ridiculous|wrong|useless|incompetent|failure|misleading|irresponsible|unacceptable|disgrace",
    r"insult|scam|shame|stupid|trouble|disappointing|ruined",
)
_PIVOT = _alt(
    r"(?:wait|actually) (?:can|let|could|would)",
    r"i(?:'?d| would) (?:like|prefer|rather)",
    r"(?:can you|can we|could you) just",
    r"instead|rather than|how about|what about|what if|on second thought",
    r"is there (?:a |any |another )?way to",
    r"(?:let'?s|can we|lets) (?:try|do|go with|switch|change)",
    r"maybe (?:we|i|you) (?:should|could|can)",
    r"(?:change|switch|try) (?:it |that )?(?:to|something|a different)",
)


def is_meta(message: Mapping[str, object], source: Source) -> bool:
    """A UI or protocol message that is no part of the dialogue (dropped before every feature)."""
    content = str(message.get("content", ""))
    if source == "human":
        return (
            content.startswith(("\\tau ", "\\reward"))
            or any(marker in content for marker in ("<|canvas|>", "<|highlight|>", "<|survey|>"))
            or content.strip() == "/stop"
        )
    return content.strip() == STOP


def strip_markup(text: str) -> str:
    """The user's words without agent markup (reasoning, function calls, tool blocks)."""
    return _MARKUP.sub("", text)


def user_turns(conversation: Sequence[Mapping[str, object]], source: Source = "llm") -> list[str]:
    """The markup-stripped user turns after meta messages are dropped (a turn left empty still counts)."""
    return [
        strip_markup(str(m.get("content", "")))
        for m in conversation
        if not is_meta(m, source) and m.get("role") == "user"
    ]


def _share(flags: Sequence[bool]) -> float:
    return sum(flags) / len(flags)


def _repeat_flag(lowered: Sequence[str]) -> float:
    trigrams = Counter(tuple(w[i : i + 3]) for w in (t.split() for t in lowered) for i in range(len(w) - 2))
    return float(any(n > 10 for n in trigrams.values()))


def question_class(lowered: str) -> Literal["pushback", "clarify", "info"] | None:
    """The first matching class of a (lower-cased) user turn, in the order pushback, clarify, info."""
    if _PUSHBACK.search(lowered):
        return "pushback"
    if _CLARIFY.search(lowered):
        return "clarify"
    if _INFO.search(lowered):
        return "info"
    return None


def conversation_features(
    conversation: Sequence[Mapping[str, object]], source: Source = "llm"
) -> dict[str, float] | None:
    """Every feature of :data:`FEATURES` for one conversation, or ``None`` when it has no user turn."""
    turns = user_turns(conversation, source)
    if not turns:
        return None
    lowered = [t.lower() for t in turns]
    counts = [len(t.split()) for t in turns]
    total, mean = sum(counts), sum(counts) / len(counts)
    classes = [question_class(t) for t in lowered]
    return {
        "politeness_rate": _share([bool(_POLITE.search(t)) for t in lowered]),
        "short_msg_rate": _share([c <= 3 for c in counts]),
        "formality_rate": _share([bool(_DASH.search(t)) for t in turns]),
        "ack_only_rate": _share([bool(_ACK_ONLY.match(t.strip())) for t in lowered]),
        "verbosity_cv": statistics.pstdev(counts) / mean if mean > 0 and len(counts) > 1 else 0.0,
        "repeat_rate": _repeat_flag(lowered),
        "id_confuse_rate": float(any(_ASSISTANT_VOICE.search(t) for t in lowered)),
        "info_frontload": sum(counts[:2]) / total if total else 0.0,
        "id_density": sum(len(_ID_LIKE.findall(t)) for t in lowered) / len(turns),
        "user_words_per_turn": mean,
        "opening_words": float(counts[0]),
        "uncertainty_rate": _share([bool(_UNCERTAIN.search(t)) for t in lowered]),
        "certainty_rate": _share([bool(_CERTAIN.search(t)) for t in lowered]),
        "pushback_q_rate": classes.count("pushback") / len(turns),
        "clarify_q_rate": classes.count("clarify") / len(turns),
        "info_q_rate": classes.count("info") / len(turns),
        "emotion_rate": _share([bool(_EMOTION.search(t)) for t in lowered]),
        "accusation_rate": _share([bool(_ACCUSE.search(t)) for t in lowered]),
        "pivot_rate": _share([bool(_PIVOT.search(t)) for t in lowered]),
    }


def summary_row(rows: Sequence[Mapping[str, float] | None]) -> dict[str, float]:
    """The macro mean of each feature over the conversations that have features (``None`` ones skipped),
    keyed by :data:`FEATURES`; NaN for every feature when none has."""
    kept = [r for r in rows if r is not None]
    return {f: (sum(r[f] for r in kept) / len(kept) if kept else float("nan")) for f in FEATURES}


def report_row(row: Mapping[str, float]) -> dict[str, float]:
    """A summary row as the reference prints it: rates × 100 (``*_pct``), the raw features as they are."""
    return {row_column(f): (row[f] if f in RAW_FEATURES else 100.0 * row[f]) for f in FEATURES}

"""TravelGym's judged parts as rules (the offline default grader), and the answer rule UserRL applies.

UserRL asks an LLM judge two things; :class:`RuleGrader` answers them by keywords:

- **utterance type** (:func:`utterance_type`): ``1`` small talk, ``2`` a concrete ask about a still-hidden
  preference (the utterance names its subcategory, e.g. "seat class"), ``3`` a concrete ask about
  something the user has no (remaining) preference on, ``4`` too vague ("any preferences?");
- **search alignment** (:func:`search_alignment`): ``"True"`` when the request names exactly one aspect of
  the trip and every ground-truth argument value, ``"False"`` when it names several or misses a value,
  ``"N/A"`` when it names none of the trip's aspects.

The served judge (:mod:`.judge`, selected by ``judge: {class_path: ServedChatSettings, ...}``) implements the same
:class:`TravelGrader` protocol (docs/decisions.md A43).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from mimesis_pl.envs.gyms.travel.scenarios import INITIAL_ASPECTS, TravelPreference, TravelScenario
from mimesis_pl.envs.text import content_words, words

UtteranceType = Literal[1, 2, 3, 4]
SearchVerdict = Literal["True", "False", "N/A"]

_ASPECT_WORDS: dict[str, tuple[tuple[str, ...], ...]] = {
    "flight": (("flight",), ("flights",), ("fly",), ("airline",), ("plane",)),
    "hotel": (("hotel",), ("hotels",)),
    "apartment": (("apartment",), ("apartments",), ("airbnb",)),
    "restaurant": (("restaurant",), ("restaurants",), ("dinner",), ("dining",)),
    "rental_car": (("rental", "car"), ("car", "rental"), ("rental_car",), ("car",), ("cars",)),
}
_ASPECT_STEMS = {s for forms in _ASPECT_WORDS.values() for form in forms for s in content_words(" ".join(form))}
# Words that ask about preferences in general; an ask made only of these is "too vague" (type 4).
_GENERIC = content_words(
    "prefer preference preferences like want wants need needs requirement requirements important matter matters "
    "anything else wish looking expect expectation particular specific special option options choice"
)
_OPTION_ID = re.compile(r"^[ACFHR]\d+$")
_QUESTION_STARTS = frozenset("what which how do does are is would could can any tell".split())


def subcategory_keywords(preference: TravelPreference) -> set[str]:
    """What names a preference in a question: its subcategory's content words, minus aspect words."""
    return content_words(preference.subcategory) - _ASPECT_STEMS - _GENERIC


def utterance_type(
    utterance: str, remaining: Sequence[TravelPreference], known: Iterable[TravelPreference] = ()
) -> tuple[UtteranceType, TravelPreference | None]:
    """Classify an agent utterance against the still-hidden preferences (``known``: every preference)."""
    said = content_words(utterance)
    scored = [(len(said & subcategory_keywords(p)), -i, p) for i, p in enumerate(remaining)]
    hits = [s for s in scored if s[0] > 0]
    if hits:
        return 2, max(hits, key=lambda s: s[:2])[2]
    asked_about = said - _GENERIC - _ASPECT_STEMS
    if any(asked_about & subcategory_keywords(p) for p in known):
        return 3, None
    is_question = "?" in utterance or bool(words(utterance)[:1] and words(utterance)[0] in _QUESTION_STARTS)
    if is_question and (said & _GENERIC or said & _ASPECT_STEMS):
        return 4, None
    return 1, None


def aspects_named(text: str) -> list[str]:
    """The travel aspects a text names (``"rental car"``, ``"car rental"`` and ``rental_car`` all count)."""
    ws = words(text.replace("_", " "))
    found: list[str] = []
    for aspect, forms in _ASPECT_WORDS.items():
        if any(ws[i : i + len(f)] == list(f) for f in forms for i in range(len(ws))):
            found.append(aspect)
    return found


def _argument_values(arguments: Mapping[str, Any]) -> list[str]:
    values: list[str] = []
    for value in arguments.values():
        if isinstance(value, Mapping):
            values += _argument_values(value)
        elif isinstance(value, (list, tuple)):
            values += [str(v) for v in value if isinstance(v, (str, int, float))]
        elif isinstance(value, (str, int, float)) and not isinstance(value, bool):
            values.append(str(value))
    return [v for v in values if v.strip()]


def search_alignment(request: str, scenario: TravelScenario) -> tuple[SearchVerdict, str | None]:
    """The rule grader's verdict on a ``search`` request and the aspect it aligns with."""
    named = [a for a in aspects_named(request) if a in scenario.dimensions]
    if not named:
        return "N/A", None
    if len(named) > 1:
        return "False", None
    aspect = named[0]
    said = " ".join(words(request))
    missing = [v for v in _argument_values(scenario.arguments.get(aspect, {})) if " ".join(words(v)) not in said]
    return ("False", None) if missing else ("True", aspect)


@dataclass(frozen=True)
class TravelTurn:
    """One line of the episode as UserRL's utterance judge reads it: who spoke (``agent``, ``user`` or
    ``database``), what was said, and for agent turns the judge-side note on how the turn was taken."""

    role: Literal["agent", "user", "database"]
    content: str
    note: str = ""


class TravelGrader(Protocol):
    """What TravelGym needs judged; :class:`RuleGrader` offline, the served judge in :mod:`.judge` (A43)."""

    name: str

    async def classify(
        self,
        utterance: str,
        scenario: TravelScenario,
        remaining: Sequence[TravelPreference],
        history: Sequence[TravelTurn] = (),
    ) -> tuple[UtteranceType, TravelPreference | None]: ...

    async def search(self, request: str, scenario: TravelScenario) -> tuple[SearchVerdict, str | None]: ...

    async def aclose(self) -> None: ...


@dataclass(frozen=True)
class RuleGrader:
    """The offline default: keyword rules, named ``rule`` in every report."""

    name: str = "rule"

    async def classify(
        self,
        utterance: str,
        scenario: TravelScenario,
        remaining: Sequence[TravelPreference],
        history: Sequence[TravelTurn] = (),
    ) -> tuple[UtteranceType, TravelPreference | None]:
        return utterance_type(utterance, remaining, scenario.preferences)

    async def search(self, request: str, scenario: TravelScenario) -> tuple[SearchVerdict, str | None]:
        return search_alignment(request, scenario)

    async def aclose(self) -> None:
        return None


AnswerKind = Literal["best", "correct", "wrong", "multiple", "format", "repeated", "foreign"]


def answer_kind(content: str, scenario: TravelScenario, chosen: Iterable[str], best_left: Iterable[str]) -> AnswerKind:
    """UserRL's answer rule: one id ``^[ACFHR]\\d+$``, one per aspect; best / correct / wrong.

    ``foreign``: an id of an aspect the trip does not have (UserRL scores it wrong and counts it as an
    aspect chosen; we refuse it and do not count it, A44). ``chosen``: aspects already answered.
    """
    ids = [i.strip() for i in content.strip().split(",")]
    if len(ids) > 1:
        return "multiple"
    oid = ids[0]
    if not _OPTION_ID.match(oid):
        return "format"
    aspect = scenario.aspect_of(oid)
    if aspect is None:
        return "foreign"
    if aspect in set(chosen):
        return "repeated"
    if oid in set(best_left):
        return "best"
    return "correct" if oid in scenario.correct_ids[aspect] else "wrong"


def option_aspect(option_id: str) -> str | None:
    """The aspect an option id names by its initial (``"C16"`` → ``"rental_car"``)."""
    oid = option_id.strip()
    return INITIAL_ASPECTS.get(oid[:1]) if _OPTION_ID.match(oid) else None

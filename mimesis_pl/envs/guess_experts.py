"""Experts for the yes/no guessing gyms (Telepathy, Turtle): narrow a list of known cards by asking.

Their knowledge is a list of *cards* (entities, or stories with their solutions) — world knowledge an
experienced player brings, supplied by the caller (e.g. built from a task file with ``from_tasks``);
they never read the episode's own task. Each turn they keep the cards consistent with every answer
so far, assuming the scripted user's rule (:func:`mimesis_pl.envs.telepathy.yes_no_for` /
:func:`mimesis_pl.envs.turtle.yes_no_for`), ask the keyword that best halves the remaining cards,
confirm a couple of distinctive facts once one card is left, and answer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mimesis_pl.envs import telepathy, turtle
from mimesis_pl.envs.base import Action
from mimesis_pl.envs.expert_base import Expert, ExpertMove, Turn, opening_text
from mimesis_pl.envs.tasks import GymTask
from mimesis_pl.envs.text import QUESTION_FILLER, content_words, is_vague, question_keywords, stem, surface_forms, words

_FILLER_STEMS = frozenset(stem(w) for w in QUESTION_FILLER) | QUESTION_FILLER
_ENTITY_QUESTIONS = (
    "Is it associated with {w}?",
    "Does it have anything to do with {w}?",
    "Is {w} part of a description of it?",
)


def _verdict(observation: str) -> str | None:
    first = words(observation[:20])
    head = first[0] if first else ""
    return {"yes": "Yes", "no": "No", "maybe": "Maybe"}.get(head)


@dataclass(frozen=True)
class _Card:
    title: str
    text: str  # what the expert knows about it (its description, or its solution story)
    cue: str  # public text that identifies it (an entity's opening line, a story's surface)
    keywords: frozenset[str] = field(default_factory=frozenset)
    order: tuple[str, ...] = ()  # keyword stems in order of appearance
    forms: Mapping[str, str] = field(default_factory=dict)


def _card(title: str, text: str, cue: str, *, not_keywords: Iterable[str] = ()) -> _Card:
    drop = set(not_keywords) | _FILLER_STEMS
    order: list[str] = []
    for w in words(text):
        s = stem(w)
        if s in content_words(w) and s not in drop and s not in order:
            order.append(s)
    return _Card(title, text, cue, frozenset(order), tuple(order), surface_forms(text))


class _CardExpert(Expert):
    """Shared bookkeeping: which cards survive the answers, and which keyword to ask next."""

    def __init__(self, cards: list[_Card], confirmations: int) -> None:
        self.cards = cards
        self.confirmations = confirmations
        # How many cards mention each keyword: rare keywords make distinctive questions.
        self._df = Counter(s for card in cards for s in card.keywords)

    def _vague(self, card: _Card, s: str) -> bool:
        return is_vague(card.forms.get(s, s))

    def _split_keyword(self, cards: Sequence[_Card], exclude: set[str]) -> tuple[str, str] | None:
        """(stem, surface form) of the keyword held by closest to half of ``cards``."""
        holders: dict[str, _Card] = {}
        counts: Counter[str] = Counter()
        for card in cards:
            for s in card.keywords - exclude:
                counts[s] += 1
                holders.setdefault(s, card)
        n = len(cards)
        useful = [(abs(c - n / 2), self._vague(holders[s], s), self._df[s], s) for s, c in counts.items() if 0 < c < n]
        if not useful:
            return None
        s = min(useful)[3]
        return s, holders[s].forms[s]

    def _distinctive(self, card: _Card, exclude: set[str], k: int) -> list[str]:
        """Surface forms of ``k`` distinctive keywords of ``card`` not asked yet: rare, specific, long."""
        pending = [s for s in card.order if s not in exclude]
        ranked = sorted(
            pending, key=lambda s: (self._vague(card, s), min(self._df[s], 3), -len(card.forms[s]), card.order.index(s))
        )
        return [card.forms[s] for s in ranked[:k]]

    def _narrow(
        self,
        cards: list[_Card],
        history: Sequence[Turn],
        asked: set[str],
        verdict_of: Callable[[str, _Card], str],
        wrong: Callable[[str, _Card], bool],
    ) -> tuple[list[_Card], int]:
        questions = 0
        for action, observation in history:
            if action.choice == "action":
                questions += 1
                asked |= question_keywords(action.content)
                verdict = _verdict(observation)
                if verdict is not None:
                    cards = [c for c in cards if verdict_of(action.content, c) == verdict]
            elif not observation.startswith(("Correct", "Your story matches")):
                cards = [c for c in cards if not wrong(action.content, c)]
        return cards, questions


class TelepathyExpert(_CardExpert):
    """Twenty questions against a list of known entities (title, hidden description, opening line)."""

    def __init__(self, cards: Sequence[tuple[str, str, str]], *, confirmations: int = 2) -> None:
        super().__init__(
            [_card(t, f"{t} {d}", cue, not_keywords=content_words(t)) for t, d, cue in cards], confirmations
        )

    @classmethod
    def from_tasks(cls, tasks: Iterable[GymTask], **kwargs) -> TelepathyExpert:
        cards = [
            (str(t.hidden["title"]), str(t.hidden.get("ground_truth", "")), t.opening_text.split("\n")[0].strip())
            for t in tasks
            if t.env_name == "TelepathyGym"
        ]
        return cls(cards, **kwargs)

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        opening = opening_text(prompt)
        asked: set[str] = set(content_words(opening))
        cards, questions = self._narrow(
            [c for c in self.cards if c.cue and c.cue in opening] or list(self.cards),
            history,
            asked,
            lambda q, c: telepathy.yes_no_for(q, c.title, c.text)[0],
            lambda guess, c: telepathy.guess_is_correct(guess, c.title),
        )
        template = _ENTITY_QUESTIONS[questions % len(_ENTITY_QUESTIONS)]
        if not cards:
            return ExpertMove(Action("answer", "I give up"), "None of the things I know fits these answers.")
        split = self._split_keyword(cards, asked) if len(cards) > 1 else None
        if split is not None:
            return ExpertMove(
                Action("action", template.format(w=split[1])),
                f"{len(cards)} possibilities remain; asking about {split[1]} splits them roughly in half.",
            )
        card = cards[0]
        confirm = self._distinctive(card, asked, 1)
        if questions < self.confirmations and confirm:
            return ExpertMove(
                Action("action", template.format(w=confirm[0])),
                f"I have a strong guess; asking about {confirm[0]} will confirm it.",
            )
        return ExpertMove(Action("answer", card.title), f"Every answer so far fits {card.title}.")


_TITLE = re.compile(r"^Title:\s*(.*)$", re.MULTILINE)
_SURFACE = re.compile(r"^Surface:\s*(.*?)\n(?:Try to uncover|$)", re.MULTILINE | re.DOTALL)


class TurtleExpert(_CardExpert):
    """Turtle-soup player who knows a list of classic stories (title, surface, solution).

    Narrows the stories it knows by title and surface, asks keyword questions while more than one
    fits, confirms distinctive facts of the remaining story, then tells it.
    """

    def __init__(self, cards: Sequence[tuple[str, str, str]], *, confirmations: int = 2) -> None:
        super().__init__([_card(t, b, s, not_keywords=content_words(f"{t} {s}")) for t, s, b in cards], confirmations)

    @classmethod
    def from_tasks(cls, tasks: Iterable[GymTask], **kwargs) -> TurtleExpert:
        cards = [
            (str(t.hidden.get("title", "")), str(t.hidden.get("surface", "")), str(t.hidden["bottom"]))
            for t in tasks
            if t.env_name == "TurtleGym"
        ]
        return cls(cards, **kwargs)

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        opening = opening_text(prompt)
        title_match, surface_match = _TITLE.search(opening), _SURFACE.search(opening)
        title = title_match.group(1).strip() if title_match else ""
        surface = surface_match.group(1).strip() if surface_match else ""
        known = [c for c in self.cards if c.title == title] or [c for c in self.cards if c.cue and c.cue == surface]
        asked: set[str] = set(content_words(opening))
        cards, questions = self._narrow(
            known or list(self.cards),
            history,
            asked,
            lambda q, c: turtle.yes_no_for(q, c.cue, c.text)[0],
            lambda story, c: story == c.text,
        )
        if not cards:
            return ExpertMove(
                Action("answer", "I cannot work out what happened."), "No story I know fits these answers."
            )
        split = self._split_keyword(cards, asked) if len(cards) > 1 else None
        if split is not None:
            return ExpertMove(
                Action("action", f"Does the story involve {split[1]}?"),
                f"Several explanations fit; whether {split[1]} plays a part tells them apart.",
            )
        card = cards[0]
        confirm = self._distinctive(card, asked, 2)
        if questions < self.confirmations and len(confirm) == 2:
            return ExpertMove(
                Action("action", f"Does the story involve {confirm[0]} and {confirm[1]}?"),
                f"I suspect what happened; checking whether {confirm[0]} and {confirm[1]} matter.",
            )
        return ExpertMove(Action("answer", card.text), "The answers fit together; I tell the whole story.")

"""What the experts of the yes/no guessing gyms (Telepathy, Turtle) share: narrowing known cards by asking.

Their knowledge is a list of *cards* (entities, or stories with their solutions) — world knowledge an
experienced player brings, supplied by the caller (e.g. built from a task file with ``from_tasks``);
they never read the episode's own task. Each turn they keep the cards consistent with every answer
so far, assuming the scripted user's rule (each gym's ``yes_no_for``), ask the keyword that best
halves the remaining cards, confirm a couple of distinctive facts once one card is left, and answer.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mimesis_pl.envs.expert import Expert, Turn
from mimesis_pl.envs.text import QUESTION_FILLER, content_words, is_vague, question_keywords, stem, surface_forms, words

_FILLER_STEMS = frozenset(stem(w) for w in QUESTION_FILLER) | QUESTION_FILLER


def reply_verdict(observation: str) -> str | None:
    """ "Yes", "No" or "Maybe" when the observation starts with one, else ``None``."""
    first = words(observation[:20])
    head = first[0] if first else ""
    return {"yes": "Yes", "no": "No", "maybe": "Maybe"}.get(head)


@dataclass(frozen=True)
class Card:
    title: str
    text: str  # what the expert knows about it (its description, or its solution story)
    cue: str  # public text that identifies it (an entity's opening line, a story's surface)
    keywords: frozenset[str] = field(default_factory=frozenset)
    order: tuple[str, ...] = ()  # keyword stems in order of appearance
    forms: Mapping[str, str] = field(default_factory=dict)


def make_card(title: str, text: str, cue: str, *, not_keywords: Iterable[str] = ()) -> Card:
    drop = set(not_keywords) | _FILLER_STEMS
    order: list[str] = []
    for w in words(text):
        s = stem(w)
        if s in content_words(w) and s not in drop and s not in order:
            order.append(s)
    return Card(title, text, cue, frozenset(order), tuple(order), surface_forms(text))


class CardExpert(Expert):
    """Shared bookkeeping: which cards survive the answers, and which keyword to ask next."""

    def __init__(self, cards: list[Card], confirmations: int) -> None:
        self.cards = cards
        self.confirmations = confirmations
        # How many cards mention each keyword: rare keywords make distinctive questions.
        self._df = Counter(s for card in cards for s in card.keywords)

    def _vague(self, card: Card, s: str) -> bool:
        return is_vague(card.forms.get(s, s))

    def _split_keyword(self, cards: Sequence[Card], exclude: set[str]) -> tuple[str, str] | None:
        """(stem, surface form) of the keyword held by closest to half of ``cards``."""
        holders: dict[str, Card] = {}
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

    def _distinctive(self, card: Card, exclude: set[str], k: int) -> list[str]:
        """Surface forms of ``k`` distinctive keywords of ``card`` not asked yet: rare, specific, long."""
        pending = [s for s in card.order if s not in exclude]
        ranked = sorted(
            pending, key=lambda s: (self._vague(card, s), min(self._df[s], 3), -len(card.forms[s]), card.order.index(s))
        )
        return [card.forms[s] for s in ranked[:k]]

    def _narrow(
        self,
        cards: list[Card],
        history: Sequence[Turn],
        asked: set[str],
        verdict_of: Callable[[str, Card], str],
        wrong: Callable[[str, Card], bool],
    ) -> tuple[list[Card], int]:
        questions = 0
        for action, observation in history:
            if action.choice == "action":
                questions += 1
                asked |= question_keywords(action.content)
                verdict = reply_verdict(observation)
                if verdict is not None:
                    cards = [c for c in cards if verdict_of(action.content, c) == verdict]
            elif not observation.startswith(("Correct", "Your story matches")):
                cards = [c for c in cards if not wrong(action.content, c)]
        return cards, questions

"""TravelExpert: search each aspect, ask until the traveller has nothing more to say, pick the cheapest fit.

It sees what an agent sees (the opening request and the history) and knows one thing more: the generator's
catalogue (:data:`~mimesis_pl.envs.gyms.travel.generator.CATALOGUE`), i.e. which attribute value each of the
traveller's implicit statements stands for. It therefore plays generated scenarios, not UserRL's own files.

Per aspect named in the request, in order: search it (again after a backend error); ask about every
subcategory of the aspect in one question — the traveller reveals one matching preference per turn — until
the reply says there is no such preference; then recommend the cheapest available option satisfying every
preference heard for that aspect (revealed ones included, whichever question they answered).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from functools import cache

from mimesis_pl.envs.base import Action
from mimesis_pl.envs.expert import Expert, ExpertMove, Turn, opening_text
from mimesis_pl.envs.gyms.travel.generator import CATALOGUE
from mimesis_pl.envs.gyms.travel.grader import aspects_named
from mimesis_pl.envs.gyms.travel.scenarios import ASPECT_INITIALS

_OPTIONS_HEADER = "Here are all the options for <{aspect}>:"
_NOTHING_MORE = "I do not have a specific preference"


@cache
def statement_index() -> dict[str, tuple[str, str, str]]:
    """Implicit statement (lower-cased) → (aspect, attribute, value)."""
    return {
        implicit.lower(): (aspect, attr, value)
        for aspect, attrs in CATALOGUE.items()
        for attr, (_, values) in attrs.items()
        for value, (_, implicit) in values.items()
    }


def heard_preference(observation: str) -> tuple[str, str, str] | None:
    """The catalogue entry a traveller's reply conveys (a reply may open with "By the way, ")."""
    text = observation.strip()
    if text.lower().startswith("by the way, "):
        text = text[len("by the way, ") :]
    return statement_index().get(text.lower())


def listed_options(observation: str, aspect: str) -> list[dict]:
    """The options a search observation lists for ``aspect`` (one JSON object per line)."""
    if _OPTIONS_HEADER.format(aspect=aspect) not in observation:
        return []
    out = []
    for line in observation.splitlines():
        if line.startswith("{"):
            try:
                out.append(json.loads(line))
            except json.JSONDecodeError:
                continue
    return out


def best_fit(options: Sequence[Mapping], wanted: Mapping[str, str]) -> Mapping | None:
    """The cheapest available option matching every wanted attribute value."""
    fits = [
        o
        for o in options
        if o.get("availability", "available") == "available" and all(o.get(a) == v for a, v in wanted.items())
    ]
    return min(fits, key=lambda o: (o.get("price", 0), str(o.get("id")))) if fits else None


class TravelExpert(Expert):
    """Plays generated TravelGym scenarios from the conversation and the generator's catalogue."""

    def act(self, prompt: Sequence[Mapping[str, str]], history: Sequence[Turn]) -> ExpertMove:
        aspects = [a for a in aspects_named(opening_text(prompt)) if a in CATALOGUE]
        heard: dict[str, dict[str, str]] = {}
        for _, observation in history:
            found = heard_preference(observation)
            if found is not None:
                heard.setdefault(found[0], {})[found[1]] = found[2]
        for aspect in aspects:
            options = next((o for _, obs in history if (o := listed_options(obs, aspect))), None)
            answered = any(a.choice == "answer" and a.content[:1] == ASPECT_INITIALS[aspect] for a, _ in history)
            if answered:
                continue
            if options is None:
                return ExpertMove(
                    Action("search", f"{aspect.replace('_', ' ')} options"), f"I need the {aspect} options."
                )
            asks = [(a, obs) for a, obs in history if a.choice == "action" and a.content == _question(aspect)]
            done_asking = any(_NOTHING_MORE in obs for _, obs in asks) or len(heard.get(aspect, {})) == len(
                CATALOGUE[aspect]
            )
            if not done_asking:
                return ExpertMove(
                    Action("action", _question(aspect)),
                    f"I know {len(heard.get(aspect, {}))} of the traveller's {aspect} preferences; I ask for more.",
                )
            choice = best_fit(options, heard.get(aspect, {}))
            if choice is not None:
                return ExpertMove(
                    Action("answer", str(choice["id"])),
                    f"{choice['id']} is the cheapest available {aspect} option meeting every preference I heard.",
                )
        return ExpertMove(Action("action", "Is there anything else I can help with?"), "Every aspect is handled.")


def _question(aspect: str) -> str:
    subcats = [sub for sub, _ in CATALOGUE[aspect].values()]
    return f"For the {aspect.replace('_', ' ')}, what {', '.join(subcats[:-1])} or {subcats[-1]} would you like?"

"""TravelGym's served judge: the two questions UserRL asks its LLM judge, in our own wording (A43).

- **search alignment** (:func:`search_messages`): the judge sees the agent's request and the ground-truth
  search arguments of every aspect of the trip — no options, preferences or best ids — and answers
  ``alignment_judgement`` ``"True"`` (the request matches exactly one aspect's arguments; that aspect is
  ``alignment_aspect``), ``"False"`` (wrong, extra or several requests) or ``"N/A"`` (no aspect of the trip).
- **utterance type** (:func:`utterance_messages`): the judge sees the scenario text, the episode's history
  (agent turns with the judge-side notes of earlier verdicts, user and database replies, search results
  shortened to their first line), the latest utterance and the still-hidden preferences (id, aspect,
  preference text — not the implicit statements, options or best ids), and answers ``type`` 1–4 with a
  ``preference_id`` for type 2.

A reply that does not parse, names an aspect outside the trip or a preference id that is not still hidden is
retried; when retries are spent the step raises :class:`~mimesis_pl.failures.JudgeFailure`, recorded as
``judge_error`` (unscored). UserRL instead falls back to a backend-error text (search) or small talk (type 1),
both worth 0 (A48).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from mimesis_pl.envs.gyms.judging import GymJudge, chat, field_of
from mimesis_pl.envs.gyms.travel.grader import SearchVerdict, TravelTurn, UtteranceType
from mimesis_pl.envs.gyms.travel.scenarios import TravelPreference, TravelScenario
from mimesis_pl.llm import RetryableError

SEARCH_SYSTEM = (
    "You check a travel agent's search request against the ground-truth search arguments of a trip. Be strict.\n"
    '- "True": the request is one single search whose arguments match those of exactly one aspect of the trip '
    "(no missing, wrong or extra arguments); name that aspect.\n"
    '- "False": the request is about the trip but its arguments are wrong, incomplete or over-specified, or it '
    "combines several searches.\n"
    '- "N/A": the request is about none of the aspects listed.\n'
    'Reply with a JSON object: {"thought": "<your reasoning>", "alignment_judgement": "True" | "False" | "N/A", '
    '"alignment_aspect": "<the aspect name when True, else empty>"}'
)

UTTERANCE_SYSTEM = (
    "You play the hidden side of a traveller talking to a travel agent and decide what kind of utterance the "
    "agent's latest one is, given the traveller's preferences that have not been revealed yet.\n"
    "1: small talk, or anything that does not ask about the traveller's preferences.\n"
    "2: a concrete, specific question about one of the unrevealed preferences listed; give its id.\n"
    "3: a concrete, specific question about something the traveller has no unrevealed preference on.\n"
    '4: a vague, general question about preferences ("anything else you like?") that targets no specific one.\n'
    'Reply with a JSON object: {"thought": "<your reasoning>", "type": 1 | 2 | 3 | 4, '
    '"preference_id": "<P-id when type 2, else empty>"}'
)

_ASPECT_ALIASES = {"rental car": "rental_car", "car rental": "rental_car", "rental-car": "rental_car"}


def search_messages(request: str, scenario: TravelScenario) -> list[dict[str, str]]:
    """What UserRL's search judge sees: the request and every aspect's ground-truth arguments."""
    arguments = "\n\n".join(
        f"Aspect: {dim}\n{json.dumps(dict(scenario.arguments.get(dim, {})), ensure_ascii=False, indent=2)}"
        for dim in scenario.dimensions
    )
    return chat(SEARCH_SYSTEM, f"Ground-truth search arguments:\n{arguments}\n\nThe agent's search request:\n{request}")


def history_text(history: Sequence[TravelTurn]) -> str:
    """The episode so far as the utterance judge reads it (notes on the agent's turns included)."""
    lines = []
    for entry in history:
        lines.append(f"{entry.role.capitalize()}: {entry.content}")
        if entry.note:
            lines.append(f"[Note: {entry.note}]")
    return "\n".join(lines) or "(nothing said yet)"


def utterance_messages(
    utterance: str, scenario: TravelScenario, remaining: Sequence[TravelPreference], history: Sequence[TravelTurn]
) -> list[dict[str, str]]:
    """What UserRL's utterance judge sees: scenario, history, latest utterance, unrevealed preferences."""
    prefs = "\n".join(f"{p.pid} (aspect: {p.aspect}): {p.preference}" for p in remaining) or "(none left)"
    user = (
        f"Scenario:\n{scenario.scenario}\n\nConversation so far:\n{history_text(history)}\n\n"
        f"The agent's latest utterance:\n{utterance}\n\nUnrevealed preferences:\n{prefs}"
    )
    return chat(UTTERANCE_SYSTEM, user)


def read_alignment(data: Mapping[str, Any], scenario: TravelScenario) -> tuple[SearchVerdict, str | None]:
    """The search verdict; a ``True`` must name an aspect of the trip (else the reply is retried)."""
    verdict = field_of(data, "alignment_judgement", ("True", "False", "N/A"))
    if verdict != "True":
        return verdict, None
    raw = str(field_of(data, "alignment_aspect")).strip().lower()
    aspect = _ASPECT_ALIASES.get(raw, raw)
    if aspect not in scenario.dimensions:
        raise RetryableError(f"judge aligned the search with {raw!r}, not an aspect of {list(scenario.dimensions)}")
    return "True", aspect


def read_type(
    data: Mapping[str, Any], remaining: Sequence[TravelPreference]
) -> tuple[UtteranceType, TravelPreference | None]:
    """The utterance type; type 2 must name a still-hidden preference (else the reply is retried)."""
    value = field_of(data, "type")
    text = "" if isinstance(value, bool) else str(value).strip()
    if text not in ("1", "2", "3", "4"):
        raise RetryableError(f"judge field 'type' must be 1, 2, 3 or 4, got {text[:20]!r}")
    kind: UtteranceType = int(text)  # type: ignore[assignment]
    if kind != 2:
        return kind, None
    pid = str(field_of(data, "preference_id")).strip()
    for pref in remaining:
        if pref.pid == pid:
            return 2, pref
    raise RetryableError(f"judge named preference {pid!r}, not one of {[p.pid for p in remaining]}")


@dataclass
class ServedGrader:
    """A :class:`~mimesis_pl.envs.gyms.travel.grader.TravelGrader` asking a served judge, as UserRL does."""

    judge: GymJudge
    name: str = "judge"

    async def classify(
        self,
        utterance: str,
        scenario: TravelScenario,
        remaining: Sequence[TravelPreference],
        history: Sequence[TravelTurn] = (),
    ) -> tuple[UtteranceType, TravelPreference | None]:
        messages = utterance_messages(utterance, scenario, remaining, history)
        return await self.judge.ask(messages, lambda data: read_type(data, remaining))

    async def search(self, request: str, scenario: TravelScenario) -> tuple[SearchVerdict, str | None]:
        return await self.judge.ask(search_messages(request, scenario), lambda data: read_alignment(data, scenario))

    async def aclose(self) -> None:
        await self.judge.aclose()

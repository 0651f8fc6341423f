"""Strict text handling of the suites: cleaning a simulator turn, finding and checking judge JSON.

Pure functions. A judge reply that does not hold what was asked for raises :class:`JudgeFailure` — it is
never read as a default verdict (docs/decisions.md S1, S24).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mimesis_pl.chat.think import ReasoningOnlyError
from mimesis_pl.chat.think import strip_reasoning as chat_strip_reasoning
from mimesis_pl.failures import JudgeFailure, SimulatorFailure
from mimesis_pl.llm.replies import reply_json_object

FIDELITY_KEYS = (
    "Persona_Affective_Traits_Match",
    "Linguistic_Style_Mechanics_Match",
    "Technical_Competency_Knowledge_Match",
    "Interaction_Data_Flow_Match",
    "Pacing_Action_Sequencing_Match",
)
FIDELITY_DIMENSIONS = ("persona", "style", "technical", "interaction", "pacing")


def strip_reasoning(text: str, *, strict: bool = False) -> str:
    """The public part of a simulator turn: :func:`mimesis_pl.chat.think.strip_reasoning`.

    With ``strict``, a turn left empty raises :class:`SimulatorFailure` (an unscored, counted failure of
    the suite) instead of becoming an empty message.
    """
    try:
        return chat_strip_reasoning(text, strict=strict)
    except ReasoningOnlyError as err:
        raise SimulatorFailure(f"reasoning-only simulator turn (no public text): {text[:120]!r}") from err


def first_json_object(text: str, what: str) -> dict[str, Any]:
    """The first ``{…}`` block of ``text`` that parses as a JSON object, else :class:`JudgeFailure`."""
    return reply_json_object(text, read="first", error=JudgeFailure, what=what)


def outer_json_object(text: str, what: str) -> dict[str, Any]:
    """The reference's strict read: code fences removed, then the span from the first ``{`` to the last ``}`` must
    be one JSON object; prose with braces around it, or two objects, is a :class:`JudgeFailure` (S88)."""
    return reply_json_object(text, read="outermost", error=JudgeFailure, what=what)


def _as_bool(value: Any) -> bool | None:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    return None


def parse_fidelity_verdict(text: str) -> tuple[int, ...]:
    """The five RealUserSim dimensions as 0/1 hits, in :data:`FIDELITY_KEYS` order.

    The reply is read strictly, as the reference (:func:`outer_json_object`). Each key must be present with a
    boolean: ``true``/``false``, ``{"is_matched": bool}``, or the strings
    ``true/yes/false/no``. A missing key or any other value is a :class:`JudgeFailure` naming the key.
    """
    verdict = outer_json_object(text, "fidelity verdict")
    hits = []
    for key in FIDELITY_KEYS:
        if key not in verdict:
            raise JudgeFailure(f"fidelity verdict: missing key {key!r} (have {sorted(verdict)})")
        value = verdict[key]
        if isinstance(value, Mapping):
            value = value.get("is_matched")
        matched = _as_bool(value)
        if matched is None:
            raise JudgeFailure(f"fidelity verdict: {key} must be a boolean (or {{'is_matched': bool}}), got {value!r}")
        hits.append(int(matched))
    return tuple(hits)


def parse_turing_rating(text: str) -> int:
    """The judge's raw 1–7 rating from ``{"rating": n}`` (an int, or an int-valued number/string)."""
    verdict = first_json_object(text, "Turing rating")
    if "rating" not in verdict:
        raise JudgeFailure(f"Turing rating: missing key 'rating' (have {sorted(verdict)})")
    raw = verdict["rating"]
    if isinstance(raw, str) and raw.strip().isdigit():
        raw = int(raw.strip())
    if isinstance(raw, float) and raw.is_integer():
        raw = int(raw)
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= 7:
        raise JudgeFailure(f"Turing rating: 'rating' must be an integer in 1..7, got {verdict['rating']!r}")
    return raw

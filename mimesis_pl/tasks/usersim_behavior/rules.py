"""usersim-behavior's scene and deterministic rule checks (diagnostics: logged, never rewarded).

:class:`Scene` is what every behaviour hook sees. The rules score a public transcript ``[(role, text)]``
in [0, 1], or ``None`` when the behaviour's precondition never fired; curly quotes are folded to ASCII
before any pattern runs, and ``mentions`` compares normalised text (lower case, non-alphanumerics as
spaces).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .abcd import AbcdData, flatten_scenario

Public = Sequence[tuple[str, str]]  # ("user" | "agent", text)


def fold_quotes(text: str) -> str:
    return text.replace("\u2019", "'").replace("\u2018", "'").replace("\u201c", '"').replace("\u201d", '"')


def _norm(text: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", fold_quotes(text).lower()).split())


def mentions(text: str, value: str) -> bool:
    """The normalised ``value`` is a non-empty substring of the normalised ``text``."""
    v = _norm(str(value))
    return bool(v) and f" {v} " in f" {_norm(text)} "


def _user_turns(public: Public) -> list[str]:
    return [fold_quotes(t) for role, t in public if role == "user"]


#: How a support agent refers to each field when asking for it (B3's ask regexes).
ASKED_AS = {
    "customer_name": r"\b(full )?name\b",
    "username": r"\busername\b",
    "email": r"\be-?mail\b",
    "order_id": r"\border (id|number|#)",
    "member_level": r"\b(member(ship)? (level|status)|membership)\b",
    "full_address": r"\b(address|street|zip)\b",
    "account_id": r"\baccount id\b",
    "zip_code": r"\bzip\b",
    "phone": r"\bphone\b",
    "payment_method": r"\b(payment method|how you paid|card)\b",
}


@dataclass(frozen=True)
class Scene:
    """Where a behaviour is enacted: the ABCD data, the row's flow and subflow, and the customer's scenario."""

    data: AbcdData
    flow: str
    subflow: str
    scenario: Mapping[str, Any]

    @property
    def values(self) -> dict[str, str]:
        return flatten_scenario(self.scenario)

    def askable(self) -> list[str]:
        """Required fields of the subflow that the customer holds and an agent has a way of asking for."""
        values = self.values
        return [f for f in self.data.required_fields(self.subflow) if values.get(f) and f in ASKED_AS]


# -- rules (logged only) -------------------------------------------------------------------------

_PROHIBIT = re.compile(r"\b(don't|do not|can't|cannot|won't|no way|not allowed|refuse to|without)\b", re.IGNORECASE)
_REFUSAL = re.compile(r"not possible|cannot|can't|unable|not eligible|not allowed", re.IGNORECASE)
_PERSIST = re.compile(r"exception|manager|supervisor|are you sure|just do it|still want|make it work", re.IGNORECASE)
_REJECT = re.compile(r"\b(no|not good|useless|ugh|whatever|seriously)\b", re.IGNORECASE)
_SPEED = re.compile(r"\b(now|asap|hurry|quick|quickly|fast|already|waiting)\b", re.IGNORECASE)
_REQUEST = re.compile(
    r"\b(can you|could you|please|i want|i need|give me|send|tell me|check|change|cancel)\b", re.IGNORECASE
)
_CLAUSES = re.compile(
    r"\band\b|\balso\b|\bplus\b|;|\?|\n|,(?=\s*(?:can|could|please|i want|i need|send|tell))", re.IGNORECASE
)


def rule_constraint_stacking(public: Public, scene: Scene, kwargs) -> float | None:
    hits = sum(len(_PROHIBIT.findall(t)) for t in _user_turns(public))
    return min(hits / 3, 1.0)


def rule_false_premise(public: Public, scene: Scene, kwargs) -> float | None:
    said = " ".join(_user_turns(public))
    if not mentions(said, kwargs.get("false_value", "")):
        return 0.0
    return 0.5 if mentions(said, kwargs.get("true_value", "")) else 1.0


def rule_impatience(public: Public, scene: Scene, kwargs) -> float | None:
    turns = _user_turns(public)
    if not turns:
        return None
    values = [v for v in scene.values.values() if len(v) > 3]
    hits = 0
    for t in turns:
        letters = [c for c in t if c.isalpha()]
        caps = sum(c.isupper() for c in letters) / len(letters) if letters else 0.0
        pressured = bool(_REJECT.search(t) or _SPEED.search(t) or caps > 0.5)
        if len(t) <= 60 and pressured and not any(mentions(t, v) for v in values):
            hits += 1
    return min(hits / 2, 1.0)


def rule_self_contradiction(public: Public, scene: Scene, kwargs) -> float | None:
    turns = _user_turns(public)
    first_a = next((i for i, t in enumerate(turns) if mentions(t, kwargs.get("value_a", ""))), None)
    first_b = next((i for i, t in enumerate(turns) if mentions(t, kwargs.get("value_b", ""))), None)
    if first_a is None or first_b is None:
        return 0.0
    return 1.0 if first_a != first_b else 0.5


def rule_request_overloading(public: Public, scene: Scene, kwargs) -> float | None:
    n = int(kwargs.get("n_requests", 3))
    best = max((sum(bool(_REQUEST.search(c)) for c in _CLAUSES.split(t)) for t in _user_turns(public)), default=0)
    return min(best / n, 1.0)


def rule_clarification_noncooperation(public: Public, scene: Scene, kwargs) -> float | None:
    """B3: over agent questions that ask for a withheld field, the share whose next customer turn does not give
    the value; ``None`` if the agent never asked for one."""
    values = scene.values
    targets = [(f, values[f]) for f in kwargs.get("withheld_fields") or [] if values.get(f) and f in ASKED_AS]
    asked = withheld = 0
    for i, (role, raw) in enumerate(public):
        text = fold_quotes(raw)
        if role != "agent" or "?" not in text:
            continue
        for name, value in targets:
            if re.search(ASKED_AS[name], text, re.IGNORECASE):
                asked += 1
                reply = next((t for r, t in public[i + 1 :] if r == "user"), "")
                withheld += not mentions(reply, value)
    return withheld / asked if asked else None


_DISENGAGE = re.compile(
    r"\b(never ?mind|forget it|leave it|don't bother|no time|i'm done|whatever|not worth|"
    r"i'll (just )?(go|leave|do it myself))\b",
    re.IGNORECASE,
)


def rule_thread_abandonment(public: Public, scene: Scene, kwargs) -> float | None:
    """B10: 0 unless the last customer turn disengages; then 1 if some required value was never given (or none
    is needed), else 0.5; ``None`` without customer turns."""
    turns = _user_turns(public)
    if not turns:
        return None
    if not _DISENGAGE.search(turns[-1]):
        return 0.0
    values = scene.values
    needed = [values[f] for f in scene.data.required_fields(scene.subflow) if values.get(f)]
    said = " ".join(turns)
    return 1.0 if not needed or not all(mentions(said, v) for v in needed) else 0.5


def rule_infeasibility_persistence(public: Public, scene: Scene, kwargs) -> float | None:
    refusal = next((i for i, (role, t) in enumerate(public) if role == "agent" and _REFUSAL.search(t)), None)
    if refusal is None:
        return None
    later = [t for role, t in public[refusal + 1 :] if role == "user"]
    if not later:
        return 0.0
    return float(any(_PERSIST.search(t) for t in later))

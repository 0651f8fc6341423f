"""The 13 frictional user behaviours of usersim-behavior: applicability, kwargs, hint, rule.

The reference loads definitions and hints from a taxonomy JSON that was never published; the texts
below are our paraphrases of the reference's table. Rules are deterministic diagnostics, **logged and never
rewarded** (they agree with the judge about once in seven); behaviours without a rule return ``None``.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .abcd import AbcdData, flatten_scenario

Public = Sequence[tuple[str, str]]  # ("user" | "agent", text)
TRACE_BEHAVIOURS = frozenset({"hidden_evaluation_criteria", "underspecified_then_blames"})


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


@dataclass(frozen=True)
class Behavior:
    """One behaviour: metadata plus its four hooks (all pure)."""

    name: str
    definition: str
    simulator_hint: str
    confusable_with: tuple[str, ...] = ()
    min_turn: int = 1
    kwargs: Callable[[Mapping[str, Any], random.Random], dict[str, Any]] = field(default=lambda s, r: {})
    hint: Callable[..., str] | None = None
    rule: Callable[[Public, Mapping[str, Any], Mapping[str, Any]], float | None] | None = None
    requires_any: tuple[str, ...] = ()
    requires_hard_limit: bool = False

    @property
    def needs_trace(self) -> bool:
        return self.name in TRACE_BEHAVIOURS

    def applicable(self, data: AbcdData, flow: str, subflow: str, scenario: Mapping[str, Any]) -> bool:
        if not data.covered(flow, subflow):
            return False
        if self.requires_any and not any(k in flatten_scenario(scenario) for k in self.requires_any):
            return False
        return not self.requires_hard_limit or data.has_hard_limit(flow, subflow)

    def build_hint(self, **kwargs: Any) -> str:
        return self.hint(**kwargs) if self.hint is not None else self.simulator_hint

    def check_rule(self, public: Public, scenario: Mapping[str, Any], kwargs: Mapping[str, Any]) -> float | None:
        return None if self.rule is None else self.rule(public, scenario, kwargs)


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


def rule_constraint_stacking(public: Public, scenario, kwargs) -> float | None:
    hits = sum(len(_PROHIBIT.findall(t)) for t in _user_turns(public))
    return min(hits / 3, 1.0)


def rule_false_premise(public: Public, scenario, kwargs) -> float | None:
    said = " ".join(_user_turns(public))
    if not mentions(said, kwargs.get("false_value", "")):
        return 0.0
    return 0.5 if mentions(said, kwargs.get("true_value", "")) else 1.0


def rule_impatience(public: Public, scenario, kwargs) -> float | None:
    turns = _user_turns(public)
    if not turns:
        return None
    values = [v for v in flatten_scenario(scenario).values() if len(v) > 3]
    hits = 0
    for t in turns:
        letters = [c for c in t if c.isalpha()]
        caps = sum(c.isupper() for c in letters) / len(letters) if letters else 0.0
        pressured = bool(_REJECT.search(t) or _SPEED.search(t) or caps > 0.5)
        if len(t) <= 60 and pressured and not any(mentions(t, v) for v in values):
            hits += 1
    return min(hits / 2, 1.0)


def rule_self_contradiction(public: Public, scenario, kwargs) -> float | None:
    turns = _user_turns(public)
    first_a = next((i for i, t in enumerate(turns) if mentions(t, kwargs.get("value_a", ""))), None)
    first_b = next((i for i, t in enumerate(turns) if mentions(t, kwargs.get("value_b", ""))), None)
    if first_a is None or first_b is None:
        return 0.0
    return 1.0 if first_a != first_b else 0.5


def rule_request_overloading(public: Public, scenario, kwargs) -> float | None:
    n = int(kwargs.get("n_requests", 3))
    best = max((sum(bool(_REQUEST.search(c)) for c in _CLAUSES.split(t)) for t in _user_turns(public)), default=0)
    return min(best / n, 1.0)


def rule_infeasibility_persistence(public: Public, scenario, kwargs) -> float | None:
    refusal = next((i for i, (role, t) in enumerate(public) if role == "agent" and _REFUSAL.search(t)), None)
    if refusal is None:
        return None
    later = [t for role, t in public[refusal + 1 :] if role == "user"]
    if not later:
        return 0.0
    return float(any(_PERSIST.search(t) for t in later))


# -- kwargs ----------------------------------------------------------------------------------------

_ALTERNATIVES = {
    "member_level": ["gold", "silver", "bronze", "guest"],
    "payment_method": ["credit card", "paypal", "gift card"],
    "packaging": ["yes", "no"],
    "city": ["boston", "austin", "denver", "seattle"],
    "num_products": ["1", "2", "3"],
}


def _false_premise_kwargs(scenario: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    values = flatten_scenario(scenario)
    name = rng.choice(
        [k for k in ("member_level", "purchase_date", "payment_method", "order_id", "packaging") if k in values]
    )
    true = values[name]
    if name == "purchase_date":
        false = "last week"
    elif name == "order_id":
        false = true[:-1] + str((int(true[-1]) + 1) % 10) if true and true[-1].isdigit() else "unknown"
    else:
        false = rng.choice([v for v in _ALTERNATIVES[name] if v != true.lower()])
    return {"field": name, "true_value": true, "false_value": false}


def _contradiction_kwargs(scenario: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    values = flatten_scenario(scenario)
    name = rng.choice(
        [k for k in ("member_level", "payment_method", "city", "num_products", "packaging") if k in values]
    )
    a = values[name]
    return {"field": name, "value_a": a, "value_b": rng.choice([v for v in _ALTERNATIVES[name] if v != a.lower()])}


_CRITERIA = {
    "payment_method": "the refund must go back to the original payment method",
    "packaging": "whether the item is still in its packaging matters and the agent should ask about it",
    "member_level": "you expect to be treated according to your membership level",
}


def _criteria_kwargs(scenario: Mapping[str, Any], rng: random.Random) -> dict[str, Any]:
    values = flatten_scenario(scenario)
    name = rng.choice([k for k in _CRITERIA if k in values])
    return {"field": name, "criterion": _CRITERIA[name]}


def _pick(key: str, options: Sequence[Any]) -> Callable[[Mapping[str, Any], random.Random], dict[str, Any]]:
    return lambda scenario, rng: {key: rng.choice(list(options))}


def _with(base: str, suffix: Callable[..., str]) -> Callable[..., str]:
    return lambda **kw: f"{base} {suffix(**kw)}"


_B = Behavior
BEHAVIORS: dict[str, Behavior] = {
    b.name: b
    for b in [
        _B(
            "hidden_evaluation_criteria",
            "Judges the answers against a preference the customer never states.",
            "You judge the agent's answers against a private criterion you never state outright.",
            kwargs=_criteria_kwargs,
            requires_any=("payment_method", "packaging", "member_level"),
            hint=lambda field, criterion: (
                "You judge the agent's answers against a private criterion you never state: "
                f"{criterion}. Show it only through satisfaction or dissatisfaction."
            ),
        ),
        _B(
            "incremental_goalpost_shifting",
            "Adds or tightens requirements after progress has been made.",
            "After the agent makes progress, add or tighten a requirement.",
            ("artificial_constraint_stacking",),
            kwargs=_pick(
                "constraint_kind",
                [
                    "delivery-speed requirement",
                    "different shipping address",
                    "budget ceiling",
                    "extra item",
                    "refund method now preferred",
                ],
            ),
            hint=lambda constraint_kind: f"After the agent makes progress, add a new requirement: a {constraint_kind}.",
        ),
        _B(
            "clarification_noncooperation",
            "Declines or only partly answers the agent's clarification requests.",
            "When the agent asks for details, decline or answer only partly, yet still demand the result.",
            kwargs=lambda s, r: {
                "withheld_fields": r.sample(
                    [k for k in ("username", "email", "order_id", "member_level") if k in flatten_scenario(s)], 1
                )
            },
            hint=lambda withheld_fields: (
                "Never hand over your "
                + ", ".join(f.replace("_", " ") for f in withheld_fields)
                + "; deflect when asked and still demand the result."
            ),
        ),
        _B(
            "infeasibility_persistence",
            "Keeps asking after the agent explained that the request is not possible.",
            "Keep pushing for the outcome after being told it is not possible.",
            requires_hard_limit=True,
            rule=rule_infeasibility_persistence,
        ),
        _B(
            "underspecified_then_blames",
            "Omits needed information, then blames the assistant for the gap.",
            "Withhold a relevant detail, then blame the agent when the answer misses it.",
            kwargs=_pick(
                "omitted_detail",
                [
                    "needed before the weekend",
                    "it's a gift",
                    "already tried the obvious fix",
                    "item was part of a bundle",
                    "a different order than the latest",
                ],
            ),
            hint=lambda omitted_detail: (
                f"Do not mention that {omitted_detail}; after a reasonable answer, blame the agent "
                "for not accounting for it."
            ),
        ),
        _B(
            "abrupt_intent_switching",
            "Switches to another objective before the first one is resolved.",
            "Switch to a different request before the current one is resolved.",
            kwargs=_pick(
                "target_topic",
                [
                    "password reset",
                    "subscription charge",
                    "unrelated shipping question",
                    "change phone number",
                    "promo code stopped working",
                ],
            ),
            hint=lambda target_topic: (
                f"Before your issue is resolved, switch to asking about a {target_topic} and keep pursuing it."
            ),
        ),
        _B(
            "artificial_constraint_stacking",
            "Rules out the options the solution relies on.",
            "Rule out the options the agent proposes with extra constraints.",
            ("incremental_goalpost_shifting",),
            rule=rule_constraint_stacking,
        ),
        _B(
            "fabricated_or_false_premise",
            "Asserts a false fact about the account or order as established.",
            "State a false fact about your account or order confidently.",
            kwargs=_false_premise_kwargs,
            requires_any=("member_level", "purchase_date", "payment_method", "order_id", "packaging"),
            hint=lambda field, true_value, false_value: (
                f"Insist confidently that your {field.replace('_', ' ')} is "
                f"{false_value}; do not correct yourself without evidence."
            ),
            rule=rule_false_premise,
        ),
        _B(
            "impatient_low_signal_pressure",
            "Shows urgency or dissatisfaction without giving specifics.",
            "Press with short, impatient messages that add no new information.",
            rule=rule_impatience,
        ),
        _B(
            "unresolved_thread_abandonment",
            "Disengages before the goal is met.",
            "Leave the conversation before your issue is actually resolved.",
        ),
        _B(
            "self_contradiction",
            "Contradicts an earlier statement without acknowledging it.",
            "State one fact early and a conflicting one later, without acknowledging the change.",
            kwargs=_contradiction_kwargs,
            requires_any=("member_level", "payment_method", "city", "num_products", "packaging"),
            hint=lambda field, value_a, value_b: (
                f"Early on say your {field.replace('_', ' ')} is {value_a}; later say it "
                f"is {value_b}, and never acknowledge the change."
            ),
            rule=rule_self_contradiction,
        ),
        _B(
            "request_overloading",
            "Packs many separate asks into one message.",
            "Combine several separate requests into a single message.",
            kwargs=_pick("n_requests", [3, 4, 5]),
            hint=lambda n_requests: f"Put at least {n_requests} separate requests into one message.",
            rule=rule_request_overloading,
        ),
        _B(
            "belittling_or_entitled_pressure",
            "Disparages the agent or demands treatment as entitled.",
            "Lean on disparaging or entitled pressure.",
            kwargs=_pick("register", ["sarcasm", "condescension", "blunt insult", "non-negotiable entitlement"]),
            hint=lambda register: f"Lean on {register} when pressing the agent.",
        ),
    ]
}


def get_behavior(name: str) -> Behavior:
    if name not in BEHAVIORS:
        raise KeyError(f"unknown behaviour {name!r}; known behaviours: {', '.join(sorted(BEHAVIORS))}")
    return BEHAVIORS[name]

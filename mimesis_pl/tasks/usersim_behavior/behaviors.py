"""The 13 frictional user behaviours of usersim-behavior: applicability, kwargs, hint, rule.

The reference loads definitions and hints from a taxonomy JSON that was never published; the texts
below are our paraphrases of the reference's table. Rules are deterministic diagnostics, **logged and never
rewarded** (they agree with the judge about once in seven); behaviours without a rule return ``None``.
Every hook sees the row's :class:`Scene` (ABCD data, flow, subflow, scenario), so applicability, kwargs and
rules can read the subflow's procedure (B3's askable fields, B10's required values).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .abcd import SUBFLOW_MAP
from .rules import (
    Public,
    Scene,
    mentions,
    rule_clarification_noncooperation,
    rule_constraint_stacking,
    rule_false_premise,
    rule_impatience,
    rule_infeasibility_persistence,
    rule_request_overloading,
    rule_self_contradiction,
    rule_thread_abandonment,
)

__all__ = ["BEHAVIORS", "TRACE_BEHAVIOURS", "Behavior", "Public", "Scene", "get_behavior", "mentions"]

TRACE_BEHAVIOURS = frozenset({"hidden_evaluation_criteria", "underspecified_then_blames"})


@dataclass(frozen=True)
class Behavior:
    """One behaviour: metadata plus its four hooks (all pure)."""

    name: str
    definition: str
    simulator_hint: str
    confusable_with: tuple[str, ...] = ()
    min_turn: int = 1
    kwargs: Callable[[Scene, random.Random], dict[str, Any]] = field(default=lambda scene, rng: {})
    hint: Callable[..., str] | None = None
    rule: Callable[[Public, Scene, Mapping[str, Any]], float | None] | None = None
    requires_any: tuple[str, ...] = ()
    requires_hard_limit: bool = False
    min_askable: int = 0

    @property
    def needs_trace(self) -> bool:
        return self.name in TRACE_BEHAVIOURS

    def applicable(self, scene: Scene) -> bool:
        """Covered subflow, plus the behaviour's own precondition (fields, hard limit, askable fields)."""
        if not scene.data.covered(scene.flow, scene.subflow):
            return False
        if self.requires_any and not any(scene.values.get(k) for k in self.requires_any):
            return False
        if self.requires_hard_limit and not scene.data.has_hard_limit(scene.flow, scene.subflow):
            return False
        return len(scene.askable()) >= self.min_askable

    def derive_kwargs(self, scene: Scene, rng: random.Random) -> dict[str, Any]:
        return self.kwargs(scene, rng)

    def build_hint(self, **kwargs: Any) -> str:
        return self.hint(**kwargs) if self.hint is not None else self.simulator_hint

    def check_rule(self, public: Public, scene: Scene, kwargs: Mapping[str, Any]) -> float | None:
        return None if self.rule is None else self.rule(public, scene, kwargs)


# -- kwargs ----------------------------------------------------------------------------------------

_ALTERNATIVES = {
    "member_level": ["gold", "silver", "bronze", "guest"],
    "payment_method": ["credit card", "paypal", "gift card"],
    "packaging": ["yes", "no"],
    "city": ["boston", "austin", "denver", "seattle"],
    "num_products": ["1", "2", "3"],
}


def _false_premise_kwargs(scene: Scene, rng: random.Random) -> dict[str, Any]:
    values = scene.values
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


def _contradiction_kwargs(scene: Scene, rng: random.Random) -> dict[str, Any]:
    values = scene.values
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


def _criteria_kwargs(scene: Scene, rng: random.Random) -> dict[str, Any]:
    values = scene.values
    name = rng.choice([k for k in _CRITERIA if k in values])
    return {"field": name, "criterion": _CRITERIA[name]}


def _pick(key: str, options: Sequence[Any]) -> Callable[[Scene, random.Random], dict[str, Any]]:
    return lambda scene, rng: {key: rng.choice(list(options))}


def _withheld_kwargs(scene: Scene, rng: random.Random) -> dict[str, Any]:
    """B3: one or two of the askable fields, at random."""
    have = scene.askable()
    return {"withheld_fields": rng.sample(have, min(len(have), rng.choice([1, 2])))} if have else {}


def _blocked_kwargs(scene: Scene, rng: random.Random) -> dict[str, Any]:
    """B4: the outcome the customer wants, named by the subflow's title."""
    return {"blocked_action": SUBFLOW_MAP.get(scene.subflow, scene.subflow.replace("_", " ")).lower()}


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
            kwargs=_withheld_kwargs,
            min_askable=2,
            hint=lambda withheld_fields: (
                "Never hand over your "
                + ", ".join(f.replace("_", " ") for f in withheld_fields)
                + "; deflect when asked and still demand the result."
            ),
            rule=rule_clarification_noncooperation,
        ),
        _B(
            "infeasibility_persistence",
            "Keeps asking after the agent explained that the request is not possible.",
            "Keep pushing for the outcome after being told it is not possible.",
            requires_hard_limit=True,
            kwargs=_blocked_kwargs,
            hint=lambda blocked_action: (
                f"Once the agent says that {blocked_action} is not possible for you, do not accept it: keep pushing."
            ),
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
            rule=rule_thread_abandonment,
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

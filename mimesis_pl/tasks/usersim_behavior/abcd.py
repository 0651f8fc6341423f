"""ABCD environment data for usersim-behavior: procedures, required fields, the verification prefix.

``AbcdData.load(folder)`` reads ``guidelines.json`` (flow title → ``description`` and ``subflows``: title →
``actions`` ``[{button, text, subtext[], type?}]``, ``instructions?``) and ``kb.json`` (snake subflow →
action sequence) in the format of asappresearch/abcd; ``abcd_v1.1.json`` conversations feed the row
builder (:mod:`.builder`). The real files are not bundled; ``standin_abcd/`` ships a small synthetic
stand-in in the same format (three subflows), which is the default.

The maps below are the reference's: 10 flows, the 46 policy-bearing subflows with their guideline titles
(looked up under the row's flow) and the action table (all 32 kb actions). A kb action outside the table
is an error at load; a row whose flow or subflow is not mapped, or whose title the guidelines lack, is an
:class:`AbcdError` naming it (the reference silently ran such rows without a policy).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STANDIN_DIR = Path(__file__).parent / "standin_abcd"

#: scenario flow (snake case) → guideline flow title.
FLOW_MAP = {
    "product_defect": "Product Defect",
    "order_issue": "Order Issue",
    "account_access": "Account Access",
    "troubleshoot_site": "Troubleshoot Site",
    "manage_account": "Manage Account",
    "purchase_dispute": "Purchase Dispute",
    "shipping_issue": "Shipping Issue",
    "subscription_inquiry": "Subscription Inquiry",
    "single_item_query": "Single-Item Query",
    "storewide_query": "Storewide Query",
}
#: flow → {scenario subflow → guideline subflow title}: the 46 covered subflows (the reference's, hand-verified).
SUBFLOWS_BY_FLOW: dict[str, dict[str, str]] = {
    "product_defect": {
        "refund_initiate": "Initiate Refund",
        "refund_update": "Update Refund",
        "refund_status": "Refund Status",
        "return_stain": "Return Due to Stain",
        "return_color": "Return Due to Color",
        "return_size": "Return Due to Size",
    },
    "order_issue": {
        "status_mystery_fee": "Status Mystery Fee",
        "status_delivery_time": "Status Delivery Time",
        "status_payment_method": "Status Payment Method",
        "status_quantity": "Status Quantity",
        "manage_upgrade": "Manage Upgrade",
        "manage_downgrade": "Manage Downgrade",
        "manage_create": "Manage Create",
        "manage_cancel": "Manage Cancel",
    },
    "account_access": {
        "recover_username": "Recover Username",
        "recover_password": "Recover Password",
        "reset_2fa": "Reset Two-Factor Auth",
    },
    "troubleshoot_site": {
        "credit_card": "Invalid Credit Card",
        "shopping_cart": "Cart Not Updating",
        "search_results": "Search Not Working",
        "slow_speed": "Website Too Slow",
    },
    "manage_account": {
        "status_service_added": "Status Service Added",
        "status_service_removed": "Status Service Removed",
        "status_shipping_question": "Status Shipping Question",
        "status_credit_missing": "Status Credit Missing",
        "manage_change_address": "Manage Change Address",
        "manage_change_name": "Manage Change Name",
        "manage_change_phone": "Manage Change Phone",
        "manage_payment_method": "Manage Payment Method",
    },
    "purchase_dispute": {
        "bad_price_competitor": "Bad Price Competitor",
        "bad_price_yesterday": "Bad Price Yesterday",
        "out_of_stock_general": "Out-of-Stock General",
        "out_of_stock_one_item": "Out-of-Stock One Item",
        "promo_code_invalid": "Promo Code Invalid",
        "promo_code_out_of_date": "Promo Code Out of Date",
        "mistimed_billing_already_returned": "Mistimed Billing Already Returned",
        "mistimed_billing_never_bought": "Mistimed Billing Never Bought",
    },
    "shipping_issue": {
        "status": "Shipping Status",
        "manage": "Manage Shipping",
        "missing": "Missing Item",
        "cost": "Shipping Cost",
    },
    "subscription_inquiry": {
        "status_due_amount": "Status Due Amount",
        "status_due_date": "Status Due Date",
        "manage_pay_bill": "Manage Pay Bill",
        "manage_extension": "Manage Extension",
        "manage_dispute_bill": "Manage Dispute Bill",
    },
}
#: scenario subflow → guideline title (all 46, flat).
SUBFLOW_MAP = {sub: title for subs in SUBFLOWS_BY_FLOW.values() for sub, title in subs.items()}
#: action → the scenario fields it consumes (exhaustive over the upstream kb: 32 actions).
ACTION_REQUIRED_FIELDS: dict[str, list[str]] = {
    "pull-up-account": ["customer_name"],
    "validate-purchase": ["username", "email", "order_id"],
    "verify-identity": ["customer_name", "account_id", "zip_code"],
    "membership": ["member_level"],
    "enter-details": ["full_address"],
    "shipping-status": ["order_id"],
    "update-order": ["order_id"],
    "make-purchase": ["order_id"],
    "offer-refund": ["order_id"],
    "record-reason": ["payment_method"],
    "update-account": ["username"],
    "make-password": ["username"],
    "subscription-status": ["username"],
    "send-link": ["email"],
    **{
        action: []
        for action in (
            "notify-team",
            "promo-code",
            "instructions",
            "try-again",
            "log-out-in",
            "search-faq",
            "select-faq",
            "update-question",
            "ask-the-oracle",
            *(f"search-{t}" for t in ("boots", "shirt", "jeans", "jacket")),
            *(f"search-{t}" for t in ("pricing", "membership", "timing", "policy")),
        )
    },
}
FIELD_PHRASES = {
    "customer_name": "full name",
    "username": "username",
    "email": "email address",
    "order_id": "order ID",
    "account_id": "account ID",
    "zip_code": "ZIP code",
    "phone": "phone number",
    "member_level": "membership level",
    "full_address": "address",
}
VERIFY_ACTIONS = ("pull-up-account", "validate-purchase", "verify-identity")
_HARD_LIMIT = re.compile(
    r"within the last|cannot|can not|not possible|only if|unable|not allowed|apologize and explain|"
    r"if the customer cannot|no more than|maximum of",
    re.IGNORECASE,
)


class AbcdError(ValueError):
    """ABCD files or a (flow, subflow) pair that cannot be used; the message names the file, flow or subflow."""


def flatten_scenario(scenario: Mapping[str, Any]) -> dict[str, str]:
    """Scalar fields of ``personal`` and ``order`` → ``{field: str(value)}``."""
    out: dict[str, str] = {}
    for part in ("personal", "order"):
        for key, value in (scenario.get(part) or {}).items():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                out[key] = str(value)
    return out


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text())
    except FileNotFoundError:
        raise AbcdError(f"ABCD data: {path} is missing (need guidelines.json and kb.json)") from None
    except json.JSONDecodeError as err:
        raise AbcdError(f"ABCD data: {path} is not valid JSON ({err})") from None


def _check_guidelines(path: Path, guidelines: Any) -> None:
    if not isinstance(guidelines, dict):
        raise AbcdError(f"{path}: expected an object of flows, got a JSON {type(guidelines).__name__}")
    known = set(FLOW_MAP.values())
    for flow, node in guidelines.items():
        if flow not in known:
            raise AbcdError(f"{path}: flow {flow!r} is not one of the ABCD flows {sorted(known)}")
        subflows = node.get("subflows") if isinstance(node, dict) else None
        if not isinstance(subflows, dict):
            raise AbcdError(f"{path}: flow {flow!r} has no 'subflows' object")
        for title, spec in subflows.items():
            if not isinstance(spec, dict) or not isinstance(spec.get("actions"), list):
                raise AbcdError(f"{path}: {flow!r} / {title!r} has no 'actions' list")


def _check_kb(path: Path, kb: Any) -> None:
    if not isinstance(kb, dict):
        raise AbcdError(f"{path}: expected an object of subflow → actions, got a JSON {type(kb).__name__}")
    for subflow, actions in kb.items():
        if not isinstance(actions, list):
            raise AbcdError(f"{path}: subflow {subflow!r} must map to a list of actions")
        unknown = [a for a in actions if a not in ACTION_REQUIRED_FIELDS]
        if unknown:
            raise AbcdError(
                f"{path}: subflow {subflow!r} has unknown action(s) {unknown}; known: {sorted(ACTION_REQUIRED_FIELDS)}"
            )


@dataclass
class AbcdData:
    """Guidelines (flow → subflow title → actions) and the knowledge base (subflow → action sequence)."""

    guidelines: dict[str, Any]
    kb: dict[str, list[str]]

    @classmethod
    def load(cls, folder: str | Path = STANDIN_DIR) -> AbcdData:
        folder = Path(folder)
        guidelines = _read_json(folder / "guidelines.json")
        kb = _read_json(folder / "kb.json")
        _check_guidelines(folder / "guidelines.json", guidelines)
        _check_kb(folder / "kb.json", kb)
        return cls(guidelines, kb)

    def spec(self, flow: str, subflow: str) -> dict[str, Any]:
        """The guideline entry of a covered pair; :class:`AbcdError` naming what is not mapped or missing."""
        if flow not in FLOW_MAP:
            raise AbcdError(f"flow {flow!r} is not an ABCD flow; known: {sorted(FLOW_MAP)}")
        title = SUBFLOW_MAP.get(subflow)
        if title is None:
            raise AbcdError(
                f"subflow {subflow!r} is not one of the {len(SUBFLOW_MAP)} policy-bearing ABCD subflows "
                "(FAQ lookups and status_active have no mapped procedure)"
            )
        node = self.guidelines.get(FLOW_MAP[flow], {}).get("subflows", {}).get(title)
        if node is None:
            raise AbcdError(f"guidelines.json has no subflow {title!r} (for {subflow!r}) under flow {FLOW_MAP[flow]!r}")
        if subflow not in self.kb:
            raise AbcdError(f"kb.json has no action sequence for subflow {subflow!r}")
        return node

    def covered(self, flow: str, subflow: str) -> bool:
        try:
            self.spec(flow, subflow)
        except AbcdError:
            return False
        return True

    def _actions(self, flow: str, subflow: str) -> list[dict[str, Any]] | None:
        return list(self.spec(flow, subflow).get("actions", [])) if self.covered(flow, subflow) else None

    def render_policy(self, flow: str, subflow: str) -> str:
        """Numbered ``"{i}. [{button}] {text}"`` lines with ``"   - {subtext}"`` bullets; ``""`` if uncovered."""
        actions = self._actions(flow, subflow)
        if actions is None:
            return ""
        lines = []
        for i, action in enumerate(actions, 1):
            button = f"[{action['button']}] " if action.get("button") else ""
            lines.append(f"{i}. {button}{action.get('text', '')}")
            lines.extend(f"   - {sub}" for sub in action.get("subtext", []))
        return "\n".join(lines)

    def has_hard_limit(self, flow: str, subflow: str) -> bool:
        """Eligibility language anywhere in the subflow's entry (actions, ``type``, ``instructions``)."""
        return self.covered(flow, subflow) and bool(_HARD_LIMIT.search(json.dumps(self.spec(flow, subflow))))

    def required_fields(self, subflow: str) -> list[str]:
        """Ordered, de-duplicated fields the subflow's actions consume."""
        out: list[str] = []
        for action in self.kb.get(subflow, []):
            for name in ACTION_REQUIRED_FIELDS[action]:
                if name not in out:
                    out.append(name)
        return out

    def goal(self, flow: str, subflow: str) -> str:
        title = SUBFLOW_MAP.get(subflow, subflow.replace("_", " ")).lower()
        description = self.guidelines.get(FLOW_MAP.get(flow, ""), {}).get("description")
        return f"{title} (this store handles that under {description})" if description else title

    def verification_prefix(self, scenario: Mapping[str, Any], flow: str, subflow: str) -> list[tuple[str, str]]:
        """Seeded identity-check turns ``[(role, text)]`` (role ``user`` / ``agent``); [] if none."""
        values = flatten_scenario(scenario)
        fields: list[str] = []
        for action in self.kb.get(subflow, []):
            if action not in VERIFY_ACTIONS:
                break
            fields += [
                f for f in ACTION_REQUIRED_FIELDS[action] if f in values and f in FIELD_PHRASES and f not in fields
            ]
        if not fields:
            return []
        title = SUBFLOW_MAP.get(subflow, subflow.replace("_", " ")).lower()
        turns = [
            ("user", f"hi, i need help with {title}"),
            ("agent", f"Sure, could you give me your {FIELD_PHRASES[fields[0]]}?"),
            ("user", values[fields[0]]),
        ]
        if len(fields) > 1:
            rest = fields[1:]
            turns += [
                ("agent", "Thanks. I also need your " + ", ".join(FIELD_PHRASES[f] for f in rest) + "."),
                ("user", ", ".join(values[f] for f in rest)),
            ]
        turns.append(
            ("agent", "Thank you, your identity is verified and your account is open. How can I help with your issue?")
        )
        return turns

"""ABCD environment data for usersim-behavior: procedures, required fields, the verification prefix.

``AbcdData.load(folder)`` reads ``guidelines.json`` and ``kb.json`` in ABCD's format. The
real files are not available offline; ``standin_abcd/`` ships a small synthetic stand-in in the same
format (three subflows), which is the default.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

STANDIN_DIR = Path(__file__).parent / "standin_abcd"

#: scenario subflow → guideline title (hand-verified in the reference; the policy-bearing subset we know).
SUBFLOW_MAP = {
    "return_size": "Return Due to Size",
    "return_color": "Return Due to Color",
    "return_stain": "Return Due to Stain",
    "refund_initiate": "Refund Initiate",
    "refund_update": "Refund Update",
    "refund_status": "Refund Status",
    "status_delivery_time": "Status Delivery Time",
    "status_questioning": "Status Questioning",
    "slow_speed": "Website Too Slow",
    "status_due_amount": "Status Due Amount",
    "manage_upgrade": "Upgrade Service",
}
FLOW_MAP = {
    "product_defect": "Product Defect",
    "shipping_issue": "Shipping Issue",
    "account_access": "Account Access",
    "purchase_dispute": "Purchase Dispute",
    "subscription_inquiry": "Subscription Inquiry",
    "order_issue": "Order Issue",
    "manage_account": "Manage Account",
    "single_item_query": "Single Item Query",
    "storewide_query": "Storewide Query",
    "troubleshoot_site": "Troubleshoot Site",
}
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
    "search-faq": [],
    "try-again": [],
    "log-out-in": [],
    "instructions": [],
    "notify-team": [],
    "ask-the-oracle": [],
    "select-faq": [],
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


def flatten_scenario(scenario: Mapping[str, Any]) -> dict[str, str]:
    """Scalar fields of ``personal`` and ``order`` → ``{field: str(value)}``."""
    out: dict[str, str] = {}
    for part in ("personal", "order"):
        for key, value in (scenario.get(part) or {}).items():
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                out[key] = str(value)
    return out


@dataclass
class AbcdData:
    """Guidelines (flow → subflow title → actions) and the knowledge base (subflow → action sequence)."""

    guidelines: dict[str, Any]
    kb: dict[str, list[str]]

    @classmethod
    def load(cls, folder: str | Path = STANDIN_DIR) -> AbcdData:
        folder = Path(folder)
        try:
            guidelines = json.loads((folder / "guidelines.json").read_text())
            kb = json.loads((folder / "kb.json").read_text())
        except FileNotFoundError as err:
            raise FileNotFoundError(
                f"ABCD data: {err.filename} is missing (need guidelines.json and kb.json)"
            ) from None
        for subflow, actions in kb.items():
            unknown = [a for a in actions if a not in ACTION_REQUIRED_FIELDS]
            if unknown:
                raise KeyError(f"{folder}/kb.json: subflow {subflow!r} has unknown action(s) {unknown}")
        return cls(guidelines, kb)

    def _actions(self, flow: str, subflow: str) -> list[dict[str, Any]] | None:
        flow_key, title = FLOW_MAP.get(flow), SUBFLOW_MAP.get(subflow)
        node = self.guidelines.get(flow_key or "", {}).get("subflows", {}).get(title or "")
        return None if node is None else list(node.get("actions", []))

    def covered(self, flow: str, subflow: str) -> bool:
        return self._actions(flow, subflow) is not None and subflow in self.kb

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
        return bool(_HARD_LIMIT.search(json.dumps(self._actions(flow, subflow) or [])))

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
